/* syscalls.c — system calls per function (issue 38, `sonde record
 * --syscalls`), inside libsonde-rt.so: interposed libc wrappers, as the lock
 * profiler's (locks.c) are.  Each wrapper times the real libc function with
 * two clock reads and adds count, ticks, bytes and errors to the session's
 * table (common/sys_session.h) under (process, call, the function on top of
 * the calling thread's shadow stack).
 *
 * Seen: calls through the exported symbols (runtime.map) from the program and
 * its libraries (and, attached, through every object's GOT: got.c).  Not
 * seen: glibc's internal calls (stdio's write, the loader's reads), raw
 * `syscall` instructions, fortified __read_chk and the like.  futex, which
 * glibc makes internally (pthread, stdio's locks), is counted from the
 * kernel's own events instead (rt_sys_kernel, from cpu_time.c).
 *
 * Rules: without --syscalls, before the session is known, while resolving
 * the real functions, for calls made by the runtime itself, and on a thread
 * inside a runtime section (rt_tls.busy: a signal handler interrupting a
 * hook), every wrapper is a plain pass-through.  errno is as the real call
 * left it.  No lock, no malloc: one atomic table. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/sys_session.h"
#include "common/trace_enc.h"
#include "rt/got.h"
#include "rt/rt.h"

static int sy_state;            /* 0 not known yet, 1 recording, -1 pass-through */
static struct sys_session *sy_S;
static __thread int sy_inside __attribute__((tls_model("initial-exec")));

extern const char __ehdr_start[] __attribute__((visibility("hidden")));
extern const char __etext[] __attribute__((visibility("hidden")));

static int sy_boot(void)
{
	sy_inside = 1;
	int saved = errno;
	int st = -1;
	if (rt_init() == 0 && (rt_mode & SONDE_MODE_SYSCALLS)) {
		struct sonde_session_hdr *S = rt_sess;
		uint64_t off = atomic_load_explicit(&S->syscalls_off, memory_order_acquire);
		if (!off) {
			uint64_t mine = sess_alloc(S, sizeof(struct sys_session));
			if (!mine)
				atomic_fetch_add_explicit(&S->lost[SONDE_LOST_SESSION_MEM], 1, memory_order_relaxed);
			else if (atomic_compare_exchange_strong_explicit(&S->syscalls_off, &off, mine,
			                                                  memory_order_acq_rel, memory_order_acquire))
				off = mine;
		}
		if (off) {
			sy_S = sess_ptr(S, off);
			st = 1;
		}
	}
	__atomic_store_n(&sy_state, st, __ATOMIC_RELEASE);
	errno = saved;
	sy_inside = 0;
	return st > 0;
}

/* Start of a counted call: its clock reading, or 0 for a pass-through. */
static inline uint64_t sy_begin(uintptr_t site)
{
	/* The runtime's own calls pass through; a return address that is an exit
	 * trampoline is a tail call (`jmp write`) of a hooked function. */
	if (sy_inside || (site - (uintptr_t)__ehdr_start < (uintptr_t)__etext - (uintptr_t)__ehdr_start &&
	                  !rt_is_exit_tramp(site)))
		return 0;
	int st = __atomic_load_n(&sy_state, __ATOMIC_ACQUIRE);
	if (st < 0 || (st == 0 && !sy_boot()))
		return 0;
	if (__atomic_load_n(&rt_agent_ended, __ATOMIC_ACQUIRE))
		return 0;
	return clock_ticks() | 1;
}

/* The function on top of this thread's shadow stack (SYS_NO_FUNC: none). */
static uint32_t sy_func(void)
{
	struct rt_tls *L = &rt_tls;
	if (L->state != RT_T_ON || L->busy || !L->t)
		return SYS_NO_FUNC;
	uint32_t d = L->t->depth;
	if (d == 0 || d > SONDE_STACK_MAX)
		return SYS_NO_FUNC;
	return L->t->stack[d - 1].func;
}

