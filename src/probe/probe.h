/* probe.h — internals of the dynamic probe engine, shared by the files of
 * src/probe/: the traced process, breakpoints, scratch slots, modules,
 * specs, probes and their kinds, and the engine that runs them. */
#ifndef SONDE_PROBE_PROBE_H
#define SONDE_PROBE_PROBE_H

#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "arch/arch.h"
#include "common/json.h"
#include "sonde/probe.h"
#include "sym/sym.h"
#include "sym/vars.h"

/* ---- target.c: the traced process and its threads ---- */
struct thr {
	pid_t tid;
	int stopped;
	int pending_sig;    /* signal to deliver when resumed */
};

struct target {
	pid_t pid;
	int launched;
	int memfd;
	struct thr *thr;
	int nthr, cap;
	int gone;           /* the process has exited */
	int status;         /* its wait status */
	uint64_t entry;     /* AT_ENTRY */
};

int target_launch(struct target *t, char **argv, char *err, size_t n);
int target_attach(struct target *t, pid_t pid, char *err, size_t n);
int target_reopen(struct target *t);
struct thr *target_thr(struct target *t, pid_t tid);
struct thr *target_add_thr(struct target *t, pid_t tid, int stopped);
void target_del_thr(struct target *t, pid_t tid);
int target_read(struct target *t, uint64_t addr, void *buf, size_t len);
int target_write(struct target *t, uint64_t addr, const void *buf, size_t len);
int target_getregs(pid_t tid, arch_regs *r);
int target_setregs(pid_t tid, const arch_regs *r);
int target_getfpregs(pid_t tid, arch_fpregs *f);
int target_cont(struct target *t, struct thr *th, int sig);
int target_stop_all(struct target *t, void (*park)(void *arg, struct thr *th, int status), void *arg);
void target_resume_all(struct target *t);
void target_detach(struct target *t);

/* ---- modules.c: ELF modules mapped in the target ---- */
struct module {
	char *path;
	uint64_t lo, hi;        /* run-time range of its mappings */
	uint64_t bias;          /* run-time address - link-time address */
	int is_main;
	struct sym_module *sym; /* opened on first use */
	struct vars *vars;
	int sym_failed, vars_failed;
};

struct modules {
	struct module *m;
	int n;
};

int modules_load(struct modules *ms, pid_t pid);
void modules_free(struct modules *ms);
struct module *modules_at(struct modules *ms, uint64_t addr);
struct sym_module *module_sym(struct module *m);
struct vars *module_vars(struct module *m);

/* ---- spec.c: KIND:LOCATION[:ARGS] ---- */
enum loc_type { LOC_NONE, LOC_FUNC, LOC_LINE, LOC_ADDR };

struct spec {
	char kind[16];
	int loc;            /* enum loc_type */
	char *func;         /* LOC_FUNC: symbol (addr:SYM+OFF too) */
	int64_t off;        /* +OFF */
	char *file;         /* LOC_LINE */
	int line;
	uint64_t addr;      /* LOC_ADDR */
	char *args;         /* NULL if none */
	uint64_t interval_ns; /* sys:INTERVAL */
};

int spec_parse(const char *s, struct spec *sp, char *err, size_t n);
void spec_free(struct spec *sp);
int64_t probe_parse_duration(const char *s);

/* ---- probes ---- */
struct engine;
struct probe;
struct bp;

struct hit {
	struct engine *e;
	struct thr *th;
	arch_regs *regs;
	uint64_t addr;      /* probed address */
	uint64_t now_ns;
	uint64_t ticks;     /* tick counter at the stop (the recording clock, common/clock.h) */
	struct bp *bp;
	arch_fpregs fp;
	int have_fp;
};
int hit_fpregs(struct hit *h);

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
	void (*free)(struct probe *p);
};

