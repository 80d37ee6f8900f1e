/* convert.c — the runtime's structs to the recording's records, field by
 * field (see convert.h).  The static_asserts tie the runtime's limits and
 * codes to the format's: a runtime that outgrows the format fails to build
 * here instead of writing files that readers misread. */
#include "record/convert.h"

#include <stdatomic.h>
#include <string.h>

/* Slots, depths and strings of the runtime fit the format's. */
static_assert(SONDE_MAX_PROCS <= REC_MAX_PROCS, "process slots fit rec_process.index");
static_assert(SONDE_MAX_THREADS <= REC_MAX_THREADS, "thread slots fit the readers' bound");
static_assert(SONDE_MAX_MODULES <= REC_MAX_MODULES, "module slots fit the readers' bound");
static_assert(SONDE_STACK_MAX <= REC_STACK_MAX, "no context deeper than REC_STACK_MAX");
static_assert(SONDE_PATH_MAX == REC_PATH_MAX, "paths copied whole");
static_assert(SONDE_COMM_MAX == REC_COMM_MAX, "thread names copied whole");
static_assert(sizeof(((struct sonde_module *)0)->build_id) == sizeof(((struct rec_module *)0)->build_id),
              "build ids copied whole");
/* Every loss cause of the runtime has its index on disk (conv_lost_index). */
static_assert((int)SONDE_LOST_CAUSES_ == (int)REC_LOST_CAUSES, "a new loss cause needs a REC_LOST_ index");
static_assert(REC_LOST_CAUSES <= REC_LOST_COUNT, "rec_thread.lost[] holds every cause");
/* Lock ids, maps, histograms and sites. */
static_assert(LK_MAX_LOCKS <= LKREC_MAX_LOCKS, "lock ids fit the readers' bound");
static_assert(LK_MAX_MAPS <= LKREC_MAX_MAPS, "maps fit the readers' bound");
static_assert(LK_MAP_PATH == LKREC_MAP_PATH, "map paths copied whole");
static_assert(LK_HIST == LKREC_HIST, "histogram buckets mean the same durations");
static_assert(LK_SITES <= LKREC_SITES, "every site kept");

uint32_t conv_mode(uint32_t m)
{
	static const struct { uint32_t session, disk; } bits[] = {
		{ SONDE_MODE_PROFILE, REC_MODE_PROFILE },
		{ SONDE_MODE_TRACE, REC_MODE_TRACE },
		{ SONDE_MODE_LOCKS, REC_MODE_LOCKS },
		{ SONDE_MODE_LOCK_EVENTS, REC_MODE_LOCK_EVENTS },
		{ SONDE_MODE_LOSSY, REC_MODE_LOSSY },
		{ SONDE_MODE_SYSCALLS, REC_MODE_SYSCALLS },
	};
	uint32_t r = 0;
	for (size_t i = 0; i < sizeof bits / sizeof bits[0]; i++)
		if (m & bits[i].session)
			r |= bits[i].disk;
	return r;
}

int conv_lost_index(int cause)
{
	/* index + 1: a cause left out of this table gives -1, never index 0 */
	static const int8_t disk[SONDE_LOST_CAUSES_] = {
		[SONDE_LOST_THREAD_SLOTS] = REC_LOST_THREAD_SLOTS + 1,
		[SONDE_LOST_MODULE_SLOTS] = REC_LOST_MODULE_SLOTS + 1,
		[SONDE_LOST_SESSION_MEM] = REC_LOST_SESSION_MEM + 1,
		[SONDE_LOST_CCT_NODES] = REC_LOST_CCT_NODES + 1,
		[SONDE_LOST_STACK_DEPTH] = REC_LOST_STACK_DEPTH + 1,
		[SONDE_LOST_REENTRY] = REC_LOST_REENTRY + 1,
		[SONDE_LOST_UNNUMBERED] = REC_LOST_UNNUMBERED + 1,
		[SONDE_LOST_UNMATCHED_EXIT] = REC_LOST_UNMATCHED_EXIT + 1,
		[SONDE_LOST_RING_EVENTS] = REC_LOST_RING_EVENTS + 1,
		[SONDE_LOST_MODS_PER_THREAD] = REC_LOST_MODS_PER_THREAD + 1,
		[SONDE_LOST_SESSION_DAMAGE] = REC_LOST_SESSION_DAMAGE + 1,
	};
	return cause >= 0 && cause < SONDE_LOST_CAUSES_ ? disk[cause] - 1 : -1;
}

