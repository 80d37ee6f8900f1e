/* engine.h — the probe engine's state and what it does to the target
 * (engine.c): inserting the breakpoints of a probe and removing them,
 * stopping and resuming every thread, the clean detach.  The event loop that
 * dispatches the target's stops is run.h; what a hit does is step.h. */
#ifndef SONDE_PROBE_ENGINE_H
#define SONDE_PROBE_ENGINE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "probe/bptab.h"
#include "probe/library.h"
#include "proc/modules.h"
#include "probe/scratch.h"
#include "proc/target.h"

struct engine;
struct kind_ops;
struct precorder;
struct probe;
struct sonde_probe_plugin;

/* A backend that runs the probes some other way than ptrace stops (the
 * agent, agent_run.c): the manager and the engine go through it for the
 * kinds, for removing a probe, and for holding the threads around a change. */
struct engine_backend {
	const struct kind_ops *(*kind)(const char *name); /* NULL: the backend does not run it */
	void (*remove)(struct engine *e, struct probe *p);
	int (*hold)(struct engine *e);
	void (*let_go)(struct engine *e);
	/* enable (on) or disable a probe: 0, or -1 with err (manager_enable). */
	int (*enable)(struct engine *e, struct probe *p, int on, char *err, size_t n);
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
	uint64_t emulated_hits, stepped_hits; /* remote: displaced instructions emulated or stepped */
	FILE *msg;              /* where interactive replies go */
	struct agent_be *agent; /* the agent backend's sites, when it runs the probes (agent_be.h) */
	const struct engine_backend *backend; /* NULL: ptrace */
	const char *engine_name; /* "agent", "ptrace" or "remote" (output.c); NULL: ptrace */
	struct precorder *rec;  /* --record: hits into a recording, or NULL */
	/* Said to the user by the CLI (library code never prints): a probe that
	 * failed and was removed.  May be NULL. */
	void (*warn)(const struct probe *p, const char *msg);
	/* --pending: a probe whose function or source file is in no loaded
	 * object waits for a library that has it (manager_retry_pending).
	 * not_found: resolve.c's last failure was such a one. */
	int pending_ok;
	int not_found;
	/* Said to the user by the CLI: a probe was placed while the program
	 * ran, and why (a library loaded, an exec); may be NULL. */
	void (*placed_later)(const struct probe *p, const char *why);
	/* The modules of images the program left by exec (agent engine): the
	 * probes of those images name their callers with them. */
	struct modules *old_mods;
	int nold_mods;
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
void engine_detach(struct engine *e);
/* Target memory with our breakpoints shown as the original bytes. */
int engine_read_code(struct engine *e, uint64_t addr, void *buf, size_t n);

#endif
