/* info.c — `sonde info`: what a recording holds.  info_compute() makes the
 * numbers once (struct info); info_json() and info_table() print them. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/info_patched.h"
#include "cli/load.h"
#include "common/json.h"

static const char *const loss_names[REC_LOST_COUNT] = {
	[REC_LOST_THREAD_SLOTS] = "threads_without_slot",
	[REC_LOST_MODULE_SLOTS] = "modules_without_slot",
	[REC_LOST_SESSION_MEM] = "session_memory_full",
	[REC_LOST_CCT_NODES] = "calls_without_cct_node",
	[REC_LOST_STACK_DEPTH] = "calls_deeper_than_stack",
	[REC_LOST_REENTRY] = "calls_in_reentered_hook",
	[REC_LOST_UNNUMBERED] = "calls_of_unnumbered_functions",
	[REC_LOST_UNMATCHED_EXIT] = "unmatched_exits",
	[REC_LOST_RING_EVENTS] = "ring_events_dropped",
	[REC_LOST_MODS_PER_THREAD] = "module_record_arrays_missing",
	[REC_LOST_SESSION_DAMAGE] = "session_values_damaged",
};

static const char *loss_name(int k)
{
	static char buf[32];
	if (k < REC_LOST_COUNT && loss_names[k])
		return loss_names[k];
	snprintf(buf, sizeof buf, "loss_%d", k);
	return buf;
}

/* The size of events.sonde (0 if there is none). */
static uint64_t events_file_bytes(const struct recording *r)
{
	char path[4200];
	struct stat st;
	snprintf(path, sizeof path, "%s/%s", r->dir, SONDE_FILE_EVENTS);
	return r->has_events && stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
}

/* "attached_running.TID" (sonde record -p): TID; 0 for other keys. */
static int running_tid(const char *key)
{
	return !strncmp(key, "attached_running.", 17) ? atoi(key + 17) : 0;
}

/* One thread's calls running at the attach, outermost first, a run of the
 * same function (recursion) as "name x N". */
static void print_running(int tid, const char *names)
{
	printf("  running at the attach, thread %d:", tid);
	const char *p = names;
	int first = 1;
	while (*p) {
		const char *e = strchrnul(p, '\t');
		size_t len = (size_t)(e - p);
		int k = 1;
		const char *q = *e ? e + 1 : e;
		while (*q && !strncmp(q, p, len) && (q[len] == '\t' || !q[len])) {
			k++;
			q += len + (q[len] != 0);
		}
		printf("%s %.*s", first ? "" : " >", (int)len, p);
		if (k > 1)
			printf(" x %d", k);
		first = 0;
		p = q;
	}
	printf("\n");
}

/* Whether k is a meta key "probe.N" (sonde probe --record; not probe.N.kind
 * and such), with N in *id. */
static int probe_meta_id(const char *k, long *id)
{
	char *end;
	if (strncmp(k, "probe.", 6))
		return 0;
	*id = strtol(k + 6, &end, 10);
	return end != k + 6 && !*end;
}

/* A number kept in the recording's metadata, 0 without it. */
static uint64_t meta_u64(const struct recording *r, const char *key)
{
	const char *s = rd_meta(r, key);
	return s ? strtoull(s, NULL, 10) : 0;
}

/* What `sonde info` says, computed once for both printers. */
struct info {
	const struct fn_table *ft;     /* the recording's functions (names of --timing=auto's switches) */
	double duration_ns;
	uint64_t lost[REC_LOST_COUNT]; /* threads' counters plus the recorder's (meta lost.K) */
	uint64_t cct_nodes, writer_wait_ticks;
	uint64_t functions, numbering_ns;
	uint64_t events_file_bytes;
	const char *mode;              /* "probes", "trace" or "profile" */
	int probes, nprobes;           /* a probe recording (sonde probe --record), its probes */
	uint64_t probe_records;
};

