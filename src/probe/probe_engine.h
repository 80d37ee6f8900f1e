/* probe_engine.h — the interface every probe engine implements (in the
 * manner of perf's struct perf_tool or Frida Gum's per-backend
 * interceptor): one table of operations per engine, each engine in a
 * folder of its own (src/probe/ptrace/, agent/, remote/), the table of all
 * of them in engines.c.  The session they share is struct engine
 * (engine.h): the probes, the target's state, the times; what an engine
 * keeps for itself hangs behind e->priv.  The driver (probe_session_run,
 * session.c) calls open, place, run and collect in that order; the manager
 * (manager.c) calls kind, remove, enable, hold and let_go while probes are
 * added and deleted; close comes after the output.  See docs/ARCHITECTURE.md, "Probe engines". */
#ifndef SONDE_PROBE_PROBE_ENGINE_H
#define SONDE_PROBE_PROBE_ENGINE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct engine;
struct kind_ops;
struct probe;
struct site_ops;

/* What the user asked for, the same for every engine (the CLI fills it in). */
struct probe_opts {
	char **argv;            /* a program to launch, or NULL */
	pid_t pid;              /* or a process to attach to */
	const char *target;     /* or a remote target: tcp:HOST:PORT | serial:DEV[,BAUD] */
	const char *exe;        /* ... and the program's ELF on this machine */
	const char *const *specs;
	int nspecs;
	double duration;        /* seconds, 0 = until the program ends */
	int timeout_ms;         /* remote: per reply of the stub (0: default) */
	int hw_breakpoints;     /* remote: the core's comparators (--hw-breakpoints), 0 not given */
	uint64_t target_ram, target_ram_len; /* remote: RAM for in-target counting on a microcontroller (--target-ram), len 0 not given */
	int in_fd;              /* interactive commands (manager.c), or -1 */
	int pending;            /* --pending: a location in no loaded object waits for a library */
	int kernel;             /* --kernel: the running kernel and its modules */
	int system;             /* --system: an object's code in every process that maps it (uprobes) */
	const char *record_dir; /* --record: the hits go into this recording too, or NULL */
	uint32_t stack_copy;    /* stack probes: bytes of the stack copied at each hit (0: default) */
	int stack_copy_only;    /* stack probes on the agent: copy every stack (no walk with the unwind table) */
	const char *rt_path;    /* libsonde-rt.so (the agent) */
	int plugin_abi;         /* --plugin's ABI (SONDE_PROBE_ABI or _ABI2), 0: no plugin */
	void (*placed)(struct engine *e); /* called once the probes are in, or NULL */
	/* record --target (remote engine): a function profile into this
	 * recording directory instead of specs, the functions chosen by the
	 * filters ("+GLOB" / "-GLOB"), timed by target_clock (NULL: the
	 * architecture's default) */
	const char *remote_record;
	const char *const *filters;
	int nfilters;
	const char *target_clock;
};

/* What an engine can do besides running probes (probe_engine_ops.modes). */
enum {
	PE_LAUNCH = 1 << 0,      /* a program it starts */
	PE_ATTACH = 1 << 1,      /* a running process (-p) */
	PE_REMOTE = 1 << 2,      /* a target behind a GDB stub (--target) */
	PE_INTERACTIVE = 1 << 3, /* --interactive, --library */
	PE_PENDING = 1 << 4,     /* --pending */
	PE_RECORD = 1 << 5,      /* --record */
	PE_PLUGIN = 1 << 6,      /* --plugin */
	PE_HOLD_TO_REMOVE = 1 << 7, /* the threads are stopped around a removal (manager_command's del) */
	PE_KERNEL = 1 << 8,      /* the running kernel (--kernel) */
	PE_PROFILE = 1 << 9,     /* record --target: a function profile (probe_opts.remote_record) */
	PE_SIM_TIMED = 1 << 10,  /* that profile timed by a simulator's breakpoints and cycle counter: no
	                          * --hw-breakpoints, --target-clock or --target-ram */
	PE_SYSTEM = 1 << 11,     /* every process that maps an object (--system) */
};

