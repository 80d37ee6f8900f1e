/* exitsled.c — what exit sleds must keep (tests/e2e/exitsled.sh): built with
 * sonde-cc -O2 (GCC: sonde-as puts a sled before each `ret`), it prints what
 * it observes, the same recorded or not:
 *  - backtrace() from c(), called by b(), a(), main(): frame count and names;
 *  - return values in every return register: rax:rdx (a struct of two
 *    longs), xmm0 (double), xmm0:xmm1 (complex double), st0 (long double),
 *    st0:st1 (complex long double);
 *  - longjmp out of recorded frames (down(), 8 deep) to main, then calls
 *    again: their counts;
 *  - a tail call to usleep (not recorded): how long tailer() took at least,
 *    and how long main slept after it returned (not tailer's time);
 *  - its own call counts, "calls NAME N", for the recording to match.
 * `exitsled bt` stops after the backtrace part (gdb's bt test breaks in c);
 * `exitsled spin` spins in c() under b(), a(), main() (perf's test). */
#include <complex.h>
#include <execinfo.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline, noclone))
static volatile int sink;
static jmp_buf env;
static long n_a, n_b, n_c, n_down, n_after, n_ret;

static void names(void)
{
	void *pc[64];
	int n = backtrace(pc, 64);
	char **s = backtrace_symbols(pc, n);
	printf("backtrace: %d frames:", n);
	for (int i = 0; s && i < n; i++) { /* "./exitsled(c+0x1d) [0x...]": the name only */
		const char *o = strchr(s[i], '('), *e = o ? strpbrk(o, "+)") : NULL;
		printf(" %.*s", o && e && e > o + 1 ? (int)(e - o - 1) : 1, o && e && e > o + 1 ? o + 1 : "?");
	}
	printf("\n");
}

NOINLINE int c(int x)
{
	n_c++;
	if (x == 1)
		names();
	for (long i = 0; x == 99 && i < 300000000; i++) /* `exitsled spin`: a sampled profile's time */
		sink = (int)i;
	sink = x;
	return x + 1;
}
NOINLINE int b(int x) { n_b++; int r = c(x) * 2; sink = r; return r; }
NOINLINE int a(int x) { n_a++; int r = b(x) + 1; sink = r; return r; }

struct two { long lo, hi; };
NOINLINE struct two r_two(long x) { n_ret++; struct two t = { x * 3, x - 7 }; sink = (int)x; return t; }
NOINLINE double r_dbl(double x) { n_ret++; sink = (int)x; return x * 1.5; }
NOINLINE double complex r_cdbl(double x) { n_ret++; sink = (int)x; return x + 2.25 * I; }
NOINLINE long double r_ld(long double x) { n_ret++; sink = (int)x; return x / 3; }
NOINLINE long double complex r_cld(long double x) { n_ret++; sink = (int)x; return x - 0.5L * I; }

NOINLINE int down(int d)
{
	n_down++;
	if (d == 0)
		longjmp(env, 1);
	int r = down(d - 1);
	sink = r;
	return r + 1;
}
NOINLINE int after(int x) { n_after++; sink = x; return x ^ 5; }
/* a tail call to a function sonde does not record (GCC: `jmp usleep@PLT`):
 * tailer's time includes the sleep */
static long n_tailer;
NOINLINE int tailer(unsigned us) { n_tailer++; sink = (int)us; return usleep(us); }

int main(int argc, char **argv)
{
	int bt = argc > 1 && !strcmp(argv[1], "bt");
	if (argc > 1 && !strcmp(argv[1], "spin"))
		return a(99) == 0;
	int s = 0;
	for (int i = 1; i <= 3; i++)
		s += a(i);
	printf("a: %d\n", s);
	if (bt)
		return 0;
	struct two t = r_two(11);
	double complex cd = r_cdbl(4);
	long double complex cl = r_cld(10);
	printf("returns: %ld %ld %.4f %.4f%+.4fi %.6Lf %.4Lf%+.4Lfi\n", t.lo, t.hi, r_dbl(3), creal(cd), cimag(cd),
	       r_ld(1), creall(cl), cimagl(cl));
	for (int k = 0; k < 5; k++) {
		if (!setjmp(env))
			down(8);
		for (int i = 0; i < 3; i++)
			s += after(i + k);
	}
	printf("after longjmp: %d\n", s);
	for (int k = 0; k < 4; k++) {
		s += tailer(5000);
		usleep(50000); /* main's own time, not tailer's (a call sonde does not record) */
		s += after(k);
	}
	printf("tailer slept at least %d us, then main %d us\n", 4 * 5000, 4 * 50000);
	printf("calls a %ld\ncalls b %ld\ncalls c %ld\ncalls down %ld\ncalls after %ld\n", n_a, n_b, n_c, n_down, n_after);
	printf("calls r_* %ld\ncalls tailer %ld\n", n_ret, n_tailer);
	return 0;
}
