/* manager.h — the probe manager (manager.c): probes get ids and are added,
 * listed and deleted at run time; the interactive commands. */
#ifndef SONDE_PROBE_MANAGER_H
#define SONDE_PROBE_MANAGER_H

#include <stddef.h>
#include <stdio.h>

struct engine;
struct probe;

/* spec: KIND:LOCATION[:ARGS] or @NAME from the library. */
struct probe *manager_add(struct engine *e, const char *spec, char *err, size_t n);
int manager_del(struct engine *e, int id, char *err, size_t n);
/* Disable (on = 0) or enable a probe while the program runs: a disabled
 * probe stays placed and its numbers stay as they were; enabled again, they
 * go on from there (the hits in between are not counted).  0, or -1 with
 * err (no such probe, removed, pending, already so, or the engine cannot). */
int manager_enable(struct engine *e, int id, int on, char *err, size_t n);
/* --pending: tries the pending probes again (a library was loaded); the
 * number placed.  One whose location is found but cannot be placed fails
 * (engine_probe_failed). */
int manager_retry_pending(struct engine *e);
/* Pending probes not deleted. */
int manager_pending(const struct engine *e);
void manager_list(struct engine *e, FILE *f);
/* One interactive command line; replies on e->msg.  Returns 1 on "quit". */
int manager_command(struct engine *e, const char *line);

#endif
