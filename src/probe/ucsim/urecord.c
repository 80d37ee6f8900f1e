/* urecord.c — the 8051's function profile through ucsim's console (urecord.h).
 *
 * At the stop on a function's entry the return address is read from the
 * stack (ulink_ret_addr: the two bytes at SP, the low byte pushed first)
 * and a breakpoint put there (kept for the next call from the same place).
 * A call is a frame (function, SP, return address); the stop at a return
 * address closes the innermost frame whose return address it is with SP
 * two below the entry's (RET and RETI pop two bytes).  A function that was
 * not called (the .ihx has no LCALL or ACALL right before the address at
 * SP: main, which SDCC's start-up code enters with LJMP) has no return to
 * catch: it is open until the end, or until a frame below it returns.
 *
 * Contexts: the main code (0) and the interrupts (1).  An interrupt
 * handler's entry starts a frame of context 1 whose "return address" is the
 * interrupted pc; while one is open every call is of context 1.  When the
 * last one returns, context 0's innermost frame gets the interval as
 * off-CPU time (TRX_OFFCPU): the main code did not run meanwhile.  A
 * handler of the high priority that interrupts one of the low priority is
 * nested in it (one context for both).
 *
 * Time: the simulator's clock (ulink.ticks, the chip's oscillator periods)
 * times k, an integer that brings it near one recorded tick a nanosecond. */
#include "probe/ucsim/urecord.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/func_id.h"
#include "probe/calltrace.h"
#include "probe/probe_engine.h"
#include "probe/probe.h"
#include "sym/ihx.h"

#define NO_RETURN 0x10000u   /* a frame's ret that no pc equals */

struct urec {
	struct calltrace ct;
	char exe[4096];
	struct ihx_image *ihx;
	uint32_t *addr;          /* entry of function i */
	uint8_t *isr;            /* function i is an interrupt handler */
	int nfn;
	double hz;
	uint64_t k;
	int isr_depth;           /* interrupt handlers' frames open */
	uint64_t isr_start;      /* when the outermost one was entered */
	uint64_t untimed, isr_calls;
};

static void urec_free(struct urec *r)
{
	free(r->ihx);
	free(r->addr);
	free(r->isr);
	free(r);
}

struct urec *urec_open(const struct probe_opts *o, const struct cdb *cdb, double hz, char *err, size_t n)
{
	struct urec *r = calloc(1, sizeof *r);
	if (!r || !(r->ihx = malloc(sizeof *r->ihx)) || !(r->addr = calloc((size_t)cdb->nfuncs + 1, sizeof *r->addr)) ||
	    !(r->isr = calloc((size_t)cdb->nfuncs + 1, 1))) {
		if (r)
			urec_free(r);
		snprintf(err, n, "out of memory");
		return NULL;
	}
	if (!realpath(o->exe, r->exe))
		snprintf(r->exe, sizeof r->exe, "%s", o->exe);
	if (ihx_read(r->ihx, o->exe, err, n)) {
		urec_free(r);
		return NULL;
	}
	/* the .cdb's functions, sorted by entry (cdb.h), one per address */
	for (int i = 0; i < cdb->nfuncs; i++) {
		const struct cdb_func *f = &cdb->funcs[i];
		if (!f->name || !f->has_lo || (r->nfn && r->addr[r->nfn - 1] == f->lo) ||
		    !calltrace_chosen(f->name, o->filters, o->nfilters))
			continue;
		r->isr[r->nfn] = (uint8_t)(f->isr != 0);
		r->addr[r->nfn++] = f->lo;
	}
	if (!r->nfn) {
		snprintf(err, n, "%s: no function to record%s", o->exe,
		         o->nfilters ? " (none matches the -F/-N filters)" : " (no function in its .cdb)");
		urec_free(r);
		return NULL;
	}
	r->hz = hz;
	r->k = hz >= 1e9 ? 1 : (uint64_t)(1e9 / hz);
	if (calltrace_open(&r->ct, o->remote_record, 2, err, n)) {
		urec_free(r);
		return NULL;
	}
	return r;
}

int urec_nfuncs(const struct urec *r)
{
	return r->nfn;
}

uint32_t urec_func_addr(const struct urec *r, int i)
{
	return r->addr[i];
}

static uint64_t now(const struct urec *r, const struct ulink *l)
{
	return r->ct.t0 + l->ticks * r->k;
}

/* Is ret the address after a call instruction of the firmware? */
static int after_call(const struct urec *r, uint32_t ret)
{
	if (ret >= 3 && ihx_has(r->ihx, ret - 3) && r->ihx->code[ret - 3] == 0x12)
		return 1;   /* LCALL addr16 */
	if (ret >= 2 && ihx_has(r->ihx, ret - 2) && (r->ihx->code[ret - 2] & 0x1f) == 0x11)
		return 1;   /* ACALL addr11 */
	return 0;
}