struct probe {
	int id;
	char *spec;
	struct spec sp;
	const struct kind_ops *ops;
	struct engine *e;
	uint64_t hits;
	int removed;
	char *error;        /* why it was removed, or NULL */
	char *where;        /* resolved location, for list / output */
	void *data;         /* kind state */
	int wants_post;
};

/* Kinds (kind_*.c). */
extern const struct kind_ops kind_func, kind_line, kind_branch, kind_var, kind_assert,
	kind_time, kind_sys, kind_plugin;
const struct kind_ops *kind_find(const char *name);

/* ---- resolve.c: locations to addresses ---- */
struct loc_addr {
	uint64_t addr;          /* run-time */
	struct module *mod;
	struct sym_info fn;     /* containing function (start/size link-time) */
};
/* Resolve p->sp's location; *out is malloc'd.  Every address is checked to
 * be on an instruction boundary (decoded from the function start). */
int resolve_location(struct engine *e, const struct spec *sp, struct loc_addr **out, int *n,
                     char *err, size_t errlen);
/* The function named by sp (func kind); fills one loc_addr for its start. */
int resolve_function(struct engine *e, const struct spec *sp, struct loc_addr *out,
                     char *err, size_t errlen);
int resolve_check_boundary(struct engine *e, const struct loc_addr *la, char *err, size_t n);
/* Describe a run-time address: "func+0x12 (file.c:34)". */
void resolve_describe(struct engine *e, uint64_t addr, char *buf, size_t n);
/* p->where = the description of addr, then "; suffix" when suffix is not NULL. */
void resolve_set_where(struct probe *p, uint64_t addr, const char *suffix);

/* ---- bptab.c: breakpoints ---- */
struct site {
	struct probe *p;
	int role;
};

struct bp {
	uint64_t addr;
	struct arch_insn insn;
	uint8_t orig[ARCH_BP_LEN];
	uint64_t slot;          /* out-of-line slot, 0 if emulated */
	int slot_post;          /* slot ends in a trap for post-handlers */
	int inserted;
	struct site *sites;
	int nsites;
	int want_post;
};

struct bptab {
	struct bp **h;          /* open addressing on addr */
	int cap, n;
};

struct bp *bptab_find(struct bptab *t, uint64_t addr);
struct bp *bptab_add(struct bptab *t, uint64_t addr);
void bptab_remove(struct bptab *t, uint64_t addr);
/* Iterate: returns next bp after index *it, NULL at end. */
struct bp *bptab_next(struct bptab *t, int *it);
void bptab_free(struct bptab *t);

/* ---- scratch.c: out-of-line slots in the target ---- */
struct scratch_region {
	uint64_t base, size;
	struct bp **owner;      /* one per slot */
	int nslots, used;
};
struct scratch {
	struct scratch_region r[32];
	int n;
};
/* Needs every thread stopped. */
int scratch_slot(struct engine *e, struct bp *b, uint64_t near, uint64_t *slot, char *err, size_t n);
void scratch_release(struct engine *e, uint64_t slot);
struct bp *scratch_owner(struct engine *e, uint64_t pc, uint64_t *slot);
void scratch_unmap_all(struct engine *e);
/* Run a system call in a stopped thread. */
int inject_syscall(struct engine *e, struct thr *th, long nr, const uint64_t args[6], int64_t *ret);

/* ---- engine.c ---- */
struct library {
	char **names, **specs;
	int n;
	char *path;
};

struct engine {
	struct target t;
	struct modules mods;
	struct bptab bps;
	struct scratch sc;
	struct probe **probes;
	int nprobes, cap, next_id;
	int stopped_all;
	struct library lib;
	void *plugin_handle;
	const struct sonde_probe_plugin *plugin;
	volatile int stop_req;
	uint64_t start_ns, end_ns;
	int detached;           /* detached from a live process */
	uint64_t total_hits;
	FILE *msg;              /* where interactive replies go */
	struct precorder *rec;  /* --record: hits into a recording, or NULL */
};

