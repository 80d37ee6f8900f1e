/* probe_inline.c — scale() is inlined into three callers (left, right, and twice in twice()) by
 * gcc/clang -O2; at the MARK_INLINE line its parameter x is in a register and
 * its local cell, whose address escapes, on the caller's stack (DW_OP_fbreg
 * on the caller's frame base).  The program prints count, min, max and sum of
 * x and of cell at that line. */
#include <stdio.h>
#include <stdlib.h>

#define STATS(p) static long p##_n, p##_min = 1L << 62, p##_max = -(1L << 62), p##_sum
STATS(x);
STATS(cell);
static volatile long sink;

#define ADD(p, v) do { p##_n++; p##_sum += (v); if ((v) < p##_min) p##_min = (v); if ((v) > p##_max) p##_max = (v); } while (0)
#define SHOW(p) printf(#p " count %ld min %ld max %ld sum %ld\n", p##_n, p##_min, p##_max, p##_sum)

static __attribute__((noinline)) void bump(long *c)
{
	*c += 1;
}

static __attribute__((noinline)) void note(long x, long cell)
{
	ADD(x, x);
	ADD(cell, cell);
}

static inline __attribute__((always_inline)) long scale(long x)
{
	long cell = x * x - x;
	bump(&cell);
	note(x, cell); /* MARK_INLINE */
	return cell + x;
}

__attribute__((noinline)) long left(long i) { return scale(i + 1) * 2; }
__attribute__((noinline)) long right(long i) { return scale(2 * i + 5) - 1; }
__attribute__((noinline)) long twice(long i) { return scale(i + 2) ^ scale(3 * i); }

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 300;
	long acc = 0;
	for (int i = 0; i < n; i++)
		acc += i % 3 == 0 ? left(i) : i % 3 == 1 ? right(i) : twice(i);
	printf("acc %ld\n", acc);
	SHOW(x);
	SHOW(cell);
	return 0;
}
