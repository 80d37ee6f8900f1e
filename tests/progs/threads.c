/* threads.c — four workers call leaf() a known number of times each; main
 * calls it 10 times.  Prints the calls it made ("calls F N", "calls A->B N",
 * "per-thread F N...": F's count in each thread that called it, any order). */
#include <pthread.h>
#include <stdio.h>
#include "noipa.h"

#define NT 4
#define PER 100000
static volatile long sink;
/* Calls counted where they happen, per thread; summed after the joins. */
static _Thread_local long n_leaf, n_middle_leaf;
static long t_leaf[NT], t_middle_leaf[NT], n_middle, n_worker;
NOIPA void leaf(int i) { n_leaf++; sink += i; }
NOIPA void middle(int n) { TOUCH(); for (int i = 0; i < n; i++) { n_middle_leaf++; leaf(i); } }
NOIPA static void *worker(void *arg)
{
	long k = (long)arg;
	__atomic_add_fetch(&n_worker, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&n_middle, 1, __ATOMIC_RELAXED);
	middle(PER);
	t_leaf[k] = n_leaf;
	t_middle_leaf[k] = n_middle_leaf;
	return NULL;
}

int main(void)
{
	pthread_t t[NT];
	long main_leaf = 0, leaf_all = 0, middle_leaf = 0;
	for (long k = 0; k < NT; k++)
		pthread_create(&t[k], NULL, worker, (void *)k);
	for (int i = 0; i < 10; i++) {
		main_leaf++;
		leaf(i);
	}
	for (int i = 0; i < NT; i++)
		pthread_join(t[i], NULL);
	for (int k = 0; k < NT; k++) {
		leaf_all += t_leaf[k];
		middle_leaf += t_middle_leaf[k];
	}
	printf("calls leaf %ld\ncalls middle %ld\ncalls worker %ld\n", leaf_all + n_leaf, n_middle, n_worker);
	printf("calls main->leaf %ld\ncalls middle->leaf %ld\ncalls worker->middle %ld\n", main_leaf, middle_leaf, n_middle);
	printf("per-thread leaf %ld", n_leaf);
	for (int k = 0; k < NT; k++)
		printf(" %ld", t_leaf[k]);
	printf("\nthreads done\n");
	return 0;
}
