/* bench/ret_bench.c — issue 28: what the return-address replacement costs by
 * itself, against an exit sled.  Four ways of getting control around a call,
 * each in the shape sonde's code has (an entry sled's `call` to a trampoline
 * that saves the argument registers and calls a hook through a pointer, as
 * src/rt/module.c's; an exit trampoline that keeps rax/rdx and calls its hook
 * through a pointer, as src/rt/hooks.c's), no clock read, timed on the same
 * loop:
 *   plain    the call and its `ret`
 *   sled     the entry sled's trampoline calling a hook that does nothing
 *   exitsled the entry hook pushes the return address on a shadow stack (the
 *            bookkeeping both designs have) and an exit sled (a `call` to an
 *            exit trampoline before the `ret`) pops it: XRay's way, no
 *            return address replaced
 *   replace  sonde's way: the entry hook keeps the return address on the
 *            shadow stack and puts the exit trampoline's in its slot; the
 *            function's `ret` lands in the trampoline (the return-stack
 *            predictor expected the caller: a mispredicted return), which
 *            takes the real address back and jumps there (`jmp *%r11`: one
 *            indirect branch, as many targets as callers)
 * on three shapes:
 *   leaf     a leaf called in a loop
 *   rec16    a recursion 16 deep, every level instrumented
 *   nest4    the leaf called at the bottom of 4 plain (uninstrumented)
 *            callers: whatever the instrumented leaf does to the return-stack
 *            predictor shows in its callers' returns; "callers" is the nest's
 *            cost above plain less the leaf's own
 * ns per call: median of REPS rounds (variants interleaved) and the fastest
 * round (the least disturbed on a shared machine).
 * usage: cc -O2 bench/ret_bench.c -o ret_bench && ./ret_bench [calls] [reps] */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

uintptr_t rb_shadow[4096];
uintptr_t *rb_sp = rb_shadow;
void rb_exit_tramp(void);

/* The hooks, in C as sonde's are (called through a pointer). */
__attribute__((noinline)) void rb_hook_nop(void *m, uintptr_t fn, uintptr_t *slot)
{
	(void)m, (void)fn, (void)slot;
	__asm__ volatile("");
}
__attribute__((noinline)) void rb_hook_push(void *m, uintptr_t fn, uintptr_t *slot)
{
	(void)m, (void)fn;
	*rb_sp++ = *slot;
}
__attribute__((noinline)) void rb_hook_replace(void *m, uintptr_t fn, uintptr_t *slot)
{
	(void)m, (void)fn;
	*rb_sp++ = *slot;
	*slot = (uintptr_t)rb_exit_tramp;
}
__attribute__((noinline)) uintptr_t rb_hook_pop(uintptr_t *slot)
{
	(void)slot;
	return *--rb_sp;
}
void (*rb_enter_nop_p)(void *, uintptr_t, uintptr_t *) = rb_hook_nop;
void (*rb_enter_push_p)(void *, uintptr_t, uintptr_t *) = rb_hook_push;
void (*rb_enter_replace_p)(void *, uintptr_t, uintptr_t *) = rb_hook_replace;
uintptr_t (*rb_exit_p)(uintptr_t *) = rb_hook_pop;

/* An entry trampoline as module.c's: 8 argument registers kept, the hook
 * called through a pointer with (module, fn, slot). */
#define ENTRY_TRAMP(name, ptr)                                                                     \
	"	.p2align 4\n" #name ":\n"                                                               \
	"	push %rdi\n	push %rsi\n	push %rdx\n	push %rcx\n"                                      \
	"	push %r8\n	push %r9\n	push %rax\n	push %r10\n"                                       \
	"	xor %edi, %edi\n"                                                                       \
	"	mov 64(%rsp), %rsi\n"                                                                   \
	"	sub $5, %rsi\n"                                                                         \
	"	lea 72(%rsp), %rdx\n"                                                                   \
	"	call *" #ptr "(%rip)\n"                                                                 \
	"	pop %r10\n	pop %rax\n	pop %r9\n	pop %r8\n"                                             \
	"	pop %rcx\n	pop %rdx\n	pop %rsi\n	pop %rdi\n"                                           \
	"	ret\n"

