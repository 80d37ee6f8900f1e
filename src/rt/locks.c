/* locks.c — the lock profiler's wrappers (seed 001), inside libsonde-rt.so.
 *
 * Every blocking synchronisation entry point of glibc is interposed (the
 * export map names them): pthread mutexes, rwlocks, spinlocks, condition
 * waits, semaphores and C11 mtx/cnd (glibc does not route those through the
 * pthread symbols).  The real functions are found lazily with
 * dlsym(RTLD_NEXT), dlvsym for the condition variables (GLIBC_2.3.2, the
 * current ABI).  Layout of the data: see locks.h.
 *
 * Contention without extra clock reads: a lock call first tries the lock; only
 * when that fails is the wait timed (two clock reads around the real blocking
 * call).  An uncontended lock + unlock pair costs two clock reads (the hold
 * time), two table look-ups and a few counters.
 *
 * Hot-path rules (docs/ARCHITECTURE.md, "Hot-path rules and the floor"): no lock of our own anywhere (the lock
 * table is lock-free; aggregates are per thread), no malloc (session memory
 * only, taken at a thread's first lock), no system call but the real one,
 * errno as the real call left it (and untouched on success), re-entry guarded
 * by rt_tls.busy (also set by the function hooks, so a signal handler never
 * interleaves two writers of a thread's ring), and the real blocking call is
 * made with the guard released.  Before the session is attached, outside a
 * recording and during our own symbol resolution, every wrapper is a plain
 * pass-through.
 *
 * Slow paths, once per lock or per loaded object: the first sight of an
 * address (lock id, generation), and dl_iterate_phdr when a call site lies in
 * an object this process has not described yet (the loader's own lock; never
 * on the per-operation path).
 */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <string.h>
#include <threads.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/trace_enc.h"
#include "rt/got.h"
#include "common/lock_session.h"
#include "rt/rt.h"

/* ---- the real functions ---- */

struct lk_real {
	int (*mutex_lock)(pthread_mutex_t *), (*mutex_trylock)(pthread_mutex_t *), (*mutex_unlock)(pthread_mutex_t *);
	int (*mutex_timedlock)(pthread_mutex_t *, const struct timespec *);
	int (*mutex_clocklock)(pthread_mutex_t *, clockid_t, const struct timespec *);
	int (*mutex_init)(pthread_mutex_t *, const pthread_mutexattr_t *), (*mutex_destroy)(pthread_mutex_t *);
	int (*rw_rdlock)(pthread_rwlock_t *), (*rw_wrlock)(pthread_rwlock_t *);
	int (*rw_tryrdlock)(pthread_rwlock_t *), (*rw_trywrlock)(pthread_rwlock_t *);
	int (*rw_timedrdlock)(pthread_rwlock_t *, const struct timespec *);
	int (*rw_timedwrlock)(pthread_rwlock_t *, const struct timespec *);
	int (*rw_clockrdlock)(pthread_rwlock_t *, clockid_t, const struct timespec *);
	int (*rw_clockwrlock)(pthread_rwlock_t *, clockid_t, const struct timespec *);
	int (*rw_unlock)(pthread_rwlock_t *), (*rw_destroy)(pthread_rwlock_t *);
	int (*rw_init)(pthread_rwlock_t *, const pthread_rwlockattr_t *);
	int (*spin_lock)(pthread_spinlock_t *), (*spin_trylock)(pthread_spinlock_t *);
	int (*spin_unlock)(pthread_spinlock_t *), (*spin_init)(pthread_spinlock_t *, int);
	int (*spin_destroy)(pthread_spinlock_t *);
	int (*cond_wait)(pthread_cond_t *, pthread_mutex_t *);
	int (*cond_timedwait)(pthread_cond_t *, pthread_mutex_t *, const struct timespec *);
	int (*cond_clockwait)(pthread_cond_t *, pthread_mutex_t *, clockid_t, const struct timespec *);
	int (*cond_init)(pthread_cond_t *, const pthread_condattr_t *), (*cond_destroy)(pthread_cond_t *);
	int (*cond_signal)(pthread_cond_t *), (*cond_broadcast)(pthread_cond_t *);
	int (*sem_wait)(sem_t *), (*sem_trywait)(sem_t *), (*sem_post)(sem_t *);
	int (*sem_timedwait)(sem_t *, const struct timespec *);
	int (*sem_clockwait)(sem_t *, clockid_t, const struct timespec *);
	int (*sem_init)(sem_t *, int, unsigned), (*sem_destroy)(sem_t *);
	int (*mtx_lock)(mtx_t *), (*mtx_trylock)(mtx_t *), (*mtx_unlock)(mtx_t *), (*mtx_init)(mtx_t *, int);
	int (*mtx_timedlock)(mtx_t *, const struct timespec *);
	void (*mtx_destroy)(mtx_t *);
	int (*cnd_wait)(cnd_t *, mtx_t *), (*cnd_timedwait)(cnd_t *, mtx_t *, const struct timespec *);
	int (*cnd_init)(cnd_t *), (*cnd_signal)(cnd_t *), (*cnd_broadcast)(cnd_t *);
	void (*cnd_destroy)(cnd_t *);
};
static struct lk_real real;

/* glibc's own aliases of the mutex functions (exported since 2.2.5): what a
 * mutex call made from inside dlsym (a malloc that locks) uses while the
 * RTLD_NEXT look-up is still in progress. */
extern int lk_glibc_mutex_lock(pthread_mutex_t *) __asm__("__pthread_mutex_lock");
extern int lk_glibc_mutex_trylock(pthread_mutex_t *) __asm__("__pthread_mutex_trylock");
extern int lk_glibc_mutex_unlock(pthread_mutex_t *) __asm__("__pthread_mutex_unlock");
__asm__(".symver __pthread_mutex_lock,__pthread_mutex_lock@GLIBC_2.2.5");
__asm__(".symver __pthread_mutex_trylock,__pthread_mutex_trylock@GLIBC_2.2.5");
__asm__(".symver __pthread_mutex_unlock,__pthread_mutex_unlock@GLIBC_2.2.5");

static __thread int lk_resolving __attribute__((tls_model("initial-exec")));

static void *sym(const char *name, const char *version)
{
	void *p = version ? dlvsym(RTLD_NEXT, name, version) : NULL;
	return p ? p : dlsym(RTLD_NEXT, name);
}

#define RESOLVE(field, name, ver) \
	atomic_store_explicit((_Atomic(void *) *)(void *)&real.field, sym(name, ver), memory_order_relaxed)

