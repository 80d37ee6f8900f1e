/* pf_threads.c — for the Perfetto export test: `pf_threads N` runs N worker
 * threads (named "w-K" by pthread_setname_np) beside main; each thread
 * calls rec(d) chains down to leaf() (K + 2 chains of depth K % 4 + 1 on
 * worker K, 3 chains of depth 2 on main).  Each thread counts its own calls
 * per function and its deepest nesting (main() or worker() is depth 1),
 * and the program prints one line per thread:
 *   NAME CALLS_OF_rec CALLS_OF_leaf DEEPEST */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "noipa.h"

static __thread unsigned long n_rec, n_leaf;
static __thread int depth, deepest;

#define in() (void)(++depth > deepest ? deepest = depth : 0)

NOIPA void leaf(void) { TOUCH(); in(); n_leaf++; depth--; }

NOIPA void rec(int d)
{
	TOUCH();
	in();
	n_rec++;
	if (d > 0)
		rec(d - 1);
	else
		leaf();
	depth--;
}

struct result { char name[16]; unsigned long rec, leaf; int deepest; };
static struct result *res;

NOIPA void *worker(void *a)
{
	TOUCH();
	in();
	int k = (int)(long)a;
	snprintf(res[k].name, sizeof res[k].name, "w-%d", k);
	pthread_setname_np(pthread_self(), res[k].name);
	for (int i = 0; i < k + 2; i++)
		rec(k % 4 + 1);
	depth--;
	res[k] = (struct result){ .rec = n_rec, .leaf = n_leaf, .deepest = deepest };
	snprintf(res[k].name, sizeof res[k].name, "w-%d", k);
	return NULL;
}

int main(int argc, char **argv)
{
	in();
	int n = argc > 1 ? atoi(argv[1]) : 4;
	if (n < 0 || n > 1000)
		n = 4;
	res = calloc((size_t)n + 1, sizeof *res);
	pthread_t *t = calloc((size_t)n + 1, sizeof *t);
	for (int k = 0; k < n; k++)
		pthread_create(&t[k], NULL, worker, (void *)(long)k);
	for (int i = 0; i < 3; i++)
		rec(2);
	for (int k = 0; k < n; k++)
		pthread_join(t[k], NULL);
	printf("main %lu %lu %d\n", n_rec, n_leaf, deepest);
	for (int k = 0; k < n; k++)
		printf("%s %lu %lu %d\n", res[k].name, res[k].rec, res[k].leaf, res[k].deepest);
	free(t);
	free(res);
	return 0;
}