static struct sys_slot *sy_slot(uint64_t key)
{
	uint32_t h = (uint32_t)((key * 0x9e3779b97f4a7c15ull) >> (64 - SYS_TABLE_BITS));
	for (uint32_t i = 0; i < SYS_TABLE_SLOTS; i++) {
		struct sys_slot *s = &sy_S->table[(h + i) & (SYS_TABLE_SLOTS - 1)];
		uint64_t k = atomic_load_explicit(&s->key, memory_order_acquire);
		if (k == key)
			return s;
		if (k == 0) {
			uint64_t z = 0;
			if (atomic_compare_exchange_strong_explicit(&s->key, &z, key, memory_order_acq_rel,
			                                            memory_order_acquire) || z == key)
				return s;
		}
	}
	return NULL;
}

/* End of a counted call: rc is the real call's result (bytes for the
 * read/write-like ones). */
static void sy_end(uint64_t t0, uint32_t call, int64_t rc, int bytes_like)
{
	if (!t0)
		return;
	uint64_t now = clock_ticks(), dt = now - (t0 & ~1ull);
	int saved = errno;
	/* a trace: the call as a slice of its own under the open call */
	struct rt_tls *L = &rt_tls;
	if ((rt_mode & SONDE_MODE_TRACE) && !rt_floor && L->state == RT_T_ON && !L->busy && L->t && L->ring) {
		uint64_t v[3] = { call, dt, rc < 0 ? 0 : (uint64_t)rc + 1 };
		rt_busy_in(L);
		rt_trace_ext(L, TRX_SYSCALL, v, 3, now);
		rt_busy_out(L);
	}
	struct sys_slot *s = sy_slot(sys_key(rt_proc_slot, call, sy_func()));
	if (!s) {
		atomic_fetch_add_explicit(&sy_S->lost, 1, memory_order_relaxed);
	} else {
		atomic_fetch_add_explicit(&s->count, 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&s->ticks, dt, memory_order_relaxed);
		if (rc < 0)
			atomic_fetch_add_explicit(&s->errors, 1, memory_order_relaxed);
		else if (bytes_like)
			atomic_fetch_add_explicit(&s->bytes, (uint64_t)rc, memory_order_relaxed);
	}
	errno = saved;
}

static __typeof__(ssize_t (*)(int, void *, size_t)) real_read;
static __typeof__(ssize_t (*)(int, const void *, size_t)) real_write;
static __typeof__(ssize_t (*)(int, void *, size_t, off_t)) real_pread64;
static __typeof__(ssize_t (*)(int, const void *, size_t, off_t)) real_pwrite64;
static __typeof__(int (*)(const struct timespec *, struct timespec *)) real_nanosleep;
static __typeof__(int (*)(clockid_t, int, const struct timespec *, struct timespec *)) real_clock_nanosleep;
static __typeof__(int (*)(struct pollfd *, nfds_t, int)) real_poll;
static __typeof__(int (*)(int, struct epoll_event *, int, int)) real_epoll_wait;
static __typeof__(int (*)(int, fd_set *, fd_set *, fd_set *, struct timeval *)) real_select;
static __typeof__(int (*)(int, const char *, int, ...)) real_openat64;
static int (*real_fsync)(int), (*real_close)(int);
static __typeof__(ssize_t (*)(int, void *, size_t, int, struct sockaddr *, socklen_t *)) real_recvfrom;
static __typeof__(ssize_t (*)(int, const void *, size_t, int, const struct sockaddr *, socklen_t)) real_sendto;
static __typeof__(int (*)(int, struct sockaddr *, socklen_t *, int)) real_accept4;
static __typeof__(int (*)(int, const struct sockaddr *, socklen_t)) real_connect;

/* The real functions, looked up once when the runtime is loaded, before the
 * program's own code runs: never from a wrapper, whose caller may be a
 * signal handler that interrupted malloc or the loader (dlsym takes their
 * locks).  A call before this (another library's constructor) is the raw
 * system call. */