static void lk_resolve(void)
{
	if (lk_resolving)
		return;
	int saved = errno;
	lk_resolving = 1;
	RESOLVE(mutex_trylock, "pthread_mutex_trylock", NULL);
	RESOLVE(mutex_unlock, "pthread_mutex_unlock", NULL);
	RESOLVE(mutex_lock, "pthread_mutex_lock", NULL);
	RESOLVE(mutex_timedlock, "pthread_mutex_timedlock", NULL);
	RESOLVE(mutex_clocklock, "pthread_mutex_clocklock", NULL);
	RESOLVE(mutex_init, "pthread_mutex_init", NULL);
	RESOLVE(mutex_destroy, "pthread_mutex_destroy", NULL);
	RESOLVE(rw_rdlock, "pthread_rwlock_rdlock", NULL);
	RESOLVE(rw_wrlock, "pthread_rwlock_wrlock", NULL);
	RESOLVE(rw_tryrdlock, "pthread_rwlock_tryrdlock", NULL);
	RESOLVE(rw_trywrlock, "pthread_rwlock_trywrlock", NULL);
	RESOLVE(rw_timedrdlock, "pthread_rwlock_timedrdlock", NULL);
	RESOLVE(rw_timedwrlock, "pthread_rwlock_timedwrlock", NULL);
	RESOLVE(rw_clockrdlock, "pthread_rwlock_clockrdlock", NULL);
	RESOLVE(rw_clockwrlock, "pthread_rwlock_clockwrlock", NULL);
	RESOLVE(rw_unlock, "pthread_rwlock_unlock", NULL);
	RESOLVE(rw_init, "pthread_rwlock_init", NULL);
	RESOLVE(rw_destroy, "pthread_rwlock_destroy", NULL);
	RESOLVE(spin_lock, "pthread_spin_lock", NULL);
	RESOLVE(spin_trylock, "pthread_spin_trylock", NULL);
	RESOLVE(spin_unlock, "pthread_spin_unlock", NULL);
	RESOLVE(spin_init, "pthread_spin_init", NULL);
	RESOLVE(spin_destroy, "pthread_spin_destroy", NULL);
	/* Two ABIs of the condition variable: the GLIBC_2.3.2 one is current. */
	RESOLVE(cond_wait, "pthread_cond_wait", "GLIBC_2.3.2");
	RESOLVE(cond_timedwait, "pthread_cond_timedwait", "GLIBC_2.3.2");
	RESOLVE(cond_clockwait, "pthread_cond_clockwait", NULL);
	RESOLVE(cond_init, "pthread_cond_init", "GLIBC_2.3.2");
	RESOLVE(cond_destroy, "pthread_cond_destroy", "GLIBC_2.3.2");
	RESOLVE(cond_signal, "pthread_cond_signal", "GLIBC_2.3.2");
	RESOLVE(cond_broadcast, "pthread_cond_broadcast", "GLIBC_2.3.2");
	RESOLVE(sem_wait, "sem_wait", NULL);
	RESOLVE(sem_trywait, "sem_trywait", NULL);
	RESOLVE(sem_timedwait, "sem_timedwait", NULL);
	RESOLVE(sem_clockwait, "sem_clockwait", NULL);
	RESOLVE(sem_post, "sem_post", NULL);
	RESOLVE(sem_init, "sem_init", NULL);
	RESOLVE(sem_destroy, "sem_destroy", NULL);
	RESOLVE(mtx_lock, "mtx_lock", NULL);
	RESOLVE(mtx_trylock, "mtx_trylock", NULL);
	RESOLVE(mtx_timedlock, "mtx_timedlock", NULL);
	RESOLVE(mtx_unlock, "mtx_unlock", NULL);
	RESOLVE(mtx_init, "mtx_init", NULL);
	RESOLVE(mtx_destroy, "mtx_destroy", NULL);
	RESOLVE(cnd_wait, "cnd_wait", NULL);
	RESOLVE(cnd_timedwait, "cnd_timedwait", NULL);
	RESOLVE(cnd_init, "cnd_init", NULL);
	RESOLVE(cnd_destroy, "cnd_destroy", NULL);
	RESOLVE(cnd_signal, "cnd_signal", NULL);
	RESOLVE(cnd_broadcast, "cnd_broadcast", NULL);
	lk_resolving = 0;
	errno = saved;
}

/* The real function `f`, resolved on first use. */
#define R(f) (__builtin_expect(real.f != NULL, 1) ? real.f : (lk_resolve(), real.f))

/* ---- process and thread state ---- */

static int lk_state;                 /* 0 not tried, 1 on, -1 off */
static struct lk_session *lk_S;

struct lk_tls {
	struct sonde_thread *t;  /* thread record this state belongs to (a fork child gets a new one) */
	struct lk_thread *T;     /* NULL: this thread is not profiled (loss counted) */
	struct lk_stat *stats;
	uint32_t me;             /* thread slot + 1 */
	uint32_t proc;
};
static __thread struct lk_tls lk_tls __attribute__((tls_model("initial-exec")));

/* Locks the forking thread holds, copied before fork into process-local
 * memory: the session copy keeps changing in the parent after the fork. */
#define LK_FORK_HELD 64
struct lk_held { uint32_t lock, depth, read; };
/* Not initial-exec: only fork touches them, and the static TLS surplus a
 * late-loaded runtime lives in is small (rt.h). */
static __thread struct lk_held lk_fork_held[LK_FORK_HELD] __attribute__((tls_model("global-dynamic")));
static __thread uint32_t lk_fork_nheld __attribute__((tls_model("global-dynamic")));

static void lk_prepare_fork(void)
{
	struct lk_tls *K = &lk_tls;
	lk_fork_nheld = 0;
	if (!K->T)
		return;
	for (uint32_t i = 0; i < K->T->nstats && lk_fork_nheld < LK_FORK_HELD; i++) {
		struct lk_stat *st = &K->stats[i];
		struct lk_lock *k = &lk_S->locks[st->lock];
		if (st->depth)
			lk_fork_held[lk_fork_nheld++] = (struct lk_held){ st->lock, st->depth, 1 };
		else if (k->hold_depth && atomic_load_explicit(&k->last_owner, memory_order_relaxed) == K->me)
			lk_fork_held[lk_fork_nheld++] = (struct lk_held){ st->lock, k->hold_depth, 0 };
	}
}

static int lk_boot(void)
{
	if (lk_state)
		return lk_state > 0;
	if (lk_resolving || rt_init() != 0 || !(rt_mode & (SONDE_MODE_LOCKS | SONDE_MODE_LOCK_EVENTS))) {
		if (!lk_resolving)
			lk_state = -1;
		return 0;
	}
	struct sonde_session_hdr *S = rt_sess;
	uint64_t off = atomic_load_explicit(&S->locks_off, memory_order_acquire);
	if (!off) {
		/* Zeroed session memory is an empty lk_session: nothing to initialise.
		 * Two first-comers: one allocation wins, the other is never touched. */
		uint64_t mine = sess_alloc(S, sizeof(struct lk_session));
		if (!mine) {
			atomic_fetch_add_explicit(&S->lost[SONDE_LOST_SESSION_MEM], 1, memory_order_relaxed);
			lk_state = -1;
			return 0;
		}
		if (atomic_compare_exchange_strong_explicit(&S->locks_off, &off, mine, memory_order_acq_rel,
		                                            memory_order_acquire))
			off = mine;
	}
	lk_S = sess_ptr(S, off);
	static int atfork;
	if (!atfork++)
		pthread_atfork(lk_prepare_fork, NULL, NULL);
	lk_state = 1;
	if (__atomic_load_n(&rt_agent_ended, __ATOMIC_ACQUIRE)) { /* raced with the agent's end */
		__atomic_store_n(&lk_state, -1, __ATOMIC_RELAXED);
		return 0;
	}
	return 1;
}

/* ---- loaded objects of this process (for naming, off the hot path) ---- */

#define LK_LOCAL_MAPS 512
static struct { uint64_t lo, hi; } lk_local[LK_LOCAL_MAPS];
static _Atomic int lk_nlocal;
static uint32_t lk_local_proc = UINT32_MAX;

static int lk_covered(uint64_t a)
{
	if (lk_local_proc != rt_proc_slot)
		return 0;
	int n = atomic_load_explicit(&lk_nlocal, memory_order_acquire);
	for (int i = 0; i < n; i++)
		if (a >= lk_local[i].lo && a < lk_local[i].hi)
			return 1;
	return 0;
}

/* Runs with the loader's lock held (dl_iterate_phdr): serialised. */
static int lk_snapshot_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	(void)arg;
	uintptr_t lo, hi;
	if (!rt_object_span(info, &lo, &hi))
		return 0;
	int n = atomic_load_explicit(&lk_nlocal, memory_order_relaxed);
	for (int i = 0; i < n; i++)
		if (lk_local[i].lo == lo && lk_local[i].hi == hi)
			return 0;
	if (n >= LK_LOCAL_MAPS)
		return 0;
	uint32_t slot = atomic_fetch_add_explicit(&lk_S->nmaps, 1, memory_order_relaxed);
	if (slot >= LK_MAX_MAPS) {
		atomic_fetch_add_explicit(&lk_S->lost_maps, 1, memory_order_relaxed);
		return 0;
	}
	struct lk_map *m = &lk_S->maps[slot];
	m->proc = rt_proc_slot;
	m->lo = lo;
	m->hi = hi;
	m->bias = info->dlpi_addr;
	const char *name = info->dlpi_name;
	if (name && name[0]) {
		size_t l = strlen(name);
		char abs[4096];
		if (name[0] != '/' && realpath(name, abs)) /* dlopen("./x.so"): the report runs elsewhere */
			name = abs, l = strlen(abs);
		if (l >= LK_MAP_PATH)
			l = LK_MAP_PATH - 1;
		memcpy(m->path, name, l);
		m->path[l] = 0;
	} else {
		ssize_t l = readlink("/proc/self/exe", m->path, LK_MAP_PATH - 1);
		m->path[l > 0 ? l : 0] = 0;
	}
	atomic_store_explicit(&m->valid, 1, memory_order_release);
	lk_local[n].lo = lo;
	lk_local[n].hi = hi;
	atomic_store_explicit(&lk_nlocal, n + 1, memory_order_release);
	return 0;
}

