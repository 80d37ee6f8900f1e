/* agent_stack.c — stack probes on the agent engine, sonde's side: every
 * few milliseconds, and once more at the end, sonde takes the records of the
 * agent's stack rings (common/probe_area.h, struct pa_sring; written by
 * src/rt/probe_stack.c at each hit: the registers and a copy of the stack
 * from the stack pointer up), unwinds each one with libdwfl from those
 * registers, reading the copied stack where an address falls inside it and
 * the process's memory elsewhere (attach/unwind.h, unwinder_stack_copy),
 * and counts the stack in its probe's table (kind_stack.c, stack_account):
 * the table and the JSON are the ptrace engine's.
 *
 * Nothing the program wrote is trusted: a record is copied out of the
 * shared memory before it is read, its length and site are checked against
 * the ring and the probes; a ring whose head is more than a ring ahead of
 * what sonde read is skipped to its head.  Those are counted (bad). */
#include "probe/agent/agent_stack.h"

#include "probe/engine.h"
#include "probe/kind.h"
#include "probe/probe.h"

#include <stdlib.h>
#include <string.h>
#include <sys/user.h>

struct starget {
	struct probe *p;
	void *sdata;
};

static struct starget by_site[PA_MAX_SITES];
static uint64_t seen_tail[PA_STK_RINGS];
static uint64_t bad;

/* Which probe takes the records of each site record (probes may come and
 * go between two drains: found again each time). */
static int targets(struct engine *e)
{
	int any = 0;
	memset(by_site, 0, sizeof by_site);
	for (int i = 0; i < e->nprobes; i++) {
		struct probe *p = e->probes[i];
		const int *sites;
		void *sd = NULL;
		int n = p->removed ? 0 : agent_probe_stack(p, &sites, &sd);
		for (int k = 0; k < n && sd; k++)
			if (sites[k] >= 0 && sites[k] < PA_MAX_SITES) {
				by_site[sites[k]] = (struct starget){ p, sd };
				any = 1;
			}
	}
	return any;
}

/* One record (copied out of the ring) of thread tid. */
static void deliver(const struct pa_srec *r, const uint8_t *stack, uint32_t tid)
{
	struct starget *t = &by_site[r->site];
	if (!t->p)
		return; /* its probe was removed since: the stack is not counted */
	struct user_regs_struct regs;
	memset(&regs, 0, sizeof regs);
	regs.r15 = r->regs[PA_R15];
	regs.r14 = r->regs[PA_R14];
	regs.r13 = r->regs[PA_R13];
	regs.r12 = r->regs[PA_R12];
	regs.rbp = r->regs[PA_RBP];
	regs.rbx = r->regs[PA_RBX];
	regs.r11 = r->regs[PA_R11];
	regs.r10 = r->regs[PA_R10];
	regs.r9 = r->regs[PA_R9];
	regs.r8 = r->regs[PA_R8];
	regs.rdi = r->regs[PA_RDI];
	regs.rsi = r->regs[PA_RSI];
	regs.rdx = r->regs[PA_RDX];
	regs.rcx = r->regs[PA_RCX];
	regs.rax = r->regs[PA_RAX];
	regs.eflags = r->regs[PA_FLAGS];
	regs.rip = r->pc;
	regs.rsp = r->sp;
	struct probe *p = t->p;
	void *own = p->data;
	p->data = t->sdata;
	stack_account(p, (pid_t)tid, &regs, stack, r->sp, r->nstack);
	p->data = own;
}

/* The records taken from ring r (number i). */
static uint64_t drain_ring(struct pa_sring *r, int i)
{
	static uint8_t stack[PA_STK_COPY_MAX];
	uint32_t state = __atomic_load_n(&r->state, __ATOMIC_ACQUIRE);
	if (state == 0)
		return 0;
	uint64_t head = __atomic_load_n(&r->head, __ATOMIC_ACQUIRE), tail = seen_tail[i], taken = 0;
	uint32_t tid = __atomic_load_n(&r->tid, __ATOMIC_ACQUIRE);
	if (head - tail > PA_STK_RING || (tail & 7)) { /* not the agent's doing */
		bad++;
		tail = head;
	}
	while (tail < head) {
		uint64_t off = tail & (PA_STK_RING - 1), room = PA_STK_RING - off;
		struct pa_srec rec;
		if (room < 8 || head - tail < 8) {
			bad++;
			tail = head;
			break;
		}
		memcpy(&rec, r->b + off, 8); /* len and site first: a padding record has no more */
		if (rec.len < 8 || rec.len % 8 || rec.len > room || rec.len > head - tail) {
			bad++;
			tail = head;
			break;
		}
		if (rec.site == PA_SREC_PAD) {
			tail += rec.len;
			continue;
		}
		if (rec.len < sizeof rec) {
			bad++;
			tail = head;
			break;
		}
		memcpy(&rec, r->b + off, sizeof rec);
		uint32_t len = rec.len; /* as checked: the program may write again */
		uint32_t n = rec.nstack;
		if (n > PA_STK_COPY_MAX || n > len - sizeof rec || rec.site >= PA_MAX_SITES) {
			bad++;
			tail += len;
			continue;
		}
		memcpy(stack, r->b + off + sizeof rec, n);
		deliver(&rec, stack, tid);
		tail += len;
		taken++;
	}
	seen_tail[i] = tail;
	__atomic_store_n(&r->tail, tail, __ATOMIC_RELEASE); /* the agent may write over them now */
	if (state == 2) { /* its thread ended: the ring is free again */
		r->head = r->tail = 0;
		r->tid = 0;
		seen_tail[i] = 0;
		__atomic_store_n(&r->state, 0, __ATOMIC_RELEASE);
	}
	return taken;
}

uint64_t agent_stack_drain(struct engine *e, struct pa_hdr *pa, uint64_t stk_off)
{
	if (!pa || !stk_off || !targets(e))
		return 0;
	struct pa_sring *rings = (struct pa_sring *)((char *)pa + stk_off);
	uint64_t taken = 0;
	for (int i = 0; i < PA_STK_RINGS; i++)
		taken += drain_ring(&rings[i], i);
	return taken;
}

uint64_t agent_stack_bad(void)
{
	return bad;
}
