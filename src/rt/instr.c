/* instr.c — functions of programs never built for sonde, patched at the
 * runtime's start (the runtime's side of src/instr/, the layout in
 * common/instr_abi.h, docs/INSTRUMENTATION.md "Programs never built for
 * sonde").
 *
 * For each object of the process that sonde planned (same device and
 * inode): a struct sonde_modhook of its own (the stubs pass it to the
 * entry hook), a code region mapped within ±2 GiB of its functions, a
 * request to sonde, which builds the region's code for those addresses;
 * then the code copied in, the region made executable, the module
 * registered as a sonde-cc module is (numbers, path, build-id, the trace
 * filters) and a `jmp stub` written over the first bytes of each function,
 * after checking they are the bytes sonde planned for.  This runs in the
 * runtime's constructor: before the program's own code (its constructors
 * included), with no other thread of the program's yet. */
#include <fcntl.h>
#include <errno.h>
#include <linux/membarrier.h>
#include <fnmatch.h>
#include <signal.h>
#include <ucontext.h>
#include <link.h>
#include <pthread.h>
#include <linux/futex.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/instr_abi.h"
#include "rt/got.h"
#include "rt/rt.h"

/* SONDE_INSTR_ASK=1 in the program's environment: every region asked of
 * sonde, none taken from those built before the program ran (the tests'
 * way to the request path, which a taken place below the module leads to). */
static int rt_instr_ask;

/* A mapping of size bytes (RW) at exactly `at`, within ±2 GiB of both lo
 * and hi, if nothing is mapped there: at, or 0. */