static void lk_snapshot(void)
{
	int saved = errno;
	if (lk_local_proc != rt_proc_slot) { /* first time in this process (or a fork child) */
		atomic_store(&lk_nlocal, 0);
		lk_local_proc = rt_proc_slot;
	}
	dl_iterate_phdr(lk_snapshot_cb, NULL);
	errno = saved;
}

/* Objects loaded late (dlopen) may hold locks whose users were already known. */
__attribute__((destructor)) static void lk_dtor(void)
{
	if (lk_state > 0 && rt_sess)
		lk_snapshot();
}

/* ---- the lock table (seed 001's lock-address map) ---- */

static inline uint64_t lk_key(const void *addr)
{
	return (uint64_t)(uintptr_t)addr | ((uint64_t)(rt_proc_slot + 1) << 48);
}

static inline uint32_t lk_hash(uint64_t key)
{
	return (uint32_t)((key * 0x9E3779B97F4A7C15ull) >> (64 - LK_TABLE_BITS));
}

/* A new lock id for (addr, gen).  0 when the id space is full (counted). */
static uint32_t lk_new_id(const void *addr, int kind, uintptr_t site, uint32_t gen, uint8_t flags)
{
	uint32_t id = atomic_fetch_add_explicit(&lk_S->nlocks, 1, memory_order_relaxed) + 1;
	if (id >= LK_MAX_LOCKS) {
		atomic_fetch_add_explicit(&lk_S->lost_locks, 1, memory_order_relaxed);
		return 0;
	}
	struct lk_lock *k = &lk_S->locks[id];
	k->addr = (uint64_t)(uintptr_t)addr;
	k->site = site;
	k->first_tsc = clock_ticks();
	k->proc = rt_proc_slot;
	k->gen = gen;
	k->kind = (uint8_t)kind;
	atomic_store_explicit(&k->flags, flags, memory_order_relaxed);
	if (site && !lk_covered(site))
		lk_snapshot();
	return id;
}

enum { LK_FIND_USE = 0, LK_FIND_INIT = 1 };

/* First sight of an address, a re-initialisation, or a use after destroy.
 * Lock-free: an empty slot is claimed by CAS on its key; the claimer then
 * publishes the id (readers that find the key wait for it, a few
 * instructions).  A new generation replaces the id by CAS. */
static uint32_t lk_lookup_slow(const void *addr, int kind, uintptr_t site, int how)
{
	uint64_t key = lk_key(addr);
	uint32_t h = lk_hash(key);
	for (uint32_t probe = 0; probe < 64; probe++) {
		struct lk_slot *sl = &lk_S->table[(h + probe) & (LK_TABLE_SLOTS - 1)];
		uint64_t k = atomic_load_explicit(&sl->key, memory_order_acquire);
		if (k == 0) {
			if (!atomic_compare_exchange_strong_explicit(&sl->key, &k, key, memory_order_acq_rel,
			                                             memory_order_acquire)) {
				if (k != key)
					continue;
				goto found;
			}
			uint32_t id = lk_new_id(addr, kind, site, 0, how == LK_FIND_INIT ? LK_F_INIT : 0);
			/* An exhausted id space leaves the slot dead: later uses find it and give up. */
			atomic_store_explicit(&sl->id, id ? id : LK_ID_DEAD, memory_order_release);
			return id;
		}
		if (k != key)
			continue;
	found:;
		uint32_t id;
		for (int spin = 0; !(id = atomic_load_explicit(&sl->id, memory_order_acquire)); spin++) {
			if (spin > 1000000)
				return 0; /* the inserting thread died half-way */
			__builtin_ia32_pause();
		}
		if (!(id & LK_ID_DEAD) && how == LK_FIND_USE)
			return id;
		if (id == LK_ID_DEAD)
			return 0;
		/* A new generation: init of a known address, or use after destroy. */
		uint32_t old = id & ~LK_ID_DEAD;
		uint32_t nid = lk_new_id(addr, kind, site, lk_S->locks[old].gen + 1, how == LK_FIND_INIT ? LK_F_INIT : 0);
		if (!nid)
			return 0;
		if (!atomic_compare_exchange_strong_explicit(&sl->id, &id, nid, memory_order_acq_rel, memory_order_acquire))
			return id & LK_ID_DEAD ? 0 : id; /* another thread made the new generation first */
		return nid;
	}
	atomic_fetch_add_explicit(&lk_S->lost_locks, 1, memory_order_relaxed);
	return 0;
}

/* The current id of addr, on the hot path: one slot in the common case. */
static inline uint32_t lk_lookup(const void *addr, int kind, uintptr_t site)
{
	uint64_t key = lk_key(addr);
	struct lk_slot *sl = &lk_S->table[lk_hash(key)];
	if (__builtin_expect(atomic_load_explicit(&sl->key, memory_order_relaxed) == key, 1)) {
		uint32_t id = atomic_load_explicit(&sl->id, memory_order_acquire);
		if (__builtin_expect(id != 0 && !(id & LK_ID_DEAD), 1))
			return id;
	}
	return lk_lookup_slow(addr, kind, site, LK_FIND_USE);
}

/* ---- per-thread aggregates ---- */

static struct lk_stat *lk_stat_new(struct lk_tls *K, uint32_t id)
{
	struct lk_thread *T = K->T;
	if (T->nstats >= T->cap) {
		T->lost_stats++;
		return NULL;
	}
	uint32_t ix = T->nstats;
	struct lk_stat *st = &K->stats[ix];
	st->lock = id;
	atomic_signal_fence(memory_order_release);
	T->nstats = ix + 1;
	T->map[id] = ix + 1;
	return st;
}

static inline struct lk_stat *lk_stat(struct lk_tls *K, uint32_t id)
{
	uint32_t ix = K->T->map[id];
	return __builtin_expect(ix != 0, 1) ? &K->stats[ix - 1] : lk_stat_new(K, id);
}

static inline void lk_event(struct rt_tls *L, uint32_t id, uint32_t op, uint64_t aux, uint64_t now);

/* This thread's lock region: at its first lock operation, or again in a fork
 * child (the surviving thread has a new thread record there: the locks it
 * holds are carried over, as locks of the new process, held from now). */