__attribute__((constructor(101))) static void sy_resolve(void)
{
	sy_inside = 1;
	int e = errno;
	__atomic_store_n(&real_read, (__typeof__(real_read))dlsym(RTLD_NEXT, "read"), __ATOMIC_RELEASE);
	__atomic_store_n(&real_write, (__typeof__(real_write))dlsym(RTLD_NEXT, "write"), __ATOMIC_RELEASE);
	__atomic_store_n(&real_pread64, (__typeof__(real_pread64))dlsym(RTLD_NEXT, "pread64"), __ATOMIC_RELEASE);
	__atomic_store_n(&real_pwrite64, (__typeof__(real_pwrite64))dlsym(RTLD_NEXT, "pwrite64"), __ATOMIC_RELEASE);
	__atomic_store_n(&real_nanosleep, (__typeof__(real_nanosleep))dlsym(RTLD_NEXT, "nanosleep"), __ATOMIC_RELEASE);
	__atomic_store_n(&real_clock_nanosleep, (__typeof__(real_clock_nanosleep))dlsym(RTLD_NEXT, "clock_nanosleep"), __ATOMIC_RELEASE);
	__atomic_store_n(&real_poll, (__typeof__(real_poll))dlsym(RTLD_NEXT, "poll"), __ATOMIC_RELEASE);
	__atomic_store_n(&real_epoll_wait, (__typeof__(real_epoll_wait))dlsym(RTLD_NEXT, "epoll_wait"), __ATOMIC_RELEASE);
	__atomic_store_n(&real_select, (__typeof__(real_select))dlsym(RTLD_NEXT, "select"), __ATOMIC_RELEASE);
	__atomic_store_n(&real_openat64, (__typeof__(real_openat64))dlsym(RTLD_NEXT, "openat64"), __ATOMIC_RELEASE);
	__atomic_store_n(&real_fsync, (__typeof__(real_fsync))dlsym(RTLD_NEXT, "fsync"), __ATOMIC_RELEASE);
	__atomic_store_n(&real_close, (__typeof__(real_close))dlsym(RTLD_NEXT, "close"), __ATOMIC_RELEASE);
	__atomic_store_n(&real_recvfrom, (__typeof__(real_recvfrom))dlsym(RTLD_NEXT, "recvfrom"), __ATOMIC_RELEASE);
	__atomic_store_n(&real_sendto, (__typeof__(real_sendto))dlsym(RTLD_NEXT, "sendto"), __ATOMIC_RELEASE);
	__atomic_store_n(&real_accept4, (__typeof__(real_accept4))dlsym(RTLD_NEXT, "accept4"), __ATOMIC_RELEASE);
	__atomic_store_n(&real_connect, (__typeof__(real_connect))dlsym(RTLD_NEXT, "connect"), __ATOMIC_RELEASE);
	errno = e;
	sy_inside = 0;
}

#define SY_SITE ((uintptr_t)__builtin_return_address(0))

static ssize_t sy_read(int fd, void *buf, size_t n, uintptr_t site)
{
	uint64_t t0 = sy_begin(site);
	ssize_t rc = real_read ? real_read(fd, buf, n) : syscall(SYS_read, fd, buf, n);
	sy_end(t0, SYS_READ, rc, 1);
	return rc;
}
RT_EXPORT ssize_t read(int fd, void *buf, size_t n) { return sy_read(fd, buf, n, SY_SITE); }

RT_EXPORT ssize_t write(int fd, const void *buf, size_t n)
{
	uint64_t t0 = sy_begin(SY_SITE);
	ssize_t rc = real_write ? real_write(fd, buf, n) : syscall(SYS_write, fd, buf, n);
	sy_end(t0, SYS_WRITE, rc, 1);
	return rc;
}

static ssize_t sy_pread(int fd, void *buf, size_t n, off_t off, uintptr_t site)
{
	uint64_t t0 = sy_begin(site);
	ssize_t rc = real_pread64 ? real_pread64(fd, buf, n, off) : syscall(SYS_pread64, fd, buf, n, off);
	sy_end(t0, SYS_PREAD, rc, 1);
	return rc;
}
RT_EXPORT ssize_t pread(int fd, void *buf, size_t n, off_t off) { return sy_pread(fd, buf, n, off, SY_SITE); }
RT_EXPORT ssize_t pread64(int fd, void *buf, size_t n, off_t off) { return sy_pread(fd, buf, n, off, SY_SITE); }