static uint64_t map_at(uint64_t at, uint64_t lo, uint64_t hi, uint64_t size)
{
	if (at < 0x10000 || at > (1ull << 47) || !sonde_instr_near(at, size, lo, hi))
		return 0;
	void *m = mmap((void *)at, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (m == MAP_FAILED)
		return 0;
	if ((uint64_t)m != at) { /* a kernel before 4.17 took it as a hint */
		munmap(m, size);
		return 0;
	}
	return at;
}

/* A mapping of size bytes (RW) within ±2 GiB of both lo and hi: below lo
 * first, then above hi, in 1 MiB steps; 0 if none. */
static uint64_t map_near(uint64_t lo, uint64_t hi, uint64_t size)
{
	uint64_t step = 1ull << 20;
	for (int k = 1; k < 2000; k++) {
		uint64_t hint = k < 1000 ? (lo & ~(step - 1)) - (uint64_t)k * step - size
		                         : ((hi + step - 1) & ~(step - 1)) + (uint64_t)(k - 1000) * step;
		if (map_at(hint, lo, hi, size))
			return hint;
	}
	return 0;
}

/* Wait for sonde's answer: the request's state once it is not ASKED. */
static uint32_t await(struct sonde_instr_req *r, uint32_t asked)
{
	uint64_t end = clock_mono_ns() + (uint64_t)SONDE_INSTR_WAIT_MS * 1000000ull;
	for (;;) {
		uint32_t st = atomic_load_explicit(&r->state, memory_order_acquire);
		if (st != asked)
			return st;
		uint64_t now = clock_mono_ns();
		if (now >= end || rt_agent_sonde_gone()) {
			uint32_t want = asked;
			if (atomic_compare_exchange_strong(&r->state, &want, SONDE_IR_GAVE_UP))
				return SONDE_IR_GAVE_UP;
			return want;
		}
		struct timespec ts = { 0, 20 * 1000 * 1000 };
		syscall(SYS_futex, &r->state, FUTEX_WAIT, asked, &ts, NULL, 0);
	}
}

/* --- int3 sites ------------------------------------------------------------
 * A function whose entry cannot take a jump has an int3 as its first byte;
 * so has every jump site for a moment while sites are written in a running
 * program (rt_patch_live, `record -p`), and again while they are taken out.
 * The SIGTRAP handler finds the site in a sorted table (binary search), and
 * for an int3 site calls the module's entry hook with the stack pointer of
 * the trap (the slot of the return address: the trap is at the function's
 * first instruction); then it resumes at the site's stub: for an int3 site
 * its first instruction relocated and a jump back, for a jump site the whole
 * stub (which calls the hook itself).  The table is replaced, never changed:
 * a new sorted copy published with one pointer (the handler may run on any
 * thread meanwhile); the old copies stay until the next session's end (a
 * whole session later no handler reads them: trap_retire). */
struct trap_site {
	uintptr_t addr, resume;
	struct sonde_modhook *m;
	uint32_t number, hook;     /* hook: call the entry hook (an int3 site) */
};
struct trap_tab {
	uint32_t n, pad;
	struct trap_site s[];
};
static struct trap_tab *_Atomic traps;
static struct sigaction old_trap;
static int trap_on;

/* The tables replaced during this session (now) and during the one before
 * (before): those of the one before go at this one's end.  A table that
 * finds no room in now stays mapped. */
#define TRAP_RETIRED 64
static struct { struct trap_tab *t[TRAP_RETIRED]; uint32_t n; } retired[2];

static size_t trap_tab_bytes(const struct trap_tab *t)
{
	return sizeof *t + (size_t)t->n * sizeof(struct trap_site);
}

static void trap_retire(struct trap_tab *t) /* under scan_lock */
{
	if (t && retired[0].n < TRAP_RETIRED)
		retired[0].t[retired[0].n++] = t;
}

/* The session ends: the tables of the one before go; this one's wait. */
static void trap_retire_session(void)
{
	for (uint32_t i = 0; i < retired[1].n; i++)
		munmap(retired[1].t[i], trap_tab_bytes(retired[1].t[i]));
	retired[1] = retired[0];
	retired[0].n = 0;
}

static int site_cmp(const struct trap_site *a, const struct trap_site *b)
{
	return a->addr < b->addr ? -1 : a->addr > b->addr;
}

/* Publish the table with add[0..n) (sorted by address) merged in. */
static int trap_merge(const struct trap_site *add, uint32_t n)
{
	struct trap_tab *old = atomic_load_explicit(&traps, memory_order_acquire);
	uint32_t on = old ? old->n : 0;
	size_t bytes = sizeof(struct trap_tab) + (size_t)(on + n) * sizeof(struct trap_site);
	struct trap_tab *t = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (t == MAP_FAILED)
		return -1;
	uint32_t i = 0, j = 0, k = 0;
	while (i < on || j < n)
		t->s[k++] = j == n || (i < on && site_cmp(&old->s[i], &add[j]) <= 0) ? old->s[i++] : add[j++];
	t->n = k;
	atomic_store_explicit(&traps, t, memory_order_release);
	trap_retire(old);
	return 0;
}

static void on_trap(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	uintptr_t pc = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP] - 1;
	const struct trap_tab *t = atomic_load_explicit(&traps, memory_order_acquire);
	uint32_t n = t ? t->n : 0, lo = 0, hi = n;
	while (lo < hi) {
		uint32_t mid = (lo + hi) / 2;
		if (t->s[mid].addr < pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < n && t->s[lo].addr == pc && si->si_code == SI_KERNEL) {
		int saved = errno;
		const struct trap_site *ts = &t->s[lo];
		if (ts->hook)
			ts->m->enter(ts->m, ts->number, (uintptr_t *)(uintptr_t)uc->uc_mcontext.gregs[REG_RSP]);
		uc->uc_mcontext.gregs[REG_RIP] = (greg_t)ts->resume;
		errno = saved;
		return;
	}
	/* not ours: whoever had SIGTRAP before */
	if (old_trap.sa_flags & SA_SIGINFO) {
		if (old_trap.sa_sigaction)
			old_trap.sa_sigaction(sig, si, ucv);
		return;
	}
	if (old_trap.sa_handler == SIG_IGN)
		return;
	if (old_trap.sa_handler != SIG_DFL) {
		old_trap.sa_handler(sig);
		return;
	}
	signal(SIGTRAP, SIG_DFL); /* the default: the program ends as it would have */
	raise(SIGTRAP);
}

static void trap_install(void)
{
	if (trap_on)
		return;
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_trap;
	sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_NODEFER;
	sigfillset(&sa.sa_mask);
	sigdelset(&sa.sa_mask, SIGTRAP); /* an int3 site reached inside the handler must trap again, not kill */
	if (sigaction(SIGTRAP, &sa, &old_trap) == 0)
		trap_on = 1;
}

/* --- the modules patched, for the end of an attached recording and for
 * the calls running at the attach --------------------------------------- */
struct pmod {
	struct sonde_modhook *m;
	const struct sonde_instr_fn *fns;
	uint32_t *stub;            /* each function's stub offset (SONDE_INSTR_NOSTUB: not written) */
	uint32_t n;
	uint64_t bias, region, rsize;
};
#define PMOD_MAX 256u /* modules patched in one process image */
static struct pmod pmods[PMOD_MAX];
static _Atomic int npmods;
static int pmod_open = -1; /* the one being patched */

static int pmod_begin(struct sonde_modhook *m, const struct sonde_instr_fn *fns, uint32_t n, uint64_t bias,
                      uint64_t region, uint64_t rsize)
{
	int k = atomic_load(&npmods);
	if (k >= (int)PMOD_MAX)
		return -1;
	uint32_t *stub = mmap(NULL, (size_t)n * 4, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (stub == MAP_FAILED)
		return -1;
	memset(stub, 0xff, (size_t)n * 4);
	pmods[k] = (struct pmod){ m, fns, stub, n, bias, region, rsize };
	pmod_open = k;
	atomic_store_explicit(&npmods, k + 1, memory_order_release);
	return 0;
}

static void pmod_stub(uint32_t i, uint32_t so)
{
	if (pmod_open >= 0)
		pmods[pmod_open].stub[i] = so;
}

static struct pmod *pmod_last(void)
{
	return pmod_open >= 0 ? &pmods[pmod_open] : NULL;
}

static void pmod_drop(void)
{
	if (pmod_open >= 0)
		memset(pmods[pmod_open].stub, 0xff, (size_t)pmods[pmod_open].n * 4);
}

static int sync_ok = -1;
static void sync_cores(void)
{
	if (sync_ok < 0)
		sync_ok = syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE, 0, 0) == 0;
	if (sync_ok)
		syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE, 0, 0);
	else
		usleep(2000); /* no SYNC_CORE: let every core leave the bytes (x86 tolerates this in practice) */
}