static int lk_thread_init(struct rt_tls *L)
{
	struct lk_tls *K = &lk_tls;
	struct lk_thread *old = K->T;
	uint32_t old_proc = K->proc;
	K->t = L->t;
	K->T = NULL;
	uint64_t size = sizeof(struct lk_thread) + (uint64_t)LK_THREAD_STATS * sizeof(struct lk_stat);
	uint64_t off = sess_alloc(rt_sess, size);
	if (!off) {
		rt_count_lost(L->t, SONDE_LOST_SESSION_MEM);
		return -1;
	}
	struct lk_thread *T = sess_ptr(rt_sess, off);
	T->cap = LK_THREAD_STATS;
	T->proc = rt_proc_slot;
	T->thread = L->slot;
	K->T = T;
	K->stats = lk_thread_stats(T);
	K->me = L->slot + 1;
	K->proc = rt_proc_slot;
	L->t->lock_off = off;
	if (old && old_proc != rt_proc_slot) {
		uint64_t now = clock_ticks();
		for (uint32_t i = 0; i < lk_fork_nheld; i++) {
			struct lk_held *os = &lk_fork_held[i];
			if (!os->depth || os->lock >= LK_MAX_LOCKS)
				continue;
			struct lk_lock *ol = &lk_S->locks[os->lock];
			uint32_t id = lk_lookup((void *)(uintptr_t)ol->addr, ol->kind, (uintptr_t)ol->site);
			struct lk_stat *st = id ? lk_stat(K, id) : NULL;
			if (!st)
				continue;
			if (os->read) {
				st->depth = os->depth;
				st->held_since = now;
			} else {
				struct lk_lock *k = &lk_S->locks[id];
				atomic_store_explicit(&k->last_owner, K->me, memory_order_relaxed);
				k->hold_depth = os->depth;
				k->held_since = now;
			}
			lk_event(L, id, LK_EV_ACQ | LK_EVF_FORKED | (os->read ? LK_EVF_READ : 0), 0, now);
		}
	}
	return 0;
}

/* The runtime's own code (the linker's bounds of its text): a section of it
 * that takes a mutex of its own (instr.c's scan_lock) is not a program's
 * lock call interrupted; it passes through without being counted lost. */
extern const char __ehdr_start[] __attribute__((visibility("hidden")));
extern const char __etext[] __attribute__((visibility("hidden")));
static __attribute__((noinline, cold)) void lk_reentered(struct rt_tls *L, uintptr_t site)
{
	if (site - (uintptr_t)__ehdr_start >= (uintptr_t)__etext - (uintptr_t)__ehdr_start)
		L->t->lost[SONDE_LOST_REENTRY]++;
}

/* Enter a wrapper: the thread state, or NULL for a plain pass-through.
 * site: the call's return address (0: not known). */
static inline struct rt_tls *lk_begin(uintptr_t site)
{
	if (__builtin_expect(__atomic_load_n(&lk_state, __ATOMIC_RELAXED) != 1, 0) && !lk_boot())
		return NULL;
	struct rt_tls *L = &rt_tls;
	if (__builtin_expect(L->state != RT_T_ON, 0) && !(L = rt_thread_slow()))
		return NULL;
	if (__builtin_expect(L->busy, 0)) {
		lk_reentered(L, site);
		return NULL;
	}
	if (__builtin_expect(lk_tls.t != L->t, 0))
		lk_thread_init(L);
	if (__builtin_expect(!lk_tls.T, 0))
		return NULL;
	return L;
}

static inline void lk_busy(struct rt_tls *L)
{
	L->busy = 1;
	atomic_signal_fence(memory_order_seq_cst);
}

static inline void lk_idle(struct rt_tls *L)
{
	atomic_signal_fence(memory_order_seq_cst);
	rt_busy_out(L); /* a signal held back meanwhile comes in now (signals.c) */
}

/* ---- events (--locks=events, --trace) ---- */

static __attribute__((noinline)) void lk_event_slow(struct rt_tls *L, uint32_t id, uint32_t op, uint64_t aux, uint64_t now)
{
	struct sonde_ring *R = L->ring;
	uint8_t body[2 * TR_MAX_VARINT + 2], hd[TR_MAX_VARINT];
	int b = 0;
	body[b++] = TRX_LOCK;
	b += tr_put_varint(body + b, id);
	body[b++] = (uint8_t)op;
	b += tr_put_varint(body + b, aux);
	uint64_t *last = rt_ring_last(L), prev = *last;
	if (now < prev)
		now = prev; /* keep the per-chunk deltas non-negative */
	int h = tr_put_varint(hd, ((now - prev) << 2) | TR_EXT);
	int fresh;
	rt_ring_forget(L); /* the function records' position (trace.h): the chunk may change */
	uint8_t *p = ring_reserve(rt_sess, R, (uint32_t)(h + b), now, &L->t->wait_ticks,
	                          (rt_mode & SONDE_MODE_LOSSY) != 0, &fresh);
	if (!p) {
		R->lost_pending++;
		L->t->lost[SONDE_LOST_RING_EVENTS]++;
		return;
	}
	if (fresh) /* first record of a chunk: time relative to the chunk base (= now) */
		h = tr_put_varint(hd, TR_EXT);
	__builtin_memcpy(p, hd, (size_t)h);
	__builtin_memcpy(p + h, body, (size_t)b);
	ring_commit(rt_sess, R, (uint32_t)(h + b));
	*last = now;
}

#define LK_EV_MAX (3 * TR_MAX_VARINT + 2)

/* The common case writes straight into the current chunk: no copy. */
static inline void lk_event(struct rt_tls *L, uint32_t id, uint32_t op, uint64_t aux, uint64_t now)
{
	if (!(rt_mode & SONDE_MODE_LOCK_EVENTS) || !L->ring)
		return;
	struct sonde_ring *R = L->ring;
	struct sonde_chunk *c = ring_chunk(rt_sess, R, R->cur);
	uint64_t *last = rt_ring_last(L), prev = *last;
	if (__builtin_expect(atomic_load_explicit(&c->state, memory_order_relaxed) == RING_FILLING && c->used &&
	                     sizeof *c + c->used + LK_EV_MAX <= R->chunk_size && now >= prev, 1)) {
		uint8_t *p = (uint8_t *)(c + 1) + c->used, *q = p;
		__builtin_prefetch(p + 256, 1); /* the ring's next lines: hide the write misses */
		q += tr_put_varint(q, ((now - prev) << 2) | TR_EXT);
		*q++ = TRX_LOCK;
		q += tr_put_varint(q, id);
		*q++ = (uint8_t)op;
		q += tr_put_varint(q, aux);
		ring_commit(rt_sess, R, (uint32_t)(q - p));
		rt_ring_forget(L);
		*last = now;
		return;
	}
	lk_event_slow(L, id, op, aux, now);
}

/* ---- bookkeeping ---- */

static inline uint32_t lk_bucket(uint64_t ticks)
{
	uint32_t b = 63u - (uint32_t)__builtin_clzll(ticks | 1);
	return b < LK_HIST ? b : LK_HIST - 1;
}

static void lk_site_add(struct lk_stat *st, uintptr_t site, uint64_t wait)
{
	struct lk_site *min = &st->sites[0];
	for (uint32_t i = 0; i < LK_SITES; i++) {
		struct lk_site *s = &st->sites[i];
		if (s->site == site) {
			s->count++;
			s->wait_ticks += wait;
			return;
		}
		if (s->count < min->count)
			min = s;
	}
	min->site = site; /* a busier site replaces the least used one */
	min->count = 1;
	min->wait_ticks = wait;
}

static inline void lk_note_wait(struct lk_stat *st, uint64_t wait)
{
	st->wait_ticks += wait;
	if (wait > st->max_wait_ticks)
		st->max_wait_ticks = wait;
	st->wait_hist[lk_bucket(wait)]++;
}

enum { LKA_CONTENDED = 1, LKA_READ = 2, LKA_REACQ = 4 };

/* The lock was acquired at `now` (after waiting `wait` ticks if contended).
 * Read holds are this thread's (readers unlock their own holds); an exclusive
 * hold lives in the lock's lk_lock, written under the lock itself. */
