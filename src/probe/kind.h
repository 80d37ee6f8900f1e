/* kind.h — the interface of a probe kind: the handlers each kind_*.c fills
 * in and the engine, the manager and the outputs call through, and the table
 * of every kind (kind.c).  A kind uses the engine (engine.h); the engine
 * knows the kinds only through this table. */
#ifndef SONDE_PROBE_KIND_H
#define SONDE_PROBE_KIND_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

struct engine;
struct hit;
struct json;
struct probe;

struct kind_ops {
	const char *name;
	int needs_location;
	int (*setup)(struct probe *p, char *err, size_t n);
	void (*pre)(struct probe *p, struct hit *h, int role);
	void (*post)(struct probe *p, struct hit *h, int role);
	void (*error)(struct probe *p, struct hit *h, int signo);
	void (*tick)(struct probe *p, uint64_t now_ns);       /* timers (sys) */
	void (*json)(struct probe *p, struct json *j);
	void (*table)(struct probe *p, FILE *f);              /* summary details */
	void (*table_after)(struct probe *p, FILE *f);        /* lines under the probe's row (stack) */
	void (*free)(struct probe *p);
};

/* Kinds (kind_*.c). */
extern const struct kind_ops kind_func, kind_line, kind_branch, kind_var, kind_assert,
	kind_time, kind_sys, kind_plugin, kind_stack;
/* The kind named name, NULL if none (kind.c). */
const struct kind_ops *kind_find(const char *name);

/* kind_var.c: the statistics of var and assert probes, for a backend that
 * evaluates the expression itself (the remote one, remote_run.c) and then
 * uses kind_var / kind_assert for the output.  var_data_new makes p->data
 * with nsites sites (-1: out of memory); each site gets its compiled
 * expression (m may be NULL).  var_account adds a value, var_unavailable
 * counts one that could not be read; assert_count counts an evaluation and
 * assert_failed a failure (with the variables' values of site role). */
struct expr;
struct expr_val;
struct module;
int var_data_new(struct probe *p, int nsites);
void var_site_set(struct probe *p, int i, struct expr *x, struct module *m);
struct expr *var_site_expr(struct probe *p, int i);
void var_account(struct probe *p, const struct expr_val *v);
void var_unavailable(struct probe *p, const char *why);
/* Integer statistics kept elsewhere (the probe agent's, agent_kinds.c), added
 * at once: count values from min to max summing to sum, the last one last,
 * hist in var_hist.h's buckets; unavailable ones with why. */
struct var_agg {
	uint64_t count, unavailable;
	int64_t min, max, last;
	__int128 sum;
	const uint64_t *hist;   /* VAR_HIST_BUCKETS counts */
	const char *why;
};
void var_merge(struct probe *p, const struct var_agg *a);
/* The same for a site of floating-point values (the agent's). */
struct var_fagg {
	uint64_t count, unavailable;
	double min, max, last;
	long double sum;
	const uint64_t *hist;   /* VAR_HIST_BUCKETS counts */
	const char *why;
};
void var_merge_float(struct probe *p, const struct var_fagg *a);
void assert_count(struct probe *p);
void assert_failed(struct probe *p, int role, long tid);
/* A hit of a var or assert probe evaluated by a backend that reads the
 * target itself: the hit counted and site role's expression evaluated
 * through env (a remote target's registers and memory; NULL for one of
 * expr_compile_names, whose names read the target); 0 with *v, or -1 when
 * a value was unavailable (counted, with why).  assert_account counts an
 * assertion's value, a failure of thread tid when it is zero. */
struct var_env;
int var_eval_env(struct probe *p, int role, const struct var_env *env, struct expr_val *v);
void assert_account(struct probe *p, int role, long tid, const struct expr_val *v);
/* For a backend that keeps the numbers itself and hands them over again
 * and again (the agent): var_reset forgets every value and failure
 * (before the var_merge of all its sites); assert_set sets an assertion's
 * numbers (unavailable ones with why) and forgets its first failures;
 * assert_first adds one (with the variables' values of site role, as set
 * by expr_set_values) without counting it. */
void var_reset(struct probe *p);
void assert_set(struct probe *p, uint64_t evaluated, uint64_t failures, uint64_t unavailable, const char *why);
void assert_first(struct probe *p, int role, long tid);

/* kind_func.c: the output of func probes from call statistics kept
 * elsewhere (the probe agent's, agent_kinds.c); at_offset: a probe inside the
 * function, which knows its calls only. */
struct call_stats;
/* The kind's data of a func probe into p->data (at_offset: func:F+OFF,
 * calls only), and its statistics, which every engine counts into. */
int func_data_new(struct probe *p, int at_offset);
struct call_stats *func_stats(struct probe *p);
/* For an engine that stops at a func probe's exits (ptrace): the roles of
 * its breakpoints, and each exit it placed counted (JSON "exits"). */
enum { FUNC_ROLE_ENTRY, FUNC_ROLE_EXIT };
void func_exit_placed(struct probe *p);
int func_exits(const struct probe *p);
void func_stats_json(struct probe *p, const struct call_stats *cs, struct json *j);
void func_stats_table(struct probe *p, const struct call_stats *cs, int at_offset, FILE *f);

/* kind_line.c: the counts of line and branch probes, for a backend that
 * places its own breakpoints and decides taken / not taken itself (the
 * remote one, kind_remote.c), then uses kind_line / kind_branch for the
 * output.  line_data_new makes p->data (naddrs: the addresses probed);
 * branch_set_insn names the jump (the first one given is kept);
 * branch_account counts a hit. */