uint64_t now_ns(void);
int engine_insert(struct engine *e, struct probe *p, uint64_t addr, int role, int want_post,
                  char *err, size_t n);
/* A breakpoint at each of the nv addresses (role = index); stops at the first failure. */
int engine_insert_all(struct engine *e, struct probe *p, const struct loc_addr *v, int nv, int want_post,
                      char *err, size_t n);
void engine_remove_probe(struct engine *e, struct probe *p);
void engine_probe_failed(struct engine *e, struct probe *p, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int engine_stop_all(struct engine *e);
void engine_resume_all(struct engine *e);
/* Main loop: until the target exits, stop_req, or the deadline (0 = none).
 * in_fd >= 0: interactive commands. */
int engine_run(struct engine *e, uint64_t deadline_ns, int in_fd);
void engine_detach(struct engine *e);
int engine_run_to_entry(struct engine *e);
/* Target memory with our breakpoints shown as the original bytes. */
int engine_read_code(struct engine *e, uint64_t addr, void *buf, size_t n);

/* ---- step.c: executing a hit ---- */
void step_hit(struct engine *e, struct thr *th, arch_regs *r, struct bp *b);
void step_post(struct engine *e, struct thr *th, arch_regs *r, struct bp *b);
void step_fault(struct engine *e, struct thr *th, arch_regs *r, struct bp *b, int sig);

/* ---- manager.c: ids, add/list/del, library, commands ---- */
struct probe *manager_add(struct engine *e, const char *spec, char *err, size_t n);
int manager_del(struct engine *e, int id, char *err, size_t n);
void manager_list(struct engine *e, FILE *f);
int library_load(struct library *l, const char *path, char *err, size_t n);
int library_save(struct library *l, char *err, size_t n);
const char *library_find(struct library *l, const char *name);
int library_set(struct library *l, const char *name, const char *spec);
int library_delete(struct library *l, const char *name);
void library_free(struct library *l);
/* One interactive command line; replies on e->msg.  Returns 1 on "quit". */
int manager_command(struct engine *e, const char *line);
int plugin_load(struct engine *e, const char *path, char *err, size_t n);

/* ---- expr.c: expressions over program variables ---- */
struct expr;
struct expr_val {
	int is_float;
	int64_t i;
	long double f;
};
struct expr *expr_compile(const char *text, struct vars *v, uint64_t link_pc, char *err, size_t n);
/* 0 ok; -1 a variable was unavailable (err says which). */
int expr_eval(const struct expr *x, struct hit *h, struct module *m, struct expr_val *out,
              char *err, size_t n);
/* For assert: the values of the variables of the last evaluation, "a=1 b=2". */
void expr_values(const struct expr *x, char *buf, size_t n);
const char *expr_describe(const struct expr *x);
void expr_free(struct expr *x);

/* ---- record.c: --record, hits into a sonde recording (-o DIR) ---- */
struct precorder;
/* Prepare DIR (create, or reuse a previous recording) and start the clock;
 * sets e->rec.  Call once the target exists, before any hit. */
int precorder_open(struct engine *e, const char *dir, char *err, size_t n);
/* One event of probe p in h's thread (no-op without --record): event TRP_*,
 * value kind TRV_* with the value in iv / fv / sv (common/trace_enc.h). */
void precorder_hit(struct hit *h, struct probe *p, int event, int vkind, int64_t iv, double fv, const char *sv);
/* A traced thread exited: write out its last chunk. */
void precorder_thread_end(struct engine *e, pid_t tid);
/* Write the rest of the events and profile.sonde; frees e->rec. */
int precorder_close(struct engine *e, char *err, size_t n);

/* ---- output.c ---- */
void output_table(struct engine *e, FILE *f);
void output_json(struct engine *e, FILE *f);
/* "1.23 ms" */
const char *fmt_time(uint64_t ns, char *buf, int len);

#endif
