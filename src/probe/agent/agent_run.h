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


/* Whether every spec is of a kind the agent runs (func, line, branch,
 * time, sys, stack, plugin, and var and assert when the expression compiles to the agent's
 * bytecode at every address:
 * checked against the process pid, or the program argv0 of a launch);
 * why says which probe cannot, when one is of the agent's kinds.  No specs
 * (interactive only): yes. */
int agent_runs_all(const char *const *specs, int nspecs, pid_t pid, const char *argv0, char *why, size_t wn);
/* The session itself is the table agent_engine (probe_engine.h). */

#endif
