/* breakpoints.c — what the ptrace engine does to the target: inserting and
 * removing breakpoints (with their out-of-line slots), stopping and resuming
 * all threads, and the clean detach that restores every byte and moves every
 * thread out of our code.  The event loop is run.c. */
#include "probe/ptrace/ptrace.h"

#include "probe/probe.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <time.h>

int ptrace_read_code(struct engine *e, uint64_t addr, void *buf, size_t n)
{
	return bptab_read_code(&ptrace_state(e)->bps, &e->t, addr, buf, n);
}

static int write_slot(struct engine *e, struct bp *b, char *err, size_t n)
{
	uint8_t code[ARCH_SLOT_SIZE];
	const char *why = NULL;
	int len = arch_ool_build(&b->insn, b->slot, b->want_post, code, &why);
	if (len < 0) {
		snprintf(err, n, "cannot probe '%s' at 0x%llx (%s)", b->insn.text, (unsigned long long)b->addr, why);
		return -1;
	}
	if (target_write(&e->t, b->slot, code, (size_t)len)) {
		snprintf(err, n, "cannot write the out-of-line slot at 0x%llx", (unsigned long long)b->slot);
		return -1;
	}
	b->slot_post = b->want_post;
	return 0;
}

int engine_insert(struct engine *e, struct probe *p, uint64_t addr, int role, int want_post,
                  char *err, size_t n)
{
	struct bp *b = bptab_find(&ptrace_state(e)->bps, addr);
	int fresh = 0;
	if (!b) {
		uint8_t code[16];
		size_t got = sizeof code;
		while (got > 0 && engine_read_code(e, addr, code, got))
			got--;
		struct arch_insn in;
		if (!got || arch_decode(code, got, addr, &in)) {
			snprintf(err, n, "cannot probe 0x%llx (%s)", (unsigned long long)addr,
			         got ? "not a valid instruction" : "address not readable");
			return -1;
		}
		if (in.kind == AI_BAD) {
			snprintf(err, n, "cannot probe '%s' at 0x%llx (instruction cannot be displaced)",
			         in.text, (unsigned long long)addr);
			return -1;
		}
		if (!(b = bptab_add(&ptrace_state(e)->bps, addr))) {
			snprintf(err, n, "out of memory");
			return -1;
		}
		b->insn = in;
		memcpy(b->orig, code, ARCH_BP_LEN);
		fresh = 1;
	}
	int old_post = b->want_post;
	b->want_post |= want_post;
	if (!b->insn.emulable) {
		if (!b->slot) {
			if (scratch_slot(&ptrace_state(e)->sc, &e->t, &ptrace_state(e)->bps, b, addr, &b->slot, err, n) ||
			    write_slot(e, b, err, n)) {
				b->want_post = old_post;
				if (fresh) { /* the slot first: bptab_remove frees b */
					scratch_release(&ptrace_state(e)->sc, b->slot);
					bptab_remove(&ptrace_state(e)->bps, addr);
				}
				return -1;
			}
		} else if (b->want_post != b->slot_post && write_slot(e, b, err, n)) {
			return -1;
		}
	}
	struct site *s = realloc(b->sites, (size_t)(b->nsites + 1) * sizeof *s);
	if (!s) {
		snprintf(err, n, "out of memory");
		return -1;
	}
	b->sites = s;
	b->sites[b->nsites].p = p;
	b->sites[b->nsites].role = role;
	b->nsites++;
	if (!b->inserted) {
		if (target_write(&e->t, addr, arch_bp_insn, ARCH_BP_LEN)) {
			snprintf(err, n, "cannot write the breakpoint at 0x%llx", (unsigned long long)addr);
			b->nsites--;
			return -1;
		}
		b->inserted = 1;
	}
	return 0;
}

/* Breakpoints stay in the table when their last probe goes (uninserted):
 * a thread may still be in the slot or have a trap pending on them. */
void ptrace_remove(struct engine *e, struct probe *p)
{
	int it = 0;
	struct bp *b;
	while ((b = bptab_next(&ptrace_state(e)->bps, &it))) {
		int k = 0;
		for (int i = 0; i < b->nsites; i++)
			if (b->sites[i].p != p)
				b->sites[k++] = b->sites[i];
		b->nsites = k;
		if (!k && b->inserted) {
			if (!e->t.gone)
				target_write(&e->t, b->addr, b->orig, ARCH_BP_LEN);
			b->inserted = 0;
			b->want_post = 0;
		}
	}
	p->removed = 1;
}

