/* cantell_coro.c — swapcontext coroutines that move between threads, while
 * another thread switches its own (tests/e2e/record_cantell.sh): world 0's
 * coroutines are run a pass at a time by the main thread, then by a fresh
 * helper thread, in turn; world 1's by a thread of its own, at the same
 * time.  60 coroutines a world, on neighbouring stacks of one allocation,
 * each suspended 30 times at depths 1-25.  Prints its calls (the two
 * worlds never run one coroutine at once, so the counts are exact). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <ucontext.h>
#include "noipa.h"

#define N 60
#define ROUNDS 30
struct world {
	ucontext_t sched, co[N];
	char (*stacks)[32768];
	int done[N];
	long n_rec, n_pass;
};
static struct world w[2];

NOIPA void rec(struct world *W, int id, int d)
{
	W->n_rec++;
	if (d)
		rec(W, id, d - 1);
	else
		swapcontext(&W->co[id], &W->sched);
	TOUCH();
}

NOIPA void body(struct world *W, int id)
{
	for (int r = 0; r < ROUNDS; r++)
		rec(W, id, (id * 7 + r * 3) % 25);
	W->done[id] = 1;
	swapcontext(&W->co[id], &W->sched); /* never resumed */
}

NOIPA void start(int wi, int id)
{
	body(&w[wi], id);
}

static void setup(int wi)
{
	struct world *W = &w[wi];
	W->stacks = malloc((size_t)N * sizeof *W->stacks);
	if (!W->stacks)
		exit(1);
	for (int i = 0; i < N; i++) {
		getcontext(&W->co[i]);
		W->co[i].uc_stack.ss_sp = W->stacks[i];
		W->co[i].uc_stack.ss_size = sizeof W->stacks[i];
		W->co[i].uc_link = NULL;
		makecontext(&W->co[i], (void (*)(void))start, 2, wi, i);
	}
}

/* Every live coroutine of W one step; how many were live. */
NOIPA int pass(struct world *W)
{
	int live = 0;
	W->n_pass++;
	for (int i = 0; i < N; i++)
		if (!W->done[i]) {
			swapcontext(&W->sched, &W->co[i]);
			live++;
		}
	TOUCH();
	return live;
}

static void *helper(void *a)
{
	pass(a);
	return NULL;
}

static void *world1(void *a)
{
	while (pass(a))
		;
	return NULL;
}

int main(void)
{
	setup(0);
	setup(1);
	pthread_t t1;
	pthread_create(&t1, NULL, world1, &w[1]);
	for (int k = 0;; k++) {
		if (k % 2) { /* this pass in another thread */
			pthread_t h;
			pthread_create(&h, NULL, helper, &w[0]);
			pthread_join(h, NULL);
		} else {
			pass(&w[0]);
		}
		int live = 0;
		for (int i = 0; i < N; i++)
			live += !w[0].done[i];
		if (!live)
			break;
	}
	pthread_join(t1, NULL);
	printf("calls rec %ld\ncalls pass %ld\ncalls body %d\ncalls start %d\ncalls <root>->start %d\n",
	       w[0].n_rec + w[1].n_rec, w[0].n_pass + w[1].n_pass, 2 * N, 2 * N, 2 * N);
	return 0;
}