struct probe_engine_ops {
	const char *name;       /* --engine=NAME, and target.engine in the JSON */
	const char *kinds;      /* the probe kinds it runs, space-separated */
	const char *runs;       /* the same said to the user: "--engine=NAME runs RUNS" */
	unsigned modes;         /* PE_* */
	/* Whether it runs every probe of o (the kinds and their expressions
	 * checked against the program); why says which cannot.  NULL: any.
	 * An engine of remote targets takes the targets of its own form
	 * (ucsim: ucsim:HOST:PORT, remote: the others) and refuses another
	 * form's with why left empty: that target is another engine's, not
	 * one this engine was preferred for (nothing to warn about). */
	int (*can_run)(struct engine *e, const struct probe_opts *o, char *why, size_t wn);
	/* Start or reach the target (launch, attach, connect): the target
	 * stopped or held, its modules read.  0, or -1 with err, nothing left
	 * behind (e->start_ns stays 0). */
	int (*open)(struct engine *e, const struct probe_opts *o, char *err, size_t n);
	/* Place the probes of o (through manager_add, or the engine's own
	 * placement) and open --record's recording.  0, or -1 with err: the
	 * target is killed (launched) or left as it was, e->start_ns is 0. */
	int (*place)(struct engine *e, const struct probe_opts *o, char *err, size_t n);
	/* Let the target run until it ends, --duration, a signal or `quit`;
	 * then take every probe out and leave the target (e->end_ns,
	 * e->t.gone / e->detached said).  0, or -1 with err (the numbers so far
	 * are still output). */
	int (*run)(struct engine *e, const struct probe_opts *o, char *err, size_t n);
	/* The numbers kept in the target into the probes (may be NULL). */
	void (*collect)(struct engine *e);
	/* After the output: what the engine keeps (e->priv) freed. */
	void (*close)(struct engine *e);

	/* The manager's hooks, while probes come and go. */
	const struct kind_ops *(*kind)(const char *name);   /* NULL: the engine does not run it */
	void (*remove)(struct engine *e, struct probe *p);  /* take a placed probe out (may be NULL) */
	/* enable (on) or disable a probe: 0, or -1 with err.  NULL: the engine cannot. */
	int (*enable)(struct engine *e, struct probe *p, int on, char *err, size_t n);
	int (*hold)(struct engine *e);                      /* stop the target's threads around a change */
	void (*let_go)(struct engine *e);
	/* The kinds' placement on this engine (place.h): how a location is
	 * found and a site placed; kind_place does the rest, the same for all. */
	const struct site_ops *sites;
	/* Code of the target with the engine's own bytes shown as the original ones. */
	int (*read_code)(struct engine *e, uint64_t addr, void *buf, size_t n);
};

/* The engines (engines.c), in the order --engine's default tries them. */
extern const struct probe_engine_ops ptrace_engine, agent_engine, ucsim_engine, remote_engine, kernel_engine;
/* The engine named name, NULL if none. */
const struct probe_engine_ops *probe_engine_find(const char *name);
/* The engine for o: a remote target's (the one whose can_run takes the
 * target's form; with o->remote_record, among those of PE_PROFILE), the
 * one named (NULL: the first that can run every probe, the agent before
 * ptrace); *why says why a preferred engine could not (a warning when
 * another runs instead).  NULL with err when the one named cannot, or
 * none can. */
const struct probe_engine_ops *probe_engine_choose(struct engine *e, const struct probe_opts *o, const char *name,
                                                   char *why, size_t wn, char *err, size_t n);

/* The whole session through ops: open, place, run, collect.  0, or -1 with
 * err (e->start_ns is 0 when nothing ran: no output then). */
int probe_session_run(struct engine *e, const struct probe_engine_ops *ops, const struct probe_opts *o,
                      char *err, size_t n);
/* After the output: the engine's close, then every probe and the session's
 * memory freed. */
void probe_session_free(struct engine *e);

#endif