int line_data_new(struct probe *p, int naddrs);
/* A branch probe's (line_data_new with a fall-through address per site);
 * branch_site sets site i's (next) and names the jump (the first given is kept). */
int branch_data_new(struct probe *p, int naddrs);
int branch_site(struct probe *p, int i, uint64_t next, const char *text);
int branch_set_insn(struct probe *p, const char *text);
void branch_account(struct probe *p, int taken);
/* A backend that counted them itself (the agent): the counts so far. */
void branch_set(struct probe *p, uint64_t taken, uint64_t not_taken);
/* The conditional jump a branch probe at la watches: the first one of its
 * line at or after la (else the first of its block), decoded into *out. */
struct loc_addr;
struct arch_insn;
struct sym_module;
int branch_find_jcc(struct probe *p, const struct loc_addr *la, struct arch_insn *out, char *err, size_t n);
/* The scan behind it, the same on every engine with its own decoder: over
 * code (the bytes from addr to end), step decodes one instruction (its
 * length into *len) and says what it is (BRANCH_*, -1: not decoded, the
 * scan stops); *at is the first conditional branch the line table (s,
 * bias: run-time minus link-time) gives to line, else the first one before
 * the straight-line block ends.  0, or -1 when there is none. */
enum { BRANCH_OTHER, BRANCH_COND, BRANCH_END };
typedef int (*branch_step_fn)(void *ctx, const uint8_t *code, size_t n, uint64_t addr, int *len);
int branch_scan(const uint8_t *code, uint64_t addr, uint64_t end, struct sym_module *s, uint64_t bias, int line,
                branch_step_fn step, void *ctx, uint64_t *at);

/* kind_time.c: the same for time probes: time_data_new makes p->data,
 * linked to the time probe defined before p (p->e->probes); time_account
 * counts a hit of thread tid at t (ns) and returns the interval from the
 * previous time probe's latest hit in that thread, or -1. */
int time_data_new(struct probe *p);
int64_t time_account(struct probe *p, long tid, uint64_t t);
/* A backend that timed the hits itself (the agent, agent_kinds.c): the
 * numbers so far, replacing the last ones: first and last hit (now_ns's
 * clock, 0: none), the intervals from probe prev_id (0: none) and hist in
 * kind_time's 64 log2 buckets of ns. */
struct time_agg {
	uint64_t first, last;
	uint64_t n, total, min, max;
	const uint64_t *hist;
};
void time_set(struct probe *p, int prev_id, const struct time_agg *a);

/* kind_stack.c: the distinct stacks of stack probes, for a backend that
 * copies the stack at each hit (the agent, agent_stack.c): stack_data_new
 * makes p->data; stack_account unwinds one hit of thread tid from its
 * registers (rip: the probed address) and stack_n bytes of its stack copied
 * from stack_base (NULL: the stopped thread's own memory) and counts it
 * (a copy: one more `copied`); stack_set_agent says the stacks the agent
 * dropped (lost), the copies it made and their time in all (ns), and the
 * bytes of a copy, and returns the probe's hits: the copies unwound and
 * those lost. */
struct user_regs_struct;
int stack_data_new(struct probe *p, char *err, size_t n);
void stack_account(struct probe *p, pid_t tid, const struct user_regs_struct *regs, const void *stack,
                   uint64_t stack_base, size_t stack_n);
uint64_t stack_set_agent(struct probe *p, uint64_t lost, uint64_t copies, uint64_t copy_ns, uint32_t bytes);
/* A stack the agent walked itself (the unwind table, agent_stack.c): its n
 * frames, the pc then the callers' return addresses; counted as `walked`.
 * stack_set_walked says how many the agent walked and their time (ns). */
void stack_account_frames(struct probe *p, const uint64_t *pc, int n);
void stack_set_walked(struct probe *p, uint64_t walks, uint64_t walk_ns);
/* A backend whose stacks come whole (the kernel engine's sampled
 * callchains): p->data without an unwinder, frames named by name (the
 * address, a caller's minus one, into buf); stack_account_pcs counts one
 * stack of n frames, innermost first. */
typedef void (*stack_namer)(uint64_t at, char *buf, size_t n);
int stack_data_new_named(struct probe *p, stack_namer name, char *err, size_t n);
void stack_account_pcs(struct probe *p, const uint64_t *pc, int n);

/* kind_plugin.c: load the --plugin shared object whose handlers plugin probes run. */
int plugin_load(struct engine *e, const char *path, char *err, size_t n);
/* The plugin context of probe p at addr, into p->data (kind_plugin's data:
 * its table, json and free work on it), its init run.  An ABI-2 plugin's
 * result area is result (the agent's shared block), or one of our own when
 * NULL; rd reads the program's memory (NULL: the ptrace engine's).  0, or
 * -1 with err (init refused the probe). */
struct sonde_probe_ctx;
int plugin_ctx_new(struct probe *p, uint64_t addr, void *result,
                   int (*rd)(const struct sonde_probe_ctx *c, uint64_t addr, void *buf, size_t len),
                   char *err, size_t n);
/* plugin_ctx_new in two: the context without running init, and init
 * (the remote engine fills in the target's description between them). */
int plugin_ctx_alloc(struct probe *p, uint64_t addr, void *result,
                     int (*rd)(const struct sonde_probe_ctx *c, uint64_t addr, void *buf, size_t len),
                     char *err, size_t n);
int plugin_ctx_init(struct probe *p, char *err, size_t n);
/* The context plugin_ctx_new made for p (NULL before): the remote engine
 * fills it and calls the handlers itself (kind_remote.c). */
struct sonde_probe_ctx *plugin_ctx(struct probe *p);

#endif