static void info_compute(const struct recording *r, struct info *in)
{
	const char *s;
	memset(in, 0, sizeof *in);
	if ((s = rd_meta(r, "start_mono_ns")) && rd_meta(r, "end_mono_ns"))
		in->duration_ns = (double)(strtoull(rd_meta(r, "end_mono_ns"), NULL, 10) - strtoull(s, NULL, 10));
	for (int i = 0; i < r->nthreads; i++) {
		for (int k = 0; k < REC_LOST_COUNT; k++)
			in->lost[k] += r->threads[i].r.lost[k];
		in->cct_nodes += r->threads[i].nnodes;
		in->writer_wait_ticks += r->threads[i].r.wait_ticks;
	}
	for (int i = 0; i < r->nmeta; i++)
		if (!strncmp(r->meta_keys[i], "lost.", 5)) {
			int k = atoi(r->meta_keys[i] + 5);
			if (k >= 0 && k < REC_LOST_COUNT)
				in->lost[k] += strtoull(r->meta_vals[i], NULL, 10);
		}
	for (uint32_t i = 0; i < r->nmodule_slots; i++)
		if (r->modules[i]) {
			in->functions += r->modules[i]->r.nfuncs;
			in->numbering_ns += r->modules[i]->r.numbering_ns;
		}
	in->events_file_bytes = events_file_bytes(r);
	in->mode = (r->mode & REC_MODE_PROBES)                                   ? "probes"
	           : (r->mode & REC_MODE_TRACE) && (r->mode & REC_MODE_PROFILE) ? "trace + profile"
	           : (r->mode & REC_MODE_TRACE)                               ? "trace"
	                                                                      : "profile";
	in->probes = (r->mode & REC_MODE_PROBES) != 0;
	in->nprobes = in->probes && (s = rd_meta(r, "probes")) ? atoi(s) : 0;
	in->probe_records = in->probes ? meta_u64(r, "probe_records") : 0;
}

/* --- JSON */

static void json_attached(struct json *j, const struct recording *r)
{
	json_int(j, "attached_pid", atoi(rd_meta(r, "attached_pid")));
	json_str(j, "attached_end", rd_meta(r, "attached_end"));
	json_str(j, "attached_at", rd_meta(r, "attached_at"));
	json_arr_begin(j, "attached_running");
	for (int i = 0; i < r->nmeta; i++) {
		int tid = running_tid(r->meta_keys[i]);
		if (!tid)
			continue;
		json_obj_begin(j, NULL);
		json_int(j, "tid", tid);
		json_arr_begin(j, "calls");
		for (const char *p = r->meta_vals[i], *e; *p; p = *e ? e + 1 : e) {
			e = strchrnul(p, '\t');
			char name[1024];
			snprintf(name, sizeof name, "%.*s", (int)(e - p), p);
			json_str(j, NULL, name);
		}
		json_arr_end(j);
		json_obj_end(j);
	}
	json_arr_end(j);
}

static void json_probes(struct json *j, const struct recording *r, const struct info *in)
{
	json_uint(j, "probe_records", in->probe_records);
	json_arr_begin(j, "probes");
	for (int i = 0; i < r->nmeta; i++) {
		long id;
		if (!probe_meta_id(r->meta_keys[i], &id))
			continue;
		char key[48];
		json_obj_begin(j, NULL);
		json_int(j, "id", id);
		json_str(j, "spec", r->meta_vals[i]);
		snprintf(key, sizeof key, "probe.%ld.kind", id);
		json_str(j, "kind", rd_meta(r, key));
		snprintf(key, sizeof key, "probe.%ld.hits", id);
		json_uint(j, "hits", meta_u64(r, key));
		json_obj_end(j);
	}
	json_arr_end(j);
}

static void json_keep_last(struct json *j, const struct recording *r)
{
	const char *s;
	json_obj_begin(j, "keep_last");
	json_uint(j, "bytes", meta_u64(r, "keep_last_bytes"));
	json_uint(j, "dropped_chunks", meta_u64(r, "dropped_chunks"));
	json_uint(j, "dropped_bytes", meta_u64(r, "dropped_bytes"));
	json_uint(j, "dropped_calls", meta_u64(r, "dropped_calls"));
	if ((s = rd_meta(r, "snapshot")))
		json_uint(j, "snapshot", strtoull(s, NULL, 10));
	if ((s = rd_meta(r, "keep_last_memory_short")))
		json_uint(j, "memory_short", strtoull(s, NULL, 10));
	json_obj_end(j);
}