static void lk_acquired(struct rt_tls *L, struct lk_stat *st, uint32_t id, int kind, unsigned how, uint64_t now,
                        uint64_t wait, uintptr_t site, uint32_t waiters)
{
	uint32_t op = LK_EV_ACQ;
	st->acquisitions++;
	if (kind == LK_RWLOCK) {
		if (how & LKA_READ)
			st->read_acquisitions++;
		else
			st->write_acquisitions++;
	}
	if (how & LKA_REACQ) {
		st->cond_reacquisitions++;
		op |= LK_EVF_REACQ;
	}
	if (how & LKA_CONTENDED) {
		st->contended++;
		lk_note_wait(st, wait);
		lk_site_add(st, site, wait);
		if (waiters > st->max_waiters)
			st->max_waiters = waiters;
		op = (op & ~(uint32_t)LK_EV_OP_MASK) | LK_EV_ACQ_WAIT;
	}
	if (kind == LK_SEM || kind == LK_COND || kind == LK_CND) {
		/* no hold */
	} else if (how & LKA_READ) {
		op |= LK_EVF_READ;
		if (st->depth++ == 0)
			st->held_since = now;
		else
			op |= LK_EVF_NESTED;
	} else {
		struct lk_lock *k = &lk_S->locks[id];
		uint32_t me = lk_tls.me;
		uint32_t prev = atomic_load_explicit(&k->last_owner, memory_order_relaxed);
		if (prev == me && k->hold_depth) {
			k->hold_depth++; /* recursive mutex */
			op |= LK_EVF_NESTED;
		} else {
			if (prev != me) {
				if (prev)
					st->owner_changes++;
				atomic_store_explicit(&k->last_owner, me, memory_order_relaxed);
			}
			k->held_since = now;
			k->hold_depth = 1;
		}
	}
	lk_event(L, id, op, (how & LKA_CONTENDED) ? wait : 0, now);
}

/* A release about to be made at `now`: the hold state is updated before the
 * real unlock (after it, another thread may already own the lock).  Returns
 * the event op; *hold gets the hold length of an outer release.  `undo`
 * receives what lk_release_undo needs if the real call fails. */
struct lk_undo { uint32_t read, depth; };

static uint32_t lk_release_begin(struct lk_stat *st, uint32_t id, int kind, uint64_t now, uint64_t *hold,
                                 struct lk_undo *u)
{
	*hold = 0;
	u->read = 0;
	u->depth = UINT32_MAX;
	if (kind == LK_SEM)
		return LK_EV_REL;
	struct lk_lock *k = &lk_S->locks[id];
	uint32_t me = lk_tls.me;
	uint32_t owner = atomic_load_explicit(&k->last_owner, memory_order_relaxed);
	uint32_t op = LK_EV_REL;
	if (k->hold_depth && (owner == me || st->depth == 0)) { /* an exclusive hold */
		if (owner != me)
			op |= LK_EVF_CROSS;
		u->depth = k->hold_depth;
		if (--k->hold_depth == 0)
			*hold = now >= k->held_since ? now - k->held_since : 0;
		else
			op |= LK_EVF_NESTED;
		return op;
	}
	if (st->depth) { /* this thread's read hold */
		u->read = 1;
		op |= LK_EVF_READ;
		if (--st->depth == 0)
			*hold = now >= st->held_since ? now - st->held_since : 0;
		else
			op |= LK_EVF_NESTED;
		return op;
	}
	return op | LK_EVF_UNMATCHED;
}

static void lk_release_undo(struct lk_stat *st, uint32_t id, const struct lk_undo *u)
{
	if (u->read)
		st->depth++;
	else if (u->depth != UINT32_MAX)
		lk_S->locks[id].hold_depth = u->depth;
}

static void lk_release_end(struct rt_tls *L, struct lk_stat *st, uint32_t id, uint32_t op, uint64_t hold,
                           uint64_t now)
{
	st->releases++;
	if (op & LK_EVF_UNMATCHED)
		st->unmatched_releases++;
	else if (op & LK_EVF_CROSS)
		st->cross_thread_releases++;
	if (!(op & (LK_EVF_UNMATCHED | LK_EVF_NESTED)) && lk_S->locks[id].kind != LK_SEM) {
		st->hold_ticks += hold;
		st->holds++;
		if (hold > st->max_hold_ticks)
			st->max_hold_ticks = hold;
		st->hold_hist[lk_bucket(hold)]++;
	}
	lk_event(L, id, op, hold, now);
}

/* ---- the generic operations ---- */

enum lk_opcode {
	OP_MUTEX, OP_MUTEX_TIMED, OP_MUTEX_CLOCK,
	OP_RD, OP_RD_TIMED, OP_RD_CLOCK, OP_WR, OP_WR_TIMED, OP_WR_CLOCK,
	OP_SPIN, OP_SEM, OP_SEM_TIMED, OP_SEM_CLOCK, OP_MTX, OP_MTX_TIMED,
};

enum { C_OK, C_BUSY, C_TIMEOUT, C_ERR };

static inline int op_kind(int op)
{
	switch (op) {
	case OP_MUTEX: case OP_MUTEX_TIMED: case OP_MUTEX_CLOCK: return LK_MUTEX;
	case OP_SPIN: return LK_SPIN;
	case OP_SEM: case OP_SEM_TIMED: case OP_SEM_CLOCK: return LK_SEM;
	case OP_MTX: case OP_MTX_TIMED: return LK_MTX;
	default: return LK_RWLOCK;
	}
}

static inline int op_read(int op)
{
	return op == OP_RD || op == OP_RD_TIMED || op == OP_RD_CLOCK;
}

/* Only the semaphore functions use errno; for the others it is neither read
 * nor written here (each errno access is a call into libc). */
#define ERRNO_GET(kind) ((kind) == LK_SEM ? errno : 0)
#define ERRNO_SET(kind, v)               \
	do {                             \
		if ((kind) == LK_SEM)    \
			errno = (v);     \
	} while (0)

/* Result class of a call of family `kind` (rc, and errno for semaphores). */
static inline int lk_class(int kind, int rc, int err)
{
	if (kind == LK_SEM)
		return rc == 0 ? C_OK : err == EAGAIN ? C_BUSY : err == ETIMEDOUT ? C_TIMEOUT : C_ERR;
	if (kind == LK_MTX || kind == LK_CND)
		return rc == thrd_success ? C_OK : rc == thrd_busy ? C_BUSY : rc == thrd_timedout ? C_TIMEOUT : C_ERR;
	return rc == 0 || rc == EOWNERDEAD ? C_OK : rc == EBUSY ? C_BUSY : rc == ETIMEDOUT ? C_TIMEOUT : C_ERR;
}

static inline int do_try(int op, void *l)
{
	switch (op) {
	case OP_MUTEX: case OP_MUTEX_TIMED: case OP_MUTEX_CLOCK: {
		int (*f)(pthread_mutex_t *) = R(mutex_trylock);
		return f ? f(l) : lk_glibc_mutex_trylock(l);
	}
	case OP_RD: case OP_RD_TIMED: case OP_RD_CLOCK: return R(rw_tryrdlock)(l);
	case OP_WR: case OP_WR_TIMED: case OP_WR_CLOCK: return R(rw_trywrlock)(l);
	case OP_SPIN: return R(spin_trylock)(l);
	case OP_SEM: case OP_SEM_TIMED: case OP_SEM_CLOCK: return R(sem_trywait)(l);
	default: return R(mtx_trylock)(l);
	}
}

static inline int do_block(int op, void *l, clockid_t clk, const struct timespec *ts)
{
	switch (op) {
	case OP_MUTEX: {
		int (*f)(pthread_mutex_t *) = R(mutex_lock);
		return f ? f(l) : lk_glibc_mutex_lock(l);
	}
	case OP_MUTEX_TIMED: return R(mutex_timedlock)(l, ts);
	case OP_MUTEX_CLOCK: return R(mutex_clocklock)(l, clk, ts);
	case OP_RD: return R(rw_rdlock)(l);
	case OP_RD_TIMED: return R(rw_timedrdlock)(l, ts);
	case OP_RD_CLOCK: return R(rw_clockrdlock)(l, clk, ts);
	case OP_WR: return R(rw_wrlock)(l);
	case OP_WR_TIMED: return R(rw_timedwrlock)(l, ts);
	case OP_WR_CLOCK: return R(rw_clockwrlock)(l, clk, ts);
	case OP_SPIN: return R(spin_lock)(l);
	case OP_SEM: return R(sem_wait)(l);
	case OP_SEM_TIMED: return R(sem_timedwait)(l, ts);
	case OP_SEM_CLOCK: return R(sem_clockwait)(l, clk, ts);
	case OP_MTX: return R(mtx_lock)(l);
	default: return R(mtx_timedlock)(l, ts);
	}
}