RT_HIDDEN uint32_t rt_instr_func_at(uintptr_t fn)
{
	int k = atomic_load_explicit(&npmods, memory_order_acquire);
	for (int p = 0; p < k; p++) {
		const struct pmod *pm = &pmods[p];
		if (!pm->n || fn < pm->fns[0].vaddr + pm->bias || fn > pm->fns[pm->n - 1].vaddr + pm->bias)
			continue;
		uint32_t lo = 0, hi = pm->n;
		while (lo < hi) {
			uint32_t mid = (lo + hi) / 2;
			if (pm->fns[mid].vaddr + pm->bias < fn)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo < pm->n && pm->fns[lo].vaddr + pm->bias == fn && pm->stub[lo] != SONDE_INSTR_NOSTUB)
			return SONDE_FUNC(pm->m->slot, lo);
	}
	return SONDE_UNNUMBERED;
}

RT_HIDDEN uintptr_t rt_instr_common_at(uintptr_t pc)
{
	int k = atomic_load_explicit(&npmods, memory_order_acquire);
	for (int p = 0; p < k; p++)
		if (pc - pmods[p].region < SONDE_INSTR_COMMON_LEN)
			return pmods[p].region;
	return 0;
}

RT_HIDDEN void rt_instr_end(void)
{
	int k = atomic_load_explicit(&npmods, memory_order_acquire);
	for (int p = 0; p < k; p++)
		__atomic_store_n(&pmods[p].m->enter, rt_enter_ended, __ATOMIC_RELEASE);
	/* Every byte back, as it was written: an int3 first (the handler sends a
	 * thread that meets it to the stub, which only runs the displaced code
	 * now), then bytes 1-4, then the first; only where our bytes still are. */
	for (int phase = 0; phase < 3; phase++) {
		for (int p = 0; p < k; p++) {
			const struct pmod *pm = &pmods[p];
			if (!pm->n || rt_text_writable(pm->fns[0].vaddr + pm->bias,
			                               pm->fns[pm->n - 1].vaddr + pm->bias + SONDE_INSTR_ORIG, 1))
				continue;
			for (uint32_t i = 0; i < pm->n; i++) {
				uint32_t so = pm->stub[i];
				if (so == SONDE_INSTR_NOSTUB)
					continue;
				uint8_t *at = (uint8_t *)(uintptr_t)(pm->fns[i].vaddr + pm->bias);
				const uint8_t *orig = pm->fns[i].orig;
				if (pm->fns[i].int3) {
					if (phase == 2 && *at == 0xcc)
						__atomic_store_n(at, orig[0], __ATOMIC_RELEASE);
					continue;
				}
				int32_t rel = (int32_t)((int64_t)(pm->region + so) - (int64_t)((uintptr_t)at + 5));
				uint8_t j[5] = { 0xe9 };
				memcpy(j + 1, &rel, 4);
				if (phase == 0 && !memcmp(at, j, 5))
					__atomic_store_n(at, (uint8_t)0xcc, __ATOMIC_RELEASE);
				else if (phase == 1 && at[0] == 0xcc && !memcmp(at + 1, j + 1, 4))
					memcpy(at + 1, orig + 1, 4);
				else if (phase == 2 && at[0] == 0xcc && !memcmp(at + 1, orig + 1, 4))
					__atomic_store_n(at, orig[0], __ATOMIC_RELEASE);
			}
			rt_text_writable(pm->fns[0].vaddr + pm->bias, pm->fns[pm->n - 1].vaddr + pm->bias + SONDE_INSTR_ORIG, 0);
		}
		sync_cores();
	}
}

/* A request slot, or NULL (logged). */
static struct sonde_instr_req *new_req(struct sonde_instr *in, uint32_t *ri)
{
	*ri = atomic_fetch_add_explicit(&in->nreqs, 1, memory_order_relaxed);
	if (*ri >= SONDE_INSTR_MAX_REQS) {
		rt_log("too many modules patched in this recording; this one is not recorded");
		return NULL;
	}
	struct sonde_instr_req *r = &in->reqs[*ri];
	r->pid = (int32_t)getpid();
	return r;
}

/* At the start (no thread runs): the branches that land inside a patched
 * function's displaced bytes get their new rel32, into the relocated copy in
 * its stub.  A function one of whose branches cannot be (its bytes not the
 * file's, no rel32 from sonde, out of the text written) has its entry put
 * back: it is left out rather than wrong. */
