/* remote.h — a client of the GDB Remote Serial Protocol (remote.c) over the
 * packet layer (rsp.h): what sonde asks of gdbserver, QEMU's gdbstub or
 * OpenOCD.  Connect and learn the stub (qSupported, no-ack mode, the
 * architecture from qXfer:features:read:target.xml), read and write memory
 * and registers, breakpoints (Z0/z0, or the breakpoint instruction written
 * with M when the stub has no Z0), continue and single-step (vCont or c/s),
 * stop replies, the load bias (auxv AT_ENTRY, or qOffsets), detach and kill.
 *
 * Errors: -1 with c->err set ("reading memory at 0x1234 failed (E14)"); a
 * target that exited or a closed connection is reported as a stop
 * (REMOTE_EXITED, REMOTE_KILLED, REMOTE_CLOSED), not an error. */
#ifndef SONDE_PROBE_REMOTE_H
#define SONDE_PROBE_REMOTE_H

#include <stddef.h>
#include <stdint.h>

#include "arch/remote_arch.h"
#include "probe/remote/rsp.h"

#define REMOTE_MAX_REGS 64

enum remote_stop_kind {
	REMOTE_STOPPED,     /* a signal (SIGTRAP for breakpoints and steps) */
	REMOTE_EXITED,      /* W: exit status in code */
	REMOTE_KILLED,      /* X: killed by signal code */
	REMOTE_CLOSED,      /* the stub closed the connection (e.g. semihosting exit) */
};

struct remote_stop {
	int kind;
	int code;           /* signal (gdb numbering) or exit status */
	long thread;        /* thread:NN, 0 if not given */
	int syscall;        /* a caught system call's stop (QCatchSyscalls): its number + 1, else 0 */
	/* Expedited registers (stub numbering), valid where have bit is set. */
	uint64_t reg[REMOTE_MAX_REGS];
	uint64_t have;
};

struct remote {
	struct rsp r;
	const struct rarch *arch;
	int big_endian;
	int has_vcont, has_z0, has_auxv, has_features;
	int has_tracepoints;    /* qSupported names tracepoint features (gdbserver) */
	int trace_defined;      /* QTinit sent, tracepoints defined */
	long thread;        /* the thread of the last stop */
	/* Core registers of the last stop: expedited in the stop reply, or read
	 * on first use (`p` for the pc, sp and return address, `g` for the rest). */
	uint64_t reg[REMOTE_MAX_REGS];
	uint64_t valid;     /* bit n: reg[n] holds the value */
	int has_p;
	int has_P;          /* -1 not known yet, 0 the stub wants `G` instead */
	char *gimg;         /* the last `g` reply of this stop (hex), for `G` */
	size_t gimg_len;
	int gimg_ok;
	int fetch_all;      /* read every register with `g` at once, not the hot ones with `p` */
	int unread_ok;      /* replies ("OK") still to read for commands sent ahead (remote_queue_*) */
	/* Whether a single step from one of our Z0 breakpoints executes the
	 * instruction under it (QEMU: "single-step overrides breakpoints") rather
	 * than reporting the breakpoint again (gdbserver): -1 not known yet,
	 * learned at the first step over; 1: no z0/Z0 around the step. */
	int step_passes_bp;
	char xml_arch[64];  /* <architecture> of target.xml, or "" */
	/* Code that cannot take a software breakpoint: flash and ROM regions of
	 * the stub's memory map (qXfer:memory-map:read, OpenOCD), [lo, hi).
	 * Breakpoints there are hardware ones (Z1); all are when force_hw (the
	 * stub refused a Z0 with an error).  hw_limit: the core's comparators
	 * (--hw-breakpoints), -1 not given; hw_used: Z1 placed now. */
	struct { uint64_t lo, hi; } ro[16];
	int nro;
	int force_hw;
	int hw_limit, hw_used;
	/* The registers the target description names (target.xml and the
	 * features it includes): beyond the core ones, for variables in FPU
	 * registers (remote_reg_named). */
	struct rreg { char name[16]; int regnum, bits; } *regs;
	int nregs;
	uint64_t kind_addr[64]; /* Z0 kinds read at these addresses (rarch.bp_kind) */
	uint8_t kind[64];
	void (*console)(void *arg, const char *text, size_t len); /* `O` packets; may be NULL */
	void *console_arg;
	char err[300];
};

/* Connect to target ("tcp:HOST:PORT" / "serial:DEV[,BAUD]"), agree on the
 * protocol, learn the architecture (target.xml, else elf_machine: EM_*),
 * and read the initial stop.  big_endian: the program's byte order. */
int remote_open(struct remote *c, const char *target, int timeout_ms, int elf_machine, int big_endian);
void remote_close(struct remote *c);

int remote_read(struct remote *c, uint64_t addr, void *buf, size_t n);
int remote_write(struct remote *c, uint64_t addr, const void *buf, size_t n);
/* A core register (stub numbering) of the stopped thread, or the flags
 * register (arch->flags: 4 bytes). */
int remote_reg(struct remote *c, int regno, uint64_t *val);
int remote_set_reg(struct remote *c, int regno, uint64_t val);
/* A register the target description names (e.g. "d3", "s5"), read with `p`
 * (not cached): its bytes, in the target's order, into buf (n at most).
 * The count read, or -1 with c->err (no such register, or the stub refused). */