/* A blocking lock call: try first; time the wait only when that fails. */
static inline __attribute__((always_inline)) int lk_lock_op(int op, void *l, clockid_t clk,
                                                            const struct timespec *ts, uintptr_t site)
{
	struct rt_tls *L = lk_begin(site);
	if (!L)
		return do_block(op, l, clk, ts);
	int kind = op_kind(op);
	int e0 = ERRNO_GET(kind);
	int rc = do_try(op, l), e = ERRNO_GET(kind);
	int cls = lk_class(kind, rc, e);
	uint64_t now, wait = 0;
	uint32_t id, waiters = 0;
	struct lk_stat *st;
	unsigned how = op_read(op) ? LKA_READ : 0;
	if (__builtin_expect(cls == C_OK, 1)) {
		now = clock_ticks();
		lk_busy(L);
		id = lk_lookup(l, kind, site);
		if (id && (st = lk_stat(&lk_tls, id)))
			lk_acquired(L, st, id, kind, how, now, 0, site, 0);
		lk_idle(L);
		ERRNO_SET(kind, e0);
		return rc;
	}
	lk_busy(L);
	id = lk_lookup(l, kind, site);
	st = id ? lk_stat(&lk_tls, id) : NULL;
	if (st && cls == C_BUSY)
		waiters = atomic_fetch_add_explicit(&lk_S->locks[id].waiters, 1, memory_order_relaxed) + 1;
	lk_idle(L);
	uint64_t t0 = clock_ticks();
	rc = do_block(op, l, clk, ts);
	e = ERRNO_GET(kind);
	now = clock_ticks();
	if (!st) {
		ERRNO_SET(kind, rc == 0 ? e0 : e);
		return rc;
	}
	lk_busy(L);
	if (cls == C_BUSY)
		atomic_fetch_sub_explicit(&lk_S->locks[id].waiters, 1, memory_order_relaxed);
	int cls2 = lk_class(kind, rc, e);
	wait = now - t0;
	if (cls2 == C_OK) {
		lk_acquired(L, st, id, kind, how | (cls == C_BUSY ? LKA_CONTENDED : 0), now, wait, site, waiters);
	} else if (cls2 == C_TIMEOUT) {
		st->timeouts++;
		lk_note_wait(st, wait);
		lk_event(L, id, LK_EV_TIMEOUT | (how & LKA_READ ? LK_EVF_READ : 0), wait, now);
	} else {
		st->errors++;
		lk_event(L, id, LK_EV_ERROR, 0, now);
	}
	lk_idle(L);
	ERRNO_SET(kind, cls2 == C_OK ? e0 : e);
	return rc;
}

/* trylock / tryrdlock / trywait called by the program. */
static inline __attribute__((always_inline)) int lk_try_op(int op, void *l, uintptr_t site)
{
	struct rt_tls *L = lk_begin(site);
	if (!L)
		return do_try(op, l);
	int kind = op_kind(op);
	int e0 = ERRNO_GET(kind);
	int rc = do_try(op, l), e = ERRNO_GET(kind);
	uint64_t now = clock_ticks();
	lk_busy(L);
	uint32_t id = lk_lookup(l, kind, site);
	struct lk_stat *st = id ? lk_stat(&lk_tls, id) : NULL;
	int cls = lk_class(kind, rc, e);
	if (st) {
		if (cls == C_OK) {
			lk_acquired(L, st, id, kind, op_read(op) ? LKA_READ : 0, now, 0, site, 0);
		} else if (cls == C_BUSY) {
			st->trylock_failures++;
			lk_event(L, id, LK_EV_TRYFAIL | (op_read(op) ? LK_EVF_READ : 0), 0, now);
		} else {
			st->errors++;
			lk_event(L, id, LK_EV_ERROR, 0, now);
		}
	}
	lk_idle(L);
	ERRNO_SET(kind, cls == C_OK ? e0 : e);
	return rc;
}

/* unlock / sem_post: the hold ends when the call is made. */
static inline __attribute__((always_inline)) int lk_unlock_op(int kind, void *l, int rc_real_fn(void *),
                                                              uintptr_t site)
{
	struct rt_tls *L = lk_begin(site);
	if (!L)
		return rc_real_fn(l);
	int e0 = ERRNO_GET(kind);
	uint64_t now = clock_ticks(), hold = 0;
	lk_busy(L);
	uint32_t id = lk_lookup(l, kind, site), op = 0;
	struct lk_stat *st = id ? lk_stat(&lk_tls, id) : NULL;
	struct lk_undo u;
	if (st)
		op = lk_release_begin(st, id, kind, now, &hold, &u);
	lk_idle(L);
	int rc = rc_real_fn(l), e = ERRNO_GET(kind);
	int ok = lk_class(kind, rc, e) == C_OK;
	if (st) {
		lk_busy(L);
		if (ok) {
			lk_release_end(L, st, id, op, hold, now);
		} else {
			lk_release_undo(st, id, &u);
			st->errors++;
			lk_event(L, id, LK_EV_ERROR, 0, now);
		}
		lk_idle(L);
	}
	ERRNO_SET(kind, ok ? e0 : e);
	return rc;
}

/* init / destroy: a new generation of the address; a dead id until reuse. */
static void lk_init_op(int kind, void *l, uintptr_t site)
{
	struct rt_tls *L = lk_begin(site);
	if (!L)
		return;
	int e0 = errno;
	lk_busy(L);
	lk_lookup_slow(l, kind, site, LK_FIND_INIT);
	lk_idle(L);
	errno = e0;
}

static void lk_destroy_op(void *l)
{
	struct rt_tls *L = lk_begin(0);
	if (!L)
		return;
	uint64_t key = lk_key(l);
	uint32_t h = lk_hash(key);
	for (uint32_t probe = 0; probe < 64; probe++) {
		struct lk_slot *sl = &lk_S->table[(h + probe) & (LK_TABLE_SLOTS - 1)];
		uint64_t k = atomic_load_explicit(&sl->key, memory_order_acquire);
		if (k == 0)
			return;
		if (k != key)
			continue;
		uint32_t id = atomic_load_explicit(&sl->id, memory_order_acquire);
		if (id && !(id & LK_ID_DEAD)) {
			atomic_fetch_or_explicit(&lk_S->locks[id].flags, LK_F_DESTROYED, memory_order_relaxed);
			atomic_compare_exchange_strong_explicit(&sl->id, &id, id | LK_ID_DEAD, memory_order_acq_rel,
			                                        memory_order_relaxed);
		}
		return;
	}
}

/* Condition wait: the mutex is released inside and taken back before return. */
static inline __attribute__((always_inline)) int lk_cond_op(int ckind, int mkind, void *c, void *m, int which,
                                                            clockid_t clk, const struct timespec *ts,
                                                            uintptr_t site)
{
	struct rt_tls *L = lk_begin(site);
#define LK_COND_CALL()                                                                             \
	(which == 0 ? R(cond_wait)(c, m)                                                           \
	 : which == 1 ? R(cond_timedwait)(c, m, ts)                                                \
	 : which == 2 ? R(cond_clockwait)(c, m, clk, ts)                                           \
	 : which == 3 ? R(cnd_wait)(c, m) : R(cnd_timedwait)(c, m, ts))
	if (!L)
		return LK_COND_CALL();
	uint64_t t0 = clock_ticks();
	lk_busy(L);
	uint32_t mid = lk_lookup(m, mkind, site);
	struct lk_stat *ms = mid ? lk_stat(&lk_tls, mid) : NULL;
	if (ms) {
		uint64_t hold;
		struct lk_undo u;
		uint32_t op = lk_release_begin(ms, mid, mkind, t0, &hold, &u);
		lk_release_end(L, ms, mid, op, hold, t0);
	}
	lk_idle(L);
	int rc = LK_COND_CALL();
	uint64_t now = clock_ticks();
	lk_busy(L);
	uint32_t cid = lk_lookup(c, ckind, site);
	struct lk_stat *cs = cid ? lk_stat(&lk_tls, cid) : NULL;
	int cls = lk_class(ckind, rc, 0);
	if (cs) {
		uint64_t wait = now - t0;
		cs->acquisitions++;
		lk_note_wait(cs, wait);
		uint32_t op = LK_EV_COND;
		if (cls == C_TIMEOUT) {
			cs->timeouts++;
			op |= LK_EVF_TIMEOUT;
		} else if (cls != C_OK) {
			cs->errors++;
		}
		lk_event(L, cid, op, wait, now);
	}
	/* The mutex is held again on return, timeouts included (not on EINVAL). */
	if (ms && (cls == C_OK || cls == C_TIMEOUT || rc == EOWNERDEAD))
		lk_acquired(L, ms, mid, mkind, LKA_REACQ, now, 0, site, 0);
	lk_idle(L);
	return rc;
#undef LK_COND_CALL
}