/* The programs of the tree: each distinct executable, how many process
 * images ran it, and the instrumented modules of those images (distinct
 * paths).  f: called once per program with the first process of it. */
static int same_exe(const struct rec_process *a, const struct rec_process *b)
{
	return !strncmp(a->exe, b->exe, sizeof a->exe);
}

static int program_first(const struct recording *r, int i)
{
	for (int k = 0; k < i; k++)
		if (same_exe(&r->procs[k], &r->procs[i]))
			return 0;
	return 1;
}

static int program_count(const struct recording *r, int i)
{
	int n = 0;
	for (int k = 0; k < r->nprocs; k++)
		n += same_exe(&r->procs[k], &r->procs[i]);
	return n;
}

/* Is module slot m's process one running the program of process i, and is
 * it the first such module of its path? */
static int program_module(const struct recording *r, int i, uint32_t m)
{
	const struct rd_module *md = r->modules[m];
	if (!md)
		return 0;
	const struct rec_process *p = rd_proc(r, md->r.proc);
	if (!p || !same_exe(p, &r->procs[i]))
		return 0;
	for (uint32_t k = 0; k < m; k++) {
		const struct rd_module *o = r->modules[k];
		const struct rec_process *q = o ? rd_proc(r, o->r.proc) : NULL;
		if (q && same_exe(q, &r->procs[i]) && !strncmp(o->r.path, md->r.path, sizeof o->r.path))
			return 0;
	}
	return 1;
}

static double since_start_s(const struct recording *r, uint64_t tsc)
{
	return tsc > r->start_ticks ? rd_ns(r, (int64_t)(tsc - r->start_ticks)) / 1e9 : 0.0;
}

/* processes, threads, modules */
static void json_lists(struct json *j, const struct recording *r, const struct fn_table *ft)
{
	json_arr_begin(j, "programs");
	for (int i = 0; i < r->nprocs; i++) {
		if (!program_first(r, i))
			continue;
		json_obj_begin(j, NULL);
		json_str(j, "program", r->procs[i].exe);
		json_int(j, "processes", program_count(r, i));
		json_arr_begin(j, "modules");
		for (uint32_t m = 0; m < r->nmodule_slots; m++)
			if (program_module(r, i, m))
				json_str(j, NULL, r->modules[m]->r.path);
		json_arr_end(j);
		json_obj_end(j);
	}
	json_arr_end(j);
	json_arr_begin(j, "processes");
	for (int i = 0; i < r->nprocs; i++) {
		json_obj_begin(j, NULL);
		json_int(j, "pid", r->procs[i].pid);
		json_int(j, "ppid", r->procs[i].ppid);
		json_str(j, "exe", r->procs[i].exe);
		json_uint(j, "exec_seq", r->procs[i].exec_seq);
		json_arr_begin(j, "argv"); /* the command line as recorded (NUL-separated, truncated) */
		const struct rec_process *pc = &r->procs[i];
		uint32_t cl = pc->cmdline_len < sizeof pc->cmdline ? pc->cmdline_len : (uint32_t)sizeof pc->cmdline;
		for (uint32_t a = 0; a < cl;) {
			const char *z = memchr(pc->cmdline + a, 0, cl - a);
			uint32_t e = z ? (uint32_t)(z - pc->cmdline) : cl;
			char arg[sizeof pc->cmdline + 1];
			memcpy(arg, pc->cmdline + a, e - a);
			arg[e - a] = 0;
			json_str(j, NULL, arg);
			a = e + 1;
		}
		json_arr_end(j);
		json_bool(j, "execed", (r->procs[i].flags & REC_PROC_EXECED) != 0);
		json_double(j, "start_s", since_start_s(r, r->procs[i].start_tsc));
		json_double(j, "end_s", since_start_s(r, r->procs[i].end_tsc));
		if (r->procs[i].exit_status != INT32_MIN)
			json_int(j, "exit_status", r->procs[i].exit_status);
		json_bool(j, "killed", (r->procs[i].flags & REC_PROC_KILLED) != 0);
		if (r->procs[i].flags & (REC_PROC_NO_RUNTIME_STATIC | REC_PROC_NO_RUNTIME_SETID))
			json_str(j, "no_functions", r->procs[i].flags & REC_PROC_NO_RUNTIME_STATIC ? "statically linked"
			                                : "set-uid or set-gid: the loader ignores LD_PRELOAD");
		json_obj_end(j);
	}
	json_arr_end(j);
	json_arr_begin(j, "threads");
	for (int i = 0; i < r->nthreads; i++) {
		const struct rec_thread *t = &r->threads[i].r;
		json_obj_begin(j, NULL);
		json_int(j, "tid", t->tid);
		json_str(j, "name", t->comm);
		struct rec_process *p = rd_proc(r, t->proc);
		json_int(j, "pid", p ? p->pid : 0);
		json_uint(j, "cct_nodes", r->threads[i].nnodes);
		json_uint(j, "open_frames_at_end", t->open_frames);
		json_double(j, "duration_ns", rd_ns(r, t->end_tsc > t->start_tsc ? t->end_tsc - t->start_tsc : 0));
		json_obj_end(j);
	}
	json_arr_end(j);
	json_arr_begin(j, "modules");
	for (uint32_t i = 0; i < r->nmodule_slots; i++) {
		const struct rd_module *m = r->modules[i];
		if (!m)
			continue;
		json_obj_begin(j, NULL);
		json_str(j, "path", m->r.path);
		json_uint(j, "functions", m->r.nfuncs);
		json_double(j, "numbering_ns", (double)m->r.numbering_ns);
		json_bool(j, "unloaded", m->r.unloaded);
		json_str(j, "how", info_module_how(r, i));
		json_str(j, "stubs", info_module_stubs(r, i));
		json_obj_end(j);
	}
	json_arr_end(j);
	info_patched_json(r, j);
	info_timing_json(r, ft, j);
}

