/* exitsled_co.c — a coroutine (makecontext/swapcontext, its stack on the
 * heap, far from main's) switched to and away from inside recorded frames
 * (tests/e2e/exitsled.sh): run() switches into co(), whose yield() switches
 * back, so run() returns while co()'s frames are alive on the other stack,
 * and yield() returns later, when run() switches in again.  Prints its own
 * call counts.  With exit sleds, no return address is replaced; with the
 * replaced ones (Clang), sonde loses one here (noticed, issue 27). */
#include <stdio.h>
#include <stdlib.h>
#include <ucontext.h>
#define NOINLINE __attribute__((noinline))
static ucontext_t main_ctx, co_ctx;
static volatile int sink;
static long n_yield, n_co, n_run, n_leaf;
NOINLINE int leaf(int x) { n_leaf++; sink = x; return x + 1; }
NOINLINE void yield(void) { n_yield++; swapcontext(&co_ctx, &main_ctx); sink++; }
NOINLINE void co(void) { n_co++; for (int i = 0; i < 3; i++) { leaf(i); yield(); } }
NOINLINE int run(void) { n_run++; swapcontext(&main_ctx, &co_ctx); return leaf(7); }
int main(void)
{
	char *stk = malloc(1 << 22);
	getcontext(&co_ctx);
	co_ctx.uc_stack.ss_sp = stk + (1 << 21); /* far from the main stack */
	co_ctx.uc_stack.ss_size = 1 << 20;
	co_ctx.uc_link = &main_ctx;
	makecontext(&co_ctx, co, 0);
	int s = 0;
	for (int k = 0; k < 4; k++)
		s += run() + leaf(k);
	printf("s %d\ncalls yield %ld\ncalls co %ld\ncalls run %ld\ncalls leaf %ld\n", s, n_yield, n_co, n_run, n_leaf);
	return 0;
}
