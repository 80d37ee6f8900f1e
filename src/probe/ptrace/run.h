/* run.h — the engine's event loop (run.c): every ptrace stop dispatched
 * (hits, out-of-line traps and faults, new threads, exec, signals for the
 * program), periodic probes, interactive commands. */
#ifndef SONDE_PROBE_RUN_H
#define SONDE_PROBE_RUN_H

#include <stdint.h>

struct engine;

/* Main loop: until the target exits, stop_req, or the deadline (0 = none).
 * in_fd >= 0: interactive commands (manager.h). */
int engine_run(struct engine *e, uint64_t deadline_ns, int in_fd);
/* A launched program, stopped at exec: run it to its entry point, then stop every thread. */
int engine_run_to_entry(struct engine *e);

#endif
