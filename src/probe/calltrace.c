/* calltrace.c — a watched target's calls as a trace recording (calltrace.h). */
#include "probe/calltrace.h"

#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/format.h"
#include "common/func_id.h"
#include "common/trace_enc.h"
#include "record/record.h"

#define CT_CHUNK 16384u
#define CT_PAYLOAD (CT_CHUNK - sizeof(struct rec_chunk))

/* Whether name is chosen by the filters: "+GLOB" (-F: only those matching
 * one), "-GLOB" (-N: not those matching one). */
int calltrace_chosen(const char *name, const char *const *filters, int nfilters)
{
	int only = 0, in = 0;
	for (int i = 0; i < nfilters; i++) {
		int m = fnmatch(filters[i] + 1, name, 0) == 0;
		if (filters[i][0] == '-' && m)
			return 0;
		if (filters[i][0] == '+') {
			only = 1;
			in |= m;
		}
	}
	return !only || in;
}

static void free_ctx(struct calltrace *ct)
{
	for (int c = 0; c < CT_MAX_CTX; c++) {
		free(ct->ctx[c].buf);
		free(ct->ctx[c].st);
		ct->ctx[c].buf = NULL;
		ct->ctx[c].st = NULL;
	}
}

int calltrace_open(struct calltrace *ct, const char *dir, int nctx, char *err, size_t n)
{
	memset(ct, 0, sizeof *ct);
	ct->nctx = nctx < 1 ? 1 : nctx > CT_MAX_CTX ? CT_MAX_CTX : nctx;
	for (int c = 0; c < ct->nctx; c++)
		if (!(ct->ctx[c].buf = malloc(CT_PAYLOAD)) || !(ct->ctx[c].st = malloc(sizeof *ct->ctx[c].st * CT_MAX_DEPTH))) {
			free_ctx(ct);
			snprintf(err, n, "out of memory");
			return -1;
		}
	if (recorder_open(&ct->rec, dir, RECORDER_EVENTS, err, n)) {
		free_ctx(ct);
		return -1;
	}
	ct->rec.zstd_level = 1;
	ct->t0 = ct->tend = ct->rec.c0.ticks;
	for (int c = 0; c < ct->nctx; c++)
		ct->ctx[c].base = ct->ctx[c].lastt = ct->t0;
	return 0;
}

static void flush_chunk(struct calltrace *ct, int c)
{
	struct ct_ctx *x = &ct->ctx[c];
	recorder_chunk_buf(&ct->rec, (uint32_t)c, x->base, &x->seq, x->buf, &x->used);
}

/* The record header: kind (TR_*) at time t; a time before the context's
 * last one (two sources of one stop) is taken as that one. */
static void put_head(struct calltrace *ct, int c, int kind, uint64_t t, size_t more)
{
	struct ct_ctx *x = &ct->ctx[c];
	if (x->used + TR_MAX_VARINT + more > CT_PAYLOAD)
		flush_chunk(ct, c);
	if (!x->used)
		x->base = x->lastt = t;
	if (t < x->lastt)
		t = x->lastt;
	x->used += (uint32_t)tr_put_varint(x->buf + x->used, (t - x->lastt) << 2 | (uint64_t)kind);
	x->lastt = t;
	x->touched = 1;
	if (t > ct->tend)
		ct->tend = t;
}

static void put_event(struct calltrace *ct, int c, int kind, uint64_t t, uint32_t func)
{
	put_head(ct, c, kind, t, TR_MAX_VARINT);
	struct ct_ctx *x = &ct->ctx[c];
	if (kind == TR_ENTER)
		x->used += (uint32_t)tr_put_varint(x->buf + x->used, func);
}

int calltrace_enter(struct calltrace *ct, int c, uint64_t t, uint32_t func, uint64_t sp, uint64_t ret)
{
	struct ct_ctx *x = &ct->ctx[c];
	if (x->depth == CT_MAX_DEPTH) {
		ct->too_deep++;
		return -1;
	}
	put_event(ct, c, TR_ENTER, t, func);
	x->st[x->depth++] = (struct ct_frame){ SONDE_FUNC_NUM(func), sp, ret };
	ct->calls++;
	return 0;
}

void calltrace_return(struct calltrace *ct, int c, int i, uint64_t t)
{
	struct ct_ctx *x = &ct->ctx[c];
	if (i < 0 || i >= x->depth)
		return;
	while (x->depth > i + 1) {
		put_event(ct, c, TR_EXIT_ABNORMAL, t, 0);
		x->depth--;
		ct->abnormal++;
	}
	put_event(ct, c, TR_EXIT, t, 0);
	x->depth--;
}