__asm__(
	"	.text\n"
	ENTRY_TRAMP(rb_tr_nop, rb_enter_nop_p)
	ENTRY_TRAMP(rb_tr_push, rb_enter_push_p)
	ENTRY_TRAMP(rb_tr_replace, rb_enter_replace_p)
	/* the exit trampoline, as hooks.c's rt_exit_tramp */
	"	.p2align 4\n"
	"	.globl rb_exit_tramp\n"
	"rb_exit_tramp:\n"
	"	push %rax\n"
	"	push %rdx\n"
	"	lea 8(%rsp), %rdi\n"
	"	call *rb_exit_p(%rip)\n"
	"	mov %rax, %r11\n"
	"	pop %rdx\n"
	"	pop %rax\n"
	"	jmp *%r11\n"
	/* an exit sled's trampoline: called before the `ret`, returns to it */
	"	.p2align 4\n"
	"rb_exit_sled_tramp:\n"
	"	push %rax\n"
	"	push %rdx\n"
	"	lea 24(%rsp), %rdi\n"
	"	call *rb_exit_p(%rip)\n"
	"	pop %rdx\n"
	"	pop %rax\n"
	"	ret\n"
	/* leaves */
	"	.globl rb_leaf_plain, rb_leaf_sled, rb_leaf_exitsled, rb_leaf_replace\n"
	"	.p2align 4\n"
	"rb_leaf_plain:\n"
	"	lea 1(%rdi), %rax\n"
	"	ret\n"
	"	.p2align 4\n"
	"rb_leaf_sled:\n"
	"	call rb_tr_nop\n"
	"	lea 1(%rdi), %rax\n"
	"	ret\n"
	"	.p2align 4\n"
	"rb_leaf_exitsled:\n"
	"	call rb_tr_push\n"
	"	lea 1(%rdi), %rax\n"
	"	call rb_exit_sled_tramp\n"
	"	ret\n"
	"	.p2align 4\n"
	"rb_leaf_replace:\n"
	"	call rb_tr_replace\n"
	"	lea 1(%rdi), %rax\n"
	"	ret\n"
	/* recursions: rec(n) calls rec(n - 1) down to 0 */
	"	.globl rb_rec_plain, rb_rec_sled, rb_rec_exitsled, rb_rec_replace\n"
	"	.p2align 4\n"
	"rb_rec_plain:\n"
	"	test %edi, %edi\n"
	"	je 1f\n"
	"	sub $8, %rsp\n"
	"	dec %edi\n"
	"	call rb_rec_plain\n"
	"	add $8, %rsp\n"
	"1:	ret\n"
	"	.p2align 4\n"
	"rb_rec_sled:\n"
	"	call rb_tr_nop\n"
	"	test %edi, %edi\n"
	"	je 1f\n"
	"	sub $8, %rsp\n"
	"	dec %edi\n"
	"	call rb_rec_sled\n"
	"	add $8, %rsp\n"
	"1:	ret\n"
	"	.p2align 4\n"
	"rb_rec_exitsled:\n"
	"	call rb_tr_push\n"
	"	test %edi, %edi\n"
	"	je 1f\n"
	"	sub $8, %rsp\n"
	"	dec %edi\n"
	"	call rb_rec_exitsled\n"
	"	add $8, %rsp\n"
	"1:	call rb_exit_sled_tramp\n"
	"	ret\n"
	"	.p2align 4\n"
	"rb_rec_replace:\n"
	"	call rb_tr_replace\n"
	"	test %edi, %edi\n"
	"	je 1f\n"
	"	sub $8, %rsp\n"
	"	dec %edi\n"
	"	call rb_rec_replace\n"
	"	add $8, %rsp\n"
	"1:	ret\n"
	/* nest(d, leaf): d plain callers, then leaf(d) */
	"	.globl rb_nest\n"
	"	.p2align 4\n"
	"rb_nest:\n"
	"	sub $8, %rsp\n"
	"	test %edi, %edi\n"
	"	je 1f\n"
	"	dec %edi\n"
	"	call rb_nest\n"
	"	add $8, %rsp\n"
	"	ret\n"
	"1:	call *%rsi\n"
	"	add $8, %rsp\n"
	"	ret\n");

