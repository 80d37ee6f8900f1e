/* agent_kinds.h — inside the agent engine (src/probe/agent/): what its
 * three parts share.  agent_kinds.c: the probe kinds on the agent (sites
 * placed, numbers read from the shared memory, the manager's remove and
 * enable); agent_can.c: whether the agent runs a session's probes;
 * agent_session.c: the session and the engine's table of operations
 * (agent_engine, probe_engine.h).  agent_be.c talks to the agent. */
#ifndef SONDE_PROBE_AGENT_AGENT_KINDS_H
#define SONDE_PROBE_AGENT_AGENT_KINDS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/clock.h"
#include "common/probe_area.h"
#include "probe/agent/agent_be.h"

struct engine;
struct expr;
struct kind_ops;
struct loc_addr;
struct pa_var;
struct probe;
struct probe_opts;
struct site_ops;
struct spec;

/* A site's counters when a probe started using it: a probe counts from
 * there (sites are shared, and reused after a removal). */
struct abase {
	uint64_t hits, returns, ticks_total, callers_lost, taken;
	uint64_t stack_taken, stack_lost, stack_ticks, stack_walked, stack_walk_ticks;
	uint64_t callers[PA_CALLERS];
};

/* What a site's preparation (place.h: site_ops.compile, .branch) keeps
 * for its placement. */
struct aprep {
	struct pa_var var;      /* var, assert: the program the site's record runs */
	int cc;                 /* branch: the jump's condition (PA_CC_*) */
};

/* The agent's own state of a probe (p->edata; p->data is its kind's,
 * kind_*.c, filled by agent_collect). */
struct adata {
	int *sites;
	struct abase *base;
	int nsites;
	int frozen;             /* removed: the counts were taken then */
	struct abase *paused;   /* disabled: the sites' counters then, per site (the numbers stop there) */
	int nint3;
	char why_int3[160];
	struct aprep *prep;     /* var, assert, branch: per site, while the probe is placed */
	struct probe *tprev;    /* time: the time probe the intervals start from, or NULL */
	int tslot, tprev_id;    /* time: its number + 1 in the agent (pa_time.slot1), tprev's id */
	const char *no_value;   /* var: why a site has no value (vars.c's static text) */
	int plugin1;            /* plugin: its number in the agent's struct pa_plugins + 1 */
};

/* The session's agent (agent_session.c opens it, the kinds place sites through it). */
extern struct agent_be agent_sess;
extern int agent_time_slots;         /* time probes numbered in this session (pa_time.slot1) */
extern struct clock_point agent_c0;  /* the start of the session: the agent's clock ticks from here */
extern uint32_t agent_stack_copy;    /* --stack-copy: bytes a stack probe's hit copies */

/* agent_kinds.c */
/* The agent's kind named name, NULL if it does not run it. */
const struct kind_ops *agent_kind(const char *name);
/* How its kinds' sites are placed (place.h; probe_engine_ops.sites). */
extern const struct site_ops agent_sites;
/* The numbers of p read from the shared memory into its kind's data. */
void agent_collect(struct probe *p);
/* Ticks per ns from the start of the session to now; the agent's time
 * sites get it as their multiplier. */
void agent_calibrate(void);
/* The manager's hooks (probe_engine.h): take p out; disable or enable it. */
void agent_remove(struct engine *e, struct probe *p);
int agent_enable(struct engine *e, struct probe *p, int on, char *err, size_t n);
/* A plugin probe's fini handler (before the session's end). */
void agent_plugin_fini(struct probe *p);
/* Before the plugins' reports are read: every plugin probe's pre handlers
 * of the hits it counted have returned (src/rt/probe_plugin.c counts a hit
 * just before its pre call and done just after), waited for at most 1 s in
 * all.  A probe's hits are read while its handlers may still run (at its
 * deletion, at the end): waiting then would let more hits in; waiting
 * here, for the hits already read, lets none. */
void agent_plugin_settle(struct engine *e);
/* The stack rings' offset in the area (0: none). */
uint64_t agent_stk_off(void);
void agent_sleep_ms(int ms);
/* A var or assert spec's expression at la compiled into prog (x: the tree,
 * *nvw: why a variable has no value there).  0; -1 with why (an error on
 * any engine); -2 with why (the agent's bytecode does not have it). */
int agent_var_compile_at(const struct spec *sp, const struct loc_addr *la, struct expr **x, struct pa_var *prog,
                         const char **nvw, char *why, size_t n);

/* agent_can.c */
/* Whether every spec is of a kind the agent runs (func, line, branch,
 * time, sys, stack, plugin, and var and assert when the expression compiles
 * to the agent's bytecode at every address: checked against the process
 * pid, or the program argv0 of a launch); why says which probe cannot,
 * when one is of the agent's kinds.  No specs (interactive only): yes. */
int agent_runs_all(const char *const *specs, int nspecs, pid_t pid, const char *argv0, char *why, size_t wn);
/* probe_engine_ops.can_run: the same for a session's options (library
 * names resolved; an ABI-1 plugin: no). */
int agent_can_run(struct engine *e, const struct probe_opts *o, char *why, size_t wn);

#endif
