/* remote_record.c — `sonde record --target`: the calls of a remote target's
 * functions, timed by the target's own clock, written as a trace recording
 * by probe/calltrace.c (the one writer of a watched target's calls).
 *
 * The calls come from the remote engine's func probes (kind_remote.c), one per
 * chosen function: rrec_enter at each entry whose return can be caught,
 * rrec_return at each matched return (a tail call returns two frames at
 * one address: calltrace's stack of frames sorts them out).
 *
 * Time: a counter of the target read with `m` once per stop (rrec_now), never
 * sonde's clock, so the round trips of the stops are not in it as long as
 * the counter stops with the core (QEMU's virtual clock does; a real core's
 * DWT and SysTick do when the debugger halts it; docs/REMOTE.md).  Sources:
 *   ADDR@HZ     a free-running 32-bit up counter in memory (the low word of
 *               RISC-V's mtime, a board timer; RV32's default is the CLINT
 *               mtime of QEMU's virt board, 0x0200bff8@10000000)
 *   dwt@HZ      Cortex-M DWT_CYCCNT (enabled for the session if the core has
 *               one and it is off; put back at the end)
 *   systick@HZ  Cortex-M SysTick, a 24-bit down counter (enabled with the full
 *               reload if off, its registers put back at the end)
 * Counters are unwrapped between stops (one wrap at most between two reads).
 * Recorded ticks are counter ticks times an integer k that brings them near
 * 1 per ns, since the readers want 0.01 < ticks_per_ns < 100. */
#include "probe/remote/remote_run.h"

#include "probe/calltrace.h"

#include "probe/engine.h"
#include "probe/probe_engine.h"

#include <fnmatch.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include "common/clock.h"
#include "common/format.h"
#include "common/json.h"
#include "common/func_id.h"
#include "common/trace_enc.h"
#include "record/record.h"
#include "record/recorder.h"
#include "sym/sym.h"


/* Cortex-M system registers (ARMv7-M ARM, C1.6 and B3.3). */
#define DWT_CTRL 0xE0001000u
#define DWT_CYCCNT 0xE0001004u
#define DEMCR 0xE000EDFCu
#define SYST_CSR 0xE000E010u
#define SYST_RVR 0xE000E014u
#define SYST_CVR 0xE000E018u

enum { SRC_MMIO, SRC_DWT, SRC_SYSTICK };

struct rrec {
	struct calltrace ct;
	char exe[REC_PATH_MAX];
	char dir[PATH_MAX];
	/* the functions, by run-time entry address (sorted) */
	uint64_t *fn;          /* run-time addresses */
	int nfn;
	uint64_t bias;
	/* the clock */
	int src;
	uint32_t addr;         /* SRC_MMIO */
	uint64_t hz, k;
	uint32_t last;         /* the counter at the last read */
	uint32_t modulus;      /* SysTick: reload + 1 */
	uint64_t total;        /* counter ticks since the first read */
	int fresh;             /* total is this stop's time */
	int based;             /* last holds a reading taken after the target ran */
	int restore;           /* registers to put back: 1 DWT, 2 SysTick */
	uint32_t saved[3];
	uint64_t untimed;
	int read_failed;
};

static int rd32(struct rsess *s, uint32_t addr, uint32_t *v)
{
	uint8_t b[4];
	if (remote_read(&s->c, addr, b, 4))
		return -1;
	*v = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
	return 0;
}

static int wr32(struct rsess *s, uint32_t addr, uint32_t v)
{
	uint8_t b[4] = { (uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24) };
	return remote_write(&s->c, addr, b, 4);
}

static int raw_read(struct rsess *s, struct rrec *r, uint32_t *v)
{
	switch (r->src) {
	case SRC_DWT: return rd32(s, DWT_CYCCNT, v);
	case SRC_SYSTICK:
		if (rd32(s, SYST_CVR, v))
			return -1;
		*v &= 0xffffff;
		return 0;
	default: return rd32(s, r->addr, v);
	}
}

/* A reading v of the counter after the last one: the ticks between them
 * added (one wrap at most; a reading a little before the last one, which
 * a trampoline's event and a stop's read may give, adds nothing). */
