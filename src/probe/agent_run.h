/* agent_run.h — `sonde probe` on the agent backend (agent_run.c): the probe
 * kinds that run inside the target (func: calls, callers, time to the
 * return; line: hits; branch, var, assert, time, plugin, sys; stack: the
 * copies the program makes, unwound by agent_stack.c), the session (launch or attach, place, run until the
 * program ends, --duration, Ctrl-C/SIGTERM/SIGHUP, end), and the results
 * read from the shared memory into a struct engine so that the summary and
 * the JSON are output.c's, as for the other backends. */
#ifndef SONDE_PROBE_AGENT_RUN_H
#define SONDE_PROBE_AGENT_RUN_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct engine;

struct agent_opts {
	char **argv;            /* a program to launch, or NULL */
	pid_t pid;              /* or a process to attach to */
	const char *const *specs;
	int nspecs;
	double duration;        /* seconds, 0 = until the program ends */
	const char *rt_path;    /* libsonde-rt.so */
	void (*placed)(struct engine *e); /* called once the probes are in, or NULL */
	int in_fd;              /* interactive commands (manager.c), or -1 */
	int pending;            /* --pending: a location in no loaded object waits for a library (dlopen) */
	const char *record_dir; /* --record: the hits go into this recording too (agent_record.c), or NULL */
	uint32_t stack_copy;    /* stack probes: bytes of the stack copied at each hit (0: PA_STK_COPY_DEF) */
};

/* Whether every spec is of a kind the agent runs (func, line, branch,
 * time, sys, stack, plugin, and var and assert when the expression compiles to the agent's
 * bytecode at every address:
 * checked against the process pid, or the program argv0 of a launch);
 * why says which probe cannot, when one is of the agent's kinds.  No specs
 * (interactive only): yes. */
int agent_runs_all(const char *const *specs, int nspecs, pid_t pid, const char *argv0, char *why, size_t wn);
/* The whole session.  0, or -1 with err (e->start_ns is 0 when nothing ran). */
int agent_probe_run(struct engine *e, const struct agent_opts *o, char *err, size_t n);
/* After the output. */
void agent_probe_close(struct engine *e);

#endif
