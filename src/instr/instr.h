/* instr.h — instrumenting functions of programs never built for sonde
 * (docs/INSTRUMENTATION.md, "Programs never built for sonde"): sonde's side.
 *
 *   plan.c   which functions a module has and which of them can take a jmp
 *            (before the program runs; position independent);
 *   stubs.c  the code of one region: a common entry and one stub per
 *            function, built for the addresses the program mapped;
 *   serve.c  the plans published in the session memory, the program's
 *            requests answered.
 * The runtime's side is src/rt/instr.c; what both share is
 * common/instr_abi.h. */
#ifndef SONDE_INSTR_INSTR_H
#define SONDE_INSTR_INSTR_H

#include <stddef.h>
#include <stdint.h>

#include "common/instr_abi.h"

struct sym_module;
struct sonde_session_hdr;

/* A function found but not patched, and why. */
struct instr_left {
	uint64_t vaddr;
	char name[96];   /* its symbol, or "" */
	char why[160];
};

struct instr_plan {
	char path[512];
	uint64_t dev, ino;
	struct sym_module *sm;        /* the module's symbols and bytes (owned) */
	size_t nfound;                /* functions found */
	struct sonde_instr_fn *fns;   /* patchable, by number (sorted by address) */
	uint32_t *fn_size;            /* their extents (bytes) */
	size_t nfns;
	size_t nint3;                 /* of them, reached by int3 */
	struct sonde_instr_rt *rts;   /* branches re-targeted into stubs (sorted by function) */
	size_t nrts, nretarget;       /* and the functions that need it */
	struct instr_left *left;      /* found, not patchable */
	size_t nleft;
	uint64_t region_size;         /* code bytes a region needs (page multiple) */
	uint64_t code_bytes;          /* of them, with every function timed (instr_plan_timing adds the
	                               * counted ones' fast paths) */
	uint64_t load_vaddr;          /* link-time address of its first page (sym_peek_load_vaddr) */
	double plan_ms;               /* time planning took (before the program runs) */
	uint64_t timed_matched;       /* bit g: --timed glob g (of the first 64) named a planned function */
	size_t nswitched;             /* functions whose stubs have both ways (--timing=auto: sw) */
};

/* Plan the module at path: 0; 1 when it was built with sonde-cc (its
 * sleds are the way: no plan); -1 with err (not ELF, no function found). */
int instr_plan(const char *path, struct instr_plan *p, char *err, size_t n);
void instr_plan_free(struct instr_plan *p);

/* record --timing: which planned functions are counted, not timed (their
 * sonde_instr_fn.count): none (INSTR_TIME_ALL, the default), every one
 * (INSTR_TIME_NONE), or the small leaves (INSTR_TIME_AUTO: at most
 * INSTR_LEAF_MAX bytes, no call, no jump out of their bytes, no indirect
 * jump); a function that one of timed[0..ntimed) names (sym_find: its name
 * or demangled name, else a shell glob) is timed whatever timing says.  How
 * many are counted. */
enum { INSTR_TIME_ALL = 0, INSTR_TIME_NONE = 1, INSTR_TIME_AUTO = 2 };
#define INSTR_LEAF_MAX 64
/* The bytes a counted function's stub has before its relocated instructions
 * (src/instr/stubs.c, count_head), against 10 for a timed one's. */
#define INSTR_COUNT_HEAD 68
/* ... and a switched one's (switch_head: both ways, --timing=auto). */
#define INSTR_SWITCH_HEAD 102
size_t instr_plan_timing(struct instr_plan *p, int timing, const char *const *timed, int ntimed);

/* The code of a region at `region` (size bytes) for module p loaded with
 * `bias`: code[0..size) (int3 where unused), stubs[i] the offset of
 * function i's stub or SONDE_INSTR_NOSTUB; rels[k] the new rel32 of
 * re-targeted branch k (p->rts), INT32_MIN for none; *built the stubs made.
 * live: the program runs (record -p): a function that needs re-targeted
 * branches gets an int3 stub instead.  hook is
 * the address of the module's struct sonde_modhook in the program (written
 * into the hook slot: the rest of the code depends on region - bias only).
 * moveable: the code must run right wherever region - bias is the same (no
 * address of the module as an immediate, as a relocated call's return
 * address): -1 otherwise.  fix (fixcap entries, may be NULL): the region
 * offsets of every rel32 that reaches the module, *nfix of them
 * (SONDE_INSTR_NOFIX when they do not fit).  0, or -1 with err. */
