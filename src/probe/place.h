/* place.h — the kinds' setup, written once for every engine (place.c).
 *
 * What a kind means is the same wherever its probe runs: which locations
 * it takes, what it keeps (its data in kind_*.c), the conditional branch a
 * branch probe watches, the expression a var or assert probe evaluates at
 * each of its addresses, and how its place is said (p->where).  kind_place
 * does all of it, the one `setup` of every kind on every engine.  What an
 * engine adds is in its struct site_ops (probe_engine_ops.sites): how it
 * finds a location in its own symbols, how it places one site, and the few
 * things only it knows (its decoder, its expression compiler, what it says
 * about how a site was placed).  How it reads a hit stays the engine's
 * (kind_ops' handlers, its own loop). */
#ifndef SONDE_PROBE_PLACE_H
#define SONDE_PROBE_PLACE_H

#include <stddef.h>
#include <stdint.h>

#include "proc/modules.h"

struct engine;
struct expr;
struct probe;
struct rbranch;

/* What a site does at a hit (the kind's meaning of it). */
enum site_what {
	SITE_CALL,      /* func: a function's entry, its calls, times and callers; the engine catches the returns */
	SITE_COUNT,     /* line, and func:F+OFF: a hit counted */
	SITE_BRANCH,    /* branch: a conditional branch, taken or not */
	SITE_TIME,      /* time: a hit timed against the previous time probe */
	SITE_VALUE,     /* var, assert: the site's expression evaluated */
	SITE_STACK,     /* stack: the stack at the hit */
	SITE_PLUGIN,    /* plugin: the plugin's handlers */
};

struct probe_site {
	struct loc_addr la;     /* la.addr: where (run-time); la.fn: its function (start link-time; size 0:
	                         * unknown); la.mod: its module (resolve.c's), NULL on an engine of its own symbols */
	int i;                  /* its index among the probe's sites: the role its hits come back with */
	enum site_what what;
	int want_post;          /* a handler after the instruction too (a plugin's post) */
	/* SITE_BRANCH: the branch (site_ops.branch moved la.addr onto it),
	 * its text, the address after it (the fall-through) */
	char insn[200];
	uint64_t next;
	struct expr *x;         /* SITE_VALUE: its expression (kept by kind_var.c) */
};

/* site_ops.can */
enum {
	SITE_CAN_OFFSET = 1 << 0,   /* func:F+OFF (a count of the hits there) */
	SITE_CAN_FUNC_ADDR = 1 << 1, /* func:0xADDR (record --target's functions) */
};

struct site_ops {
	unsigned can;           /* SITE_CAN_* */
	/* The addresses of p's location into *v (malloc'd, *nv of them): one,
	 * the function's start (func:F+OFF: start + OFF), when func is set.
	 * 0, or -1 with err.  NULL: resolve.c in e's modules. */
	int (*locate)(struct engine *e, struct probe *p, int func, struct loc_addr **v, int *nv, char *err, size_t n);
	/* addr said for p->where.  NULL: resolve_describe. */
	void (*describe)(struct engine *e, uint64_t addr, char *w, size_t n);
	/* SITE_BRANCH: the conditional branch of s's line (kind_line.c's
	 * branch_scan with the engine's decoder) into s (la.addr, insn, next),
	 * and what the engine needs to decide it at a hit kept.  NULL: this
	 * machine's instructions, read through read_code (branch_find_jcc). */
	int (*branch)(struct engine *e, struct probe *p, struct probe_site *s, char *err, size_t n);
	/* SITE_VALUE: p's expression compiled at s (and what the engine
	 * evaluates it with kept); NULL with err.  NULL: expr_compile in the
	 * variables of s's module. */
	struct expr *(*compile)(struct engine *e, struct probe *p, const struct probe_site *s, char *err, size_t n);
	/* A plugin probe's context (kind_plugin.c's, into p->data) at addr.
	 * NULL: plugin_ctx_new with sonde's own result area and memory reader. */
	int (*plugin_ctx)(struct engine *e, struct probe *p, uint64_t addr, char *err, size_t n);
	/* A stack probe's frames named by the engine (kind_stack.c's
	 * stack_data_new_named: stacks that come whole).  NULL: unwound here. */
	void (*stack_namer)(uint64_t at, char *buf, size_t n);
	/* Before the first site, once the kind's data is made: what the engine
	 * keeps of the probe (p->edata), its own refusals.  May be NULL. */
	int (*begin)(struct engine *e, struct probe *p, int nsites, char *err, size_t n);
	/* Place site s of p.  0, or -1 with err (the sites placed so far are
	 * taken out by the engine's remove, as for any probe that failed). */
	int (*place)(struct engine *e, struct probe *p, struct probe_site *s, char *err, size_t n);
	/* After the last site: w (p->where so far) said further, e.g. how the
	 * sites were placed, or said anew.  May be NULL. */
	void (*placed)(struct engine *e, struct probe *p, char *w, size_t wn);
	/* A run-time address named for the output: a func probe's callers
	 * (kind_func.c's func_stats_json, func_stats_table).  NULL: resolve_name. */
	void (*name)(struct engine *e, uint64_t addr, char *buf, size_t n);
};

/* The setup of every kind but sys (kind_ops.setup): the spec checked for
 * the kind, the location resolved (e->ops->sites), the kind's data made,
 * each site prepared and placed, p->where set.  0, or -1 with err. */
int kind_place(struct probe *p, char *err, size_t n);

/* The conditional branch of s's line on this machine's instructions (kind_line.c's
 * branch_find_jcc): site_ops.branch's default, for an engine that adds to it. */
int site_branch_local(struct engine *e, struct probe *p, struct probe_site *s, char *err, size_t n);
/* For an engine whose branches are decoded with remote_arch.h's decoder (the
 * remote one, ucsim; its site_ops.branch): site s's jump b kept for its hits
 * in p->edata (a struct rbranch per site, in their order; the engine frees
 * p->edata) and said in s (la.addr, next, insn).  0, or -1 with err. */
int site_branch_keep(struct probe *p, struct probe_site *s, const struct rbranch *b, char *err, size_t n);

#endif
