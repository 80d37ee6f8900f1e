/* inject.h — making a running process call a function (inject.c): one of
 * its threads is stopped with ptrace, every register is saved, the call
 * runs on that thread's stack below the red zone, and the thread is put
 * back exactly where it was, a system call it was blocked in included.
 * inject_dlopen() loads a library into the process this way (the agent:
 * docs/ARCHITECTURE.md, "What runs where").  Errors are one clause for "sonde: error: %s". */
#ifndef SONDE_ATTACH_INJECT_H
#define SONDE_ATTACH_INJECT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Where the thread that made the call was stopped. */
struct inject_stop {
	pid_t tid;
	uint64_t pc;
	long syscall;       /* system call it was in (its restart pending), or -1 */
	int64_t sysret;     /* that call's return register at the stop: -512 -ERESTARTSYS, ... */
};

struct inject;

/* Stops thread tid of process pid (tid 0: the main thread, or another one if
 * it has exited) at a point where calling into the C library is safe: in a
 * system call, or in code outside libc and the dynamic loader, and never
 * while the loader loads objects (a program starting or just exec'd is run
 * to its entry point first).  NULL with
 * err set when ptrace is refused (with the reason), the process is gone or
 * stopped, or no safe point came. */
struct inject *inject_attach(pid_t pid, pid_t tid, char *err, size_t n);
/* Copies len bytes into the thread's stack, below the red zone and below
 * earlier copies, 16-byte aligned; *addr gets their address. */
int inject_push(struct inject *in, const void *data, size_t len, uint64_t *addr, char *err, size_t n);
/* Calls func(args[0..5]) in the stopped thread and waits for its return
 * (timeout_ms 0: no limit).  0 with *ret its return value; -1 with err when
 * it crashed, timed out (the thread is then put back anyway) or the process
 * ended. */
int inject_call_at(struct inject *in, uint64_t func, const uint64_t args[6], uint64_t *ret, int timeout_ms,
                   char *err, size_t n);
/* inject_call_at in two halves, for a caller that does something while the
 * call runs: begin starts it (0 or -1 with err); end waits for its return
 * as inject_call_at does, except that with give_up 0 a timeout returns 1,
 * the call still running (end can be called again). */
int inject_call_begin(struct inject *in, uint64_t func, const uint64_t args[6], char *err, size_t n);
int inject_call_end(struct inject *in, uint64_t *ret, int timeout_ms, int give_up, char *err, size_t n);
/* Reads a NUL-terminated string of at most n-1 bytes from the target. */
int inject_read_str(struct inject *in, uint64_t addr, char *buf, size_t n);
const struct inject_stop *inject_where(const struct inject *in);
/* Restores the stack bytes, every register and the signal mask, re-raises
 * the signals held back during calls, detaches and frees. */
void inject_detach(struct inject *in);
/* The thread's signal mask as inject_detach puts it back, without sig: an
 * agent that started (it places and takes out int3s while the program
 * runs) keeps SIGTRAP unblocked in the masks the program sets
 * (src/rt/signals.c); the mask the thread was stopped with may block it
 * (stopped inside a section that blocks every signal), and an int3 reached
 * there would kill the process. */
void inject_unblock_at_detach(struct inject *in, int sig);

/* attach + one call + detach.  lib, if not NULL, is the file name (no
 * directory) of the object func must be in at the stop: otherwise the
 * process has exec'd since func was found, and nothing is called (-1, err
 * says so). */
int inject_call(pid_t pid, const char *lib, uint64_t func, const uint64_t args[6], uint64_t *ret, char *err,
                size_t n);

/* Makes process pid call dlopen(lib_path, RTLD_NOW) on thread tid (0: its
 * choice); *handle gets the result.  On failure of dlopen itself err holds
 * the target's dlerror().  stop, if not NULL, says where the thread was. */
int inject_dlopen(pid_t pid, pid_t tid, const char *lib_path, uint64_t *handle, struct inject_stop *stop,
                  char *err, size_t n);
/* inject_dlopen without the detach: the thread stays stopped where dlopen
 * ran, for the calls into the library (the process cannot exec between
 * them); NULL with err on failure.  The caller detaches (inject_detach). */
struct inject *inject_dlopen_attach(pid_t pid, pid_t tid, const char *lib_path, uint64_t *handle, char *err,
                                    size_t n);

struct dl_funcs;
/* inject_dlopen's call on a thread stopped already (inject_attach): funcs,
 * if not NULL, says where dlopen and dlerror are (dlfuncs.c; NULL: looked
 * for in the process's objects).  The thread stays stopped. */
int inject_dlopen_with(struct inject *in, const struct dl_funcs *funcs, const char *lib_path, uint64_t *handle,
                       char *err, size_t n);
/* Reads len bytes of the target's memory at addr.  0 or -1. */
int inject_peek(struct inject *in, uint64_t addr, void *buf, size_t len);
/* Puts the thread's general registers back as they were at the stop, the
 * thread staying stopped: between calls, for a reader of its stack
 * (frames.c).  0 or -1. */
int inject_put_back(struct inject *in);

/* Stops thread tid of process pid, seized already (PTRACE_SEIZE), with
 * PTRACE_INTERRUPT and waits for that stop; signals that come first are
 * delivered as without sonde.  0; -1 with err (*gone set if the thread or
 * process ended). */
int inject_interrupt(pid_t pid, pid_t tid, int *gone, char *err, size_t n);
/* inject_interrupt's second half: waits for the stop of a thread that was
 * sent PTRACE_INTERRUPT (several threads can be sent theirs first). */
int inject_wait_stop(pid_t pid, pid_t tid, int *gone, char *err, size_t n);

/* State letter of /proc/PID/task/TID/stat ('R', 'S', 'Z', ...), or 0 when
 * the thread does not exist. */
char inject_thread_state(pid_t pid, pid_t tid);

#endif
