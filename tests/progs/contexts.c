/* contexts.c — a program with many distinct calling contexts: each of
 * twelve functions f0..f11 calls all twelve again, DEPTH levels deep, so
 * that every path of the tree is a context of its own.
 *
 *   contexts THREADS DEPTH [FIFO]   THREADS threads each walk the whole tree
 *                                   once; prints "contexts N" (the distinct
 *                                   contexts made: THREADS x (12 + ... + 12^DEPTH))
 *                                   and "calls fI N" (fI's calls, counted where
 *                                   they happen), "cpu_ns N" (the CPU time the
 *                                   process took until then, bench/cct_grow_bench.sh);
 *                                   then, with FIFO, waits for a line on it.
 *   contexts forever DEPTH          one thread walks the twelve top-level subtrees
 *                                   again and again (new contexts in the first
 *                                   twelve, the same ones after), printing
 *                                   "subtrees N contexts M" after each; until killed.
 * Output is written with write(2), so that a SIGKILL loses none of it. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "noipa.h"

#define K 12
typedef void (*fn)(int);
static fn F[K];
static long calls[K];                 /* summed after the joins */
static _Thread_local long my[K];

#define DEF(i) NOIPA static void f##i(int d) { my[i]++; if (d) for (int j = 0; j < K; j++) F[j](d - 1); }
DEF(0) DEF(1) DEF(2) DEF(3) DEF(4) DEF(5) DEF(6) DEF(7) DEF(8) DEF(9) DEF(10) DEF(11)

static int depth;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static void say(const char *s)
{
	size_t n = strlen(s);
	while (n) {
		ssize_t w = write(1, s, n);
		if (w <= 0)
			return;
		s += w, n -= (size_t)w;
	}
}

NOIPA static void *worker(void *arg)
{
	(void)arg;
	for (int j = 0; j < K; j++)
		F[j](depth - 1);
	pthread_mutex_lock(&mu);
	for (int i = 0; i < K; i++)
		calls[i] += my[i];
	pthread_mutex_unlock(&mu);
	return NULL;
}

int main(int argc, char **argv)
{
	fn all[K] = { f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11 };
	memcpy(F, all, sizeof F);
	if (argc < 3)
		return 2;
	depth = atoi(argv[2]);
	if (depth < 1 || depth > 8)
		return 2;
	long per = 0, p = 1; /* contexts under one top-level call: 1 + 12 + ... + 12^(depth-1) */
	for (int l = 0; l < depth; l++, p *= K)
		per += p;
	char line[128];
	if (!strcmp(argv[1], "forever")) {
		for (long n = 1;; n++) {
			F[(n - 1) % K](depth - 1);
			/* the first K subtrees are new contexts; later ones repeat them */
			snprintf(line, sizeof line, "subtrees %ld contexts %ld\n", n, (n < K ? n : K) * per);
			say(line);
		}
	}
	int nt = atoi(argv[1]);
	if (nt < 1 || nt > 64)
		return 2;
	pthread_t t[64];
	for (int i = 0; i < nt; i++)
		pthread_create(&t[i], NULL, worker, NULL);
	for (int i = 0; i < nt; i++)
		pthread_join(t[i], NULL);
	struct timespec cpu;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu);
	snprintf(line, sizeof line, "contexts %ld\ncpu_ns %lld\n", (long)nt * K * per,
	         (long long)cpu.tv_sec * 1000000000 + cpu.tv_nsec);
	say(line);
	for (int i = 0; i < K; i++) {
		snprintf(line, sizeof line, "calls f%d %ld\n", i, calls[i]);
		say(line);
	}
	if (argc > 3) {
		say("waiting\n");
		FILE *f = fopen(argv[3], "r");
		if (f) {
			fgets(line, sizeof line, f);
			fclose(f);
		}
	}
	return 0;
}
