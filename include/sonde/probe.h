/* sonde/probe.h — public C API for custom probe handlers, loaded into
 * `sonde probe --plugin x.so` and attached with `-e plugin:LOCATION[:ARG]`.
 * A plugin exports one symbol:
 *
 *     const struct sonde_probe_plugin sonde_probe_plugin = {
 *         .abi = SONDE_PROBE_ABI2, .name = "mine", .pre = my_pre, ...
 *         .result_size = sizeof(struct my_counts),
 *     };
 *
 * pre runs before the probed instruction, post after it (registers then
 * show its effect), error when the instruction faulted (ptrace engine only).
 *
 * On a remote target (`--target`, a GDB stub) every handler runs in sonde,
 * whatever the ABI, at the stop on the probe's breakpoint (pre) and once
 * the displaced instruction has run (post: emulated by sonde or
 * single-stepped); error is never called there.  The registers are the
 * target's: arch, nregs and gregs below (regs is filled too on an x86-64
 * target, else zero); read reads the target's memory through the stub
 * (`m` packets, at most 64 KiB a call); pid and tid are the stub's process
 * and thread ids; time_ns is sonde's clock when the stop arrived.
 * On 8051 firmware run by ucsim (`--target ucsim:`) the same, with arch
 * "mcs51": gregs A B PSW SP DPL DPH R0..R7 PC, read's memory space in
 * bits 16..23 of the address (0x00 xdata, 0x40 data/idata, 0x80 code:
 * SDCC's generic pointer tags), post after the console's `step` of the
 * probed instruction, pid and tid 0, time_ns the simulated time
 * (docs/REMOTE.md, "The 8051").
 *
 * Two ABIs; the abi field says which:
 *
 * SONDE_PROBE_ABI (1): every handler runs inside sonde, on the ptrace engine
 *   (or on a remote target), while the thread that hit the probe is stopped.  Handlers may keep state
 *   anywhere (c->user, set in init).  An ABI-1 plugin always runs on ptrace.
 *
 * SONDE_PROBE_ABI2 (2): pre and post run INSIDE THE PROBED PROGRAM, in the
 *   thread that hit the probe, called by sonde's agent from the probe site
 *   (the agent engine, the default; with --engine=ptrace, and on a remote
 *   target, they run in sonde as in ABI 1, and the same code works on all).  sonde loads the same .so
 *   into the program (dlopen, absolute path) and into itself.  State goes in
 *   c->result: a block of result_size bytes (at most SONDE_PROBE_RESULT_MAX)
 *   per probe, zeroed at the start, in memory that sonde and the program
 *   share; several threads run the handlers at once, so use atomics
 *   (__atomic_fetch_add...).  init, report and fini run in sonde, where
 *   c->result is sonde's view of the same block (init may leave parameters
 *   there for the handlers): the report shows what the program's handlers
 *   computed (the program wrote it: bound anything read from it before
 *   using it as a size or an index).  In the program's handlers c->user is
 *   NULL, c->spec and c->arg are copies, c->in_target is 1, c->read reads
 *   the program's own memory (process_vm_readv: a bad address is -1, never
 *   a fault), and post's c->hits is its pre's.
 *   Handlers in the program run between two of its instructions, perhaps
 *   inside a signal handler (int3 sites) or while the thread holds a libc
 *   lock: keep them short, do not call malloc, stdio or anything that may
 *   take a lock; every register (the vector ones too) and errno are saved
 *   around them.  error is never called on the agent: an instruction that
 *   faults there is the program's own fault, delivered as without sonde.
 *   Once sonde is gone (end of the session, or killed) the handlers are no
 *   longer called; the plugin stays loaded in the program, inert.
 */
#ifndef SONDE_PROBE_H
#define SONDE_PROBE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SONDE_PROBE_ABI  1  /* handlers in sonde (ptrace) */
#define SONDE_PROBE_ABI2 2  /* pre and post in the program (the agent), or in sonde on ptrace */
#define SONDE_PROBE_RESULT_MAX 4096 /* bytes of a probe's result area (ABI 2) */