static void retarget(const struct sonde_instr_mod *pm, const struct sonde_instr_req *r, struct pmod *pmd,
                     uint64_t bias, uint64_t lo, uint64_t hi, int64_t shift)
{
	struct sonde_session_hdr *S = rt_sess;
	uint32_t nr = pm->nrts;
	if (nr > (1u << 20) || !sess_fits(S->size, pm->rts_off, (uint64_t)nr * sizeof(struct sonde_instr_rt), 8) ||
	    !sess_fits(S->size, r->rels_off, (uint64_t)nr * 4, 4))
		nr = 0;
	const struct sonde_instr_rt *rt = nr ? sess_ptr(S, pm->rts_off) : NULL;
	const int32_t *rel = nr ? sess_ptr(S, r->rels_off) : NULL;
	/* each function with such branches: all of them or none */
	for (uint32_t a = 0; a < nr;) {
		uint32_t fnum = rt[a].fn, b = a;
		while (b < nr && rt[b].fn == fnum)
			b++;
		int ok = fnum < pmd->n && pmd->stub[fnum] != SONDE_INSTR_NOSTUB;
		for (uint32_t k = a; ok && k < b; k++) {
			uint64_t at = rt[k].at + bias;
			int64_t moved = (int64_t)rel[k] + shift; /* the region moved by shift: its targets too */
			ok = rel[k] != INT32_MIN && moved > INT32_MIN && moved <= INT32_MAX && rt[k].len <= 16 && rt[k].disp + 4u <= rt[k].len && at >= lo &&
			     at + rt[k].len <= hi && !memcmp((void *)(uintptr_t)at, rt[k].orig, rt[k].len);
		}
		if (ok) {
			for (uint32_t k = a; k < b; k++) {
				int32_t v = (int32_t)((int64_t)rel[k] + shift);
				memcpy((uint8_t *)(uintptr_t)(rt[k].at + bias + rt[k].disp), &v, 4);
			}
		} else if (fnum < pmd->n && pmd->stub[fnum] != SONDE_INSTR_NOSTUB) {
			const struct sonde_instr_fn *f = &pmd->fns[fnum];
			memcpy((void *)(uintptr_t)(f->vaddr + bias), f->orig, 5); /* its entry back: left out */
			pmd->stub[fnum] = SONDE_INSTR_NOSTUB;
		}
		a = b;
	}
}

/* record -p: was a thread stopped inside (at, at + len) when sonde attached?
 * (It would resume in the middle of the jump.) */
static int busy_inside(const struct sonde_instr *in, uintptr_t at, uint32_t len)
{
	uint32_t nb = in->nbusy < SONDE_INSTR_MAX_BUSY ? in->nbusy : SONDE_INSTR_MAX_BUSY;
	for (uint32_t k = 0; k < nb; k++)
		if (in->busy[k] > at && in->busy[k] < at + len)
			return 1;
	return 0;
}

/* Patch the functions of planned module `mi`, loaded with `bias`; r: the
 * request that asked for its plan, or NULL. */
static uint8_t *wrote_site;          /* patch_module's last module: a byte it wrote */
static uint8_t wrote_byte;

/* The prebuilt code of module pm copied into a region at another distance
 * from the module than sonde built it for: each rel32 that reaches the
 * module (sonde's list) less the move.  1, or 0 when one is out of reach or
 * there is no list (the region then gets sonde's code for its place). */
static int move_code(struct sonde_session_hdr *S, const struct sonde_instr_mod *pm, uint64_t region, uint64_t rsize,
                     int64_t shift)
{
	uint32_t nf = pm->pre_nfix;
	if (nf == SONDE_INSTR_NOFIX || (nf && !sess_fits(S->size, pm->pre_fix_off, (uint64_t)nf * 4, 4)))
		return 0;
	const uint32_t *fix = nf ? sess_ptr(S, pm->pre_fix_off) : NULL;
	uint8_t *code = (uint8_t *)(uintptr_t)region;
	memcpy(code, sess_ptr(S, pm->pre_code_off), rsize);
	for (uint32_t k = 0; k < nf; k++) {
		int32_t v;
		if (fix[k] < SONDE_INSTR_STUBS_AT || fix[k] > rsize - 4)
			return 0;
		memcpy(&v, code + fix[k], 4);
		int64_t w = (int64_t)v - shift;
		if (w < INT32_MIN || w > INT32_MAX)
			return 0;
		v = (int32_t)w;
		memcpy(code + fix[k], &v, 4);
	}
	return 1;
}