static void advance(struct rrec *r, uint32_t v)
{
	if (!r->based) {
		r->last = v;       /* the first reading after the target ran: time 0 */
		r->based = 1;
		return;
	}
	uint64_t d;
	if (r->src == SRC_SYSTICK) {
		v &= 0xffffff;
		d = (uint64_t)((r->last + r->modulus - v) % r->modulus);
		if (d > r->modulus - r->modulus / 16)
			return;
	} else {
		d = (uint32_t)(v - r->last);
		if (d > 0xf0000000u)
			return;
	}
	r->total += d;
	r->last = v;
}

/* The target's time now, in recorded ticks (once per stop). */
static uint64_t rrec_now(struct rsess *s, struct rrec *r)
{
	if (!r->fresh) {
		uint32_t v;
		if (raw_read(s, r, &v))
			r->read_failed++;  /* the time of the last read stands */
		else
			advance(r, v);
		r->fresh = 1;
	}
	return r->ct.t0 + r->total * r->k;
}

/* --target-clock: "ADDR@HZ", "dwt@HZ", "systick@HZ". */
static int parse_clock(struct rrec *r, const char *spec, char *err, size_t n)
{
	const char *at = strchr(spec, '@');
	char *end;
	if (!at || !at[1])
		goto bad;
	unsigned long long hz = strtoull(at + 1, &end, 0);
	if (*end || hz < 1000 || hz > 10000000000ull)
		goto bad;
	r->hz = hz;
	size_t len = (size_t)(at - spec);
	if (len == 3 && !strncmp(spec, "dwt", 3)) {
		r->src = SRC_DWT;
	} else if (len == 7 && !strncmp(spec, "systick", 7)) {
		r->src = SRC_SYSTICK;
	} else {
		unsigned long long a = strtoull(spec, &end, 0);
		if (end != at || a > 0xfffffffcull || (a & 3))
			goto bad;
		r->src = SRC_MMIO;
		r->addr = (uint32_t)a;
	}
	return 0;
bad:
	snprintf(err, n, "invalid --target-clock '%s' (ADDR@HZ: a 32-bit up counter in the target's memory, "
	         "dwt@HZ or systick@HZ on a Cortex-M; HZ its frequency, at least 1000)", spec);
	return -1;
}

int rrec_clock_valid(const char *spec, char *err, size_t n)
{
	struct rrec r;
	memset(&r, 0, sizeof r);
	return parse_clock(&r, spec, err, n);
}

/* Start the clock chosen: check it, switch it on for the session if it is
 * off (what was there is put back by rrec_leave), take the first reading. */
static int clock_start(struct rsess *s, struct rrec *r, const char *target, char *err, size_t n)
{
	uint32_t v = 0, w;
	if (r->src == SRC_DWT) {
		if (rd32(s, DWT_CTRL, &v) || !v || (v & (1u << 25))) {
			snprintf(err, n, "%s: the core has no DWT cycle counter (DWT_CTRL reads 0x%08x); give "
			         "--target-clock systick@HZ or ADDR@HZ", target, v);
			return -1;
		}
		if (!(v & 1)) {
			if (rd32(s, DEMCR, &w))
				goto fail;
			r->saved[0] = v;
			r->saved[1] = w;
			r->restore = 1;
			if (wr32(s, DEMCR, w | 1u << 24) || wr32(s, DWT_CTRL, v | 1) || rd32(s, DWT_CTRL, &v))
				goto fail;
			if (!(v & 1)) {
				snprintf(err, n, "%s: the stub did not switch the DWT cycle counter on (its writes to the "
				         "core's registers were ignored); give --target-clock ADDR@HZ", target);
				return -1;
			}
		}
	} else if (r->src == SRC_SYSTICK) {
		uint32_t csr, rvr;
		if (rd32(s, SYST_CSR, &csr) || rd32(s, SYST_RVR, &rvr))
			goto fail;
		if (!(csr & 1)) {
			r->saved[0] = csr;
			r->saved[1] = rvr;
			r->restore = 2;
			rvr = 0xffffff;
			/* the full reload, the core clock, no interrupt */
			if (wr32(s, SYST_RVR, rvr) || wr32(s, SYST_CVR, 0) || wr32(s, SYST_CSR, 5) || rd32(s, SYST_CSR, &csr))
				goto fail;
			if (!(csr & 1)) {
				snprintf(err, n, "%s: the stub did not switch SysTick on (its writes to the core's registers "
				         "were ignored: QEMU's stub ignores writes to devices); give --target-clock ADDR@HZ",
				         target);
				return -1;
			}
		}
		r->modulus = (rvr & 0xffffff) + 1;
	}
	/* Readable now; the base is taken at the first stop after the target
	 * ran (rrec_now), since a counter may not run before the machine has
	 * (QEMU's mps2 FPGA counter reads 0 before it starts, -1 just after). */
	if (raw_read(s, r, &r->last))
		goto fail;
	return 0;
fail:
	snprintf(err, n, "%s: cannot read the target's clock (%s)", target, s->c.err);
	return -1;
}

