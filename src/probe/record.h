/* record.h — `sonde probe --record` (record.c): the hits also go into a
 * sonde recording (-o DIR), as `sonde record` writes them. */
#ifndef SONDE_PROBE_RECORD_H
#define SONDE_PROBE_RECORD_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct engine;
struct hit;
struct precorder;
struct probe;

/* Prepare DIR (create, or reuse a previous recording) and start the clock;
 * sets e->rec.  Call once the target exists, before any hit. */
int precorder_open(struct engine *e, const char *dir, char *err, size_t n);
/* One event of probe p in h's thread (no-op without --record): event TRP_*,
 * value kind TRV_* with the value in iv / fv / sv (common/trace_enc.h). */
void precorder_hit(struct hit *h, struct probe *p, int event, int vkind, int64_t iv, double fv, const char *sv);
/* The same for an event of thread tid at clock ticks now (the agent's
 * rings, agent_record.c). */
void precorder_event(struct engine *e, pid_t tid, uint64_t now, struct probe *p, int event, int vkind, int64_t iv,
                     double fv, const char *sv);
/* Thread tid's name when /proc no longer had it (its first event came late). */
void precorder_thread_comm(struct engine *e, pid_t tid, const char *comm);
/* n events were dropped before they reached sonde (counted as lost). */
void precorder_dropped(struct engine *e, uint64_t n);
/* A traced thread exited: write out its last chunk. */
void precorder_thread_end(struct engine *e, pid_t tid);
/* Write the rest of the events and profile.sonde; frees e->rec. */
int precorder_close(struct engine *e, char *err, size_t n);

#endif
