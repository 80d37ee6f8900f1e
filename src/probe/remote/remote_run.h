/* remote_run.h — probes on a remote target (remote_run.c): the session
 * over the GDB remote protocol client (remote.h), with symbols, lines and
 * variables from the program's local ELF (src/sym) relocated by the load
 * bias the stub gives; the breakpoint sites shared by the probes; the event
 * loop (hits, stepping over the displaced instruction, signals for the
 * program, the end of the target, Ctrl-C, --duration); and the probe kinds
 * that run on it (kind_remote.c).  The results land in a struct engine so
 * that the summary and the JSON are output.c's, the same as local probes. */
#ifndef SONDE_PROBE_REMOTE_RUN_H
#define SONDE_PROBE_REMOTE_RUN_H

#include <stddef.h>
#include <stdint.h>

#include "probe/remote/remote.h"

struct engine;
struct probe;
struct site_ops;
struct sym_module;
struct vars;
struct var_env;


/* One breakpoint address and the probes (with their roles) that use it. */
struct rsite {
	uint64_t addr;
	uint8_t saved[RARCH_MAX_BP];
	int written;            /* written with M (no Z0) */
	int lifted;             /* out of the target while a thread steps over it */
	uint8_t code[16];       /* the original instruction bytes there (rarch.emulate) */
	int ncode;              /* 0: unknown, not emulated */
	int no_emulate;         /* its instruction is not one the emulator executes: stepped */
	int pending;            /* not placed yet (the setup, rsess.defer) */
	struct { struct probe *p; int role; } *u;
	int nu;
};

struct remote_stop;

struct rsess {
	struct remote c;
	struct engine *e;
	struct sym_module *sym;
	struct vars *vars;      /* NULL when the ELF has no DWARF (vars_err says why) */
	const char *vars_err;
	uint64_t bias;
	struct rsite *sites;
	int nsites;
	int has_post;           /* a probe's kind has a post handler (plugin): called after each hit's instruction */
	int defer;              /* during the probes' setup: sites recorded, placed after it (place_pending) */
	int has_lifted;         /* lifted_addr's breakpoint goes back with the next resume */
	uint64_t lifted_addr;
	/* Line probes counted by the stub (tracepoints, rs_trace_add). */
	struct rtrace { struct probe *p; int num; uint64_t addr; } *tps;
	int ntps;
	int tracing;            /* QTStart done */
	int no_tracepoints;     /* SONDE_REMOTE_TRACEPOINTS=0: breakpoints only */
	struct rcount *count;   /* line sites counted inside the target (remote_count.c), or NULL */
	const char *exe;        /* the program's ELF on this machine */
	uint64_t ram, ram_len;  /* --target-ram: RAM for the trampolines of a microcontroller, or 0 */
	/* Displaced instructions executed by sonde (rarch.emulate) instead of
	 * a single step; SONDE_REMOTE_EMULATE=0: always stepped. */
	int emulate;
	uint64_t wpages[8];     /* pages an emulated store has written to: later stores go ahead */
	int nwpages;
	/* Where breakpoints were and are no more: another thread's stop on one,
	 * taken before its removal and reported after it, is not the program's
	 * SIGTRAP (run_loop resumes it; remote_run.c, stale_hit). */
	struct rgone { uint64_t addr; int written; } *gone;
	int ngone, capgone;
	/* record --target (remote_record.c): the recording, or NULL (its
	 * figures once written: engine.recorded) */
	struct rrec *rec;
	struct rrm *recmcu;     /* its calls timed inside the target (remote_record_mcu.c), or NULL */
};

/* The status of a target whose stub vanished (e->t.status). */
#define STATUS_GONE 0xffff

/* A remote probe kind: its kind_ops (setup: kind_place, with remote_sites;
 * name, json, table, free: what output.c and cleanup call); hit runs on
 * each stop at one of its breakpoints, post (if any) once its instruction
 * has run. */
struct rkind {
	const char *name;
	const struct kind_ops *ops;
	void (*hit)(struct rsess *s, struct probe *p, int role, uint64_t pc, uint64_t now);
	/* After the displaced instruction of the hit at pc has run (emulated or
	 * stepped; not when it faulted or the program ended), or NULL. */
	void (*post)(struct rsess *s, struct probe *p, int role, uint64_t pc, uint64_t now);
};
const struct rkind *rkind_find(const char *name);
/* The kinds' placement on a remote target (place.h; kind_remote.c): the
 * remote engine's probe_engine_ops.sites. */
extern const struct site_ops remote_sites;
/* Free what the kinds keep beside p->data, p->edata of e's probes (after
 * the output). */