/* Whether the threads' time was split into on-CPU and off-CPU (issue 38). */
static const char *cpu_split(const struct recording *r, char *buf, size_t n, int *runnable)
{
	struct profile p;
	memset(&p, 0, sizeof p);
	for (int i = 0; i < r->nthreads; i++)
		profile_count_split(&p, &r->threads[i]);
	*runnable = profile_run_known(&p);
	return profile_cpu_why(&p, buf, n);
}

static void info_json(const struct recording *r, const struct info *in)
{
	const char *s;
	struct json j;
	json_init(&j, stdout, 1);
	json_obj_begin(&j, NULL);
	json_str(&j, "program", rd_meta(r, "program"));
	json_str(&j, "command", rd_meta(r, "command"));
	json_str(&j, "mode", in->mode);
	if (rd_meta(r, "attached_pid")) /* sonde record -p (docs/ATTACH.md) */
		json_attached(&j, r);
	json_bool(&j, "locks", (r->mode & REC_MODE_LOCKS) != 0);
	json_bool(&j, "syscalls", (r->mode & REC_MODE_SYSCALLS) != 0);
	char why[256];
	int runnable;
	json_str(&j, "cpu_split", cpu_split(r, why, sizeof why, &runnable));
	json_bool(&j, "runnable_split", runnable);
	json_bool(&j, "has_probe_hits", in->probes);
	if (in->probes)
		json_probes(&j, r, in);
	json_double(&j, "duration_ns", in->duration_ns);
	json_double(&j, "ticks_per_ns", r->ticks_per_ns);
	if ((s = rd_meta(r, "exit_status")))
		json_int(&j, "exit_status", atoi(s));
	else /* not known: a recovered recording, sonde left a process that ran on, a remote target gone */
		json_null(&j, "exit_status");
	if (rd_meta(r, "remote_target_gone"))
		json_bool(&j, "target_gone", 1);
	if ((s = rd_meta(r, "incomplete"))) { /* the recorder was killed (record/recover.c) */
		json_obj_begin(&j, "incomplete");
		json_str(&j, "why", s);
		json_int(&j, "recorder_pid", (s = rd_meta(r, "recorder_pid")) ? atoi(s) : 0);
		json_str(&j, "program_end", rd_meta(r, "program_end"));
		json_bool(&j, "events_missing", r->has_events);
		json_obj_end(&j);
	}
	json_uint(&j, "functions", in->functions);
	json_uint(&j, "cct_nodes", in->cct_nodes);
	if (rd_meta(r, "mem_cap")) { /* the node pools' growth (record/growth.c) */
		json_obj_begin(&j, "session");
		json_uint(&j, "mem_cap", meta_u64(r, "mem_cap"));
		json_uint(&j, "cct_grow_steps", meta_u64(r, "cct_grow_steps"));
		json_uint(&j, "cct_grow_refused", meta_u64(r, "cct_grow_refused"));
		json_uint(&j, "cct_pool_max_nodes", meta_u64(r, "cct_pool_max_nodes"));
		json_obj_end(&j);
	}
	json_double(&j, "numbering_ns", (double)in->numbering_ns);
	json_uint(&j, "event_bytes", meta_u64(r, "event_bytes"));
	json_uint(&j, "events_file_bytes", in->events_file_bytes);
	json_int(&j, "event_zstd_level", (s = rd_meta(r, "event_zstd_level")) ? atoi(s) : 0);
	json_double(&j, "writer_wait_ns", rd_ns(r, in->writer_wait_ticks));
	if (rd_meta(r, "keep_last_bytes")) /* record --keep-last */
		json_keep_last(&j, r);
	json_obj_begin(&j, "lost");
	for (int k = 0; k < REC_LOST_COUNT; k++)
		if (in->lost[k])
			json_uint(&j, loss_name(k), in->lost[k]);
	json_obj_end(&j);
	json_lists(&j, r, in->ft);
	json_obj_end(&j);
	json_end(&j);
}

