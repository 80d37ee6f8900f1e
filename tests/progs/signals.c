/* signals.c — instrumented signal handlers, each way 3 times:
 *  - a handler run on the interrupted stack (raise from raiser());
 *  - a handler run on an alternate signal stack (sigaltstack, SA_ONSTACK);
 *  - a handler that leaves by siglongjmp to the function that set it up,
 *    which then calls after().
 * A handler is nested in the function the signal interrupted.  Prints the
 * calls it made ("calls F N", "calls A->B N"). */
#define _GNU_SOURCE
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include "noipa.h"

static sigjmp_buf env;
static char altstack[64 * 1024];
/* calls by caller -> callee, counted at each call site */
static volatile long n_on_stack, n_on_alt, n_jumping, on_stack_leaf, on_alt_leaf, jumping_leaf;
static volatile long raiser_raise, alt_raiser_raise, jumper_raise, main_raiser, main_alt_raiser, main_jumper;
static volatile long jumper_after;

NOIPA void leaf(void) { TOUCH(); }
NOIPA void after(void) { TOUCH(); }
NOIPA void on_stack(int sig) { (void)sig; n_on_stack++; on_stack_leaf++; leaf(); }
NOIPA void on_alt(int sig) { (void)sig; n_on_alt++; on_alt_leaf++; leaf(); }
NOIPA void jumping(int sig)
{
	(void)sig;
	n_jumping++;
	jumping_leaf++;
	leaf();
	siglongjmp(env, 1);
}
NOIPA void raiser(void) { raiser_raise++; raise(SIGUSR1); TOUCH(); }
NOIPA void alt_raiser(void) { alt_raiser_raise++; raise(SIGUSR2); TOUCH(); }
NOIPA void jumper(void)
{
	if (sigsetjmp(env, 1) == 0) {
		jumper_raise++;
		raise(SIGALRM);
	}
	jumper_after++;
	after();
}

int main(void)
{
	struct sigaction sa = { 0 };
	sa.sa_handler = on_stack;
	sigaction(SIGUSR1, &sa, NULL);
	stack_t ss = { .ss_sp = altstack, .ss_size = sizeof altstack };
	sigaltstack(&ss, NULL);
	sa.sa_handler = on_alt;
	sa.sa_flags = SA_ONSTACK;
	sigaction(SIGUSR2, &sa, NULL);
	sa.sa_handler = jumping;
	sa.sa_flags = 0;
	sigaction(SIGALRM, &sa, NULL);
	for (int i = 0; i < 3; i++) {
		main_raiser++;
		raiser();
		main_alt_raiser++;
		alt_raiser();
		main_jumper++;
		jumper();
	}
	printf("calls on_stack %ld\ncalls on_alt %ld\ncalls jumping %ld\ncalls leaf %ld\ncalls after %ld\n", n_on_stack,
	       n_on_alt, n_jumping, on_stack_leaf + on_alt_leaf + jumping_leaf, jumper_after);
	printf("calls raiser %ld\ncalls alt_raiser %ld\ncalls jumper %ld\n", main_raiser, main_alt_raiser, main_jumper);
	printf("calls on_stack->leaf %ld\ncalls on_alt->leaf %ld\ncalls jumping->leaf %ld\n", on_stack_leaf, on_alt_leaf,
	       jumping_leaf);
	/* each handler interrupted the function that raised its signal */
	printf("calls raiser->on_stack %ld\ncalls alt_raiser->on_alt %ld\ncalls jumper->jumping %ld\n", raiser_raise,
	       alt_raiser_raise, jumper_raise);
	printf("calls main->raiser %ld\ncalls main->alt_raiser %ld\ncalls main->jumper %ld\ncalls jumper->after %ld\n",
	       main_raiser, main_alt_raiser, main_jumper, jumper_after);
	printf("signals done\n");
	return 0;
}