void rkinds_free(struct engine *e);

/* The session (connect, place the probes, run until the target ends, the
 * stub closes the connection, Ctrl-C / SIGTERM or --duration; then every
 * breakpoint removed and the target detached when it still runs) is the
 * table remote_engine (probe_engine.h). */

/* For the kinds.  p may be NULL: a stop for sonde itself, no probe runs
 * (remote_count.c's breakpoint on _fini).  A site in a delay slot (MIPS) goes on the branch before
 * it (same state, as often); rs_site_add_return skips that check, for a
 * return address (after a call's delay slot, never in one). */
int rs_site_add(struct rsess *s, struct probe *p, uint64_t addr, int role, char *err, size_t n);
int rs_site_add_return(struct rsess *s, struct probe *p, uint64_t addr, int role, char *err, size_t n);
void rs_site_del(struct rsess *s, struct probe *p, uint64_t addr, int role);
/* Whether one of our breakpoints is at addr. */
int rs_site_placed(struct rsess *s, uint64_t addr);
/* A hit count at addr kept by the stub (a tracepoint): 0, or 1 when the
 * stub has no tracepoints or a breakpoint is already there (the caller
 * places a breakpoint), -1 error.  The counts are added to p->hits at the
 * end of the session. */
int rs_trace_add(struct rsess *s, struct probe *p, uint64_t addr, char *err, size_t n);
/* The same where a breakpoint may be too (the stub counts its own hits
 * beside it): for remote_count.c's sites given back to the stub at the end
 * of the setup, as they would have been at the start. */
int rs_trace_add_beside(struct rsess *s, struct probe *p, uint64_t addr, char *err, size_t n);
void rs_describe(struct rsess *s, uint64_t addr, char *buf, size_t n);
/* Registers and memory of the stopped thread, for expr_eval_env. */
void rs_env(struct rsess *s, struct var_env *env);
/* The function containing run-time address addr: its name. */
const char *rs_func_name(struct rsess *s, uint64_t addr);

/* --- line probes counted inside a remote target, without a stop per hit
 * (remote_count.c; declared here, as kind_remote.c's rkind_find is, since
 * remote_run.c calls it and it uses the session): on aarch64 and x86-64 Linux
 * (qemu-aarch64 -g, gdbserver), each site's instruction is replaced by a
 * branch to a trampoline, in a page sonde maps in the target, that adds 1 to
 * a counter there, runs the displaced instruction(s) and branches back
 * (on Cortex-M3/M4 and RV32 firmware, in the RAM given by --target-ram:
 * remote_count_mcu.h).  On
 * aarch64 the target patches its own text (QEMU's stub refuses writes to
 * it): sonde has it run a routine written into that page; on x86-64 the
 * jumps are written with M (gdbserver).  The counters are read with `m` at
 * every stop the target makes, at its exit (exit_group caught by the stub,
 * else a breakpoint on the program's _fini: the exit path of exit() and of a
 * return from main), and at the end; the text is restored when sonde leaves
 * a live target.  A site that cannot be
 * counted so (an instruction not relocated, no syscall found, another
 * architecture...) keeps a breakpoint.  See docs/REMOTE.md. */

/* Site addr of probe p to be counted in the target: 0 taken (placed by
 * rcount_install), 1 not (the caller uses a breakpoint), -1 out of memory. */
int rcount_add(struct rsess *s, struct probe *p, uint64_t addr);
/* After every probe is placed: map the page, write the trampolines and
 * have the target patch itself.  When that cannot be done, the sites get
 * breakpoints (a note through e->warn).  0, or -1 with err (the target's
 * state is not known: the session ends). */
int rcount_install(struct rsess *s, char *err, size_t n);
/* At every stop reply (a stop: the counters are read; an exit: whether
 * the last read saw every hit) and before every resume (sig: the signal
 * it delivers). */
void rcount_stop(struct rsess *s, const struct remote_stop *st);
void rcount_resume(struct rsess *s, int sig);
/* The target stopped and sonde leaves it: the last read, then the
 * original instructions back (the page stays: a thread may be in it).
 * 0, or -1 with s->c.err. */
int rcount_undo(struct rsess *s);
/* Whether pc (a SIGTRAP stop) is a trampoline's heartbeat brk (aarch64,
 * a64_tramp): the counters were read at the stop; the caller moves the pc
 * past it and resumes without a signal, or leaves. */
int rcount_heartbeat(struct rsess *s, uint64_t pc);
/* The counts into the probes (p->hits, and whether they are complete). */
void rcount_finish(struct rsess *s);
void rcount_free(struct rsess *s);

