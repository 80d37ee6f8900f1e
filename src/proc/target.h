/* target.h — the traced process and its threads (target.c): launch or
 * attach through ptrace, read and write its memory through /proc/PID/mem,
 * registers, continue one thread, stop and resume them all, detach. */
#ifndef SONDE_PROC_TARGET_H
#define SONDE_PROC_TARGET_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "arch/arch.h"

struct thr {
	pid_t tid;
	int stopped;
	int pending_sig;    /* signal to deliver when resumed */
};

struct target {
	pid_t pid;
	int launched;
	int memfd;
	struct thr *thr;
	int nthr, cap;
	int gone;           /* the process has exited */
	int status;         /* its wait status */
	int status_unknown; /* gone, its status not seen (an attached process that did not call exit) */
	uint64_t entry;     /* AT_ENTRY */
};

int target_launch(struct target *t, char **argv, char *err, size_t n);
int target_attach(struct target *t, pid_t pid, char *err, size_t n);
int target_reopen(struct target *t);
/* State letter of /proc/PID/task/TID/stat ('R', 'S', 'Z', ...), or 0 when
 * the thread does not exist. */
char target_thread_state(pid_t pid, pid_t tid);
/* The address of argc on the main thread's stack as the kernel made it
 * (field 28 of /proc/PID/stat), or 0. */
uint64_t target_start_stack(pid_t pid);
struct thr *target_thr(struct target *t, pid_t tid);
struct thr *target_add_thr(struct target *t, pid_t tid, int stopped);
void target_del_thr(struct target *t, pid_t tid);
int target_read(struct target *t, uint64_t addr, void *buf, size_t len);
int target_write(struct target *t, uint64_t addr, const void *buf, size_t len);
int target_getregs(pid_t tid, arch_regs *r);
int target_setregs(pid_t tid, const arch_regs *r);
int target_getfpregs(pid_t tid, arch_fpregs *f);
int target_cont(struct target *t, struct thr *th, int sig);
/* The next stop or end of any traced thread: waitpid(-1, st, __WALL),
 * again when a signal interrupts it.  Its tid, or -1 (errno set). */
pid_t target_wait(int *st);
int target_stop_all(struct target *t, void (*park)(void *arg, struct thr *th, int status), void *arg);
void target_resume_all(struct target *t);
void target_detach(struct target *t);

#endif
