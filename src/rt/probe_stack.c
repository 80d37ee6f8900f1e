/* probe_stack.c — stack probes on the agent engine, inside the program (as
 * perf record --call-graph=dwarf does): at each hit of a site whose
 * stack_bytes is set, the general registers and at most that many bytes of
 * the stack, from the stack pointer up and never past the end of the
 * thread's stack mapping, go into the thread's stack ring
 * (common/probe_area.h, struct pa_sring).  sonde drains the rings and
 * unwinds each record with the DWARF CFI (src/probe/agent/agent_stack.c): the
 * program is never stopped.
 *
 * The copy is direct while the stack pointer is inside the thread's own
 * stack mapping (found once per thread by probes.c, pa_stack_end: the bytes
 * from sp to its end are mapped while the thread runs on it), else through
 * process_vm_readv page by page, so that no read can fault.  A thread
 * claims a free ring at its first stack and gives it back at its exit; a
 * thread that finds none, a full ring, or a hit inside the writing of
 * another (a signal handler) drops the stack and counts it, as does a
 * child process (fork): the program never waits for sonde.
 *
 * Built with -mgeneral-regs-only, like probes.c (reached from the
 * trampolines): the copy is rep movsb, never libc's memcpy. */
#include "rt/probe_stack.h"

#include "common/clock.h"
#include "rt/probe_record.h"
#include "rt/rt.h"

#include <pthread.h>
#include <stddef.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#define RING_GONE 0xffffffffu

/* The copy as the program's stack would be unrecorded: a frame that `sonde
 * record` hooked (hooks.c) holds the exit trampoline's address in its slot,
 * where no unwinder can go on (sonde's reads a copy: the thread's shadow
 * stack is not in it); the real return address of each such frame whose
 * slot lies in the copy is written into the copy, as pa_shadow_unpatch
 * does for the probes' own. */
static void recorded_unpatch(uint64_t sp, uint8_t *copy, uint32_t n)
{
	struct rt_tls *L = &rt_tls;
	if (L->state != RT_T_ON || n < 8)
		return;
	struct sonde_thread *t = L->t;
	for (uint32_t i = __atomic_load_n(&t->depth, __ATOMIC_ACQUIRE); i-- > 0;) {
		uint64_t slot = t->stack[i].slot;
		if (slot < sp)
			continue; /* dead (a longjmp left it) */
		if (slot - sp > n - 8)
			break; /* past the copy: so are the callers' */
		uint64_t *w = (uint64_t *)(copy + (slot - sp)), v;
		__builtin_memcpy(&v, w, 8);
		if (rt_is_exit_tramp((uintptr_t)v)) {
			v = t->stack[i].site;
			__builtin_memcpy(w, &v, 8);
		}
	}
}

/* The real return address of a frame that `sonde record` hooked, whose
 * slot holds the exit trampoline's address (v read there). */
static uint64_t recorded_ret(uint64_t slot, uint64_t v)
{
	struct rt_tls *L = &rt_tls;
	if (!rt_is_exit_tramp((uintptr_t)v) || L->state != RT_T_ON)
		return v;
	struct sonde_thread *t = L->t;
	for (uint32_t i = __atomic_load_n(&t->depth, __ATOMIC_ACQUIRE); i-- > 0;)
		if (t->stack[i].slot == slot)
			return t->stack[i].site;
	return v;
}

static struct pa_sring *srings;
static const struct pa_utab *utab;

/* The rows a thread's walks used last, by pc (direct-mapped): one cache per
 * stack ring, used by the thread that holds the ring (so none is shared),
 * emptied when the ring is claimed and when the table changes (seq). */
#define UC_WAYS 256
struct ucache {
	uint32_t seq, valid;
	uint64_t pc[UC_WAYS];
	struct pa_urow row[UC_WAYS];
};
static struct ucache ucaches[PA_STK_RINGS];
static uint32_t sgen;               /* the session: a thread's claim of an earlier one is stale */
static pthread_key_t sring_key;
static int keyed;
static __thread uint32_t sring1_tls __attribute__((tls_model("initial-exec"))); /* ring + 1, RING_GONE */
static __thread uint32_t sgen_tls __attribute__((tls_model("initial-exec")));
static __thread uint32_t swriting_tls __attribute__((tls_model("initial-exec")));

static void sring_end(void *arg)
{
	uint32_t i = (uint32_t)(uintptr_t)arg - 1;
	sring1_tls = RING_GONE;
	if (srings && i < PA_STK_RINGS)
		__atomic_store_n(&srings[i].state, 2, __ATOMIC_RELEASE);
}

/* A child (fork) writes no stacks: its thread would share the parent's ring,
 * and one of its own would never be given back (no thread exit there). */
static void child_no_ring(void)
{
	sring1_tls = RING_GONE;
}

