/* rt.h — what the parts of the runtime (libsonde-rt.so) share: the mapped
 * session, this process's slot, and per-thread state reached through
 * initial-exec TLS. Internal to src/rt/. */
#ifndef SONDE_RT_RT_H
#define SONDE_RT_RT_H

#include <stdint.h>

#include "common/ring.h"
#include "common/session.h"
#include "rt/modabi.h"

#define RT_HIDDEN __attribute__((visibility("hidden")))
#define RT_EXPORT __attribute__((visibility("default")))
#define RT_NO_NODE 0xffffffffu

enum { RT_T_NEW = 0, RT_T_ON = 1, RT_T_OFF = 2 };

/* Process-local, per-thread state.  Everything the hot path needs in one
 * cache-friendly place; the durable state lives in the session (t). */
struct rt_tls {
	uint32_t state;         /* RT_T_* */
	uint32_t busy;          /* re-entry guard (signal inside a hook) */
	uint32_t overflow;      /* frames deeper than SONDE_STACK_MAX */
	uint32_t slot;          /* thread slot */
	struct sonde_thread *t;
	struct sonde_node *nodes;
	struct sonde_ring *ring;
	uint64_t trace_seq;     /* trace mode: chunk seq of the last entry record */
	uint64_t trace_last;    /* trace mode: time of the last record written */
	uint32_t *recs[SONDE_MAX_MODS_PER_THREAD]; /* records[number] per module (seed 000) */
};

extern RT_HIDDEN struct sonde_session_hdr *rt_sess;
extern RT_HIDDEN uint32_t rt_mode;
extern RT_HIDDEN uint32_t rt_proc_slot;
extern RT_HIDDEN __thread struct rt_tls rt_tls;

/* Attach to the session if this process has one (idempotent). 0 if attached. */
RT_HIDDEN int rt_init(void);
/* First event of a thread: take a thread slot.  NULL when recording is off
 * for this thread (no session, no slot, no memory: the loss is counted). */
RT_HIDDEN struct rt_tls *rt_thread_slow(void);
static inline struct rt_tls *rt_thread(void)
{
	struct rt_tls *L = &rt_tls;
	return L->state == RT_T_ON ? L : rt_thread_slow();
}
RT_HIDDEN void rt_count_lost(struct sonde_thread *t, enum sonde_loss why);

/* The hooks' entry points (hooks.c), installed into each module's hook. */
/* One pair per session mode (profile only, trace only, any other mix). */
RT_HIDDEN void rt_enter_profile(struct sonde_modhook *m, uint32_t number, uintptr_t cfa, uintptr_t site);
RT_HIDDEN void rt_exit_profile(struct sonde_modhook *m, uint32_t number, uintptr_t cfa, uintptr_t site);
RT_HIDDEN void rt_enter_trace(struct sonde_modhook *m, uint32_t number, uintptr_t cfa, uintptr_t site);
RT_HIDDEN void rt_exit_trace(struct sonde_modhook *m, uint32_t number, uintptr_t cfa, uintptr_t site);
RT_HIDDEN void rt_enter_any(struct sonde_modhook *m, uint32_t number, uintptr_t cfa, uintptr_t site);
RT_HIDDEN void rt_exit_any(struct sonde_modhook *m, uint32_t number, uintptr_t cfa, uintptr_t site);
/* Per-module record array of this thread (slow path, once per thread and module). */
RT_HIDDEN uint32_t *rt_recs_alloc(struct rt_tls *L, uint32_t mod_slot);
/* fork child: re-create this thread's open frames in a fresh thread slot. */
RT_HIDDEN void rt_thread_after_fork(void);

/* Signal-safe diagnostics (write(2) on a stack buffer). */
RT_HIDDEN void rt_log(const char *msg);

#endif
