/* bench/ret_bench.c — issue 28: what the return-address replacement costs by
 * itself.  Four ways of getting control around a call, without any
 * bookkeeping or clock read, timed on the same loop:
 *   plain    the call and its `ret`
 *   sled     an entry sled's `call` to a hook that returns (sonde-cc's sled,
 *            switched on): call / ret pairs, all predicted
 *   exitsled an entry sled whose hook pushes the return address on a
 *            shadow stack (the bookkeeping both designs have) and an exit
 *            sled (a `call` before the `ret`) whose hook pops it: XRay's
 *            way, no return address replaced
 *   replace  sonde's way: the entry hook keeps the return address on a
 *            shadow stack and puts an exit trampoline's in its slot; the
 *            function's `ret` lands in the trampoline (the return-stack
 *            predictor expected the caller: a mispredicted return), which
 *            takes the real address back and jumps there
 * on a leaf called in a loop, and on a recursion 16 deep (the callers'
 * returns too).  ns per call: median of REPS rounds, variants interleaved,
 * and the fastest round (min: the least disturbed on a shared machine).
 * usage: cc -O2 bench/ret_bench.c -o ret_bench && ./ret_bench [calls] [reps] */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

uintptr_t rb_shadow[4096];
uintptr_t *rb_sp = rb_shadow;

__asm__(
	"	.text\n"
	/* hooks: the sled's target returns at once; the replacing one swaps
	 * the slot (8(%rsp) in the hook: above its own return address) */
	"rb_hook:\n"
	"	ret\n"
	"rb_enter_replace:\n"
	"	mov rb_sp(%rip), %r11\n"
	"	mov 8(%rsp), %rax\n"
	"	mov %rax, (%r11)\n"
	"	add $8, %r11\n"
	"	mov %r11, rb_sp(%rip)\n"
	"	lea rb_exit_tramp(%rip), %rax\n"
	"	mov %rax, 8(%rsp)\n"
	"	ret\n"
	"rb_enter_push:\n"
	"	mov rb_sp(%rip), %r11\n"
	"	mov 8(%rsp), %rax\n"
	"	mov %rax, (%r11)\n"
	"	add $8, %r11\n"
	"	mov %r11, rb_sp(%rip)\n"
	"	ret\n"
	"rb_exit_pop:\n"
	"	mov rb_sp(%rip), %r11\n"
	"	sub $8, %r11\n"
	"	mov %r11, rb_sp(%rip)\n"
	"	ret\n"
	"rb_exit_tramp:\n"
	"	mov rb_sp(%rip), %r11\n"
	"	sub $8, %r11\n"
	"	mov %r11, rb_sp(%rip)\n"
	"	jmp *(%r11)\n"
	/* leaves */
	"	.globl rb_leaf_plain, rb_leaf_sled, rb_leaf_exitsled, rb_leaf_replace\n"
	"	.p2align 4\n"
	"rb_leaf_plain:\n"
	"	lea 1(%rdi), %rax\n"
	"	ret\n"
	"	.p2align 4\n"
	"rb_leaf_sled:\n"
	"	call rb_hook\n"
	"	lea 1(%rdi), %rax\n"
	"	ret\n"
	"	.p2align 4\n"
	"rb_leaf_exitsled:\n"
	"	call rb_enter_push\n"
	"	lea 1(%rdi), %rax\n"
	"	call rb_exit_pop\n"
	"	ret\n"
	"	.p2align 4\n"
	"rb_leaf_replace:\n"
	"	call rb_enter_replace\n"
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
	"	call rb_hook\n"
	"	test %edi, %edi\n"
	"	je 1f\n"
	"	sub $8, %rsp\n"
	"	dec %edi\n"
	"	call rb_rec_sled\n"
	"	add $8, %rsp\n"
	"1:	ret\n"
	"	.p2align 4\n"
	"rb_rec_exitsled:\n"
	"	call rb_enter_push\n"
	"	test %edi, %edi\n"
	"	je 1f\n"
	"	sub $8, %rsp\n"
	"	dec %edi\n"
	"	call rb_rec_exitsled\n"
	"	add $8, %rsp\n"
	"1:	call rb_exit_pop\n"
	"	ret\n"
	"	.p2align 4\n"
	"rb_rec_replace:\n"
	"	call rb_enter_replace\n"
	"	test %edi, %edi\n"
	"	je 1f\n"
	"	sub $8, %rsp\n"
	"	dec %edi\n"
	"	call rb_rec_replace\n"
	"	add $8, %rsp\n"
	"1:	ret\n");

long rb_leaf_plain(long), rb_leaf_sled(long), rb_leaf_exitsled(long), rb_leaf_replace(long);
void rb_rec_plain(int), rb_rec_sled(int), rb_rec_exitsled(int), rb_rec_replace(int);

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

#define DEPTH 16
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
	static const char *name[] = { "plain", "sled", "exitsled", "replace" };
	long (*leaf[])(long) = { rb_leaf_plain, rb_leaf_sled, rb_leaf_exitsled, rb_leaf_replace };
	void (*rec[])(int) = { rb_rec_plain, rb_rec_sled, rb_rec_exitsled, rb_rec_replace };
	double tl[4][64], tr[4][64];
	for (int r = 0; r < reps; r++)
		for (int v = 0; v < 4; v++) {
			tl[v][r] = run_leaf(leaf[v], n);
			tr[v][r] = run_rec(rec[v], n);
		}
	printf("# ns per call, median of %d rounds of %ld calls (variants interleaved)\n", reps, n);
	printf("%-9s %8s %8s %12s %12s %8s %8s\n", "variant", "leaf", "rec16", "leaf-plain", "rec16-plain", "leaf/min",
	       "rec/min");
	double ml[4], mr[4], nl[4], nr[4];
	for (int v = 0; v < 4; v++) {
		qsort(tl[v], (size_t)reps, sizeof(double), cmp);
		qsort(tr[v], (size_t)reps, sizeof(double), cmp);
		ml[v] = tl[v][reps / 2];
		mr[v] = tr[v][reps / 2];
		nl[v] = tl[v][0];
		nr[v] = tr[v][0];
	}
	for (int v = 0; v < 4; v++)
		printf("%-9s %8.2f %8.2f %12.2f %12.2f %8.2f %8.2f\n", name[v], ml[v], mr[v], ml[v] - ml[0], mr[v] - mr[0],
		       nl[v], nr[v]);
	printf("# the replaced return address over the exit sled: %.2f ns a call (leaf), %.2f ns (recursion);"
	       " fastest rounds: %.2f, %.2f\n", ml[3] - ml[2], mr[3] - mr[2], nl[3] - nl[2], nr[3] - nr[2]);
	return 0;
}