static ssize_t sy_pwrite(int fd, const void *buf, size_t n, off_t off, uintptr_t site)
{
	uint64_t t0 = sy_begin(site);
	ssize_t rc = real_pwrite64 ? real_pwrite64(fd, buf, n, off) : syscall(SYS_pwrite64, fd, buf, n, off);
	sy_end(t0, SYS_PWRITE, rc, 1);
	return rc;
}
RT_EXPORT ssize_t pwrite(int fd, const void *buf, size_t n, off_t off) { return sy_pwrite(fd, buf, n, off, SY_SITE); }
RT_EXPORT ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off) { return sy_pwrite(fd, buf, n, off, SY_SITE); }

RT_EXPORT int nanosleep(const struct timespec *req, struct timespec *rem)
{
	uint64_t t0 = sy_begin(SY_SITE);
	int rc = real_nanosleep ? real_nanosleep(req, rem) : (int)syscall(SYS_nanosleep, req, rem);
	sy_end(t0, SYS_NANOSLEEP, rc, 0);
	return rc;
}

/* clock_nanosleep returns the error (errno untouched): counted as an error when nonzero. */
RT_EXPORT int clock_nanosleep(clockid_t clk, int flags, const struct timespec *req, struct timespec *rem)
{
	uint64_t t0 = sy_begin(SY_SITE);
	int rc = real_clock_nanosleep ? real_clock_nanosleep(clk, flags, req, rem)
	                              : (syscall(SYS_clock_nanosleep, clk, flags, req, rem) ? errno : 0);
	sy_end(t0, SYS_CLOCK_NANOSLEEP, rc ? -1 : 0, 0);
	return rc;
}

RT_EXPORT int poll(struct pollfd *fds, nfds_t n, int timeout)
{
	uint64_t t0 = sy_begin(SY_SITE);
	int rc = real_poll ? real_poll(fds, n, timeout) : (int)syscall(SYS_poll, fds, n, timeout);
	sy_end(t0, SYS_POLL, rc, 0);
	return rc;
}

RT_EXPORT int epoll_wait(int ep, struct epoll_event *ev, int max, int timeout)
{
	uint64_t t0 = sy_begin(SY_SITE);
	int rc = real_epoll_wait ? real_epoll_wait(ep, ev, max, timeout) : (int)syscall(SYS_epoll_wait, ep, ev, max, timeout);
	sy_end(t0, SYS_EPOLL_WAIT, rc, 0);
	return rc;
}

RT_EXPORT int select(int n, fd_set *r, fd_set *w, fd_set *x, struct timeval *tv)
{
	uint64_t t0 = sy_begin(SY_SITE);
	int rc = real_select ? real_select(n, r, w, x, tv) : (int)syscall(SYS_select, n, r, w, x, tv);
	sy_end(t0, SYS_SELECT, rc, 0);
	return rc;
}

/* fsync and close: one file descriptor in, 0 or -1 out. */
static int sy_fd_op(int fd, uint32_t call, long nr, int (**realp)(int), uintptr_t site)
{
	int (*real)(int) = __atomic_load_n(realp, __ATOMIC_ACQUIRE);
	uint64_t t0 = sy_begin(site);
	int rc = real ? real(fd) : (int)syscall(nr, fd);
	sy_end(t0, call, rc, 0);
	return rc;
}

RT_EXPORT int fsync(int fd)
{
	return sy_fd_op(fd, SYS_FSYNC, SYS_fsync, &real_fsync, SY_SITE);
}

static int sy_openat(int dir, const char *path, int flags, mode_t mode, uint32_t call, uintptr_t site)
{
	uint64_t t0 = sy_begin(site);
	int rc = real_openat64 ? real_openat64(dir, path, flags, mode) : (int)syscall(SYS_openat, dir, path, flags, mode);
	sy_end(t0, call, rc, 0);
	return rc;
}

