/* var_hist.h — the log2 histogram of variable values, shared by the var
 * probes' statistics (src/probe/kind_var.c) and the agent that keeps them
 * inside the target (src/rt/probes.c, built without floating point).
 * Buckets: 64 = 0; 65+k = [2^k, 2^(k+1)); 63-k = (-2^(k+1), -2^k]. */
#ifndef SONDE_COMMON_VAR_HIST_H
#define SONDE_COMMON_VAR_HIST_H

#include <stdint.h>

#define VAR_HIST_BUCKETS 130

static inline int var_hist_bucket_i64(int64_t v)
{
	if (!v)
		return 64;
	uint64_t a = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
	int k = 63 - __builtin_clzll(a);
	return v < 0 ? 63 - k : 65 + k;
}

/* The bucket of a double given by its bits, as kind_var.c's bucket() puts
 * it (|v| < 1 in the smallest magnitude bucket, NaN with 0), in integers
 * only (the agent has no floating point). */
static inline int var_hist_bucket_f64(uint64_t bits)
{
	int neg = (int)(bits >> 63), e = (int)(bits >> 52 & 0x7ff) - 1023;
	uint64_t mag = bits & ~(1ull << 63);
	if (!mag || mag > 0x7ff0000000000000ull) /* zero, NaN */
		return 64;
	int k = e < 0 ? -1 : e > 63 ? 63 : e;
	if (k < 0)
		return neg ? 63 : 65;
	return neg ? 63 - k : 65 + k;
}

#endif