#define SITE() ((uintptr_t)__builtin_return_address(0))

/* ---- pthread mutexes ---- */

static int real_mutex_unlock(void *l)
{
	int (*f)(pthread_mutex_t *) = R(mutex_unlock);
	return f ? f(l) : lk_glibc_mutex_unlock(l);
}

RT_EXPORT int pthread_mutex_lock(pthread_mutex_t *m) { return lk_lock_op(OP_MUTEX, m, 0, NULL, SITE()); }
RT_EXPORT int pthread_mutex_trylock(pthread_mutex_t *m) { return lk_try_op(OP_MUTEX, m, SITE()); }
RT_EXPORT int pthread_mutex_timedlock(pthread_mutex_t *restrict m, const struct timespec *restrict ts)
{
	return lk_lock_op(OP_MUTEX_TIMED, m, 0, ts, SITE());
}
RT_EXPORT int pthread_mutex_clocklock(pthread_mutex_t *restrict m, clockid_t clk, const struct timespec *restrict ts)
{
	return lk_lock_op(OP_MUTEX_CLOCK, m, clk, ts, SITE());
}
RT_EXPORT int pthread_mutex_unlock(pthread_mutex_t *m) { return lk_unlock_op(LK_MUTEX, m, real_mutex_unlock, SITE()); }
RT_EXPORT int pthread_mutex_init(pthread_mutex_t *restrict m, const pthread_mutexattr_t *restrict a)
{
	int rc = R(mutex_init)(m, a);
	if (rc == 0)
		lk_init_op(LK_MUTEX, m, SITE());
	return rc;
}
RT_EXPORT int pthread_mutex_destroy(pthread_mutex_t *m)
{
	int rc = R(mutex_destroy)(m);
	if (rc == 0)
		lk_destroy_op(m);
	return rc;
}

/* ---- rwlocks ---- */

static int real_rw_unlock(void *l) { return R(rw_unlock)(l); }

RT_EXPORT int pthread_rwlock_rdlock(pthread_rwlock_t *l) { return lk_lock_op(OP_RD, l, 0, NULL, SITE()); }
RT_EXPORT int pthread_rwlock_wrlock(pthread_rwlock_t *l) { return lk_lock_op(OP_WR, l, 0, NULL, SITE()); }
RT_EXPORT int pthread_rwlock_tryrdlock(pthread_rwlock_t *l) { return lk_try_op(OP_RD, l, SITE()); }
RT_EXPORT int pthread_rwlock_trywrlock(pthread_rwlock_t *l) { return lk_try_op(OP_WR, l, SITE()); }
RT_EXPORT int pthread_rwlock_timedrdlock(pthread_rwlock_t *restrict l, const struct timespec *restrict ts)
{
	return lk_lock_op(OP_RD_TIMED, l, 0, ts, SITE());
}
RT_EXPORT int pthread_rwlock_timedwrlock(pthread_rwlock_t *restrict l, const struct timespec *restrict ts)
{
	return lk_lock_op(OP_WR_TIMED, l, 0, ts, SITE());
}
RT_EXPORT int pthread_rwlock_clockrdlock(pthread_rwlock_t *restrict l, clockid_t clk, const struct timespec *restrict ts)
{
	return lk_lock_op(OP_RD_CLOCK, l, clk, ts, SITE());
}
RT_EXPORT int pthread_rwlock_clockwrlock(pthread_rwlock_t *restrict l, clockid_t clk, const struct timespec *restrict ts)
{
	return lk_lock_op(OP_WR_CLOCK, l, clk, ts, SITE());
}
RT_EXPORT int pthread_rwlock_unlock(pthread_rwlock_t *l) { return lk_unlock_op(LK_RWLOCK, l, real_rw_unlock, SITE()); }
RT_EXPORT int pthread_rwlock_init(pthread_rwlock_t *restrict l, const pthread_rwlockattr_t *restrict a)
{
	int rc = R(rw_init)(l, a);
	if (rc == 0)
		lk_init_op(LK_RWLOCK, l, SITE());
	return rc;
}
RT_EXPORT int pthread_rwlock_destroy(pthread_rwlock_t *l)
{
	int rc = R(rw_destroy)(l);
	if (rc == 0)
		lk_destroy_op(l);
	return rc;
}

/* ---- spinlocks ---- */

static int real_spin_unlock(void *l) { return R(spin_unlock)(l); }

RT_EXPORT int pthread_spin_lock(pthread_spinlock_t *l) { return lk_lock_op(OP_SPIN, (void *)l, 0, NULL, SITE()); }
RT_EXPORT int pthread_spin_trylock(pthread_spinlock_t *l) { return lk_try_op(OP_SPIN, (void *)l, SITE()); }
RT_EXPORT int pthread_spin_unlock(pthread_spinlock_t *l)
{
	return lk_unlock_op(LK_SPIN, (void *)l, real_spin_unlock, SITE());
}
RT_EXPORT int pthread_spin_init(pthread_spinlock_t *l, int pshared)
{
	int rc = R(spin_init)(l, pshared);
	if (rc == 0)
		lk_init_op(LK_SPIN, (void *)l, SITE());
	return rc;
}
RT_EXPORT int pthread_spin_destroy(pthread_spinlock_t *l)
{
	int rc = R(spin_destroy)(l);
	if (rc == 0)
		lk_destroy_op((void *)l);
	return rc;
}

/* ---- condition variables ---- */

RT_EXPORT int pthread_cond_wait(pthread_cond_t *restrict c, pthread_mutex_t *restrict m)
{
	return lk_cond_op(LK_COND, LK_MUTEX, c, m, 0, 0, NULL, SITE());
}
RT_EXPORT int pthread_cond_timedwait(pthread_cond_t *restrict c, pthread_mutex_t *restrict m,
                                     const struct timespec *restrict ts)
{
	return lk_cond_op(LK_COND, LK_MUTEX, c, m, 1, 0, ts, SITE());
}
RT_EXPORT int pthread_cond_clockwait(pthread_cond_t *restrict c, pthread_mutex_t *restrict m, clockid_t clk,
                                     const struct timespec *restrict ts)
{
	return lk_cond_op(LK_COND, LK_MUTEX, c, m, 2, clk, ts, SITE());
}
RT_EXPORT int pthread_cond_init(pthread_cond_t *restrict c, const pthread_condattr_t *restrict a)
{
	int rc = R(cond_init)(c, a);
	if (rc == 0)
		lk_init_op(LK_COND, c, SITE());
	return rc;
}
RT_EXPORT int pthread_cond_destroy(pthread_cond_t *c)
{
	int rc = R(cond_destroy)(c);
	if (rc == 0)
		lk_destroy_op(c);
	return rc;
}
/* Same ABI version as the waits above, whatever the program was linked with. */
RT_EXPORT int pthread_cond_signal(pthread_cond_t *c) { return R(cond_signal)(c); }
RT_EXPORT int pthread_cond_broadcast(pthread_cond_t *c) { return R(cond_broadcast)(c); }