/* The mode argument is there only with O_CREAT or O_TMPFILE (open(2)). */
#define SY_MODE(flags, ap, last) \
	mode_t mode = 0; \
	if (((flags) & O_CREAT) || ((flags) & __O_TMPFILE) == __O_TMPFILE) { \
		va_list ap; \
		va_start(ap, last); \
		mode = (mode_t)va_arg(ap, int); \
		va_end(ap); \
	}

RT_EXPORT int open(const char *path, int flags, ...)
{
	SY_MODE(flags, ap, flags);
	return sy_openat(AT_FDCWD, path, flags, mode, SYS_OPEN, SY_SITE);
}
RT_EXPORT int open64(const char *path, int flags, ...)
{
	SY_MODE(flags, ap, flags);
	return sy_openat(AT_FDCWD, path, flags, mode, SYS_OPEN, SY_SITE);
}
RT_EXPORT int openat(int dir, const char *path, int flags, ...)
{
	SY_MODE(flags, ap, flags);
	return sy_openat(dir, path, flags, mode, SYS_OPENAT, SY_SITE);
}
RT_EXPORT int openat64(int dir, const char *path, int flags, ...)
{
	SY_MODE(flags, ap, flags);
	return sy_openat(dir, path, flags, mode, SYS_OPENAT, SY_SITE);
}

RT_EXPORT int close(int fd)
{
	return sy_fd_op(fd, SYS_CLOSE, SYS_close, &real_close, SY_SITE);
}

/* The socket calls: recv and send are recvfrom and sendto without an
 * address (as glibc makes them on x86-64), accept is accept4 without flags;
 * each counted under the name the program called. */
static ssize_t sy_recvfrom(int fd, void *buf, size_t n, int fl, struct sockaddr *a, socklen_t *al, uint32_t call,
                           uintptr_t site)
{
	uint64_t t0 = sy_begin(site);
	ssize_t rc = real_recvfrom ? real_recvfrom(fd, buf, n, fl, a, al) : syscall(SYS_recvfrom, fd, buf, n, fl, a, al);
	sy_end(t0, call, rc, 1);
	return rc;
}
RT_EXPORT ssize_t recv(int fd, void *buf, size_t n, int fl) { return sy_recvfrom(fd, buf, n, fl, NULL, NULL, SYS_RECV, SY_SITE); }
RT_EXPORT ssize_t recvfrom(int fd, void *buf, size_t n, int fl, struct sockaddr *a, socklen_t *al)
{
	return sy_recvfrom(fd, buf, n, fl, a, al, SYS_RECVFROM, SY_SITE);
}

static ssize_t sy_sendto(int fd, const void *buf, size_t n, int fl, const struct sockaddr *a, socklen_t al,
                         uint32_t call, uintptr_t site)
{
	uint64_t t0 = sy_begin(site);
	ssize_t rc = real_sendto ? real_sendto(fd, buf, n, fl, a, al) : syscall(SYS_sendto, fd, buf, n, fl, a, al);
	sy_end(t0, call, rc, 1);
	return rc;
}
RT_EXPORT ssize_t send(int fd, const void *buf, size_t n, int fl) { return sy_sendto(fd, buf, n, fl, NULL, 0, SYS_SEND, SY_SITE); }
RT_EXPORT ssize_t sendto(int fd, const void *buf, size_t n, int fl, const struct sockaddr *a, socklen_t al)
{
	return sy_sendto(fd, buf, n, fl, a, al, SYS_SENDTO, SY_SITE);
}

static int sy_accept4(int fd, struct sockaddr *a, socklen_t *al, int fl, uint32_t call, uintptr_t site)
{
	uint64_t t0 = sy_begin(site);
	int rc = real_accept4 ? real_accept4(fd, a, al, fl) : (int)syscall(SYS_accept4, fd, a, al, fl);
	sy_end(t0, call, rc, 0);
	return rc;
}
RT_EXPORT int accept(int fd, struct sockaddr *a, socklen_t *al) { return sy_accept4(fd, a, al, 0, SYS_ACCEPT, SY_SITE); }
RT_EXPORT int accept4(int fd, struct sockaddr *a, socklen_t *al, int fl) { return sy_accept4(fd, a, al, fl, SYS_ACCEPT4, SY_SITE); }