/* dst (n bytes) from src, NUL-terminated. */
static void copy_str(char *dst, const char *src, size_t n)
{
	memcpy(dst, src, n);
	dst[n - 1] = 0;
}

void conv_process(struct rec_process *r, const struct sonde_proc *p, uint32_t index, uint64_t end_fallback)
{
	memset(r, 0, sizeof *r);
	r->index = index;
	r->pid = p->pid;
	r->ppid = p->ppid;
	r->exit_status = p->exit_status;
	r->exec_seq = p->exec_seq;
	if (atomic_load(&p->state) == SONDE_P_EXITED)
		r->flags |= REC_PROC_ENDED_BY_EXIT;
	if (p->exit_status < 0 && p->exit_status != INT32_MIN)
		r->flags |= REC_PROC_KILLED;
	if (p->plain == SONDE_PLAIN_STATIC)
		r->flags |= REC_PROC_NO_RUNTIME_STATIC;
	else if (p->plain == SONDE_PLAIN_SETID)
		r->flags |= REC_PROC_NO_RUNTIME_SETID;
	r->start_tsc = p->start_tsc;
	r->end_tsc = p->end_tsc ? p->end_tsc : end_fallback;
	copy_str(r->exe, p->exe, sizeof r->exe);
	r->cmdline_len = p->cmdline_len < sizeof r->cmdline ? p->cmdline_len : sizeof r->cmdline;
	memcpy(r->cmdline, p->cmdline, r->cmdline_len);
}

void conv_module(struct rec_module *r, const struct sonde_module *m, uint32_t index)
{
	memset(r, 0, sizeof *r);
	r->index = index;
	r->proc = m->proc;
	r->nfuncs = m->nfuncs;
	r->load_bias = m->load_bias;
	r->numbering_ns = m->numbering_ns;
	r->build_id_len = m->build_id_len <= sizeof r->build_id ? m->build_id_len : 0;
	memcpy(r->build_id, m->build_id, sizeof r->build_id);
	r->unloaded = atomic_load(&m->state) == SONDE_M_UNLOADED;
	copy_str(r->path, m->path, sizeof r->path);
}

void conv_thread(struct rec_thread *r, const struct sonde_thread *t, uint32_t index, uint64_t end_tsc,
                 uint32_t nodes, uint32_t open_frames)
{
	memset(r, 0, sizeof *r);
	r->index = index;
	r->proc = t->proc;
	r->tid = t->tid;
	copy_str(r->comm, t->comm, sizeof r->comm);
	r->flags = atomic_load(&t->state) == SONDE_T_EXITED ? REC_THREAD_EXITED : 0;
	r->start_tsc = t->start_tsc;
	r->end_tsc = end_tsc;
	r->nodes = nodes;
	r->wait_ticks = t->wait_ticks;
	for (int k = 0; k < SONDE_LOST_CAUSES_; k++) {
		int d = conv_lost_index(k);
		if (d >= 0)
			r->lost[d] = t->lost[k];
	}
	r->open_frames = open_frames;
	r->cpu_split = t->cpu_split == 1 ? 1 : t->cpu_split < 0 ? t->cpu_split : 0;
	if (t->cpu_split == 1 && (t->cpu_flags & SONDE_CPU_RUNNABLE))
		r->flags |= REC_THREAD_RUNNABLE;
}

void conv_node(struct rec_node *r, const struct sonde_node *n)
{
	r->parent = n->parent;
	r->first_child = n->first_child;
	r->next_sibling = n->next_sibling;
	r->func = n->func;
	r->calls = n->calls;
	r->ticks = n->ticks;
}

/* The nodes [0, n) of a thread's copy made a tree the readers accept: cut
 * at the first node whose parent is not before it or whose function is of
 * no module written (nmods: REC_MODULE records), then the child and
 * sibling links made again from the parents, newest child first as the
 * runtime links them; how many nodes are left.  A thread that runs on while
 * it is written (an image exec'd in an attached tree since the attach, a
 * daemon left running) links nodes past n to those below and moves a child
 * to the front of its siblings: its links as read may lead out of the copy
 * or miss a node, its parents cannot (written before a node is counted). */