/* ---- semaphores ----
 * sem_init names the semaphore by its call site and makes a reused address a
 * new generation; sem_destroy ends the generation (like pthread_*_init and
 * _destroy).  sem_open / sem_close are not interposed: a named semaphore is
 * named by its first sem_wait / sem_post, and glibc keeps one mapping per name
 * (reference counted), so its address stays one lock while any handle is open.
 * x86-64 glibc has sem_init/sem_destroy at GLIBC_2.2.5 and GLIBC_2.34 on one
 * address: the default version is the real one for both. */

static int real_sem_post(void *s) { return R(sem_post)(s); }

RT_EXPORT int sem_wait(sem_t *s) { return lk_lock_op(OP_SEM, s, 0, NULL, SITE()); }
RT_EXPORT int sem_trywait(sem_t *s) { return lk_try_op(OP_SEM, s, SITE()); }
RT_EXPORT int sem_timedwait(sem_t *restrict s, const struct timespec *restrict ts)
{
	return lk_lock_op(OP_SEM_TIMED, s, 0, ts, SITE());
}
RT_EXPORT int sem_clockwait(sem_t *restrict s, clockid_t clk, const struct timespec *restrict ts)
{
	return lk_lock_op(OP_SEM_CLOCK, s, clk, ts, SITE());
}
RT_EXPORT int sem_post(sem_t *s) { return lk_unlock_op(LK_SEM, s, real_sem_post, SITE()); }
RT_EXPORT int sem_init(sem_t *s, int pshared, unsigned value)
{
	int rc = R(sem_init)(s, pshared, value);
	if (rc == 0)
		lk_init_op(LK_SEM, s, SITE());
	return rc;
}
RT_EXPORT int sem_destroy(sem_t *s)
{
	int rc = R(sem_destroy)(s);
	if (rc == 0)
		lk_destroy_op(s);
	return rc;
}

/* ---- C11 threads ---- */

static int real_mtx_unlock(void *l) { return R(mtx_unlock)(l); }

RT_EXPORT int mtx_lock(mtx_t *m) { return lk_lock_op(OP_MTX, m, 0, NULL, SITE()); }
RT_EXPORT int mtx_trylock(mtx_t *m) { return lk_try_op(OP_MTX, m, SITE()); }
RT_EXPORT int mtx_timedlock(mtx_t *restrict m, const struct timespec *restrict ts)
{
	return lk_lock_op(OP_MTX_TIMED, m, 0, ts, SITE());
}
RT_EXPORT int mtx_unlock(mtx_t *m) { return lk_unlock_op(LK_MTX, m, real_mtx_unlock, SITE()); }
RT_EXPORT int mtx_init(mtx_t *m, int type)
{
	int rc = R(mtx_init)(m, type);
	if (rc == thrd_success)
		lk_init_op(LK_MTX, m, SITE());
	return rc;
}
RT_EXPORT void mtx_destroy(mtx_t *m)
{
	R(mtx_destroy)(m);
	lk_destroy_op(m);
}
RT_EXPORT int cnd_wait(cnd_t *c, mtx_t *m) { return lk_cond_op(LK_CND, LK_MTX, c, m, 3, 0, NULL, SITE()); }
RT_EXPORT int cnd_timedwait(cnd_t *restrict c, mtx_t *restrict m, const struct timespec *restrict ts)
{
	return lk_cond_op(LK_CND, LK_MTX, c, m, 4, 0, ts, SITE());
}
RT_EXPORT int cnd_init(cnd_t *c)
{
	int rc = R(cnd_init)(c);
	if (rc == thrd_success)
		lk_init_op(LK_CND, c, SITE());
	return rc;
}
RT_EXPORT void cnd_destroy(cnd_t *c)
{
	R(cnd_destroy)(c);
	lk_destroy_op(c);
}
RT_EXPORT int cnd_signal(cnd_t *c) { return R(cnd_signal)(c); }
RT_EXPORT int cnd_broadcast(cnd_t *c) { return R(cnd_broadcast)(c); }

/* ---- the agent (`sonde record --locks -p`, agent.c) ----
 * A runtime loaded late is not preloaded: the program's calls reach libc
 * directly.  got.c writes the wrappers above into the GOT entries of every
 * loaded object.  Their addresses are taken through local aliases: the
 * exported names, seen from here, bind to libc's functions (libc comes first
 * in the global scope), which would make the wrappers call themselves. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpragmas"
#pragma GCC diagnostic ignored "-Wunknown-warning-option"
#pragma GCC diagnostic ignored "-Wmissing-attributes" /* libc's nothrow: the aliases are never called */
/* Every function the wrappers above interpose, once: the aliases and the table below come from it. */
#define LK_WRAPPED(X) \
	X(pthread_mutex_lock) \
	X(pthread_mutex_trylock) \
	X(pthread_mutex_timedlock) \
	X(pthread_mutex_clocklock) \
	X(pthread_mutex_unlock) \
	X(pthread_mutex_init) \
	X(pthread_mutex_destroy) \
	X(pthread_rwlock_rdlock) \
	X(pthread_rwlock_wrlock) \
	X(pthread_rwlock_tryrdlock) \
	X(pthread_rwlock_trywrlock) \
	X(pthread_rwlock_timedrdlock) \
	X(pthread_rwlock_timedwrlock) \
	X(pthread_rwlock_clockrdlock) \
	X(pthread_rwlock_clockwrlock) \
	X(pthread_rwlock_unlock) \
	X(pthread_rwlock_init) \
	X(pthread_rwlock_destroy) \
	X(pthread_spin_lock) \
	X(pthread_spin_trylock) \
	X(pthread_spin_unlock) \
	X(pthread_spin_init) \
	X(pthread_spin_destroy) \
	X(pthread_cond_wait) \
	X(pthread_cond_timedwait) \
	X(pthread_cond_clockwait) \
	X(pthread_cond_init) \
	X(pthread_cond_destroy) \
	X(pthread_cond_signal) \
	X(pthread_cond_broadcast) \
	X(sem_wait) \
	X(sem_trywait) \
	X(sem_timedwait) \
	X(sem_clockwait) \
	X(sem_post) \
	X(sem_init) \
	X(sem_destroy) \
	X(mtx_lock) \
	X(mtx_trylock) \
	X(mtx_timedlock) \
	X(mtx_unlock) \
	X(mtx_init) \
	X(mtx_destroy) \
	X(cnd_wait) \
	X(cnd_timedwait) \
	X(cnd_init) \
	X(cnd_destroy) \
	X(cnd_signal) \
	X(cnd_broadcast)
#define LK_LOCAL(fn) static __typeof__(fn) lk_w_##fn __attribute__((alias(#fn)));
LK_WRAPPED(LK_LOCAL)
#pragma GCC diagnostic pop

#define LK_ENTRY(fn) { #fn, (void *)lk_w_##fn },
static const struct rt_got_sym lk_wrappers[] = { LK_WRAPPED(LK_ENTRY) };

RT_HIDDEN int rt_locks_wrappers(const struct rt_got_sym **out)
{
	lk_resolve(); /* the real functions now, not inside the program's first lock call */
	lk_boot();
	*out = lk_wrappers;
	return (int)(sizeof lk_wrappers / sizeof lk_wrappers[0]);
}

/* The agent's end: every wrapper a plain pass-through from now on (one may
 * still be reached through a function pointer the program took meanwhile). */
RT_HIDDEN void rt_locks_end(void)
{
	__atomic_store_n(&lk_state, -1, __ATOMIC_RELEASE);
}

/* A later session (the agent's, after rt_session_retire): the next wrapper
 * call boots again on the new session's memory. */
RT_HIDDEN void rt_locks_reset(void)
{
	lk_S = NULL;
	lk_local_proc = UINT32_MAX; /* the objects are listed again in the new session's maps */
	atomic_store(&lk_nlocal, 0);
	__atomic_store_n(&lk_state, 0, __ATOMIC_RELEASE);
}
