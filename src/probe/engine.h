/* engine.h — the probe session every engine shares (session.c): the
 * probes, the target's state, the times, the engine that runs them
 * (probe_engine.h) and its own state behind priv.  What the manager and
 * the kinds ask of the engine goes through here: removing a probe, holding
 * the threads around a change, reading the code under the probes. */
#ifndef SONDE_PROBE_ENGINE_H
#define SONDE_PROBE_ENGINE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "probe/library.h"
#include "proc/modules.h"
#include "proc/target.h"

struct engine;
struct kind_ops;
struct probe_engine_ops;
struct precorder;
struct probe;
struct sonde_probe_plugin;

struct engine {
	struct target t;
	struct modules mods;
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
	/* record --target: what the recording holds, filled by the engine when
	 * it wrote it (calls recorded, calls not timed, functions, functions
	 * timed in the target without a stop) */
	struct { uint64_t calls, untimed; int nfuncs, in_target, written; } recorded;
	FILE *msg;              /* where interactive replies go */
	const struct probe_engine_ops *ops; /* the engine that runs the probes (probe_engine.h) */
	void *priv;             /* its own state (ptrace: struct ptrace_state; agent: struct agent_be; remote: rsess) */
	const char *engine_name; /* "agent", "ptrace" or "remote" (output.c); NULL: ptrace */
	const char *scope;      /* what is probed besides one process ("the kernel", "every process"), or NULL */
	struct precorder *rec;  /* --record: hits into a recording, or NULL */
	/* Said to the user by the CLI (library code never prints): a probe that
	 * failed and was removed.  May be NULL. */
	void (*warn)(const struct probe *p, const char *msg);
	/* --pending: a probe whose function or source file is in no loaded
	 * object waits for a library that has it (manager_retry_pending).
	 * not_found: resolve.c's last failure was such a one. */
	int pending_ok;
	int not_found;
	/* The target's instructions are not decoded here (remote: another
	 * architecture, read through the stub): resolve.c skips its
	 * instruction-boundary check. */
	int foreign_code;
	/* Said to the user by the CLI: a probe was placed while the program
	 * ran, and why (a library loaded, an exec); may be NULL. */
	void (*placed_later)(const struct probe *p, const char *why);
	/* The modules of images the program left by exec (agent engine): the
	 * probes of those images name their callers with them. */
	struct modules *old_mods;
	int nold_mods;
};

uint64_t now_ns(void);
/* A probe of text added to e->probes (parsed, numbered; its ops and
 * placement are the engine's), for the engines that take the specs as
 * text (ucsim, kernel): the probe, or NULL with err. */
struct probe *engine_new_probe(struct engine *e, const char *text, char *err, size_t n);
/* Through the engine's operations (session.c). */
void engine_remove_probe(struct engine *e, struct probe *p);
void engine_probe_failed(struct engine *e, struct probe *p, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int engine_stop_all(struct engine *e);
void engine_resume_all(struct engine *e);
/* Target memory with the engine's own bytes shown as the original ones. */
int engine_read_code(struct engine *e, uint64_t addr, void *buf, size_t n);

#endif
