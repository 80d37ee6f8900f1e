/* probe_float.c — the statistics of floating-point var probes on the agent
 * (a float or double in memory or in an xmm register; src/rt/probes.c reads
 * its bits with the bytecode as for an integer).  The only code of the agent
 * built with floating point: probes.c reaches it through pa_float_hit, which
 * saves the x87 and SSE state of the program (fxsave: the registers a
 * trampoline does not save) around it, so the cost is paid at float sites
 * only.  No libc here (its memcpy may use AVX and end with vzeroupper, which
 * the state saved does not cover): type punning through unions.
 *
 * The statistics are kind_var.c's: min, max, last, the sum in long double in
 * the order of the hits (a per-site lock, not atomics), the log2 histogram.
 * A thread waits for another's update (a few instructions; it yields the CPU
 * when the other was preempted); a hit in a signal handler that interrupted
 * this thread's own update cannot: its value is counted in flost. */
#include "rt/probe_float.h"

#include "common/var_hist.h"
#include "rt/rt.h"

#include <sched.h>

union f32 { float f; uint32_t u; };
static __thread int holding __attribute__((tls_model("initial-exec"))); /* this thread is in an update */
union f64 { double d; uint64_t u; };

RT_HIDDEN uint64_t pa_float_account(struct pa_var *v, uint64_t bits);

/* rdi, rsi as for pa_float_account; the x87/SSE state saved on a 64-byte
 * aligned stack area, pa_float_account called, the state put back. */
__asm__(".text\n"
        ".globl pa_float_hit\n"
        ".hidden pa_float_hit\n"
        ".type pa_float_hit,@function\n"
        "pa_float_hit:\n"
        "  push %rbp\n"
        "  mov %rsp, %rbp\n"
        "  sub $576, %rsp\n"
        "  and $-64, %rsp\n"
        "  fxsave64 (%rsp)\n"
        "  call pa_float_account\n"
        "  fxrstor64 (%rsp)\n"
        "  leave\n"
        "  ret\n"
        ".size pa_float_hit, .-pa_float_hit\n");

RT_HIDDEN uint64_t pa_float_account(struct pa_var *v, uint64_t bits)
{
	union f64 x;
	if (v->size == 4) {
		union f32 f = { .u = (uint32_t)bits };
		x.d = f.f;
	} else {
		x.u = bits;
	}
	if (holding) { /* a signal handler's hit inside this thread's own update: it cannot wait */
		__atomic_fetch_add(&v->flost, 1, __ATOMIC_RELAXED);
		return x.u;
	}
	holding = 1;
	/* another thread's update is a few instructions, unless it was preempted */
	for (int spins = 0; __atomic_exchange_n(&v->flock, 1, __ATOMIC_ACQUIRE); spins++)
		if (spins > 64)
			sched_yield();
	uint64_t n = v->count;
	if (!n || x.d < v->fmin)
		v->fmin = x.d;
	if (!n || x.d > v->fmax)
		v->fmax = x.d;
	v->fsum += x.d;
	v->flast = x.d;
	__atomic_fetch_add(&v->hist[var_hist_bucket_f64(x.u)], 1, __ATOMIC_RELAXED);
	__atomic_store_n(&v->count, n + 1, __ATOMIC_RELEASE);
	__atomic_store_n(&v->flock, 0, __ATOMIC_RELEASE);
	holding = 0;
	return x.u;
}
