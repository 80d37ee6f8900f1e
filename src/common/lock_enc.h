/* lock_enc.h — the lock profiler's encoding shared by the runtime's lock
 * wrappers (src/rt/locks.c, through src/common/lock_session.h), the recording
 * (REC_LOCKS kinds, TRX_LOCK op bytes; docs/FORMAT.md) and its readers
 * (src/analysis/locks.c, src/export/lock_slices.c).  Values written to disk:
 * changing one is an incompatible format change (SONDE_DATA_VERSION).
 *
 * Event stream (--locks=events, --trace): one record per operation in the
 * thread's ring, in trace_enc.h's TR_EXT / TRX_LOCK form:
 *   varint(dt<<2 | TR_EXT), byte TRX_LOCK, varint(lock id), byte(op), varint(aux)
 */
#ifndef SONDE_COMMON_LOCK_ENC_H
#define SONDE_COMMON_LOCK_ENC_H

/* Lock kinds (lkrec_lock.kind). */
enum lk_kind {
	LK_MUTEX = 1, LK_RWLOCK = 2, LK_SPIN = 3, LK_COND = 4, LK_SEM = 5, LK_MTX = 6, LK_CND = 7,
	LK_KIND_MAX_
};

/* lkrec_lock.flags (the runtime's lk_lock.flags) */
enum { LK_F_INIT = 1u << 0, LK_F_DESTROYED = 1u << 1 };

/* Event operations (low 4 bits of the op byte) and flags. */
enum lk_op {
	LK_EV_ACQ      = 0, /* acquired without waiting; aux 0 */
	LK_EV_ACQ_WAIT = 1, /* acquired after waiting; aux = ticks waited */
	LK_EV_REL      = 2, /* released (unlock, sem_post); aux = ticks held (outer release) */
	LK_EV_TRYFAIL  = 3, /* trylock / trywait found it taken */
	LK_EV_TIMEOUT  = 4, /* timed wait gave up; aux = ticks waited */
	LK_EV_COND     = 5, /* condition wait ended (on the cond); aux = ticks waited; +LK_EVF_TIMEOUT */
	LK_EV_ERROR    = 6, /* the call failed otherwise (EDEADLK, EPERM, EINVAL...) */
	LK_EV_OP_MASK  = 0x0f,
	LK_EVF_READ    = 0x10, /* read acquisition / release (rwlock) */
	LK_EVF_NESTED  = 0x20, /* recursive acquisition / inner release: no hold starts or ends */
	LK_EVF_TIMEOUT = 0x40, /* LK_EV_COND: the wait timed out */
	LK_EVF_UNMATCHED = 0x40, /* LK_EV_REL: nobody was seen holding the lock */
	LK_EVF_CROSS   = 0x80, /* LK_EV_REL: the hold was started by another thread */
	LK_EVF_REACQ   = 0x80, /* acquisition inside a condition wait (mutex taken back) */
	LK_EVF_FORKED  = 0x40, /* LK_EV_ACQ: not an acquisition, a hold carried into a fork child */
};

#endif