/* --- the table */

/* A meta value, or "?" */
static const char *meta_or_q(const struct recording *r, const char *key)
{
	const char *s = rd_meta(r, key);
	return s ? s : "?";
}

/* program, command, mode; how the recording was made (recovered, attached,
 * probe hits) */
static void table_origin(const struct recording *r, const struct info *in)
{
	const char *s;
	printf("program:      %s\n", meta_or_q(r, "program"));
	printf("command:      %s\n", meta_or_q(r, "command"));
	printf("mode:         %s%s%s\n", in->mode, (r->mode & REC_MODE_LOCKS) ? " + locks" : "",
	       (r->mode & REC_MODE_SYSCALLS) ? " + syscalls" : "");
	char why[256];
	if (r->mode & REC_MODE_PROFILE) {
		int runnable;
		const char *split = cpu_split(r, why, sizeof why, &runnable);
		printf("cpu split:    %s (on-CPU / off-CPU time of each call%s)\n", split,
		       runnable ? "; off-CPU told runnable from blocked" : "");
	}
	if ((s = rd_meta(r, "incomplete")))
		printf("incomplete:   %s (sonde pid %s); recovered from its session by the next reader: %s%s; "
		       "the program's end: %s\n", s, meta_or_q(r, "recorder_pid"),
		       (r->mode & REC_MODE_PROFILE) ? "the profile holds the calls up to the program's end"
		                                    : "the events written before the kill and those left in the rings",
		       r->has_events ? "; the events the recorder drained but had not written are missing "
		                       "(sequence gaps), and those after a ring filled are counted as lost" : "",
		       rd_meta(r, "program_end") ? rd_meta(r, "program_end") : "unknown");
	if (rd_meta(r, "attached_pid")) {
		printf("attached:     to running process %s at %s (sonde record -p; ended: %s%s)\n",
		       rd_meta(r, "attached_pid"), meta_or_q(r, "attached_at"), meta_or_q(r, "attached_end"),
		       (r->mode & REC_MODE_LOCKS) ? "; releases of locks taken before it are unmatched" : "");
		for (int i = 0; i < r->nmeta; i++) {
			int tid = running_tid(r->meta_keys[i]);
			if (tid)
				print_running(tid, r->meta_vals[i]);
		}
	}
	if (in->probes) {
		printf("probe hits:   %llu events of %d probe%s (sonde probe --record; no function profile: "
		       "see them with 'sonde export --format=perfetto')\n",
		       (unsigned long long)in->probe_records, in->nprobes, in->nprobes == 1 ? "" : "s");
		for (int i = 0; i < r->nmeta; i++) {
			long id;
			if (!probe_meta_id(r->meta_keys[i], &id))
				continue;
			char key[48];
			snprintf(key, sizeof key, "probe.%ld.hits", id);
			printf("  %-4ld %-40s %s hits\n", id, r->meta_vals[i], meta_or_q(r, key));
		}
	}
}

