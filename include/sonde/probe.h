/* sonde/probe.h — public C API for custom probe handlers, loaded into
 * `sonde probe --plugin x.so` and attached with `-e plugin:LOCATION[:ARG]`.
 *
 * The handlers run inside sonde (not inside the probed program) while the
 * thread that hit the probe is stopped.  They get the thread's registers and
 * a reader of the program's memory.  A plugin exports one symbol:
 *
 *     const struct sonde_probe_plugin sonde_probe_plugin = {
 *         .abi = SONDE_PROBE_ABI, .name = "mine", .pre = my_pre, ...
 *     };
 *
 * pre runs before the displaced instruction, post after it (registers then
 * show its effect), error when the instruction faulted: the signal is given
 * to the program as it would have been, and the probe is removed.
 */
#ifndef SONDE_PROBE_H
#define SONDE_PROBE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SONDE_PROBE_ABI 1

/* x86-64 general registers of the stopped thread. */
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
	struct sonde_regs regs; /* before (pre, error) or after (post) the instruction */
	/* Read len bytes of the program's memory at addr; 0 ok, -1 unreadable. */
	int (*read)(const struct sonde_probe_ctx *c, uint64_t addr, void *buf, size_t len);
	void *user;             /* the plugin's own per-probe pointer (set it in init) */
	void *sonde_private;
};

struct sonde_probe_plugin {
	int abi;                /* SONDE_PROBE_ABI */
	const char *name;
	/* All optional.  init returns 0, or -1 to refuse the probe. */
	int  (*init)(struct sonde_probe_ctx *c);
	void (*pre)(struct sonde_probe_ctx *c);
	void (*post)(struct sonde_probe_ctx *c);
	void (*error)(struct sonde_probe_ctx *c, int signo);
	/* One summary line for the table (no newline); called at the end. */
	void (*report)(struct sonde_probe_ctx *c, FILE *out);
	void (*fini)(struct sonde_probe_ctx *c);
};

#ifdef __cplusplus
}
#endif
#endif