RT_EXPORT int connect(int fd, const struct sockaddr *a, socklen_t al)
{
	uint64_t t0 = sy_begin(SY_SITE);
	int rc = real_connect ? real_connect(fd, a, al) : (int)syscall(SYS_connect, fd, a, al);
	sy_end(t0, SYS_CONNECT, rc, 0);
	return rc;
}

/* Attached (`record --syscalls -p`, agent.c): the wrappers reach the
 * program through the GOT of every object (got.c), as the lock functions. */
#define SY_WRAPPED(X) X(read) X(write) X(pread) X(pread64) X(pwrite) X(pwrite64) X(nanosleep) \
	X(clock_nanosleep) X(poll) X(epoll_wait) X(select) X(fsync) X(open) X(open64) X(openat) X(openat64) X(close) \
	X(recv) X(recvfrom) X(send) X(sendto) X(accept) X(accept4) X(connect)
/* Each wrapper's own address: &write in this library would be bound like
 * any exported symbol's, to the first definition (libc's) in an attached
 * program's scope; a hidden alias is this file's. */
#define SY_ALIAS(fn) extern __typeof__(fn) sy_w_##fn __attribute__((alias(#fn), visibility("hidden")));
SY_WRAPPED(SY_ALIAS)
#define SY_ENTRY(fn) { #fn, (void *)sy_w_##fn },
static const struct rt_got_sym sy_wrappers[] = { SY_WRAPPED(SY_ENTRY) };

RT_HIDDEN int rt_syscall_wrappers(const struct rt_got_sym **out)
{
	*out = sy_wrappers;
	return (int)(sizeof sy_wrappers / sizeof sy_wrappers[0]);
}

/* The table, for the kernel's events (cpu_time.c, when a thread opens its
 * event): booted now, never from the cold path of a hook.  1 counting. */
RT_HIDDEN int rt_sys_ready(void)
{
	int st = __atomic_load_n(&sy_state, __ATOMIC_ACQUIRE);
	return st > 0 || (st == 0 && sy_boot());
}

/* A thread's futex event opened (ok) or refused by the kernel. */
RT_HIDDEN void rt_sys_futex_thread(int ok)
{
	if (__atomic_load_n(&sy_state, __ATOMIC_ACQUIRE) > 0)
		atomic_fetch_add_explicit(ok ? &sy_S->futex_threads : &sy_S->futex_refused, 1, memory_order_relaxed);
}

/* A system call the kernel's event reports (the futex exits of the thread's
 * ring, cpu_time.c's cold path at a hook, before the shadow stack changes):
 * made by the function on top of the thread's stack, which ran since the
 * thread's last hook.  rc: the kernel's result (-errno on an error); lost:
 * exits the ring lost instead. */
RT_HIDDEN void rt_sys_kernel(struct rt_tls *L, uint32_t call, int64_t rc, uint64_t lost)
{
	if (__atomic_load_n(&sy_state, __ATOMIC_ACQUIRE) <= 0)
		return;
	if (lost) {
		atomic_fetch_add_explicit(&sy_S->futex_lost, lost, memory_order_relaxed);
		return;
	}
	uint32_t fn = SYS_NO_FUNC;
	if (L->state == RT_T_ON && L->t && L->t->depth && L->t->depth <= SONDE_STACK_MAX)
		fn = L->t->stack[L->t->depth - 1].func;
	struct sys_slot *s = sy_slot(sys_key(rt_proc_slot, call, fn));
	if (!s) {
		atomic_fetch_add_explicit(&sy_S->lost, 1, memory_order_relaxed);
		return;
	}
	atomic_fetch_add_explicit(&s->count, 1, memory_order_relaxed);
	if (rc < 0)
		atomic_fetch_add_explicit(&s->errors, 1, memory_order_relaxed);
}

/* A later session (the agent's, after rt_session_retire): the next wrapper
 * call boots again on the new session's memory. */
RT_HIDDEN void rt_syscalls_reset(void)
{
	sy_S = NULL;
	__atomic_store_n(&sy_state, 0, __ATOMIC_RELEASE);
}
