/* profile_out.c — after the program has ended: turn the session memory into
 * the records of profile.sonde.  Every value read from the session is bounds
 * checked: the program may have scribbled on it or died half-way through an
 * update.  Frames still open (crash, kill, exit() from inside main, threads
 * that never returned) are closed at the end of their thread or process. */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sys/wait.h>

#include "record/convert.h"
#include "record/record.h"
#include "record/recorder.h"

static uint64_t thread_end(struct sonde_session_hdr *h, struct sonde_thread *t, uint64_t fallback)
{
	if (t->end_tsc)
		return t->end_tsc;
	if (t->proc < SONDE_MAX_PROCS && h->procs[t->proc].end_tsc)
		return h->procs[t->proc].end_tsc;
	return fallback > t->last_tsc ? fallback : t->last_tsc;
}

/* The calls of t still open (its stack depth). */
static uint32_t open_frames(const struct sonde_thread *t)
{
	return t->depth < SONDE_STACK_MAX ? t->depth : SONDE_STACK_MAX;
}

/* The off-CPU nanoseconds of live thread t (of process pid) at `end_mono`
 * (CLOCK_MONOTONIC), as its runtime counts them (CLOCK_MONOTONIC less its
 * CPU time), from /proc/PID/task/TID/schedstat's first field (the time it
 * ran): the wait a thread is in at the end (a server blocked in epoll_wait,
 * an uninstrumented call) was not seen by any hook.  0: cannot tell. */
static uint64_t off_at_end(int32_t pid, int32_t tid, uint64_t end_mono)
{
	char path[64], b[128];
	snprintf(path, sizeof path, "/proc/%d/task/%d/schedstat", pid, tid);
	FILE *f = pid > 0 && tid > 0 ? fopen(path, "r") : NULL;
	unsigned long long ran = 0;
	int ok = f && fgets(b, sizeof b, f) && sscanf(b, "%llu", &ran) == 1;
	if (f)
		fclose(f);
	return ok && end_mono > ran ? end_mono - ran : 0;
}

/* The functions counted, not timed (record --timing) that thread t called:
 * the nonzero entries of its arrays of counts (the runtime's and the stubs',
 * rt/hooks.c enter_count), written to out[0..max) when out is not NULL; how
 * many (at most max). */
static uint32_t counted_list(struct session *s, const struct sonde_thread *t, struct rec_count *out, uint32_t max)
{
	struct sonde_session_hdr *h = s->hdr;
	uint32_t nmods = sess_nmodules(h), k = 0;
	for (uint32_t m = 0; m < SONDE_MAX_MODS_PER_THREAD && m < nmods; m++) {
		uint64_t nf = (uint64_t)h->modules[m].nfuncs + 1;
		if (!t->cnt_off[m] || !sess_fits(s->size, t->cnt_off[m], nf * 8, 8))
			continue;
		const volatile uint64_t *cnt = sess_ptr(h, t->cnt_off[m]);
		for (uint64_t i = 0; i < nf && k < max; i++) {
			uint64_t c = cnt[i];
			if (!c)
				continue;
			if (out)
				out[k] = (struct rec_count){ .func = SONDE_FUNC(m, i + 1 == nf ? SONDE_UNNUMBERED : i), .calls = c };
			k++;
		}
	}
	return k;
}

/* The same, each a node under the root appended to out[used..] (at most
 * max, within SONDE_NODES_MAX); how many.  (A program that runs on may
 * have made more entries nonzero since a first look: those are left out,
 * as later calls are.) */
static uint32_t counted_nodes(struct session *s, const struct sonde_thread *t, struct rec_node *out, uint32_t used,
                              uint32_t max)
{
	if (used >= SONDE_NODES_MAX)
		return 0;
	if (max > SONDE_NODES_MAX - used)
		max = SONDE_NODES_MAX - used;
	if (!out)
		return counted_list(s, t, NULL, max);
	struct rec_count *c = max ? malloc(sizeof *c * max) : NULL;
	uint32_t k = c ? counted_list(s, t, c, max) : 0;
	for (uint32_t i = 0; i < k; i++) {
		out[used + i] = (struct rec_node){ .parent = 0, .next_sibling = out[0].first_child, .func = c[i].func,
		                                   .calls = c[i].calls };
		out[0].first_child = used + i;
	}
	free(c);
	return k;
}

/* REC_COUNTED of thread slot `slot` (a --trace recording): its counted
 * functions' calls, when it has any. */