/* A stop seen while stopping every thread: leave it so it can be replayed. */
static void park(void *arg, struct thr *th, int st)
{
	struct engine *e = arg;
	int sig = WSTOPSIG(st);
	arch_regs r;
	if (target_getregs(th->tid, &r)) {
		th->pending_sig = sig;
		return;
	}
	uint64_t slot;
	struct bp *b;
	if (sig == SIGTRAP) {
		uint64_t pc = arch_pc(&r) - ARCH_TRAP_PC_ADJ;
		if (bptab_find(&ptrace_state(e)->bps, pc)) {
			arch_set_pc(&r, pc); /* the hit is taken again when resumed */
			target_setregs(th->tid, &r);
			return;
		}
		if ((b = scratch_owner(&ptrace_state(e)->sc, pc, &slot)) && pc == slot + (uint64_t)arch_ool_trap_off(&b->insn)) {
			arch_set_pc(&r, b->addr + (uint64_t)b->insn.len);
			target_setregs(th->tid, &r);
			return;
		}
	} else if ((sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE) &&
	           (b = scratch_owner(&ptrace_state(e)->sc, arch_pc(&r), &slot))) {
		arch_set_pc(&r, b->addr);
		target_setregs(th->tid, &r);
		return;
	}
	th->pending_sig = sig;
}

int ptrace_hold(struct engine *e)
{
	if (e->t.gone)
		return -1;
	int rc = target_stop_all(&e->t, park, e);
	e->stopped_all = 1;
	return rc;
}

void ptrace_let_go(struct engine *e)
{
	if (!e->t.gone)
		target_resume_all(&e->t);
	e->stopped_all = 0;
}

/* Move a stopped thread out of an out-of-line slot. */
static void leave_slot(struct engine *e, struct thr *th)
{
	arch_regs r;
	uint64_t slot;
	struct bp *b;
	if (target_getregs(th->tid, &r) || !(b = scratch_owner(&ptrace_state(e)->sc, arch_pc(&r), &slot)))
		return;
	if (arch_pc(&r) == slot)
		arch_set_pc(&r, b->addr);
	else
		arch_set_pc(&r, b->addr + (uint64_t)b->insn.len);
	target_setregs(th->tid, &r);
}

/* Signals pending for one thread (not the process), from /proc. */
static uint64_t thread_sigpnd(struct engine *e, pid_t tid)
{
	char path[64], line[256];
	snprintf(path, sizeof path, "/proc/%d/task/%d/status", (int)e->t.pid, (int)tid);
	FILE *f = fopen(path, "r");
	uint64_t m = 0;
	if (!f)
		return 0;
	while (fgets(line, sizeof line, f))
		if (!strncmp(line, "SigPnd:", 7)) {
			m = strtoull(line + 7, NULL, 16);
			break;
		}
	fclose(f);
	return m;
}

/* A thread that hit one of our int3s just as it was interrupted reports the
 * interrupt first (job-control traps come before signals) and keeps the
 * SIGTRAP pending, with its pc one byte past the breakpoint.  Detached like
 * that, it would resume mid-instruction and die of the SIGTRAP: let it take
 * the trap now, so that park() rewinds it onto the original instruction. */
static void take_pending_traps(struct engine *e)
{
	for (int i = 0; i < e->t.nthr && !e->t.gone; i++) {
		for (int tries = 0; tries < 4; tries++) {
			struct thr *th = &e->t.thr[i];
			pid_t tid = th->tid;
			if (!th->stopped || th->pending_sig ||
			    !(thread_sigpnd(e, tid) & (1ull << (SIGTRAP - 1))))
				break;
			if (ptrace(PTRACE_CONT, tid, 0, 0))
				break;
			int st;
			pid_t w;
			while ((w = waitpid(tid, &st, __WALL)) < 0 && errno == EINTR)
				;
			if (w != tid)
				break;
			if (WIFEXITED(st) || WIFSIGNALED(st)) {
				if (tid == e->t.pid) {
					e->t.gone = 1;
					e->t.status = st;
				}
				target_del_thr(&e->t, tid);
				i--;
				break;
			}
			if (WIFSTOPPED(st) && (st >> 16) == 0)
				park(e, th, st);
		}
	}
}

void engine_detach(struct engine *e)
{
	if (e->t.gone)
		return;
	if (!e->stopped_all)
		engine_stop_all(e);
	take_pending_traps(e);
	if (e->t.gone)
		return;
	int it = 0;
	struct bp *b;
	while ((b = bptab_next(&ptrace_state(e)->bps, &it)))
		if (b->inserted) {
			target_write(&e->t, b->addr, b->orig, ARCH_BP_LEN);
			b->inserted = 0;
		}
	for (int i = 0; i < e->t.nthr; i++)
		leave_slot(e, &e->t.thr[i]);
	scratch_unmap_all(&ptrace_state(e)->sc, &e->t, &ptrace_state(e)->bps);
	target_detach(&e->t);
	e->detached = 1;
}

