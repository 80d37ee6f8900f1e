/* sys_session.h — the system-call profiler's data (issue 38), shared by the
 * interposed libc wrappers (src/rt/syscalls.c, inside the profiled program)
 * and the recorder (src/record/syscalls_out.c), which writes them as a
 * REC_SYSCALLS record of profile.sonde (docs/FORMAT.md).  Pure layout.
 *
 * hdr->syscalls_off -> struct sys_session: one lock-free open-addressing
 * table over the recording, keyed by (process slot, system call, calling
 * function), each slot's counters updated with atomic adds.  A system call
 * costs ~100 ns at least: a shared table and atomic adds cost little beside
 * it, and need no per-thread memory. */
#ifndef SONDE_COMMON_SYS_SESSION_H
#define SONDE_COMMON_SYS_SESSION_H

#include <stdatomic.h>
#include <stdint.h>

#define SYS_TABLE_BITS 14u
#define SYS_TABLE_SLOTS (1u << SYS_TABLE_BITS)
#define SYS_NO_FUNC 0xffffffffu /* called outside every recorded function */

/* The calls seen (the wrappers of src/rt/syscalls.c), by number in this
 * list (not the kernel's numbers: the list is sonde's own). */
#define SYS_CALLS(X) \
	X(READ, "read", 1) X(WRITE, "write", 1) X(PREAD, "pread64", 1) X(PWRITE, "pwrite64", 1) \
	X(NANOSLEEP, "nanosleep", 0) X(CLOCK_NANOSLEEP, "clock_nanosleep", 0) X(POLL, "poll", 0) \
	X(EPOLL_WAIT, "epoll_wait", 0) X(SELECT, "select", 0) X(FSYNC, "fsync", 0) \
	X(OPEN, "open", 0) X(OPENAT, "openat", 0) X(CLOSE, "close", 0) \
	X(RECV, "recv", 1) X(RECVFROM, "recvfrom", 1) X(SEND, "send", 1) X(SENDTO, "sendto", 1) \
	X(ACCEPT, "accept", 0) X(ACCEPT4, "accept4", 0) X(CONNECT, "connect", 0) X(FUTEX, "futex", 0)
#define SYS_ENUM(id, name, bytes) SYS_##id,
enum sys_call { SYS_CALLS(SYS_ENUM) SYS_NCALLS };
#undef SYS_ENUM

/* futex is counted from the kernel's syscalls:sys_exit_futex events, not by
 * a wrapper (glibc makes it inside pthread and stdio): count and errors,
 * no time (the exit event has no entry time; its waits are the calling
 * function's off-CPU time).  docs/SYSCALLS.md "futex". */
static inline int sys_call_timed(uint32_t call) { return call != SYS_FUTEX; }

struct sys_slot {
	_Atomic uint64_t key;   /* 0 free; else func | call << 32 | (proc + 1) << 40 */
	_Atomic uint64_t count; /* calls returned */
	_Atomic uint64_t ticks; /* clock ticks inside the calls (common/clock.h) */
	_Atomic uint64_t bytes; /* read/write-like calls: bytes transferred (sum of positive results) */
	_Atomic uint64_t errors;/* calls that returned -1 */
	uint64_t pad[3];
};

struct sys_session {
	_Atomic uint64_t lost;  /* calls not counted: table full */
	_Atomic uint64_t futex_threads; /* threads whose futex calls were counted (their event opened) */
	_Atomic uint64_t futex_refused; /* threads whose tracepoint event the kernel refused */
	_Atomic uint64_t futex_lost;    /* futex exits not counted: the kernel's ring lost records */
	uint64_t pad[4];
	struct sys_slot table[SYS_TABLE_SLOTS];
};

static inline uint64_t sys_key(uint32_t proc, uint32_t call, uint32_t func)
{
	return (uint64_t)func | (uint64_t)(call & 0xff) << 32 | (uint64_t)(proc + 1) << 40;
}

#endif
