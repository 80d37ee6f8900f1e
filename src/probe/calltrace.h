/* calltrace.h — the calls of a target that sonde watches from outside (a
 * remote board through the GDB protocol, an 8051 through ucsim's console),
 * written as a trace recording through the one recording writer
 * (record/recorder.h), so that `report`, `tree`, `callers-callees`,
 * `flamegraph` and the exports read it as a local `record --trace`
 * recording (mode REC_MODE_TRACE: the readers build the calling-context
 * trees from the timeline, analysis/trace_cct.c).
 *
 * The engine tells the calls and returns it catches, with the target's own
 * time in recorded ticks; this file keeps, per context, the stack of the
 * frames it wrote (function, sp, return address), so that the events nest
 * whatever order the engine reports one stop's events in.  A context is a
 * thread of the recording: the firmware's main code, and on the 8051 its
 * interrupt handlers (their own roots; the main code's wait for them is its
 * off-CPU time, a TRX_OFFCPU record). */
#ifndef SONDE_PROBE_CALLTRACE_H
#define SONDE_PROBE_CALLTRACE_H

#include <stddef.h>
#include <stdint.h>

#include "record/recorder.h"

#define CT_MAX_DEPTH 4096   /* frames kept a context; deeper calls are counted, not recorded */
#define CT_MAX_CTX 2

struct ct_frame { uint32_t func; uint64_t sp, ret; };

struct ct_ctx {
	uint8_t *buf;            /* the chunk being filled */
	uint32_t used;
	uint64_t seq, base, lastt;
	struct ct_frame *st;
	int depth;
	int touched;             /* it has written an event */
};

struct calltrace {
	struct recorder rec;
	int nctx;
	struct ct_ctx ctx[CT_MAX_CTX];
	uint64_t t0, tend;       /* recorded ticks: the start (rec.c0), the last event */
	uint64_t calls, too_deep, abnormal;
	int open_at_end[CT_MAX_CTX];
};

/* The recording DIR started (recorder_open with its events file), nctx
 * contexts (1 or 2).  t0 is the recorder's start, in its ticks: the engine
 * gives every later time as t0 + target ticks since its start.  0, or -1
 * with err. */
int calltrace_open(struct calltrace *ct, const char *dir, int nctx, char *err, size_t n);

/* A call of function number func (SONDE_FUNC(0, index)) at time t in
 * context c, whose return will be known by (sp, ret).  -1 when the context
 * is CT_MAX_DEPTH deep (counted in too_deep, not recorded). */
int calltrace_enter(struct calltrace *ct, int c, uint64_t t, uint32_t func, uint64_t sp, uint64_t ret);

/* Frame i of context c (its index in ctx[c].st) returns at t; the frames
 * above it never returned (a longjmp, a tail call's frame): closed first,
 * as abnormal exits. */
void calltrace_return(struct calltrace *ct, int c, int i, uint64_t t);

/* Context c did not run for ns nanoseconds before t (an interrupt): inside
 * its innermost open frame. */
void calltrace_offcpu(struct calltrace *ct, int c, uint64_t t, uint64_t ns);

/* The last time read (frames open at the end close there). */
void calltrace_time(struct calltrace *ct, uint64_t t);

/* The end, part 1: frames still open closed at the last time, every chunk
 * written, the recording's clock set (ticks_per_ns: recorded ticks a
 * nanosecond of the target) and its common META lines (recorder_meta_common
 * with exe, the recorder's name and status: INT32_MIN when unknown).  gone:
 * the target vanished before its end (the connection to it closed: a
 * killed simulator or stub), said by META remote_target_gone 1 (`sonde
 * info`: the calls up to then).  The caller then adds its own META lines
 * to ct->rec.meta. */
void calltrace_end(struct calltrace *ct, double ticks_per_ns, const char *exe, const char *recorder_name,
                   int status, int gone);

/* What the process, its module and its threads are. */
struct calltrace_target {
	const char *exe;         /* the program's path */
	int32_t pid;             /* the target's process id as the engine knows it */
	int status;              /* as for calltrace_end */
	const uint64_t *funcs;   /* link-time entry addresses, by function index */
	uint32_t nfuncs;
	uint64_t bias;
	const char *comm[CT_MAX_CTX]; /* each context's thread name (NULL: the exe's base name) */
	int cpu_split;           /* 1: the contexts' off-CPU time is known (a TRX_OFFCPU record
	                          * wherever a context waited), 0: not measured */
};

/* The end, part 2: profile.sonde written (META, the process, the module
 * and a thread per context that ran) and the recording closed.  0, or -1
 * with err. */
int calltrace_write(struct calltrace *ct, const struct calltrace_target *tg, char *err, size_t n);

/* Whether function name is recorded under the filters: "+GLOB" (-F: only
 * those matching one), "-GLOB" (-N: not those matching one). */
int calltrace_chosen(const char *name, const char *const *filters, int nfilters);

/* Everything dropped (an error before the end): the recording removed. */
void calltrace_abort(struct calltrace *ct);

#endif