static void patch_module(struct sonde_instr *in, uint32_t mi, uint64_t bias, struct sonde_instr_req *r, uint32_t ri)
{
	uint64_t t0 = clock_mono_ns();
	struct sonde_session_hdr *S = rt_sess;
	const struct sonde_instr_mod *pm = &in->mods[mi];
	uint32_t n = pm->nfuncs;
	uint64_t rsize = pm->region_size;
	if (!n || n >= SONDE_MAX_FUNCS_PER_MODULE || !rsize || rsize > (1ull << 30) || (rsize & 4095) ||
	    !sess_fits(S->size, pm->fns_off, (uint64_t)n * sizeof(struct sonde_instr_fn), 8))
		return;
	const struct sonde_instr_fn *fns = sess_ptr(S, pm->fns_off);
	uint64_t lo = fns[0].vaddr + bias, hi = fns[n - 1].vaddr + bias;
	int flags = pm->timed_off && sess_inside(S->size, pm->timed_off, n); /* the switch array */
	for (uint32_t i = 0; i < n; i++)
		if ((i && fns[i].vaddr <= fns[i - 1].vaddr) || fns[i].len < (fns[i].int3 ? 1 : 5) || fns[i].len > SONDE_INSTR_ORIG ||
		    fns[i].int3 > 1 || fns[i].sw > 1 || (fns[i].sw && !flags))
			return; /* not a plan sonde wrote */
	struct sonde_modhook *m = mmap(NULL, sizeof *m, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return;
	/* the place sonde built a region for before the program ran, if free;
	 * else a place within reach, the prebuilt code moved there (shift) */
	uint64_t region = 0;
	int64_t shift = 0;
	int pre = !rt_instr_ask && pm->pre_code_off && pm->pre_built && pm->pre_live == (uint32_t)rt_patch_live &&
	          sess_inside(S->size, pm->pre_code_off, rsize) &&
	          sess_fits(S->size, pm->pre_stubs_off, (uint64_t)n * 4, 4) &&
	          (!pm->nrts || sess_fits(S->size, pm->pre_rels_off, (uint64_t)pm->nrts * 4, 4));
	if (pre)
		region = map_at(bias + (uint64_t)pm->pre_rel, lo, hi, rsize);
	if (!region)
		region = map_near(lo, hi, rsize);
	int copied = 0;
	if (pre && region && region != bias + (uint64_t)pm->pre_rel) {
		shift = (int64_t)(region - bias) - pm->pre_rel;
		copied = move_code(S, pm, region, rsize, shift);
		pre = copied; /* a rel32 out of reach, or no list: sonde builds it for this place */
	}
	if (!region) {
		rt_log("no memory within 2 GiB of a module for its stubs; it is not recorded");
		munmap(m, sizeof *m);
		return;
	}
	if (!r && !(r = new_req(in, &ri)))
		goto undo;
	r->mod = mi;
	r->bias = bias;
	r->region = region;
	r->region_size = rsize;
	r->hook = (uint64_t)(uintptr_t)m;
	r->live = (uint32_t)rt_patch_live;
	uint32_t st;
	r->prebuilt = pre ? (shift ? 2u : 1u) : 0u;
	if (pre) { /* sonde's answer was there before the question */
		r->code_off = pm->pre_code_off;
		r->stubs_off = pm->pre_stubs_off;
		r->rels_off = pm->pre_rels_off;
		r->built = pm->pre_built;
		atomic_store_explicit(&r->state, st = SONDE_IR_BUILT, memory_order_release);
	} else {
		atomic_store_explicit(&r->state, SONDE_IR_ASKED, memory_order_release);
		atomic_fetch_add_explicit(&in->asked, 1, memory_order_release);
		st = await(r, SONDE_IR_ASKED);
	}
	if (st != SONDE_IR_BUILT) {
		rt_log(st == SONDE_IR_GAVE_UP ? "sonde did not answer; a module is not recorded"
		                              : "sonde could not build the stubs of a module; it is not recorded");
		goto undo;
	}
	if (!sess_inside(S->size, r->code_off, rsize) || !sess_fits(S->size, r->stubs_off, (uint64_t)n * 4, 4))
		goto undo;
	const uint32_t *stubs = sess_ptr(S, r->stubs_off);
	if (!copied)
		memcpy((void *)(uintptr_t)region, sess_ptr(S, r->code_off), rsize);
	memcpy((void *)(uintptr_t)(region + SONDE_INSTR_HOOK_SLOT), &r->hook, 8); /* the common entry reads it */

	uint32_t slot;
	uint64_t *funcs;
	struct sonde_module *M = rt_module_new((uintptr_t)lo, n, &slot, &funcs);
	if (!M)
		return; /* the region stays: nothing jumps to it */
	/* the counted stubs' slots (instr_abi.h): where rt_tls lies from the
	 * thread pointer (initial-exec: the same in every thread), and where
	 * this module's counts are in its tables */
	uintptr_t tp;
	__asm__("mov %%fs:0, %0" : "=r"(tp));
	int64_t tls = (int64_t)((uintptr_t)&rt_tls - tp);
	uint64_t cnt = slot < SONDE_MAX_MODS_PER_THREAD ? offsetof(struct rt_priv, cnt) + (uint64_t)slot * sizeof(uint64_t *)
	                                                : offsetof(struct rt_priv, cnt_none); /* the hook's way, which says why */
	memcpy((void *)(uintptr_t)(region + SONDE_INSTR_TLS_SLOT), &tls, 8);
	memcpy((void *)(uintptr_t)(region + SONDE_INSTR_CNT_SLOT), &cnt, 8);
	uint64_t flg = flags ? (uint64_t)(uintptr_t)sess_ptr(S, pm->timed_off) : 0; /* (read by switched stubs only) */
	memcpy((void *)(uintptr_t)(region + SONDE_INSTR_FLG_SLOT), &flg, 8);
	if (mprotect((void *)(uintptr_t)region, rsize, PROT_READ | PROT_EXEC) != 0) {
		rt_log("could not make a module's stubs executable; it is not recorded");
		atomic_store_explicit(&M->state, SONDE_M_LOADED, memory_order_release);
		return; /* the region stays: nothing jumps to it */
	}
	for (uint32_t i = 0; i < n; i++)
		funcs[i] = fns[i].vaddr;
	rt_filter_module(M);
	m->version = SONDE_MODABI_VERSION;
	m->slot = slot;
	m->nfuncs = n;
	m->anchor = (const void *)(uintptr_t)lo;
	m->enter = rt_enter_hook(1, M);
	if (pmod_begin(m, fns, n, bias, region, rsize)) {
		rt_log("too many modules patched in this process; one is not recorded");
		atomic_store_explicit(&M->state, SONDE_M_LOADED, memory_order_release);
		return;
	}
	M->how = SONDE_MOD_PATCHED;
	M->instr_req = ri;
	r->module_slot = slot;
	const uint8_t *skip = M->filter_off && !(rt_mode & SONDE_MODE_PROFILE) ? sess_ptr(S, M->filter_off) : NULL;
	uint32_t dormant = 0, nint3 = 0;
	struct trap_site *ts = mmap(NULL, (size_t)n * sizeof *ts, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	/* the text written: every entry, and the branches re-targeted into stubs */
	uint64_t hiw = hi + SONDE_INSTR_ORIG;
	if (!rt_patch_live && pm->nrts && pm->nrts <= (1u << 20) &&
	    sess_fits(S->size, pm->rts_off, (uint64_t)pm->nrts * sizeof(struct sonde_instr_rt), 8)) {
		const struct sonde_instr_rt *rt = sess_ptr(S, pm->rts_off);
		for (uint32_t k = 0; k < pm->nrts; k++)
			if (rt[k].at + bias + 16 > hiw && rt[k].at + bias < hi + (1ull << 30))
				hiw = rt[k].at + bias + 16;
	}
	if (ts == MAP_FAILED || rt_text_writable(lo, hiw, 1) != 0) {
		rt_log("could not write into a module's code; it is not recorded");
		dormant = n;
	} else {
		/* The sites to write, and those the trap handler must know: the
		 * int3 ones, and while the program runs every one (each is an int3
		 * for a moment). */
		uint32_t nt = 0;
		for (uint32_t i = 0; i < n; i++) {
			uint8_t *at = (uint8_t *)(uintptr_t)(fns[i].vaddr + bias);
			uint32_t so = stubs[i];
			int changed = memcmp(at, fns[i].orig, fns[i].len) != 0;
			r->changed += (uint32_t)changed;
			if (so == SONDE_INSTR_NOSTUB || so > rsize - 16 || (skip && (skip[i >> 2] >> ((i & 3) * 2)) & 2u) ||
			    changed || busy_inside(in, (uintptr_t)at, fns[i].len)) {
				dormant++;
				continue;
			}
			pmod_stub(i, so);
			int as_int3 = fns[i].int3 || (fns[i].retarget && rt_patch_live);
			if (as_int3 || rt_patch_live)
				ts[nt++] = (struct trap_site){ (uintptr_t)at, region + so, m, i | (fns[i].count ? SONDE_INSTR_COUNT : 0u),
				                               (uint32_t)as_int3 };
		}
		if (nt) {
			trap_install();
			if (!trap_on || trap_merge(ts, nt)) {
				rt_log("no SIGTRAP handler for a module's sites; it is not recorded");
				nt = 0;
				dormant = n;
				pmod_drop();
			}
		}
		struct pmod *pm2 = pmod_last();
		for (int phase = 0; pm2 && phase < 3; phase++) {
			/* at load: each site written whole; running (rt_patch_live): an
			 * int3 everywhere, then each jump's rel32, then its opcode, every
			 * core serialised between the steps */
			if (!rt_patch_live && phase)
				break;
			for (uint32_t i = 0; i < n; i++) {
				uint32_t so = pm2->stub[i];
				if (so == SONDE_INSTR_NOSTUB)
					continue;
				uint8_t *at = (uint8_t *)(uintptr_t)(fns[i].vaddr + bias);
				int32_t rel = (int32_t)((int64_t)(region + so) - (int64_t)((uintptr_t)at + 5));
				uint8_t j[5] = { 0xe9 };
				memcpy(j + 1, &rel, 4);
				if (fns[i].int3 || (fns[i].retarget && rt_patch_live)) {
					if (!phase) {
						*at = 0xcc;
						nint3++;
					}
				} else if (!rt_patch_live) {
					memcpy(at, j, 5);
				} else if (phase == 0) {
					*at = 0xcc;
				} else if (phase == 1) {
					memcpy(at + 1, j + 1, 4);
				} else {
					__atomic_store_n(at, (uint8_t)0xe9, __ATOMIC_RELEASE);
				}
			}
			if (rt_patch_live)
				sync_cores();
		}
		if (pm2 && !rt_patch_live && pm->nrts)
			retarget(pm, r, pm2, bias, lo, hiw, copied ? shift : 0);
		rt_text_writable(lo, hiw, 0);
		for (uint32_t i = 0; pm2 && i < n; i++) /* a byte written, for scan_cb */
			if (pm2->stub[i] != SONDE_INSTR_NOSTUB) {
				wrote_site = (uint8_t *)(uintptr_t)(fns[i].vaddr + bias);
				wrote_byte = *wrote_site;
				break;
			}
	}
	if (ts != MAP_FAILED)
		munmap(ts, (size_t)n * sizeof *ts);
	M->dormant = dormant;
	M->numbering_ns = clock_mono_ns() - t0;
	atomic_store_explicit(&M->state, SONDE_M_LOADED, memory_order_release);
	return;
undo:
	munmap((void *)(uintptr_t)region, rsize);
	munmap(m, sizeof *m);
}

/* Does path (or its file name) match one of the n NUL-separated globs of
 * globs[0..cap)?  (sonde wrote them: bounded by cap.) */
static int globs_match(const char *globs, size_t cap, uint32_t n, const char *path)
{
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	const char *g = globs, *end = globs + cap;
	for (uint32_t k = 0; k < n && g < end && *g; k++) {
		if (!memchr(g, 0, (size_t)(end - g)))
			return 0;
		if (fnmatch(g, path, 0) == 0 || fnmatch(g, base, 0) == 0)
			return 1;
		g += strlen(g) + 1;
	}
	return 0;
}

/* Does path (or its file name) match a --module glob? */
static int glob_match(const struct sonde_instr *in, const char *path)
{
	return globs_match(in->globs, sizeof in->globs, in->nglobs, path);
}

struct scan {
	struct sonde_instr *in;
	int first;
};

/* The objects already looked at (planned or not, patched or not): a scan
 * after a dlopen takes only the new ones.  A patched one remembers a byte
 * it wrote: a library closed and opened again at the same address has the
 * file's byte there, and is new.  Under scan_lock after the start. */
#define SEEN_MAX 512
static struct seen {
	uint64_t dev, ino, bias;
	uint8_t *site;  /* a byte patch_module wrote (NULL: none) */
	uint8_t byte;
} seen[SEEN_MAX];
static uint32_t nseen;
static pthread_mutex_t scan_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sonde_instr *scan_in; /* set once the start has scanned */

/* Seen before (and unchanged): 1.  Else remembered now (*slot): 0. */
static int seen_before(const struct stat *st, uint64_t bias, struct seen **slot)
{
	for (uint32_t k = 0; k < nseen; k++)
		if (seen[k].dev == (uint64_t)st->st_dev && seen[k].ino == (uint64_t)st->st_ino && seen[k].bias == bias) {
			if (seen[k].site && *seen[k].site != seen[k].byte) { /* loaded again: the file's code */
				seen[k].site = NULL;
				*slot = &seen[k];
				return 0;
			}
			return 1;
		}
	if (nseen == SEEN_MAX)
		return 1; /* no room to remember it: left alone rather than looked at again and again */
	seen[nseen] = (struct seen){ (uint64_t)st->st_dev, (uint64_t)st->st_ino, bias, NULL, 0 };
	*slot = &seen[nseen++];
	return 0;
}

static void scan_one(struct scan *sc, struct dl_phdr_info *info, const char *path, const struct stat *stp, int first);

static int scan_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	struct scan *sc = arg;
	struct stat st;
	const char *path = info->dlpi_name;
	int first = sc->first;
	sc->first = 0;
	if (first && (!path || !path[0]))
		path = "/proc/self/exe"; /* the executable */
	struct seen *sn = NULL;
	if (!path || !path[0] || stat(path, &st) != 0 || seen_before(&st, (uint64_t)info->dlpi_addr, &sn))
		return 0;
	wrote_site = NULL;
	scan_one(sc, info, path, &st, first);
	sn->site = wrote_site;
	sn->byte = wrote_byte;
	return 0;
}

/* Ask sonde to plan the object at path (state: SONDE_IR_PLAN for a library
 * of --module, SONDE_IR_PLAN_EXEC for an exec'd image's executable), wait,
 * and patch it as planned. */
static void ask_plan(struct sonde_instr *in, struct dl_phdr_info *info, const char *path, const struct stat *st,
                     uint32_t state)
{
	uint32_t ri;
	struct sonde_instr_req *r = new_req(in, &ri);
	size_t n = strlen(path);
	if (!r || n >= sizeof r->path)
		return;
	memcpy(r->path, path, n + 1);
	r->dev = (uint64_t)st->st_dev;
	r->ino = (uint64_t)st->st_ino;
	atomic_store_explicit(&r->state, state, memory_order_release);
	atomic_fetch_add_explicit(&in->asked, 1, memory_order_release);
	uint32_t got = await(r, state);
	if (got != SONDE_IR_PLANNED) {
		if (state == SONDE_IR_PLAN)
			rt_log("sonde did not plan a library given with --module; it is not recorded");
		else if (got == SONDE_IR_GAVE_UP && !rt_agent_sonde_gone()) /* (sonde gone: nothing to say) */
			rt_log("sonde did not plan an exec'd program in time; its functions are not recorded");
		return; /* FAILED: a sonde-cc build (its sleds are the way) or not plannable: sonde says why */
	}
	uint32_t mi = r->mod;
	uint32_t nm = atomic_load_explicit((_Atomic uint32_t *)&in->nmods, memory_order_acquire);
	if (mi < nm && mi < SONDE_INSTR_MAX_MODS && in->mods[mi].dev == r->dev && in->mods[mi].ino == r->ino)
		patch_module(in, mi, (uint64_t)info->dlpi_addr, r, ri);
}

/* The executable of this image, not planned: an image exec'd in the
 * recorded tree.  Planned now when sonde follows execs, the program is not
 * one sonde refused before, and it matches --exec. */
static void plan_exec(struct sonde_instr *in, struct dl_phdr_info *info, const struct stat *st)
{
	if (!in->exec_follow)
		return;
	uint32_t ns = atomic_load_explicit(&in->nskip, memory_order_acquire);
	for (uint32_t k = 0; k < ns && k < SONDE_INSTR_MAX_SKIP; k++)
		if (in->skip[k].dev == (uint64_t)st->st_dev && in->skip[k].ino == (uint64_t)st->st_ino)
			return;
	char exe[512];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n <= 0)
		return;
	exe[n] = 0;
	if (in->nexec_globs && !globs_match(in->exec_globs, sizeof in->exec_globs, in->nexec_globs, exe))
		return;
	ask_plan(in, info, exe, st, SONDE_IR_PLAN_EXEC);
}