void pa_stack_start(struct pa_hdr *h)
{
	static int forked_hook;
	srings = NULL;
	if (!h->stk_on || !pa_layout_ok(h))
		return;
	if (!forked_hook && pthread_atfork(NULL, NULL, child_no_ring) == 0)
		forked_hook = 1;
	if (!keyed && pthread_key_create(&sring_key, sring_end) == 0)
		keyed = 1;
	if (!keyed)
		return;
	__atomic_add_fetch(&sgen, 1, __ATOMIC_RELEASE);
	utab = (const struct pa_utab *)((char *)h + h->stk_off + pa_stk_size());
	srings = (struct pa_sring *)((char *)h + h->stk_off);
}

/* The row of the unwind table whose range holds pc (n rows), or NULL. */
static inline const struct pa_urow *urow(const struct pa_urow *rows, uint32_t n, uint64_t pc)
{
	uint32_t a = 0, b = n;
	while (a < b) { /* at most 21 steps: n <= PA_UT_ROWS */
		uint32_t m = a + (b - a) / 2;
		if (rows[m].addr <= pc)
			a = m + 1;
		else
			b = m;
	}
	return a ? &rows[a - 1] : NULL;
}

/* The stack of a hit at pc with stack pointer sp and rbp, walked with the
 * unwind table (struct pa_utab): the pc then each caller's return address
 * into out (at most PA_UT_FRAMES), their count; -1 where the table has no
 * rule the walk can follow (or sonde was writing it), or a read would leave
 * the thread's stack mapping: the stack is copied then.  Every read is of
 * the thread's own stack, between sp and the end of its mapping; the CFA
 * goes up at every frame, and the loop is bounded by PA_UT_FRAMES. */
static int walk(struct ucache *c, uint64_t pc, uint64_t sp, uint64_t rbp, uint64_t *out)
{
	const struct pa_utab *u = utab;
	uint32_t seq = __atomic_load_n(&u->seq, __ATOMIC_ACQUIRE);
	uint32_t n = __atomic_load_n(&u->n, __ATOMIC_ACQUIRE);
	uint64_t lo = sp, hi;
	if ((seq & 1) || !n || n > PA_UT_ROWS || pa_stack_end(sp, &hi) || hi - sp < 8)
		return -1;
	if (!c->valid || c->seq != seq) {
		for (int i = 0; i < UC_WAYS; i++)
			c->pc[i] = 0;
		c->seq = seq;
		c->valid = 1;
	}
	int k = 0;
	out[k++] = pc;
	uint64_t look = pc; /* a caller's rule: at its call instruction (the byte before the return address) */
	while (k < (int)PA_UT_FRAMES) {
		struct pa_urow w;
		uint32_t way = (uint32_t)((look * 0x9e3779b97f4a7c15ull) >> 56) & (UC_WAYS - 1);
		if (c->pc[way] == look && look)
			w = c->row[way];
		else {
			const struct pa_urow *r = urow(u->rows, n, look);
			if (!r)
				return -1;
			__builtin_memcpy(&w, r, sizeof w);
			c->pc[way] = look;
			c->row[way] = w;
		}
		if (w.cfa == PA_UR_END)
			break;
		if (w.cfa != PA_UR_RSP && w.cfa != PA_UR_RBP)
			return -1;
		uint64_t cfa = (w.cfa == PA_UR_RSP ? sp : rbp) + (uint64_t)(int64_t)w.cfa_off;
		if (cfa <= sp || cfa > hi || cfa - 8 < lo)
			return -1;
		uint64_t ra;
		__builtin_memcpy(&ra, (const void *)(cfa - 8), 8);
		if (w.flags & PA_UR_RBP_SAVED) {
			uint64_t at = cfa + (uint64_t)(int64_t)w.rbp_off;
			if (at < lo || at > hi - 8)
				return -1;
			__builtin_memcpy(&rbp, (const void *)at, 8);
		}
		ra = recorded_ret(cfa - 8, pa_shadow_ret(cfa - 8, ra));
		sp = cfa;
		if (!ra)
			break; /* the outermost frame */
		out[k++] = ra;
		look = ra - 1;
	}
	if (__atomic_load_n(&u->seq, __ATOMIC_ACQUIRE) != seq)
		return -1;
	return k;
}