uint32_t conv_cct_tree(struct rec_node *out, uint32_t n, uint32_t nmods, const struct sonde_session_hdr *h)
{
	for (uint32_t i = 1; i < n; i++) {
		uint32_t mod = SONDE_FUNC_MOD(out[i].func), num = SONDE_FUNC_NUM(out[i].func);
		if (out[i].parent >= i || mod >= nmods || (num != SONDE_UNNUMBERED && num >= h->modules[mod].nfuncs)) {
			n = i;
			break;
		}
	}
	for (uint32_t i = 0; i < n; i++)
		out[i].first_child = out[i].next_sibling = 0;
	for (uint32_t i = 1; i < n; i++) {
		out[i].next_sibling = out[out[i].parent].first_child;
		out[out[i].parent].first_child = i;
	}
	return n;
}

void conv_chunk(struct rec_chunk *r, const struct sonde_chunk *c)
{
	memset(r, 0, sizeof *r);
	r->state = atomic_load_explicit(&c->state, memory_order_relaxed) == RING_FULL ? REC_CHUNK_FULL
	                                                                                : REC_CHUNK_FILLING;
	r->used = c->used;
	r->seq = c->seq;
	r->base_tsc = c->base_tsc;
	r->thread = c->thread;
	r->lost = c->lost;
}

void conv_summary(struct lkrec_summary *r, const struct lk_session *S, uint32_t nlocks, uint32_t nmaps,
                  uint64_t lost_stats)
{
	memset(r, 0, sizeof *r);
	r->nlocks = nlocks;
	r->nmaps = nmaps;
	r->lost_locks = atomic_load(&S->lost_locks);
	r->lost_maps = atomic_load(&S->lost_maps);
	r->lost_stats = lost_stats;
}

void conv_lock(struct lkrec_lock *r, const struct lk_lock *k, uint32_t id)
{
	memset(r, 0, sizeof *r);
	r->id = id;
	r->proc = k->proc;
	r->gen = k->gen;
	r->kind = k->kind;
	r->flags = atomic_load(&k->flags);
	r->addr = k->addr;
	r->site = k->site;
	r->first_tsc = k->first_tsc;
}

void conv_map(struct lkrec_map *r, const struct lk_map *m)
{
	memset(r, 0, sizeof *r);
	r->proc = m->proc;
	r->lo = m->lo;
	r->hi = m->hi;
	r->bias = m->bias;
	copy_str(r->path, m->path, sizeof r->path);
}

void conv_stat(struct lkrec_stat *r, const struct lk_stat *s)
{
	memset(r, 0, sizeof *r);
	r->lock = s->lock;
	r->max_waiters = s->max_waiters;
	r->acquisitions = s->acquisitions;
	r->read_acquisitions = s->read_acquisitions;
	r->write_acquisitions = s->write_acquisitions;
	r->contended = s->contended;
	r->trylock_failures = s->trylock_failures;
	r->timeouts = s->timeouts;
	r->errors = s->errors;
	r->owner_changes = s->owner_changes;
	r->releases = s->releases;
	r->unmatched_releases = s->unmatched_releases;
	r->cross_thread_releases = s->cross_thread_releases;
	r->cond_reacquisitions = s->cond_reacquisitions;
	r->wait_ticks = s->wait_ticks;
	r->max_wait_ticks = s->max_wait_ticks;
	r->hold_ticks = s->hold_ticks;
	r->max_hold_ticks = s->max_hold_ticks;
	r->holds = s->holds;
	for (uint32_t b = 0; b < LKREC_HIST; b++) {
		r->wait_hist[b] = s->wait_hist[b];
		r->hold_hist[b] = s->hold_hist[b];
	}
	for (uint32_t k = 0; k < LK_SITES; k++) {
		r->sites[k].site = s->sites[k].site;
		r->sites[k].count = s->sites[k].count;
		r->sites[k].wait_ticks = s->sites[k].wait_ticks;
	}
}