/* x86-64 general registers of the thread at the probe (on the agent,
 * fs_base and gs_base are 0). */
struct sonde_regs {
	uint64_t rax, rbx, rcx, rdx, rsi, rdi, rbp, rsp;
	uint64_t r8, r9, r10, r11, r12, r13, r14, r15;
	uint64_t rip, eflags, fs_base, gs_base;
};

struct sonde_probe_ctx {
	int id;                 /* probe id, as in `list` */
	const char *spec;       /* the probe's spec */
	const char *arg;        /* ARG of plugin:LOCATION:ARG, or "" */
	int pid, tid;
	uint64_t addr;          /* run-time address of the probed instruction */
	uint64_t time_ns;       /* CLOCK_MONOTONIC when the hit was taken */
	uint64_t hits;          /* hits of this probe so far, this one included */
	struct sonde_regs regs; /* before (pre, error) or after (post) the instruction; a copy */
	/* Read len bytes of the program's memory at addr; 0 ok, -1 unreadable. */
	int (*read)(const struct sonde_probe_ctx *c, uint64_t addr, void *buf, size_t len);
	void *user;             /* the plugin's own per-probe pointer (set it in init; NULL in the program) */
	void *sonde_private;
	/* ABI 2 only (an ABI-1 plugin does not see these): */
	void *result;           /* this probe's result area: result_size bytes, zeroed at the start */
	size_t result_size;
	int in_target;          /* 1: this handler runs inside the probed program */
	/* Remote targets (sonde probe --target), both ABIs; on a local process
	 * arch is NULL, gregs NULL and nregs 0.  (A sonde older than these
	 * fields does not have them: a plugin that reads them needs this one.) */
	const char *arch;       /* "x86-64", "aarch64", "arm", "mips", "riscv32" or "mcs51" */
	int big_endian;         /* the target's byte order (read gives its bytes as they are) */
	int reg_size;           /* bytes of a general register: 8 or 4 (1 on mcs51, whose PC has 2) */
	int nregs;              /* registers in gregs */
	const uint64_t *gregs;  /* the general registers, zero-extended, in the GDB stub's
	                         * `g` order: see docs/PROBES.md, "plugin" (x86-64: rax rbx rcx
	                         * rdx rsi rdi rbp rsp r8..r15 rip; aarch64: x0..x30 sp pc;
	                         * arm: r0..r12 sp lr pc; mips: zero..ra sr lo hi bad cause pc;
	                         * riscv32: x0..x31 pc; mcs51: a b psw sp dpl dph r0..r7 pc);
	                         * valid during the call only */
};

struct sonde_probe_plugin {
	int abi;                /* SONDE_PROBE_ABI or SONDE_PROBE_ABI2 */
	const char *name;
	/* All optional.  init returns 0, or -1 to refuse the probe. */
	int  (*init)(struct sonde_probe_ctx *c);
	void (*pre)(struct sonde_probe_ctx *c);
	void (*post)(struct sonde_probe_ctx *c);
	void (*error)(struct sonde_probe_ctx *c, int signo);
	/* One summary line for the table (no newline); called at the end. */
	void (*report)(struct sonde_probe_ctx *c, FILE *out);
	void (*fini)(struct sonde_probe_ctx *c);
	/* ABI 2 only: bytes of each probe's result area (0 to SONDE_PROBE_RESULT_MAX). */
	size_t result_size;
	/* ABI 2 only: SONDE_PROBE_GENERAL_REGS_ONLY or 0. */
	unsigned flags;
};

/* The handlers, and everything they call, touch no vector or x87 register
 * (built with -mgeneral-regs-only, no floating point, no libc string
 * functions): the agent then does not save the extended state around them
 * (on an AVX-512 machine about 130 ns of a hit's 180). */
#define SONDE_PROBE_GENERAL_REGS_ONLY 1u

#ifdef __cplusplus
}
#endif
#endif
