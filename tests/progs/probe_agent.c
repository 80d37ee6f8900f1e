/* probe_agent.c — target of the agent engine's tests (tests/e2e/probe_agent.sh):
 *   probe_agent NTHREADS ITERS [GOFILE]
 * every thread calls work(i) and spin(i % 7) for i in [0, ITERS); with
 * GOFILE, prints "ready PID" and waits until GOFILE exists before the threads
 * start.  Prints what it did: "calls work N spin N" and "total T", exits 3.
 * spin's first instruction is 2 bytes long and its loop jumps back to the
 * byte after it: no 5-byte jump fits at its entry, a probe there must be an
 * int3. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

long spin(long n);
__asm__(".text\n"
        ".globl spin\n"
        ".type spin,@function\n"
        "spin:\n"
        "  xor %eax,%eax\n"
        "1:\n"
        "  add $1,%rax\n"
        "  cmp %rdi,%rax\n"
        "  jl 1b\n"
        "  ret\n"
        ".size spin,.-spin\n");

static int iters;

__attribute__((noipa)) long work(long i)
{
	return 3 * i + 1;
}

static void *run(void *arg)
{
	long *total = arg;
	for (int i = 0; i < iters; i++) {
		*total += work(i);
		*total += spin(i % 7);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int nt = argc > 1 ? atoi(argv[1]) : 4;
	iters = argc > 2 ? atoi(argv[2]) : 1000;
	if (nt < 1 || nt > 64 || iters < 0)
		return 2;
	if (argc > 3) {
		printf("ready %d\n", (int)getpid());
		fflush(stdout);
		while (access(argv[3], F_OK))
			usleep(2000);
	}
	pthread_t t[64];
	long tot[64] = { 0 };
	for (int i = 0; i < nt; i++)
		pthread_create(&t[i], NULL, run, &tot[i]);
	long total = 0;
	for (int i = 0; i < nt; i++) {
		pthread_join(t[i], NULL);
		total += tot[i];
	}
	printf("calls work %ld spin %ld\n", (long)nt * iters, (long)nt * iters);
	printf("total %ld\n", total);
	return 3;
}
