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


/* NAME(rdi, ...): the x87/SSE state saved on a 64-byte aligned stack area,
 * INNER(rdi, area) called (the area's address in rsi: the xmm registers the
 * program had, in the layout of struct _libc_fpstate), the state put back. */
#define FLOAT_THUNK(name, inner)                                                                         \
	__asm__(".text\n"                                                                                \
	        ".globl " #name "\n"                                                                     \
	        ".hidden " #name "\n"                                                                    \
	        ".type " #name ",@function\n" #name ":\n"                                               \
	        "  push %rbp\n"                                                                          \
	        "  mov %rsp, %rbp\n"                                                                     \
	        "  sub $576, %rsp\n"                                                                     \
	        "  and $-64, %rsp\n"                                                                     \
	        "  fxsave64 (%rsp)\n"                                                                    \
	        "  mov %rsp, %rsi\n"                                                                     \
	        "  call " #inner "\n"                                                                    \
	        "  fxrstor64 (%rsp)\n"                                                                   \
	        "  leave\n"                                                                              \
	        "  ret\n"                                                                                \
	        ".size " #name ", .-" #name "\n")

RT_HIDDEN uint64_t pa_float_account(struct pa_var *v, uint64_t bits);
RT_HIDDEN int pa_float_eval_in(struct pa_feval *a, const struct _libc_fpstate *fx);
FLOAT_THUNK(pa_float_eval, pa_float_eval_in);

/* pa_float_hit's bits arrive in rsi, which the thunk uses: a thunk of its own. */
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

/* --- assertions with floating point ----------------------------------------
 * probes.c's var_eval over values that carry their kind, with expr.c's
 * rules: an operator with a floating operand works on long doubles,
 * comparisons and ! give integers, % of floating values and a division by
 * zero (of either kind) make the hit unavailable.  The same bounds. */
struct fval {
	int fl;
	int64_t i;
	long double f;
};

static long double as_f(const struct fval *v)
{
	return v->fl ? v->f : (long double)v->i;
}

static int truth(const struct fval *v)
{
	return v->fl ? v->f != 0 : v->i != 0;
}

RT_HIDDEN int pa_float_eval_in(struct pa_feval *a, const struct _libc_fpstate *fx)
{
	const struct pa_var *v = a->v;
	struct fval st[PA_VAR_STACK], y;
	int n = 0;
	uint32_t read = 0, np = v->nprog;
	const struct _libc_fpstate *fp = a->fp ? a->fp : fx; /* the program's xmm registers */
	a->mask = 0;
	if (np > PA_VAR_PROG_MAX || !a->regs)
		return -2;
	for (uint32_t i = 0; i < np; i++) {
		const struct pa_vinsn *in = &v->prog[i];
		uint64_t u;
		switch (in->op) {
		case PA_V_PUSH: case PA_V_REG: case PA_V_FPUSH:
			if (n == PA_VAR_STACK)
				return -2;
			st[n] = (struct fval){ 0, 0, 0 };
			if (in->op == PA_V_PUSH) {
				st[n].i = in->k;
			} else if (in->op == PA_V_FPUSH) {
				union { long double f; struct { uint64_t m; uint16_t se; } b; } c = { 0 };
				c.b.m = (uint64_t)in->k;
				c.b.se = (uint16_t)(in->pad[0] | in->pad[1] << 8);
				st[n].fl = 1;
				st[n].f = c.f;
			} else if (in->a >= 17 && in->a <= 32) {
				const uint32_t *e = fp->_xmm[in->a - 17].element;
				st[n].i = (int64_t)(e[0] | (uint64_t)e[1] << 32);
			} else if (pa_var_reg(in->a, a->regs, a->sp, a->pc, &u)) {
				return -2;
			} else {
				st[n].i = (int64_t)u;
			}
			n++;
			break;
		case PA_V_FEXT: {
			if (n < 1 || st[n - 1].fl || (in->a != 4 && in->a != 8))
				return -2;
			uint64_t b = (uint64_t)st[n - 1].i;
			st[n - 1].fl = 1;
			if (in->a == 4) {
				union f32 f = { .u = (uint32_t)b };
				st[n - 1].f = f.f;
			} else {
				union f64 d = { .u = b };
				st[n - 1].f = d.d;
			}
			break;
		}
		case PA_V_ADD:
			if (n < 1 || st[n - 1].fl)
				return -2;
			st[n - 1].i = (int64_t)((uint64_t)st[n - 1].i + (uint64_t)in->k);
			break;
		case PA_V_DEREF: {
			uint32_t sz = in->a & 15u;
			if (n < 1 || st[n - 1].fl || (sz != 1 && sz != 2 && sz != 4 && sz != 8))
				return -2;
			if ((read += sz) > PA_VAR_READ_MAX)
				return -2;
			uint64_t val = 0;
			if (pa_var_read((uint64_t)st[n - 1].i, &val, sz, a->sp, (in->a & 0x40) != 0))
				return -1;
			if ((in->a & 0x80) && sz < 8) {
				int sh = 64 - 8 * (int)sz;
				val = (uint64_t)((int64_t)(val << sh) >> sh);
			}
			st[n - 1].i = (int64_t)val;
			break;
		}
		case PA_V_NOVALUE:
			return 1;
		case PA_V_EXT: {
			uint32_t sz = in->a & 15u;
			if (n < 1 || st[n - 1].fl || (sz != 1 && sz != 2 && sz != 4 && sz != 8))
				return -2;
			uint64_t x = (uint64_t)st[n - 1].i;
			int sh = 64 - 8 * (int)sz;
			if (sz < 8)
				x = (in->a & 0x80) ? (uint64_t)((int64_t)(x << sh) >> sh) : (x << sh) >> sh;
			st[n - 1].i = (int64_t)x;
			break;
		}
		case PA_V_SAVE:
			if (n < 1 || in->a >= PA_VAR_SAVE)
				return -2;
			if (st[n - 1].fl) {
				union f64 d = { .d = (double)st[n - 1].f }; /* a float variable's: exact */
				a->saved[in->a] = (int64_t)d.u;
			} else {
				a->saved[in->a] = st[n - 1].i;
			}
			a->mask |= 1u << in->a;
			break;
		case PA_V_NEG:
			if (n < 1)
				return -2;
			if (st[n - 1].fl)
				st[n - 1].f = -st[n - 1].f;
			else
				st[n - 1].i = (int64_t)(0 - (uint64_t)st[n - 1].i);
			break;
		case PA_V_LNOT: case PA_V_BOOL:
			if (n < 1)
				return -2;
			st[n - 1] = (struct fval){ 0, in->op == PA_V_LNOT ? !truth(&st[n - 1]) : truth(&st[n - 1]), 0 };
			break;
		case PA_V_PLUS: case PA_V_MINUS: case PA_V_MUL: case PA_V_DIV: case PA_V_MOD:
		case PA_V_EQ: case PA_V_NE: case PA_V_LT: case PA_V_LE: case PA_V_GT: case PA_V_GE: {
			if (n < 2)
				return -2;
			y = st[--n];
			struct fval *x = &st[n - 1];
			int fl = x->fl || y.fl;
			long double fa = as_f(x), fb = as_f(&y);
			int64_t ia = x->i, ib = y.i, r;
			switch (in->op) {
			case PA_V_EQ: r = fl ? fa == fb : ia == ib; break;
			case PA_V_NE: r = fl ? fa != fb : ia != ib; break;
			case PA_V_LT: r = fl ? fa < fb : ia < ib; break;
			case PA_V_LE: r = fl ? fa <= fb : ia <= ib; break;
			case PA_V_GT: r = fl ? fa > fb : ia > ib; break;
			case PA_V_GE: r = fl ? fa >= fb : ia >= ib; break;
			default: r = -1; break;
			}
			if (r >= 0) {
				*x = (struct fval){ 0, r, 0 };
				break;
			}
			if ((in->op == PA_V_DIV || in->op == PA_V_MOD) && (fl ? fb == 0 : ib == 0))
				return -3;
			if (fl) {
				if (in->op == PA_V_MOD)
					return -2; /* % of floating values: ptrace says so, the hit unavailable */
				*x = (struct fval){ 1, 0, in->op == PA_V_PLUS ? fa + fb : in->op == PA_V_MINUS ? fa - fb
				                          : in->op == PA_V_MUL ? fa * fb : fa / fb };
			} else {
				uint64_t ua = (uint64_t)ia, ub = (uint64_t)ib;
				x->i = in->op == PA_V_PLUS ? (int64_t)(ua + ub) : in->op == PA_V_MINUS ? (int64_t)(ua - ub)
				       : in->op == PA_V_MUL ? (int64_t)(ua * ub)
				       : in->op == PA_V_DIV ? (ia == INT64_MIN && ib == -1 ? ia : ia / ib)
				       : (ia == INT64_MIN && ib == -1 ? 0 : ia % ib);
			}
			break;
		}
		case PA_V_JZ: case PA_V_JNZ: {
			if (n < 1 || in->k <= 0 || (uint64_t)in->k > np - i)
				return -2;
			int t = truth(&st[n - 1]);
			if (t == (in->op == PA_V_JNZ)) {
				st[n - 1] = (struct fval){ 0, t, 0 };
				i += (uint32_t)in->k - 1;
			} else {
				n--;
			}
			break;
		}
		default: /* the DWARF stack operations come before a variable's value, never on floats */
			return -2;
		}
	}
	if (n < 1)
		return -2;
	a->x = truth(&st[n - 1]);
	return 0;
}