void urec_entry(struct urec *r, struct ulink *l, int i, urec_place_fn place)
{
	if (i < 0 || i >= r->nfn)
		return;
	uint16_t ret;
	uint8_t sp;
	uint64_t t = now(r, l);
	uint32_t back = NO_RETURN;
	if (ulink_ret_addr(l, &ret, &sp)) {
		r->untimed++;      /* the stack could not be read: counted, its return not caught */
		sp = 0;
	} else if (r->isr[i] || after_call(r, ret)) {
		if (place(ret))
			r->untimed++;  /* no breakpoint left for its return */
		else
			back = ret;
	}
	int c = r->isr[i] || r->isr_depth ? 1 : 0;
	if (r->isr[i]) {
		if (!r->isr_depth)
			r->isr_start = t;
		r->isr_calls++;
	}
	if (calltrace_enter(&r->ct, c, t, SONDE_FUNC(0, (uint32_t)i), sp, back))
		return;
	if (r->isr[i])
		r->isr_depth++;
}

/* Does a pending frame of any context return to pc? */
static int pending_at(const struct urec *r, uint32_t pc)
{
	for (int c = 0; c < r->ct.nctx; c++)
		for (int f = 0; f < r->ct.ctx[c].depth; f++)
			if (r->ct.ctx[c].st[f].ret == pc)
				return 1;
	return 0;
}

int urec_return(struct urec *r, struct ulink *l, uint32_t pc)
{
	uint8_t sp;
	if (ulink_sp(l, &sp))
		return 0;
	uint64_t t = now(r, l);
	/* the interrupts' context first: a return there is the innermost */
	for (int c = 1; c >= 0; c--) {
		const struct ct_ctx *x = &r->ct.ctx[c];
		int f = x->depth - 1;
		while (f >= 0 && !(x->st[f].ret == pc && (uint8_t)(x->st[f].sp - 2) == sp))
			f--;
		if (f < 0)
			continue;
		int closed_isr = 0;
		for (int k = f; k < x->depth; k++)
			closed_isr += r->isr[x->st[k].func];
		calltrace_return(&r->ct, c, f, t);
		if (c == 1 && closed_isr) {
			r->isr_depth = closed_isr >= r->isr_depth ? 0 : r->isr_depth - closed_isr;
			if (!r->isr_depth)
				calltrace_offcpu(&r->ct, 0, t, (uint64_t)((double)(t - r->isr_start) / ((double)r->hz * (double)r->k / 1e9)));
		}
		break;
	}
	/* a call's return site stays for the next call from there; an
	 * interrupted pc's goes once nothing returns to it */
	return !after_call(r, pc) && !pending_at(r, pc);
}

void urec_stop(struct urec *r, const struct ulink *l)
{
	calltrace_time(&r->ct, now(r, l));
}

static void meta_num(struct meta_buf *mb, const char *key, uint64_t v)
{
	char num[32];
	snprintf(num, sizeof num, "%llu", (unsigned long long)v);
	meta_add(mb, key, num);
}

int urec_close(struct urec *r, int32_t pid, int status, int gone, uint64_t *calls, uint64_t *untimed, char *err,
               size_t n)
{
	if (n)
		err[0] = 0;
	double tpn = r->hz * (double)r->k / 1e9;
	calltrace_end(&r->ct, tpn, r->exe, "sonde record --target", status, gone);
	struct meta_buf *mb = &r->ct.rec.meta;
	meta_add(mb, "target_clock", "ucsim");
	meta_num(mb, "target_clock_hz", (uint64_t)r->hz);
	meta_num(mb, "remote_functions", (uint64_t)r->nfn);
	meta_num(mb, "remote_interrupt_calls", r->isr_calls);
	if (r->untimed || r->ct.too_deep)
		meta_num(mb, "remote_untimed_calls", r->untimed + r->ct.too_deep);
	if (r->ct.abnormal)
		meta_num(mb, "remote_frames_not_returned", r->ct.abnormal);
	uint64_t *fn = malloc(sizeof *fn * (size_t)r->nfn);
	for (int i = 0; fn && i < r->nfn; i++)
		fn[i] = r->addr[i];
	const char *base = strrchr(r->exe, '/');
	struct calltrace_target tg = {
		.exe = r->exe, .pid = pid, .status = status, .funcs = fn, .nfuncs = fn ? (uint32_t)r->nfn : 0,
		.comm = { base ? base + 1 : r->exe, "interrupts" }, .cpu_split = 1,
	};
	*calls = r->ct.calls;
	*untimed = r->untimed + r->ct.too_deep;
	int rc = calltrace_write(&r->ct, &tg, err, n);
	free(fn);
	urec_free(r);
	return rc;
}

void urec_abort(struct urec *r)
{
	calltrace_abort(&r->ct);
	urec_free(r);
}
