/* remote_count.h — line probes counted inside a remote target, without a
 * stop per hit (remote_count.c): on aarch64 and x86-64 Linux
 * (qemu-aarch64 -g, gdbserver), each site's instruction is replaced by a
 * branch to a trampoline, in a page sonde maps in the target, that adds 1 to
 * a counter there, runs the displaced instruction(s) and branches back.  On
 * aarch64 the target patches its own text (QEMU's stub refuses writes to
 * it): sonde has it run a routine written into that page; on x86-64 the
 * jumps are written with M (gdbserver).  The counters are read with `m` at
 * every stop the target makes, at its exit (exit_group caught by the stub,
 * else a breakpoint on the program's _fini: the exit path of exit() and of a
 * return from main), and at the end; the text is restored when sonde leaves
 * a live target.  A site that cannot be
 * counted so (an instruction not relocated, no syscall found, another
 * architecture...) keeps a breakpoint.  See docs/REMOTE.md. */
#ifndef SONDE_PROBE_REMOTE_COUNT_H
#define SONDE_PROBE_REMOTE_COUNT_H

#include <stddef.h>
#include <stdint.h>

struct rsess;
struct probe;
struct remote_stop;

/* Site addr of probe p to be counted in the target: 0 taken (placed by
 * rcount_install), 1 not (the caller uses a breakpoint), -1 out of memory. */
int rcount_add(struct rsess *s, struct probe *p, uint64_t addr);
/* After every probe is placed: map the page, write the trampolines and
 * have the target patch itself.  When that cannot be done, the sites get
 * breakpoints (a note through e->warn).  0, or -1 with err (the target's
 * state is not known: the session ends). */
int rcount_install(struct rsess *s, char *err, size_t n);
/* At every stop reply (a stop: the counters are read; an exit: whether
 * the last read saw every hit) and before every resume (sig: the signal
 * it delivers). */
void rcount_stop(struct rsess *s, const struct remote_stop *st);
void rcount_resume(struct rsess *s, int sig);
/* The target stopped and sonde leaves it: the last read, then the
 * original instructions back (the page stays: a thread may be in it).
 * 0, or -1 with s->c.err. */
int rcount_undo(struct rsess *s);
/* Whether pc (a SIGTRAP stop) is a trampoline's heartbeat brk (aarch64,
 * a64_tramp): the counters were read at the stop; the caller moves the pc
 * past it and resumes without a signal, or leaves. */
int rcount_heartbeat(struct rsess *s, uint64_t pc);
/* The counts into the probes (p->hits, and whether they are complete). */
void rcount_finish(struct rsess *s);
void rcount_free(struct rsess *s);

#endif
