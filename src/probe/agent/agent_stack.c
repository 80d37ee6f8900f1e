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
#include "proc/modules.h"
#include "sym/sym.h"

#include <stdlib.h>
#include <string.h>
#include <sys/user.h>

static struct probe *by_site[PA_MAX_SITES];
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
		int n = p->removed ? 0 : agent_probe_stack(p, &sites);
		for (int k = 0; k < n; k++)
			if (sites[k] >= 0 && sites[k] < PA_MAX_SITES) {
				by_site[sites[k]] = p;
				any = 1;
			}
	}
	return any;
}

/* A stack the agent walked, of site record site: n frames. */
static void deliver_walk(uint32_t site, const uint64_t *pc, int n)
{
	struct probe *p = by_site[site];
	if (p)
		stack_account_frames(p, pc, n);
}

/* One record (copied out of the ring) of thread tid. */
static void deliver(const struct pa_srec *r, const uint8_t *stack, uint32_t tid)
{
	struct probe *p = by_site[r->site];
	if (!p)
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
	stack_account(p, (pid_t)tid, &regs, stack, r->sp, r->nstack);
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
		if (rec.site & PA_SREC_WALK) { /* the frames of a stack the agent walked */
			struct pa_swalk w;
			uint64_t pc[PA_UT_FRAMES];
			uint32_t len = rec.len, site = rec.site & ~PA_SREC_WALK;
			if (len < sizeof w) {
				bad++;
				tail = head;
				break;
			}
			memcpy(&w, r->b + off, sizeof w);
			if (w.nframes < 1 || w.nframes > PA_UT_FRAMES || w.nframes * 8 > len - sizeof w ||
			    site >= PA_MAX_SITES) {
				bad++;
				tail += len;
				continue;
			}
			memcpy(pc, r->b + off + sizeof w, (size_t)w.nframes * 8);
			deliver_walk(site, pc, (int)w.nframes);
			tail += len;
			taken++;
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

/* --- the unwind table (struct pa_utab) -------------------------------------- */

static int row_cmp(const void *a, const void *b)
{
	const struct pa_urow *x = a, *y = b;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static uint64_t table_sig; /* the modules the table was made of */

int agent_stack_table(struct engine *e, struct pa_hdr *pa, uint64_t stk_off, uint32_t *nrows)
{
	if (!pa || !stk_off)
		return -1;
	uint64_t sig = 1469598103934665603ull;
	for (int i = 0; i < e->mods.n; i++)
		sig = (sig ^ e->mods.m[i].lo ^ (e->mods.m[i].bias << 1)) * 1099511628211ull;
	sig ^= (uint64_t)(uintptr_t)pa;
	struct pa_utab *u = (struct pa_utab *)((char *)pa + stk_off + pa_stk_size());
	if (sig == table_sig && u->n) {
		if (nrows)
			*nrows = u->n;
		return 0;
	}
	struct pa_urow *v = NULL;
	size_t nv = 0, cap = 0;
	uint64_t nmods = 0;
	for (int i = 0; i < e->mods.n; i++) {
		struct module *m = &e->mods.m[i];
		struct sym_module *sm = module_sym(m);
		struct sym_cfa_row *r = NULL;
		ssize_t n = sm ? sym_cfa_rows(sm, &r) : 0;
		if (n <= 0) {
			free(r);
			continue;
		}
		if (nv + (size_t)n > cap) {
			size_t c = (nv + (size_t)n) * 2;
			struct pa_urow *w = realloc(v, c * sizeof *w);
			if (!w) {
				free(r);
				break;
			}
			v = w;
			cap = c;
		}
		for (ssize_t k = 0; k < n; k++)
			v[nv++] = (struct pa_urow){ .addr = r[k].addr + m->bias, .cfa_off = r[k].cfa_off,
			                            .rbp_off = r[k].rbp_off,
			                            .cfa = r[k].cfa == SYM_CFA_RSP ? PA_UR_RSP : r[k].cfa == SYM_CFA_RBP ?
			                                   PA_UR_RBP : r[k].cfa == SYM_CFA_END ? PA_UR_END : PA_UR_NONE,
			                            .flags = r[k].rbp_saved ? PA_UR_RBP_SAVED : 0 };
		free(r);
		nmods++;
	}
	if (nv)
		qsort(v, nv, sizeof *v, row_cmp);
	if (nv > PA_UT_ROWS) { /* the rest: no rule (copied) */
		nv = PA_UT_ROWS;
		v[nv - 1].cfa = PA_UR_NONE;
	}
	uint32_t seq = u->seq;
	__atomic_store_n(&u->seq, seq | 1, __ATOMIC_SEQ_CST);
	__atomic_store_n(&u->n, 0, __ATOMIC_SEQ_CST);
	if (nv)
		memcpy(u->rows, v, nv * sizeof *v);
	u->modules = nmods;
	__atomic_store_n(&u->n, (uint32_t)nv, __ATOMIC_RELEASE);
	__atomic_store_n(&u->seq, (seq | 1) + 1, __ATOMIC_RELEASE);
	free(v);
	table_sig = sig;
	if (nrows)
		*nrows = (uint32_t)nv;
	return 0;
}

uint64_t agent_stack_bad(void)
{
	return bad;
}