static void table_exit_status(const struct recording *r)
{
	const char *s;
	if ((s = rd_meta(r, "exit_status"))) {
		int st = atoi(s);
		if (st < 0 && st > -65)
			printf("exit status:  killed by SIG%s (signal %d)\n", sigabbrev_np(-st) ? sigabbrev_np(-st) : "?", -st);
		else
			printf("exit status:  %s\n", s);
	} else if (rd_meta(r, "incomplete")) {
		printf("exit status:  ? (the recording was recovered)\n");
	} else if (rd_meta(r, "remote_target_gone")) { /* record --target: the connection closed (calltrace.h) */
		printf("exit status:  ? (the target went away before its end, its connection closed: the calls up to "
		       "then are recorded)\n");
	} else {
		printf("exit status:  ? (the process ran on after sonde left it)\n");
	}
}

/* processes, threads (each with --threads), modules, contexts */
static void table_lists(const struct recording *r, const struct info *in, int each_thread)
{
	char a[32];
	int nprog = 0;
	for (int i = 0; i < r->nprocs; i++)
		nprog += program_first(r, i);
	printf("programs:     %d\n", nprog);
	for (int i = 0; i < r->nprocs; i++) {
		if (!program_first(r, i))
			continue;
		int n = program_count(r, i), nm = 0;
		printf("  %s: %d process%s", r->procs[i].exe, n, n == 1 ? "" : "es");
		for (uint32_t m = 0; m < r->nmodule_slots; m++)
			if (program_module(r, i, m))
				printf("%s%s", nm++ ? ", " : "; instrumented: ", r->modules[m]->r.path);
		printf("%s\n", nm ? "" : "; nothing instrumented");
	}
	printf("processes:    %d (parent, start and end from the recording's start)\n", r->nprocs);
	for (int i = 0; i < r->nprocs; i++) {
		const struct rec_process *p = &r->procs[i];
		printf("  pid %-7d %s  [parent %d, %.3f s to %.3f s]", p->pid, p->exe, p->ppid, since_start_s(r, p->start_tsc),
		       since_start_s(r, p->end_tsc));
		if (p->flags & REC_PROC_NO_RUNTIME_STATIC) printf("  [no functions: statically linked]");
		else if (p->flags & REC_PROC_NO_RUNTIME_SETID) printf("  [no functions: set-uid, the loader ignores LD_PRELOAD]");
		if (p->flags & REC_PROC_EXECED) printf("  (exec'd another program)\n");
		else if (p->exit_status == INT32_MIN) printf("  (end unknown)\n");
		else if (p->exit_status < 0 && p->exit_status > -65)
			printf("  (killed by SIG%s, signal %d)\n", sigabbrev_np(-p->exit_status) ? sigabbrev_np(-p->exit_status) : "?",
			       -p->exit_status);
		else if (p->exit_status < 0) printf("  (killed by signal %d)\n", -p->exit_status);
		else printf("  (exit %d)\n", p->exit_status);
	}
	printf("threads:      %d\n", r->nthreads);
	if (each_thread)
		for (int i = 0; i < r->nthreads; i++) {
			const struct rec_thread *t = &r->threads[i].r;
			printf("  tid %-7d %-16s %8u contexts, %s%s\n", t->tid, t->comm, r->threads[i].nnodes,
			       fmt_ns(rd_ns(r, t->end_tsc > t->start_tsc ? t->end_tsc - t->start_tsc : 0), a, sizeof a),
			       t->open_frames ? " (frames open at the end: closed then)" : "");
		}
	printf("modules:      %d instrumented, %llu functions, numbered in %s\n", r->nmodules,
	       (unsigned long long)in->functions, fmt_ns((double)in->numbering_ns, a, sizeof a));
	for (uint32_t i = 0; i < r->nmodule_slots; i++)
		if (r->modules[i])
			printf("  %s (%u functions%s%s)%s\n", r->modules[i]->r.path, r->modules[i]->r.nfuncs,
			       strcmp(info_module_how(r, i), "patched") ? "" : ", patched without a rebuild",
			       !info_module_stubs(r, i) ? ""
			       : !strcmp(info_module_stubs(r, i), "prebuilt") ? ", its stubs built before it ran"
			       : !strcmp(info_module_stubs(r, i), "moved")    ? ", its stubs built before it ran and moved"
			                                                      : ", its stubs built when it asked",
			       r->modules[i]->r.unloaded ? " [unloaded]" : "");
	info_patched_table(r);
	info_timing_table(r, in->ft);
	printf("contexts:     %llu calling-context nodes", (unsigned long long)in->cct_nodes);
	if (meta_u64(r, "cct_grow_steps"))
		printf(" (the pools grew %llu times, the largest to %llu nodes; cap %llu MiB)",
		       (unsigned long long)meta_u64(r, "cct_grow_steps"), (unsigned long long)meta_u64(r, "cct_pool_max_nodes"),
		       (unsigned long long)(meta_u64(r, "mem_cap") >> 20));
	putchar('\n');
}

