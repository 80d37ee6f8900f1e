/* step.c — what happens on one hit: pre-handlers, then the displaced
 * instruction executed by emulation or from its out-of-line slot, then the
 * post-handlers, then the thread continues: one stop per hit (a second one
 * only for out-of-line instructions whose probes want a post-handler).
 * A fault of the displaced instruction runs the error-handlers, removes the
 * probes and lets the program execute the original instruction, so it gets
 * the same signal as it would have without sonde. */
#include "probe/ptrace/step.h"

#include "common/clock.h"
#include "probe/ptrace/bptab.h"
#include "probe/engine.h"
#include "probe/kind.h"
#include "probe/probe.h"
#include "proc/target.h"

#include <signal.h>
#include <string.h>

static int mem_read(void *ctx, uint64_t a, void *b, size_t n)
{
	return target_read(&((struct engine *)ctx)->t, a, b, n);
}

static int mem_write(void *ctx, uint64_t a, const void *b, size_t n)
{
	return target_write(&((struct engine *)ctx)->t, a, b, n);
}

static void resume(struct engine *e, struct thr *th, arch_regs *r)
{
	target_setregs(th->tid, r);
	target_cont(&e->t, th, 0);
}

static void run_post(struct engine *e, struct hit *h, struct bp *b)
{
	(void)e;
	int n = b->nsites;
	for (int i = 0; i < n && i < b->nsites; i++) {
		struct probe *p = b->sites[i].p;
		if (!p->removed && !p->disabled && p->ops->post)
			p->ops->post(p, h, b->sites[i].role);
	}
}

static void fail(struct engine *e, struct hit *h, struct bp *b, int sig, const char *what)
{
	/* Copy the probes first: removal edits b->sites. */
	struct probe *ps[64];
	int n = 0;
	for (int i = 0; i < b->nsites && n < 64; i++)
		ps[n++] = b->sites[i].p;
	for (int i = 0; i < n; i++) {
		struct probe *p = ps[i];
		if (p->removed)
			continue;
		if (p->ops->error)
			p->ops->error(p, h, sig);
		engine_probe_failed(e, p, "%s at 0x%llx (%s, signal %d): probe removed", what,
		                    (unsigned long long)b->addr, b->insn.text, sig);
	}
}

void step_hit(struct engine *e, struct thr *th, arch_regs *r, struct bp *b)
{
	struct hit h = { .e = e, .th = th, .regs = r, .addr = b->addr, .now_ns = now_ns(), .ticks = clock_ticks(), .bp = b };
	e->total_hits++;
	int n = b->nsites;
	for (int i = 0; i < n && i < b->nsites; i++) {
		struct probe *p = b->sites[i].p;
		if (!p->removed && !p->disabled && p->ops->pre)
			p->ops->pre(p, &h, b->sites[i].role);
	}
	if (!b->inserted) { /* a handler removed it: run the original in place */
		arch_set_pc(r, b->addr);
		resume(e, th, r);
		return;
	}
	if (b->insn.emulable) {
		struct arch_mem m = { mem_read, mem_write, e };
		arch_regs save = *r;
		int rc = arch_emulate(&b->insn, r, &m);
		if (rc == 0) {
			if (b->want_post)
				run_post(e, &h, b);
			resume(e, th, r);
			return;
		}
		*r = save;
		if (rc < 0) {
			fail(e, &h, b, SIGSEGV, "emulated instruction faulted");
			arch_set_pc(r, b->addr);
			resume(e, th, r);
			return;
		}
	}
	if (!b->slot) {
		fail(e, &h, b, SIGILL, "instruction cannot be executed out of line");
		arch_set_pc(r, b->addr);
		resume(e, th, r);
		return;
	}
	arch_set_pc(r, b->slot);
	resume(e, th, r);
}

/* The trap after an out-of-line instruction. */
void step_post(struct engine *e, struct thr *th, arch_regs *r, struct bp *b)
{
	struct hit h = { .e = e, .th = th, .regs = r, .addr = b->addr, .now_ns = now_ns(), .ticks = clock_ticks(), .bp = b };
	arch_set_pc(r, b->addr + (uint64_t)b->insn.len);
	run_post(e, &h, b);
	resume(e, th, r);
}

/* A signal raised by the out-of-line instruction in b's slot. */
void step_fault(struct engine *e, struct thr *th, arch_regs *r, struct bp *b, int sig)
{
	arch_set_pc(r, b->addr);
	struct hit h = { .e = e, .th = th, .regs = r, .addr = b->addr, .now_ns = now_ns(), .ticks = clock_ticks(), .bp = b };
	fail(e, &h, b, sig, "displaced instruction faulted");
	resume(e, th, r);
}

int hit_fpregs(struct hit *h)
{
	if (!h->have_fp && target_getfpregs(h->th->tid, &h->fp) == 0)
		h->have_fp = 1;
	return h->have_fp ? 0 : -1;
}
