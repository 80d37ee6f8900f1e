/* ptrace.h — the ptrace engine (src/probe/ptrace/): a probe is an int3
 * whose stop sonde takes with ptrace and handles itself (step.c), the
 * displaced instruction emulated or run out of line (scratch.c).  Its own
 * state (behind struct engine's priv), the breakpoints its kinds insert
 * (breakpoints.c; the kinds' handlers are kind_*.c), the clean detach; the
 * session's driver and table of operations are ptrace_engine.c. */
#ifndef SONDE_PROBE_PTRACE_PTRACE_H
#define SONDE_PROBE_PTRACE_PTRACE_H

#include <stddef.h>
#include <stdint.h>

#include "probe/engine.h"
#include "probe/ptrace/bptab.h"
#include "probe/ptrace/scratch.h"

struct loc_addr;
struct probe;

/* What the ptrace engine keeps for itself (e->priv). */
struct ptrace_state {
	struct bptab bps;       /* breakpoints by address */
	struct scratch sc;      /* out-of-line slots */
};

static inline struct ptrace_state *ptrace_state(struct engine *e)
{
	return e->priv;
}

/* A breakpoint of probe p at addr (role: the kind's), with a post-handler
 * stop after the displaced instruction when want_post.  0, or -1 with err. */
int engine_insert(struct engine *e, struct probe *p, uint64_t addr, int role, int want_post,
                  char *err, size_t n);
/* The operations behind ptrace_engine's table (breakpoints.c). */
void ptrace_remove(struct engine *e, struct probe *p);
int ptrace_hold(struct engine *e);
void ptrace_let_go(struct engine *e);
int ptrace_read_code(struct engine *e, uint64_t addr, void *buf, size_t n);
/* Every byte restored, every thread out of our slots, detached. */
void engine_detach(struct engine *e);

#endif