static void write_counted(struct rec_writer *w, struct session *s, uint32_t slot, const struct sonde_thread *t)
{
	uint32_t n = counted_list(s, t, NULL, UINT32_MAX);
	struct rec_count *c = n ? malloc(sizeof *c * n) : NULL;
	if (!n)
		return;
	if (!c) {
		w->failed = 1;
		return;
	}
	n = counted_list(s, t, c, n); /* (counts only grow: as many) */
	struct rec_counted hdr = { slot, n };
	if (n)
		writer_put(w, REC_COUNTED, &hdr, sizeof hdr, c, sizeof *c * (uint64_t)n);
	free(c);
}

/* REC_CCT of thread slot `slot`: its nodes [0, used), converted and made a
 * tree of the nmods modules written (conv_cct_tree), the counted functions' nodes
 * after them, the calls still open closed at `end` in the copy (the session
 * is only read: a snapshot reads it while the program runs); then its
 * REC_CCT_CPU, each node's off-CPU time made inclusive, the top context
 * given the wait since the thread's last hook (off_end: its off-CPU time at
 * the end, when known). */
static void write_cct(struct rec_writer *w, struct session *s, uint32_t slot, const struct sonde_thread *t,
                      const struct sonde_node *nodes, uint32_t used, uint32_t nmods, uint64_t end, uint64_t off_end)
{
	uint32_t tree = used, flat = counted_nodes(s, t, NULL, used, UINT32_MAX);
	int split = t->cpu_split == 1, runnable = split && (t->cpu_flags & SONDE_CPU_RUNNABLE);
	uint64_t cap = (uint64_t)tree + flat; /* the file's nodes at most: the tree's, then the counted functions' */
	struct rec_node *out = malloc(sizeof *out * cap);
	/* off_ns, then (runnable) run_ns */
	uint64_t *off = split ? malloc(sizeof *off * cap * (runnable ? 2 : 1)) : NULL;
	if (!out || (split && !off)) {
		free(out);
		free(off);
		w->failed = 1;
		return;
	}
	for (uint32_t n = 0; n < tree; n++)
		conv_node(&out[n], &nodes[n]);
	tree = conv_cct_tree(out, tree, nmods, s->hdr);
	used = tree + (flat ? counted_nodes(s, t, out, tree, flat) : 0);
	uint64_t *run = runnable ? off + used : NULL;
	for (uint32_t n = 0; off && n < used; n++) {
		/* a counted function's node: no time, no wait */
		off[n] = n < tree ? nodes[n].off_ns : 0;
		if (run) /* within the node's off-CPU time (the session is the program's memory) */
			run[n] = n >= tree ? 0 : nodes[n].run_ns < nodes[n].off_ns ? nodes[n].run_ns : nodes[n].off_ns;
	}
	struct rec_cct_cpu chdr = { slot, split ? used : 0, split ? 1 : t->cpu_split < 0 ? t->cpu_split : -1,
	                            runnable ? REC_CPU_RUNNABLE : 0 };
	struct rec_cct hdr = { slot, used };
	for (uint32_t i = 0, depth = open_frames(t); i < depth; i++) {
		const struct sonde_frame *f = &t->stack[i];
		if (f->node == 0 || f->node >= tree || end < f->start) /* (the counted nodes follow the tree) */
			continue;
		out[f->node].ticks += end - f->start;
	}
	if (off) {
		/* the wait since the thread's last hook is the top context's */
		if (off_end > t->off_ns && t->cur_node < tree && t->depth)
			off[t->cur_node] += off_end - t->off_ns;
		/* exclusive (the runtime's) to inclusive (the file's): children
		 * come after their parents */
		for (uint32_t n = used; n-- > 1;)
			if (out[n].parent < n) { /* saturating: the session's values are the program's memory */
				off[out[n].parent] = off[out[n].parent] + off[n] < off[n] ? UINT64_MAX : off[out[n].parent] + off[n];
				if (run)
					run[out[n].parent] = run[out[n].parent] + run[n] < run[n] ? UINT64_MAX : run[out[n].parent] + run[n];
			}
	}
	writer_put(w, REC_CCT, &hdr, sizeof hdr, out, sizeof *out * (uint64_t)used);
	writer_put(w, REC_CCT_CPU, &chdr, sizeof chdr, off, off ? sizeof *off * (uint64_t)used * (run ? 2 : 1) : 0);
	free(out);
	free(off);
}

