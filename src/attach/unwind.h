/* unwind.h — a stopped thread's call stack through the DWARF CFI of the
 * process's objects (libdwfl; sonde-cc does not keep frame pointers)
 * (unwind.c).  Two users: the calls running at the attach (frames.c: every
 * thread stopped, libdwfl reads their registers itself) and stack probes
 * (probe/kind_stack.c: one thread stopped at a breakpoint, its registers as
 * the probe engine holds them, the trap's pc already put back; or on the
 * agent, its registers and stack as the agent copied them at the hit). */
#ifndef SONDE_ATTACH_UNWIND_H
#define SONDE_ATTACH_UNWIND_H

#include <elfutils/libdwfl.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* A Dwfl with the objects mapped in pid reported (/proc/PID/maps), or NULL
 * with err.  dwfl_end frees it. */
Dwfl *unwind_begin(pid_t pid, char *err, size_t n);

/* The frames of th, innermost first, at most max: each one's pc, stack
 * pointer (as unwound) and whether the pc is exact (frame 0, a signal
 * frame) rather than a return address.  Their number (a short stack is not
 * an error). */
int unwind_frames(Dwfl_Thread *th, uint64_t *pc, uint64_t *sp, int *act, int max);

/* 8 bytes of pid's memory at addr (process_vm_readv): 0, or -1. */
int unwind_read_word(pid_t pid, uint64_t addr, uint64_t *v);

/* One thread of pid stopped by the caller (ptrace), unwound from registers
 * the caller gives, reading the process's memory with process_vm_readv. */
struct unwinder;
struct unwinder *unwinder_new(pid_t pid, char *err, size_t n);
/* Up to max pcs of thread tid, innermost first: regs are the x86-64
 * general registers in struct user_regs_struct's layout.  Their number, 0
 * when none (not x86-64, the pc in no object). */
struct user_regs_struct;
int unwinder_stack(struct unwinder *u, pid_t tid, const struct user_regs_struct *regs, uint64_t *pc, int max);
/* The same for a thread that has run on since (a stack probe on the agent,
 * probe/agent/agent_stack.c): regs and stack_n bytes of its stack from stack_base
 * as they were at the hit; memory outside them is the process's. */
int unwinder_stack_copy(struct unwinder *u, pid_t tid, const struct user_regs_struct *regs, const void *stack,
                        uint64_t stack_base, size_t stack_n, uint64_t *pc, int max);
/* The objects mapped now (after a dlopen): reported again. */
int unwinder_refresh(struct unwinder *u);
void unwinder_free(struct unwinder *u);

#endif