int remote_reg_named(struct remote *c, const char *name, uint8_t *buf, size_t n);
/* Registers regno[i] = val[i] (n of them) and memory, sent ahead without
 * waiting for the reply in no-ack mode: the replies are read, and checked
 * to be "OK", before the next request's reply or right after the next
 * resume is sent, so that the writes go with the resume.  With acks they
 * wait as remote_set_reg and remote_write do.  Registers go with `P`, or
 * with one `G` of the whole register set when the stub has no `P` (learned
 * at the first write, which waits for its reply).  remote_regs_writable
 * says beforehand whether they can be written: 1, 0 (no `P` and the stub
 * gave a register set that cannot be written back whole), -1 error. */
int remote_regs_writable(struct remote *c);
int remote_queue_set_regs(struct remote *c, int n, const int *regno, const uint64_t *val);
int remote_queue_write(struct remote *c, uint64_t addr, const void *buf, size_t n);

/* The whole register set of the stopped thread (the `g` image, malloc'd;
 * NULL with c->err), and written back with `G`: around code sonde makes
 * the target run for itself (remote_count.c). */
char *remote_regs_save(struct remote *c);
int remote_regs_restore(struct remote *c, const char *img);

/* A breakpoint at addr: Z0 when the stub has it, else the breakpoint
 * instruction written with M (*saved gets the original bytes, *written is
 * RBP_WRITTEN); in code that cannot be written (remote_readonly) a
 * hardware breakpoint, Z1 (*written is RBP_HW).  remove undoes exactly
 * what insert did. */
enum { RBP_Z0 = 0, RBP_WRITTEN = 1, RBP_HW = 2 };
/* Whether addr needs a hardware breakpoint (flash, ROM, or a stub that
 * refuses software ones). */
int remote_readonly(struct remote *c, uint64_t addr);
int remote_insert_bp(struct remote *c, uint64_t addr, uint8_t saved[RARCH_MAX_BP], int *written);
int remote_remove_bp(struct remote *c, uint64_t addr, const uint8_t saved[RARCH_MAX_BP], int written);

/* Resume (continue, sig = 0 or a signal to deliver) without waiting. */
int remote_cont(struct remote *c, int sig);
/* The same, after putting back a breakpoint that remote_step_over lifted
 * (the two packets sent together in no-ack mode: one round trip). */
int remote_insert_cont(struct remote *c, uint64_t addr, uint8_t saved[RARCH_MAX_BP], int *written, int sig);
/* Single-step the thread of the last stop over the instruction under our
 * breakpoint at addr; *st is the step's stop.  When the stub's step passes
 * its own breakpoint (step_passes_bp) the breakpoint stays; otherwise it is
 * lifted first (z0 and the step together in no-ack mode), *lifted is set,
 * and the caller puts it back (remote_insert_bp or remote_insert_cont). */
int remote_step_over(struct remote *c, uint64_t addr, const uint8_t saved[RARCH_MAX_BP], int written,
                     struct remote_stop *st, int *lifted);
/* Single-step the thread of the last stop and wait for its stop. */
int remote_step(struct remote *c, struct remote_stop *st);
/* Wait up to timeout_ms (-1: the packet layer's timeout) for a stop reply.
 * 1: nothing yet (only with timeout_ms >= 0), 0: *st filled, -1 error. */
int remote_wait(struct remote *c, int timeout_ms, struct remote_stop *st);
/* Ctrl-C: stop the running target (its stop reply is then remote_wait's). */
int remote_interrupt(struct remote *c);

/* The load bias of the program: run-time minus link-time address, from the
 * stub's auxv (AT_ENTRY minus elf_entry) or qOffsets; 0 when the stub knows
 * neither (a program loaded at its link address, as on bare metal). */
int remote_load_bias(struct remote *c, uint64_t elf_entry, uint64_t *bias, const char **how);

/* Tracepoints (gdbserver): the stub counts the hits itself, without
 * stopping the target for sonde.  remote_trace_define defines tracepoint
 * num at addr with no actions (after QTinit the first time); 1 when the
 * stub refuses tracepoints (the caller uses a breakpoint), -1 error.
 * remote_trace_start starts the trace (circular buffer: the trace frames,
 * one small one per hit, never fill it); remote_trace_hits asks for the hit
 * count of one (the target stopped, or exited: the stub still answers);
 * remote_trace_stop ends the trace, which takes the tracepoints out. */
int remote_trace_define(struct remote *c, int num, uint64_t addr);
int remote_trace_start(struct remote *c);
int remote_trace_hits(struct remote *c, int num, uint64_t addr, uint64_t *hits);
int remote_trace_stop(struct remote *c);

/* QCatchSyscalls:1;NR (gdbserver): the target stops at the entry of
 * system call nr (stop replies "T05syscall_entry:NR", st->syscall); nr < 0:
 * no more catching.  0, 1 the stub has no such catch, -1 error. */
int remote_catch_syscall(struct remote *c, int nr);

/* Detach (the target runs on); kill. */
int remote_detach(struct remote *c);
void remote_kill(struct remote *c);

#endif