void calltrace_offcpu(struct calltrace *ct, int c, uint64_t t, uint64_t ns)
{
	struct ct_ctx *x = &ct->ctx[c];
	if (!ns || !x->depth)
		return;  /* outside every frame: no function to charge */
	uint8_t f[TR_MAX_VARINT];
	int k = tr_put_varint(f, ns);
	put_head(ct, c, TR_EXT, t, 2 + 2 * TR_MAX_VARINT);
	x->buf[x->used++] = TRX_OFFCPU;
	x->used += (uint32_t)tr_put_varint(x->buf + x->used, (uint64_t)k);
	memcpy(x->buf + x->used, f, (size_t)k);
	x->used += (uint32_t)k;
}

void calltrace_time(struct calltrace *ct, uint64_t t)
{
	if (t > ct->tend)
		ct->tend = t;
}

void calltrace_end(struct calltrace *ct, double tpn, const char *exe, const char *recorder_name, int status,
                   int gone)
{
	/* Frames open at the end (the firmware ended inside them, or sonde
	 * left it running) are closed at the last time read. */
	uint64_t tend = ct->tend;
	for (int c = 0; c < ct->nctx; c++) {
		struct ct_ctx *x = &ct->ctx[c];
		ct->open_at_end[c] = x->depth;
		while (x->depth > 0) {
			put_event(ct, c, TR_EXIT_ABNORMAL, tend, 0);
			x->depth--;
		}
		flush_chunk(ct, c);
	}
	/* The clock of the recording is the target's; the calibration needs
	 * more than 1 us between the two points. */
	struct recorder *rec = &ct->rec;
	if (tend < ct->t0 + (uint64_t)(2000 * tpn) + 1)
		tend = ct->t0 + (uint64_t)(2000 * tpn) + 1;
	ct->tend = tend;
	rec->c1.ticks = tend;
	rec->c1.mono_ns = rec->c0.mono_ns + (uint64_t)((double)(tend - ct->t0) / tpn);
	rec->c1_given = 1;
	recorder_meta_common(rec, exe, exe, strlen(exe), recorder_name, REC_MODE_TRACE, status);
	if (gone)
		meta_add(&rec->meta, "remote_target_gone", "1");
}

int calltrace_write(struct calltrace *ct, const struct calltrace_target *tg, char *err, size_t n)
{
	struct recorder *rec = &ct->rec;
	int rc = recorder_profile(rec, err, n);
	if (rec->prof.f) {
		struct rec_process pr;
		memset(&pr, 0, sizeof pr);
		snprintf(pr.exe, sizeof pr.exe, "%s", tg->exe);
		size_t cl = strlen(tg->exe);
		if (cl > sizeof pr.cmdline)
			cl = sizeof pr.cmdline;
		memcpy(pr.cmdline, tg->exe, cl);
		pr.cmdline_len = (uint32_t)cl;
		pr.pid = tg->pid;
		pr.exit_status = tg->status;
		if (tg->status != INT32_MIN)
			pr.flags |= tg->status >= 0 ? REC_PROC_ENDED_BY_EXIT : REC_PROC_KILLED;
		pr.start_tsc = ct->t0;
		pr.end_tsc = ct->tend;
		writer_put(&rec->prof, REC_PROCESS, &pr, sizeof pr, NULL, 0);
		struct rec_module m;
		memset(&m, 0, sizeof m);
		m.nfuncs = tg->nfuncs;
		m.load_bias = tg->bias;
		snprintf(m.path, sizeof m.path, "%s", tg->exe);
		writer_put(&rec->prof, REC_MODULE, &m, sizeof m, tg->funcs, sizeof *tg->funcs * (size_t)tg->nfuncs);
		const char *base = strrchr(tg->exe, '/');
		for (int c = 0; c < ct->nctx; c++) {
			if (c && !ct->ctx[c].touched)
				continue;  /* a context that never ran (no interrupt handler was entered) */
			struct rec_thread th;
			memset(&th, 0, sizeof th);
			th.index = (uint32_t)c;
			th.tid = tg->pid + c;
			snprintf(th.comm, sizeof th.comm, "%s", tg->comm[c] ? tg->comm[c] : base ? base + 1 : tg->exe);
			th.flags = tg->status != INT32_MIN ? REC_THREAD_EXITED : 0;
			th.start_tsc = ct->t0;
			th.end_tsc = ct->tend;
			th.open_frames = (uint32_t)ct->open_at_end[c];
			th.cpu_split = tg->cpu_split;
			writer_put(&rec->prof, REC_THREAD, &th, sizeof th, NULL, 0);
		}
		if (recorder_close(rec, rc ? NULL : err, rc ? 0 : n))
			rc = -1;
	}
	free_ctx(ct);
	return rc ? -1 : 0;
}

void calltrace_abort(struct calltrace *ct)
{
	recorder_abort(&ct->rec);
	free_ctx(ct);
}