static void scan_one(struct scan *sc, struct dl_phdr_info *info, const char *path, const struct stat *stp, int first)
{
	struct stat st = *stp;
	struct sonde_instr *in = sc->in;
	uint32_t nm = atomic_load_explicit((_Atomic uint32_t *)&in->nmods, memory_order_acquire);
	if (nm > SONDE_INSTR_MAX_MODS)
		nm = SONDE_INSTR_MAX_MODS;
	for (uint32_t i = 0; i < nm; i++)
		if (in->mods[i].dev == (uint64_t)st.st_dev && in->mods[i].ino == (uint64_t)st.st_ino) {
			patch_module(in, i, (uint64_t)info->dlpi_addr, NULL, 0);
			return;
		}
	if (first) {
		plan_exec(in, info, &st);
		return;
	}
	if (glob_match(in, path))
		ask_plan(in, info, path, &st, SONDE_IR_PLAN); /* record --module: sonde plans it now */
}

/* After a dlopen of the program (got.c): the objects not seen yet. */
static void rescan(void)
{
	struct sonde_instr *in = __atomic_load_n(&scan_in, __ATOMIC_ACQUIRE);
	if (!in)
		return;
	rt_busy_in(&rt_tls);
	struct scan sc = { in, 1 };
	pthread_mutex_lock(&scan_lock);
	dl_iterate_phdr(scan_cb, &sc);
	pthread_mutex_unlock(&scan_lock);
	rt_busy_out(&rt_tls);
}