static int clock_put_back(struct rsess *s, struct rrec *r)
{
	int rc = 0;
	if (r->restore == 1)
		rc = wr32(s, DWT_CTRL, r->saved[0]) || wr32(s, DEMCR, r->saved[1]);
	else if (r->restore == 2)
		rc = wr32(s, SYST_CSR, r->saved[0]) || wr32(s, SYST_RVR, r->saved[1]);
	r->restore = 0;
	return rc ? -1 : 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

int rrec_open(struct rsess *s, const struct probe_opts *o, uint64_t **addrs, int *n, char *err, size_t en)
{
	const struct rarch *a = s->c.arch;
	if (a != &rarch_arm && a != &rarch_riscv32) {
		snprintf(err, en, "%s: record --target profiles Cortex-M and RV32 firmware (the target's own clock is "
		         "read at each stop); this target is %s: use sonde probe --target -e func:NAME", o->target, a->name);
		return -1;
	}
	struct rrec *r = calloc(1, sizeof *r);
	if (!r) {
		snprintf(err, en, "out of memory");
		return -1;
	}
	s->rec = r;
	const char *clk = o->target_clock;
	if (!clk && a == &rarch_riscv32)
		clk = "0x0200bff8@10000000";
	if (!clk) {
		snprintf(err, en, "%s: give the target's time source and its frequency: --target-clock dwt@HZ (the "
		         "DWT cycle counter), systick@HZ or ADDR@HZ (a 32-bit up counter; QEMU's mps2 boards: "
		         "0x40028018@25000000, the FPGA counter)", o->target);
		goto fail;
	}
	if (parse_clock(r, clk, err, en))
		goto fail;
	r->k = r->hz >= 1000000000ull ? 1 : 1000000000ull / r->hz;
	if (!realpath(o->exe, r->exe))
		snprintf(r->exe, sizeof r->exe, "%s", o->exe);
	/* The functions: every named one the symbol table gives (sorted, one
	 * per address), but those not entered by a call (the reset handler). */
	struct sym_fn *f;
	ssize_t nf = sym_functions(s->sym, &f);
	if (nf < 0) {
		snprintf(err, en, "out of memory");
		goto fail;
	}
	r->fn = malloc(sizeof *r->fn * (size_t)(nf ? nf : 1));
	for (ssize_t i = 0; r->fn && i < nf; i++)
		if (f[i].name && !f[i].not_entry && calltrace_chosen(f[i].name, o->filters, o->nfilters))
			r->fn[r->nfn++] = f[i].addr + s->bias;
	free(f);
	if (!r->fn) {
		snprintf(err, en, "out of memory");
		goto fail;
	}
	if (!r->nfn) {
		snprintf(err, en, "%s: no function to record%s", o->exe, o->nfilters ? " (none matches the -F/-N filters)"
		         : " (no function symbols)");
		goto fail;
	}
	qsort(r->fn, (size_t)r->nfn, sizeof *r->fn, cmp_u64);
	r->bias = s->bias;
	if (clock_start(s, r, o->target, err, en))
		goto fail;
	if (calltrace_open(&r->ct, o->remote_record, 1, err, en)) {
		clock_put_back(s, r);
		goto fail;
	}
	snprintf(r->dir, sizeof r->dir, "%s", o->remote_record);
	if (!(*addrs = malloc(sizeof **addrs * (size_t)r->nfn))) {
		calltrace_abort(&r->ct);
		clock_put_back(s, r);
		snprintf(err, en, "out of memory");
		goto fail;
	}
	memcpy(*addrs, r->fn, sizeof **addrs * (size_t)r->nfn);
	*n = r->nfn;
	return 0;
fail:
	free(r->fn);
	free(r);
	s->rec = NULL;
	return -1;
}

void rrec_enter(struct rsess *s, uint64_t pc, uint64_t sp, uint64_t ret)
{
	struct rrec *r = s->rec;
	if (!r)
		return;
	int lo = 0, hi = r->nfn - 1, at = -1;
	while (lo <= hi) {
		int mid = (lo + hi) / 2;
		if (r->fn[mid] == pc) {
			at = mid;
			break;
		}
		if (r->fn[mid] < pc)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	if (at < 0)
		return;
	calltrace_enter(&r->ct, 0, rrec_now(s, r), SONDE_FUNC(0, (uint32_t)at), sp, ret);
}

int rrec_clock_addr(struct rsess *s, uint64_t *addr)
{
	struct rrec *r = s->rec;
	if (!r)
		return -1;
	*addr = r->src == SRC_DWT ? DWT_CYCCNT : r->src == SRC_SYSTICK ? SYST_CVR : r->addr;
	return 0;
}

#define RING_FRAME UINT64_MAX   /* rrframe.ret of a frame whose entry came from the target's ring */

void rrec_ring_event(struct rsess *s, uint32_t w, uint32_t v)
{
	struct rrec *r = s->rec;
	uint32_t id = w >> 1;
	if (!r || id >= (uint32_t)r->nfn)
		return;
	advance(r, v);
	uint64_t t = r->ct.t0 + r->total * r->k;
	if (!(w & 1)) {
		calltrace_enter(&r->ct, 0, t, SONDE_FUNC(0, id), 0, RING_FRAME);
		return;
	}
	/* The innermost frame of that function entered in the target; frames
	 * above it never returned (a longjmp): closed with it. */
	const struct ct_ctx *x = &r->ct.ctx[0];
	int i = x->depth - 1;
	while (i >= 0 && !(x->st[i].ret == RING_FRAME && x->st[i].func == id))
		i--;
	calltrace_return(&r->ct, 0, i, t);
}

void rrec_untimed(struct rsess *s)
{
	if (s->rec)
		s->rec->untimed++;
}

void rrec_return(struct rsess *s, uint64_t pc, uint64_t sp)
{
	struct rrec *r = s->rec;
	if (!r)
		return;
	const struct ct_ctx *x = &r->ct.ctx[0];
	int i = x->depth - 1;
	while (i >= 0 && !(x->st[i].ret == pc && x->st[i].sp + (uint64_t)s->c.arch->ret_sp_adj == sp))
		i--;
	if (i < 0)
		return;  /* already closed at this stop (another probe's frame of the same return) */
	/* frames above it that never returned (longjmp): closed with it */
	calltrace_return(&r->ct, 0, i, rrec_now(s, r));
}

void rrec_resume(struct rsess *s)
{
	if (s->rec)
		s->rec->fresh = 0;
}

int rrec_leave(struct rsess *s)
{
	struct rrec *r = s->rec;
	if (!r)
		return 0;
	calltrace_time(&r->ct, rrec_now(s, r));
	return clock_put_back(s, r);
}

static void free_rec(struct rsess *s)
{
	struct rrec *r = s->rec;
	s->rec = NULL;
	free(r->fn);
	free(r);
}

void rrec_abandon(struct rsess *s)
{
	struct rrec *r = s->rec;
	if (!r)
		return;
	clock_put_back(s, r);
	calltrace_abort(&r->ct);
	free_rec(s);
}

static void meta_num(struct meta_buf *mb, const char *key, uint64_t v)
{
	char num[32];
	snprintf(num, sizeof num, "%llu", (unsigned long long)v);
	meta_add(mb, key, num);
}

/* DIR/remote.json: how each function was timed (in the target, or by
 * breakpoints and why) and the ring's figures. */
static void write_paths(struct rsess *s, struct rrec *r, int in_target, uint64_t events, uint64_t fills,
                        uint64_t lost, int complete)
{
	char path[PATH_MAX + 16];
	snprintf(path, sizeof path, "%s/" SONDE_FILE_REMOTE, r->dir);
	FILE *f = fopen(path, "w");
	if (!f)
		return;
	struct json j;
	json_init(&j, f, 1);
	json_obj_begin(&j, NULL);
	json_int(&j, "functions_in_target", in_target);
	json_int(&j, "functions_on_breakpoints", r->nfn - in_target);
	json_uint(&j, "ring_events", events);
	json_uint(&j, "ring_fills", fills);
	json_uint(&j, "calls_not_hooked", lost);
	json_bool(&j, "ring_complete", complete);
	json_arr_begin(&j, "functions");
	for (int i = 0; i < r->nfn; i++) {
		const char *why = rrm_path(s, i);
		char a[24];
		snprintf(a, sizeof a, "0x%llx", (unsigned long long)(r->fn[i] - r->bias));
		json_obj_begin(&j, NULL);
		json_str(&j, "name", rs_func_name(s, r->fn[i]));
		json_str(&j, "addr", a);
		json_str(&j, "path", why ? "breakpoints" : "in_target");
		if (why)
			json_str(&j, "why", why);
		json_obj_end(&j);
	}
	json_arr_end(&j);
	json_obj_end(&j);
	json_end(&j);
	fclose(f);
}

int rrec_close(struct rsess *s, char *err, size_t n)
{
	struct rrec *r = s->rec;
	if (!r)
		return 0;
	struct engine *e = s->e;
	if (n)
		err[0] = 0;
	int in_target, complete;
	uint64_t events, fills, lost;
	rrm_figures(s, &in_target, &events, &fills, &lost, &complete);
	e->recorded.calls = r->ct.calls;
	e->recorded.untimed = r->untimed + r->ct.too_deep + lost;
	e->recorded.nfuncs = r->nfn;
	e->recorded.in_target = in_target;
	e->recorded.written = 1;
	write_paths(s, r, in_target, events, fills, lost, complete);
	/* ticks are counter ticks times k; the nanoseconds follow from HZ */
	int status = INT32_MIN;
	if (e->t.gone && e->t.status != STATUS_GONE)
		status = WIFEXITED(e->t.status) ? WEXITSTATUS(e->t.status) : -WTERMSIG(e->t.status);
	calltrace_end(&r->ct, (double)r->hz * (double)r->k / 1e9, r->exe, "sonde record --target", status,
	              e->t.gone && e->t.status == STATUS_GONE);
	struct meta_buf *mb = &r->ct.rec.meta;
	meta_add(mb, "target_clock", r->src == SRC_DWT ? "dwt" : r->src == SRC_SYSTICK ? "systick" : "memory");
	meta_num(mb, "target_clock_hz", r->hz);
	if (r->src == SRC_MMIO) {
		char a[24];
		snprintf(a, sizeof a, "0x%08x", r->addr);
		meta_add(mb, "target_clock_addr", a);
	}
	meta_num(mb, "remote_functions", (uint64_t)r->nfn);
	if (r->untimed || r->ct.too_deep)
		meta_num(mb, "remote_untimed_calls", r->untimed + r->ct.too_deep);
	if (r->read_failed)
		meta_num(mb, "remote_clock_read_failures", (uint64_t)r->read_failed);
	if (r->ct.abnormal)
		meta_num(mb, "remote_frames_not_returned", r->ct.abnormal);
	meta_num(mb, "remote_functions_in_target", (uint64_t)in_target);
	if (in_target) {
		meta_num(mb, "remote_ring_events", events);
		meta_num(mb, "remote_ring_fills", fills);
		if (!complete)
			meta_add(mb, "remote_ring_complete", "0");
	}
	for (int i = 0; i < r->nfn; i++)
		r->fn[i] -= r->bias;  /* link-time addresses */
	struct calltrace_target tg = {
		.exe = r->exe, .pid = e->t.pid, .status = status, .funcs = r->fn, .nfuncs = (uint32_t)r->nfn,
		.bias = r->bias,
	};
	int rc = calltrace_write(&r->ct, &tg, err, n);
	free_rec(s);
	return rc;
}