long rb_leaf_plain(long), rb_leaf_sled(long), rb_leaf_exitsled(long), rb_leaf_replace(long);
void rb_rec_plain(int), rb_rec_sled(int), rb_rec_exitsled(int), rb_rec_replace(int);
long rb_nest(int, long (*)(long));

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

#define DEPTH 16
#define NEST 4
static volatile long sink;

static double run_leaf(long (*f)(long), long n)
{
	double t0 = now_ns();
	long s = 0;
	for (long i = 0; i < n; i++)
		s += f(i);
	sink = s;
	return (now_ns() - t0) / n;
}

static double run_rec(void (*f)(int), long n)
{
	long k = n / (DEPTH + 1);
	double t0 = now_ns();
	for (long i = 0; i < k; i++)
		f(DEPTH);
	return (now_ns() - t0) / (k * (DEPTH + 1));
}

/* ns per instrumented call (one per nest) */
static double run_nest(long (*f)(long), long n)
{
	long k = n / (NEST + 1);
	double t0 = now_ns();
	long s = 0;
	for (long i = 0; i < k; i++)
		s += rb_nest(NEST, f);
	sink = s;
	return (now_ns() - t0) / k;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 20000000;
	int reps = argc > 2 ? atoi(argv[2]) : 9;
	if (reps > 64)
		reps = 64;
	if (reps < 1)
		reps = 1;
	static const char *name[] = { "plain", "sled", "exitsled", "replace" };
	long (*leaf[])(long) = { rb_leaf_plain, rb_leaf_sled, rb_leaf_exitsled, rb_leaf_replace };
	void (*rec[])(int) = { rb_rec_plain, rb_rec_sled, rb_rec_exitsled, rb_rec_replace };
	double t[3][4][64];
	for (int r = 0; r < reps; r++)
		for (int v = 0; v < 4; v++) {
			t[0][v][r] = run_leaf(leaf[v], n);
			t[1][v][r] = run_rec(rec[v], n);
			t[2][v][r] = run_nest(leaf[v], n);
		}
	double med[3][4], min[3][4];
	for (int s = 0; s < 3; s++)
		for (int v = 0; v < 4; v++) {
			qsort(t[s][v], (size_t)reps, sizeof(double), cmp);
			med[s][v] = t[s][v][reps / 2];
			min[s][v] = t[s][v][0];
		}
	printf("# ns per instrumented call, median of %d rounds of %ld calls (variants interleaved); [fastest round]\n",
	       reps, n);
	printf("# above plain: leaf, rec16 (every level instrumented), nest4 (a leaf under 4 plain callers),\n");
	printf("# callers = nest4 above plain less leaf above plain (what the callers' own returns pay)\n");
	printf("%-9s %7s %7s %7s | %9s %9s %9s %9s | %9s %9s %9s %9s\n", "variant", "leaf", "rec16", "nest4", "+leaf",
	       "+rec16", "+nest4", "callers", "[+leaf]", "[+rec16]", "[+nest4]", "[callers]");
	for (int v = 0; v < 4; v++) {
		double a[3], b[3];
		for (int s = 0; s < 3; s++) {
			a[s] = med[s][v] - med[s][0];
			b[s] = min[s][v] - min[s][0];
		}
		printf("%-9s %7.2f %7.2f %7.2f | %9.2f %9.2f %9.2f %9.2f | %9.2f %9.2f %9.2f %9.2f\n", name[v], med[0][v],
		       med[1][v], med[2][v], a[0], a[1], a[2], a[2] - a[0], b[0], b[1], b[2], b[2] - b[0]);
	}
	printf("# replace over exitsled: leaf %.2f, rec16 %.2f, nest4 %.2f ns a call (fastest rounds: %.2f, %.2f, %.2f)\n",
	       med[0][3] - med[0][2], med[1][3] - med[1][2], med[2][3] - med[2][2], min[0][3] - min[0][2],
	       min[1][3] - min[1][2], min[2][3] - min[2][2]);
	return 0;
}