static int done;

RT_HIDDEN void rt_instr_retire(const uint64_t *busy, uint32_t nbusy)
{
	/* Where the held threads are (sonde's list): a region with none inside
	 * is freed. */
	int whole = nbusy <= SONDE_INSTR_MAX_BUSY;
	int k = atomic_load(&npmods);
	for (int p = 0; p < k; p++) {
		struct pmod *pm = &pmods[p];
		int inside = !whole;
		for (uint32_t b = 0; !inside && b < nbusy; b++)
			inside = busy[b] - pm->region < pm->rsize;
		if (!inside) { /* nothing jumps to it any more (rt_instr_end), no thread is in it */
			munmap((void *)(uintptr_t)pm->region, pm->rsize);
			munmap(pm->m, sizeof *pm->m);
		}
		munmap(pm->stub, (size_t)pm->n * 4);
	}
	atomic_store(&npmods, 0);
	pmod_open = -1;
	pthread_mutex_lock(&scan_lock);
	/* the trap sites were the earlier session's (their bytes are back) */
	trap_retire(atomic_exchange_explicit(&traps, NULL, memory_order_acq_rel));
	trap_retire_session();
	__atomic_store_n(&scan_in, NULL, __ATOMIC_RELEASE);
	nseen = 0;
	done = 0;
	pthread_mutex_unlock(&scan_lock);
}

RT_HIDDEN void rt_instr_start(void)
{
	struct sonde_session_hdr *S = rt_sess;
	if (done || !S || !S->instr_off || !sess_fits(S->size, S->instr_off, sizeof(struct sonde_instr), 8))
		return;
	done = 1;
	const char *ask = getenv("SONDE_INSTR_ASK");
	rt_instr_ask = ask && ask[0] == '1';
	struct scan sc = { sess_ptr(S, S->instr_off), 1 };
	/* The libc functions this calls while it patches (memcpy, mprotect...)
	 * are the runtime's, not the program's: not recorded (hooks.c, enter_first). */
	rt_busy_in(&rt_tls);
	pthread_mutex_lock(&scan_lock);
	dl_iterate_phdr(scan_cb, &sc);
	pthread_mutex_unlock(&scan_lock);
	rt_busy_out(&rt_tls);
	/* record --module: libraries the program opens later, once their
	 * dlopen returns (got.c redirects the program's dlopen calls) */
	if (sc.in->nglobs) {
		__atomic_store_n(&scan_in, sc.in, __ATOMIC_RELEASE);
		rt_got_on_dlopen(rescan);
		rt_got_redirect();
	}
}