/* --- record --target: an exact function profile of a remote target
 * (remote_record.c; declared here, as remote_count.c's functions are, since
 * remote_run.c and kind_remote.c call it and it uses the session), written
 * as a trace recording (docs/FORMAT.md) that every reader takes as a local
 * one.  The functions are func probes (kind_remote.c: a breakpoint at each
 * entry, one at each pending return address); at every entry and matched
 * return they tell remote_record.c, which reads the target's own clock
 * through the stub (once per stop) and writes an ENTER or EXIT event with
 * that time.  See docs/REMOTE.md "Function profiles of remote targets". */
struct probe_opts;

/* Before any probe is placed: the target's clock chosen and started
 * (o->target_clock, else the architecture's default), the recording
 * directory opened, the functions chosen (o->filters).  Their run-time entry
 * addresses in *addrs (malloc'd), *n of them, for the caller's func probes.
 * 0, or -1 with err (nothing left changed in the target). */
int rrec_open(struct rsess *s, const struct probe_opts *o, uint64_t **addrs, int *n, char *err, size_t en);
/* Whether spec is a --target-clock value: 0, or -1 with err. */
int rrec_clock_valid(const char *spec, char *err, size_t n);
/* A call of the function at entry pc, its frame (sp, return address ret)
 * pending; or a call whose return cannot be caught (lost). */
void rrec_enter(struct rsess *s, uint64_t pc, uint64_t sp, uint64_t ret);
void rrec_untimed(struct rsess *s);
/* A return to pc with stack pointer sp (a pending frame of some func probe
 * matched): the innermost recorded frame with that return address and sp
 * ends, and any frame above it (it never returned: closed abnormally). */
void rrec_return(struct rsess *s, uint64_t pc, uint64_t sp);
/* Before each resume: the next stop reads the clock again. */
void rrec_resume(struct rsess *s);
/* The target is stopped and sonde leaves it: the clock read once more and
 * its registers put back as they were.  0, or -1 with s->c.err. */
int rrec_leave(struct rsess *s);
/* Write the rest of the events and profile.sonde, free the state (the
 * session is over: the target exited, or was left).  0, or -1 with err. */
int rrec_close(struct rsess *s, char *err, size_t n);
/* The session failed before it ran: the recording removed, the clock put
 * back when the target is still reachable. */
void rrec_abandon(struct rsess *s);
/* For remote_record_mcu.c: the address of the 32-bit counter the target
 * reads itself (0, or -1 no such address); one event drained from the
 * target's ring (w = id << 1 | 1 for a return, t the counter's value). */
int rrec_clock_addr(struct rsess *s, uint64_t *addr);
void rrec_ring_event(struct rsess *s, uint32_t w, uint32_t t);

/* --- record --target timed inside a Cortex-M3/M4 or RV32 target, no stop per call
 * (remote_record_mcu.c): entry trampolines in --target-ram, a shadow stack
 * and a ring of events there, drained by sonde at every stop, at the full
 * ring's breakpoint, at the exit and when it leaves. */
/* Function id (its index in remote_record.c's table) at addr: 0 it will be
 * timed in the target, 1 not (a func probe: breakpoints), -1 out of memory. */
int rrm_add(struct rsess *s, int id, uint64_t addr);
/* After the breakpoints are placed: the code, block and ring written, the
 * sites patched, sonde's breakpoints (full ring, semihosting exits)
 * placed.  Functions that end up on breakpoints after all (the stub
 * refused a write...) in *fb (malloc'd), *nfb of them.  0, -1 with err. */
int rrm_install(struct rsess *s, uint64_t **fb, int *nfb, char *err, size_t n);
/* At every stop reply: the ring drained (before the stop's own events). */
void rrm_stop(struct rsess *s, const struct remote_stop *st);
/* Whether pc is the full ring's breakpoint: 1 (drained by rrm_stop; the pc
 * moved back to the writer, resume without a signal), 0 no, -1 error. */
int rrm_full(struct rsess *s, uint64_t pc);
/* Leaving a live target: drained, the writer disabled, the pc stepped out
 * of the trampolines, every site's bytes put back.  0, -1. */
int rrm_undo(struct rsess *s);
/* Why function id is not timed in the target, or NULL when it is. */
const char *rrm_path(const struct rsess *s, int id);
void rrm_figures(const struct rsess *s, int *in_target, uint64_t *events, uint64_t *fills, uint64_t *lost,
                 int *complete);
void rrm_free(struct rsess *s);

#endif