/* events, --keep-last, losses */
static void table_events_and_losses(const struct recording *r, const struct info *in)
{
	char a[32];
	const char *s;
	if ((s = rd_meta(r, "event_bytes")) && strtoull(s, NULL, 10))
		printf("events:       %s bytes in %s chunks, stored in %llu bytes%s, writer waited %s\n", s,
		       rd_meta(r, "event_chunks"), (unsigned long long)in->events_file_bytes,
		       rd_meta(r, "event_zstd_level") ? " (zstd)" : "", fmt_ns(rd_ns(r, in->writer_wait_ticks), a, sizeof a));
	if ((s = rd_meta(r, "keep_last_bytes"))) {
		const char *dc = rd_meta(r, "dropped_chunks"), *db = rd_meta(r, "dropped_bytes");
		const char *dn = rd_meta(r, "dropped_calls"), *sn = rd_meta(r, "snapshot");
		if (sn)
			printf("snapshot:     %s, taken while the program ran (SIGUSR2)\n", sn);
		if ((sn = rd_meta(r, "keep_last_memory_short")))
			printf("keep-last:    sonde itself took %s bytes of memory, leaving less than an eighth of %s for "
			       "events: the memory bound was not held (choose a larger SIZE)\n", sn, s);
		printf("keep-last:    the newest %s bytes of events kept; %s older chunks (%s bytes, %s calls) let go%s\n",
		       s, dc ? dc : "0", db ? db : "0", dn ? dn : "?",
		       dc && strtoull(dc, NULL, 10) ? ": calls that began before them are not in the timeline" : "");
	}
	int any = 0;
	for (int k = 0; k < REC_LOST_COUNT; k++)
		if (in->lost[k]) {
			printf("%s %s: %llu\n", any++ ? "             " : "lost:        ", loss_name(k),
			       (unsigned long long)in->lost[k]);
		}
	if (!any)
		printf("lost:         nothing\n");
}

static void info_table(const struct recording *r, const struct info *in, int each_thread)
{
	char a[32];
	table_origin(r, in);
	printf("duration:     %s\n", fmt_ns(in->duration_ns, a, sizeof a));
	table_exit_status(r);
	const char *tc = rd_meta(r, "target_clock"), *hz = rd_meta(r, "target_clock_hz");
	if (tc) /* record --target: the target's own clock (probe/calltrace.c) */
		printf("clock:        %.4f ticks/ns (the target's: %s%s%s Hz)\n", r->ticks_per_ns,
		       !strcmp(tc, "ucsim") ? "the simulator's cycle counter" : tc, hz ? " at " : "", hz ? hz : "");
	else
		printf("clock:        %.4f ticks/ns (TSC, calibrated against CLOCK_MONOTONIC over the run)\n", r->ticks_per_ns);
	table_lists(r, in, each_thread);
	table_events_and_losses(r, in);
}

int cmd_info(struct cli_opts *o)
{
	int json = cli_want_json(o, "table json");
	if (o->argc)
		cli_die(EXIT_USAGE, "unexpected argument '%s' (see 'sonde info --help')", o->argv[0]);
	struct loaded l;
	load_or_die(o, &l);
	struct info in;
	info_compute(l.r, &in);
	in.ft = &l.ft;
	if (json)
		info_json(l.r, &in);
	else
		info_table(l.r, &in, o->threads);
	load_free(&l);
	return 0;
}