int write_profile(struct session *s, struct recorder *rec, const struct launched *l,
                  const struct record_config *cfg, char *err, size_t errlen)
{
	struct sonde_session_hdr *h = s->hdr;
	struct meta_buf *mb = &rec->meta; /* after the common lines (recorder_meta_common) */
	char num[64];
	snprintf(num, sizeof num, "%u", cfg->max_depth);
	meta_add(mb, "trace_max_depth", num);
	snprintf(num, sizeof num, "%llu", (unsigned long long)cfg->min_time_ns);
	meta_add(mb, "trace_min_time_ns", num);
	for (int i = 0; i < cfg->nfilters; i++)
		meta_add(mb, "filter", cfg->filters[i]);
	for (int i = 0; i < SONDE_LOST_COUNT_; i++) {
		int d = conv_lost_index(i);
		if (!h->lost[i] || d < 0)
			continue;
		char key[32];
		snprintf(key, sizeof key, "lost.%d", d);
		snprintf(num, sizeof num, "%llu", (unsigned long long)h->lost[i]);
		meta_add(mb, key, num);
	}
	session_growth_meta(s, mb);
	session_syscalls_meta(s, mb);
	if (recorder_profile(rec, err, errlen))
		return -1;
	struct rec_writer *w = &rec->prof;
	const struct clock_point *c0 = &rec->c0, *c1 = &rec->c1;

	uint32_t nprocs = sess_nprocs(h);
	for (uint32_t i = 0; i < nprocs; i++) {
		struct rec_process r;
		if (atomic_load(&h->procs[i].state) == SONDE_P_FREE)
			continue; /* a slot given back (an exec noted before it failed, rt/exec_env.c) */
		conv_process(&r, &h->procs[i], i, l->end_tsc);
		/* an image replaced by an exec ends where the next image of its pid starts */
		for (uint32_t k = i + 1; k < nprocs; k++) {
			const struct sonde_proc *q = &h->procs[k];
			if (q->pid == h->procs[i].pid && q->exec_seq == h->procs[i].exec_seq + 1 &&
			    atomic_load(&q->state) != SONDE_P_FREE) {
				r.flags |= REC_PROC_EXECED;
				if (!h->procs[i].end_tsc && q->start_tsc >= r.start_tsc)
					r.end_tsc = q->start_tsc;
				r.exit_status = INT32_MIN; /* the pid's exit is the last image's */
				break;
			}
		}
		writer_put(w, REC_PROCESS, &r, sizeof r, NULL, 0);
	}

	uint32_t nmods = sess_nmodules(h);
	for (uint32_t i = 0; i < nmods; i++) {
		struct sonde_module *m = &h->modules[i];
		if (atomic_load(&m->state) == SONDE_M_FREE)
			continue;
		struct rec_module r;
		conv_module(&r, m, i);
		uint64_t flen = (uint64_t)m->nfuncs * 8;
		if (!sess_inside(s->size, m->funcs_off, flen))
			flen = 0, r.nfuncs = 0;
		writer_put(w, REC_MODULE, &r, sizeof r, flen ? sess_ptr(h, m->funcs_off) : NULL, flen);
	}

	uint32_t nthreads = sess_nthreads(h);
	for (uint32_t i = 0; i < nthreads; i++) {
		uint64_t off = h->threads_off[i];
		if (!off || !sess_inside(s->size, off, sizeof(struct sonde_thread)))
			continue;
		struct sonde_thread *t = sess_ptr(h, off);
		uint32_t used = t->nodes_used;
		if (used > t->nodes_cap || !sess_inside(s->size, t->nodes_off, (uint64_t)used * sizeof(struct sonde_node)))
			used = 0;
		/* no pointer from an offset that failed its check (even unused: its
		 * arithmetic may overflow) */
		struct sonde_node *nodes = used ? thread_nodes(h, t) : NULL;
		uint64_t end = thread_end(h, t, l->end_tsc ? l->end_tsc : c1->ticks);
		uint32_t open = used ? open_frames(t) : 0;
		struct rec_thread r;
		conv_thread(&r, t, i, end, used, open);
		writer_put(w, REC_THREAD, &r, sizeof r, NULL, 0);
		if (used && (cfg->mode & SONDE_MODE_PROFILE)) {
			uint64_t off_end = 0;
			/* a thread that runs on (attached, a snapshot): its wait now */
			if (t->cpu_split == 1 && t->depth && atomic_load(&t->state) == SONDE_T_LIVE && t->proc < SONDE_MAX_PROCS &&
			    c1->ticks > c0->ticks && c1->mono_ns > c0->mono_ns) {
				double tpn = (double)(c1->ticks - c0->ticks) / (double)(c1->mono_ns - c0->mono_ns);
				double em = (double)c1->mono_ns - ((double)c1->ticks - (double)end) / tpn;
				off_end = off_at_end(h->procs[t->proc].pid, t->tid, em > 0 ? (uint64_t)em : 0);
			}
			write_cct(w, s, i, t, nodes, used, nmods, end, off_end);
		}
		if (cfg->mode & SONDE_MODE_TRACE) /* (beside a tree too: the timeline's readers take them from here) */
			write_counted(w, s, i, t);
	}
	write_locks(s, w);
	write_syscalls(s, w);
	if (w->failed) {
		snprintf(err, errlen, "writing %s failed (disk full?)", rec->profpath);
		return -1;
	}
	return 0;
}