static struct pa_sring *my_sring(void)
{
	uint32_t g = __atomic_load_n(&sgen, __ATOMIC_ACQUIRE);
	if (sgen_tls != g) { /* first stack of this thread in this session */
		sgen_tls = g;
		sring1_tls = 0;
	}
	uint32_t r1 = sring1_tls;
	if (r1 && r1 <= PA_STK_RINGS)
		return &srings[r1 - 1];
	if (r1 == RING_GONE)
		return NULL;
	int i = pa_ring_claim(&srings[0].state, sizeof *srings, PA_STK_RINGS);
	if (i < 0) {
		sring1_tls = RING_GONE;
		return NULL;
	}
	__atomic_store_n(&srings[i].tid, (uint32_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
	ucaches[i].valid = 0;
	sring1_tls = (uint32_t)i + 1;
	pthread_setspecific(sring_key, (void *)(uintptr_t)(i + 1));
	return &srings[i];
}

static inline void copy_bytes(void *d, const void *s, uint64_t n)
{
	__asm__ volatile("rep movsb" : "+D"(d), "+S"(s), "+c"(n) : : "memory");
}

/* n bytes from sp through the kernel, a page at a time: the bytes read
 * before the first page that could not be. */
static uint32_t copy_checked(uint8_t *d, uint64_t sp, uint32_t n)
{
	struct iovec l = { d, n }, r[PA_STK_COPY_MAX / 4096 + 2];
	int k = 0;
	for (uint64_t a = sp, end = sp + n; a < end && k < (int)(sizeof r / sizeof r[0]); k++) {
		uint64_t next = (a | 4095) + 1;
		if (next > end)
			next = end;
		r[k] = (struct iovec){ (void *)a, next - a };
		a = next;
	}
	long got = syscall(SYS_process_vm_readv, getpid(), &l, 1UL, r, (unsigned long)k, 0UL);
	return got > 0 ? (uint32_t)got : 0;
}

void pa_stack_put(struct pa_site *s, uint32_t idx, uint64_t sp, const uint64_t *regs)
{
	uint64_t t0 = clock_ticks();
	struct pa_sring *r = srings && !swriting_tls ? my_sring() : NULL;
	if (!r) {
		__atomic_fetch_add(&s->stack_lost, 1, __ATOMIC_RELAXED);
		return;
	}
	swriting_tls = 1;
	uint64_t fr[PA_UT_FRAMES];
	int nf = utab && __atomic_load_n(&s->stack_walk, __ATOMIC_RELAXED) ? walk(&ucaches[r - srings], s->addr, sp, regs[PA_RBP], fr) : -1;
	if (nf > 0) { /* the frames, no copy */
		uint32_t len = (uint32_t)(sizeof(struct pa_swalk) + (uint32_t)nf * 8);
		uint64_t h = __atomic_load_n(&r->head, __ATOMIC_RELAXED);
		uint64_t t = __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE);
		uint64_t off = h & (PA_STK_RING - 1), pad = off + len > PA_STK_RING ? PA_STK_RING - off : 0;
		if (h - t > PA_STK_RING || h + pad + len - t > PA_STK_RING) {
			__atomic_fetch_add(&s->stack_lost, 1, __ATOMIC_RELAXED);
			swriting_tls = 0;
			return;
		}
		if (pad) {
			struct pa_srec *p = (struct pa_srec *)(r->b + off);
			p->len = (uint32_t)pad;
			p->site = PA_SREC_PAD;
			off = 0;
		}
		struct pa_swalk *e = (struct pa_swalk *)(r->b + off);
		e->len = len;
		e->site = idx | PA_SREC_WALK;
		e->t = t0;
		e->nframes = (uint32_t)nf;
		e->pad = 0;
		copy_bytes(e + 1, fr, (uint64_t)nf * 8);
		__atomic_store_n(&r->head, h + pad + len, __ATOMIC_RELEASE);
		swriting_tls = 0;
		__atomic_fetch_add(&s->stack_walked, 1, __ATOMIC_RELAXED);
		__atomic_fetch_add(&s->stack_walk_ticks, clock_ticks() - t0, __ATOMIC_RELAXED);
		return;
	}
	uint32_t n = __atomic_load_n(&s->stack_bytes, __ATOMIC_RELAXED);
	if (n > PA_STK_COPY_MAX)
		n = PA_STK_COPY_MAX;
	uint64_t hi;
	int direct = pa_stack_end(sp, &hi) == 0;
	if (direct && hi - sp < n)
		n = (uint32_t)(hi - sp);
	uint32_t len = (uint32_t)((sizeof(struct pa_srec) + n + 7) & ~7ul);
	uint64_t h = __atomic_load_n(&r->head, __ATOMIC_RELAXED);
	uint64_t t = __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE); /* sonde's copy of those bytes is done */
	uint64_t off = h & (PA_STK_RING - 1), pad = off + len > PA_STK_RING ? PA_STK_RING - off : 0;
	if (h - t > PA_STK_RING || h + pad + len - t > PA_STK_RING) {
		__atomic_fetch_add(&s->stack_lost, 1, __ATOMIC_RELAXED);
		swriting_tls = 0;
		return;
	}
	if (pad) { /* the rest of the ring: a padding record (pad >= 8: offsets are multiples of 8) */
		struct pa_srec *p = (struct pa_srec *)(r->b + off);
		p->len = (uint32_t)pad;
		p->site = PA_SREC_PAD;
		off = 0;
	}
	struct pa_srec *e = (struct pa_srec *)(r->b + off);
	uint8_t *stk = (uint8_t *)(e + 1);
	if (direct)
		copy_bytes(stk, (const void *)sp, n);
	else
		n = copy_checked(stk, sp, n);
	pa_shadow_unpatch(sp, stk, n);
	recorded_unpatch(sp, stk, n);
	e->len = len;
	e->site = idx;
	e->t = t0;
	e->pc = s->addr;
	e->sp = sp;
	copy_bytes(e->regs, regs, sizeof e->regs);
	e->nstack = n;
	e->pad = 0;
	__atomic_store_n(&r->head, h + pad + len, __ATOMIC_RELEASE);
	swriting_tls = 0;
	__atomic_fetch_add(&s->stack_taken, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&s->stack_ticks, clock_ticks() - t0, __ATOMIC_RELAXED);
}