int instr_build(const struct instr_plan *p, uint64_t bias, uint64_t region, uint64_t size, uint64_t hook, int live,
                int moveable, uint8_t *code, uint32_t *stubs, int32_t *rels, uint32_t *built, uint32_t *fix,
                size_t fixcap, uint32_t *nfix, char *err, size_t n);

/* Every module planned in one recording, and the globs of the libraries
 * planned when the program finds them (record --module). */
struct instr_set {
	struct instr_plan plans[SONDE_INSTR_MAX_MODS];
	size_t n;
	const char *const *globs;
	int nglobs;
	int live;                     /* the program runs (record -p): regions built before are for that */
	int timing;                   /* INSTR_TIME_*: record --timing, applied to every plan */
	const char *const *timed;     /* record --timed: globs of functions timed whatever timing says */
	int ntimed;
	/* Programs exec'd in the recorded tree: their executables planned when
	 * their image asks (once per object), only those matching exec_globs
	 * when there are any (record --exec) */
	int exec_follow;
	const char *const *exec_globs;
	int nexec_globs;
	struct { uint64_t dev, ino; } skip[SONDE_INSTR_MAX_SKIP]; /* refused (told to the runtime) */
	size_t nskip;
	/* why each refused executable is not planned, for sonde info */
	struct instr_refused { char path[512]; char why[160]; } refused[SONDE_INSTR_MAX_SKIP];
};

/* record --timing=auto's learned part (policy.c): the switched functions
 * of every plan timed or counted while the program runs, from the calls
 * and times of each window.  NULL unless set->timing is auto. */
#define INSTR_POLICY_WINDOW_MS 100     /* a window: what is learned at a time */
#define INSTR_POLICY_CALLS     100u    /* calls in a window (1,000 a second) for a function to be frequent */
#define INSTR_POLICY_SHORT_NS  2000u   /* the average call (inclusive) of a short one */
#define INSTR_POLICY_PROBE     32u     /* a counted function is timed again one window in 32 */
#define INSTR_POLICY_LOG_MAX   65536u  /* switches kept for the recording (all are counted) */
struct instr_switch {
	uint64_t t_ns;                /* since the recording's start */
	uint32_t mod, fn;             /* plan, number */
	uint32_t to_timed;            /* 1: counted -> timed (slow or rare again); 0: timed -> counted */
	uint64_t calls, mean_ns;      /* the window that decided: its calls, their average */
};
struct instr_policy;
struct instr_policy *instr_policy_new(const struct instr_set *set);
void instr_policy_free(struct instr_policy *p);
/* A window's decisions, when one has passed: the switches written. */
int instr_policy_step(struct instr_policy *p, struct sonde_session_hdr *h, uint64_t size, const struct instr_set *set);
/* Whether function fn of plan mod was timed for part of the recording only. */
int instr_policy_switched(const struct instr_policy *p, size_t mod, size_t fn);
/* The switches kept (*n of *total), the windows looked at, the probes. */
const struct instr_switch *instr_policy_log(const struct instr_policy *p, size_t *n, uint64_t *total,
                                            uint64_t *windows, uint64_t *probes);

/* Publish the plans and globs in the session (before the program starts): 0,
 * or -1 with err (session memory full, globs too long). */
int instr_publish(struct sonde_session_hdr *h, uint64_t size, const struct instr_set *set, char *err, size_t errn);
/* Answer the requests waiting in the session (planning the libraries asked
 * for): how many were answered. */
int instr_serve(struct sonde_session_hdr *h, uint64_t size, struct instr_set *set);
/* Does path (or its file name) match one of globs[0..n)? */
int instr_glob_match(const char *const *globs, int n, const char *path);
/* Tell the runtime never to ask for the executable (dev, ino) (a sonde-cc
 * build, or one that cannot be planned: why); path and why kept for sonde
 * info.  After instr_publish. */
void instr_skip(struct sonde_session_hdr *h, uint64_t size, struct instr_set *set, const char *path, uint64_t dev,
                uint64_t ino, const char *why);

#endif
