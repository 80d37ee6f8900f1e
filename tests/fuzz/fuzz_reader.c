/* fuzz_reader.c — libFuzzer harness of everything that reads a recording
 * (src/data, src/analysis, src/export and the reading commands of src/cli).
 * Built by `make fuzz` (see the Makefile's "fuzzing" block and
 * docs/FUZZING.md); run by tests/e2e/fuzz_reader.sh.
 *
 * Input: a small container holding the files of one recording directory.
 *
 *   byte 0   flags  FZ_*: fix the CRCs of profile.sonde / events.sonde (so
 *                   that mutations reach the record contents instead of
 *                   stopping at the checksum), --format=json, --threads,
 *                   --tid, --time-range, --limit/--depth/--min-percent
 *   byte 1   param  sort key and the time range / limit values
 *   then sections:  u8 file (0 profile.sonde, 1 events.sonde, other:
 *                   ignored), u32 little-endian length (cut at the end of
 *                   the input), that many bytes.  A file without a section
 *                   does not exist in the directory.
 *
 * tests/fuzz/pack.py makes such inputs from recordings (the seed corpus) and
 * turns one back into a directory.  With SONDE_FUZZ_DIR=DIR in the
 * environment the harness writes the files there and leaves them, so that
 * `./fuzz_reader crash-…` followed by `sonde report -i DIR` reproduces a
 * crash with the real command.
 *
 * Each input goes through two layers:
 *  1. the library, as the commands use it (leaks checked): rd_open, the
 *     function table, lock analysis and lock events, the raw event chunks,
 *     the timeline decoder with and without filters (checking that slices
 *     nest and that every slice ends after it starts), trees built from a
 *     trace (load.c's load_trees and the --time-range path), profiles of all
 *     threads and of each thread (checking the two exact invariants of
 *     profile.h), every export format and the flame graph, into /dev/null;
 *  2. the commands themselves: cmd_report, cmd_callers, cmd_tree, cmd_info,
 *     cmd_replay, cmd_locks, cmd_export (each format), cmd_flamegraph, with
 *     stdout on /dev/null.  exit() is renamed for the fuzz build
 *     (-Dexit=sonde_fuzz_exit) and comes back here by longjmp: the commands'
 *     exit statuses must be 1 or 2, never anything else.  A command that
 *     exits leaves its memory to the process end: the harness tracks the
 *     allocations made while a command runs (sanitizer malloc hooks) and, after
 *     an exit, frees what the command left, as the end of the process would.
 *     A command that returns is leak-checked like the library layer.
 *
 * Symbol files named by the recording are not opened (sym_open is wrapped,
 * -Wl,--wrap=sym_open, and fails) unless SONDE_FUZZ_SYMS=1: the harness
 * fuzzes the recording, not the ELF files on this machine, and a path from a
 * mutated input could name anything.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sanitizer/allocator_interface.h>
#include <sanitizer/common_interface_defs.h>

#include "analysis/functions.h"
#include "analysis/locks.h"
#include "analysis/profile.h"
#include "analysis/trace_cct.h"
#include "cli/cli.h"
#include "cli/load.h"
#include "common/format.h"
#include "common/trace_enc.h"
#include "data/reader.h"
#include "data/events.h"
#include "export/export.h"
#include "export/flamegraph.h"
#include "sym/sym.h"

enum {
	FZ_FIX_PROFILE_CRC = 1u << 0,
	FZ_FIX_EVENTS_CRC = 1u << 1,
	FZ_JSON = 1u << 2,
	FZ_THREADS = 1u << 3,
	FZ_TID = 1u << 4,
	FZ_RANGE = 1u << 5,
	FZ_LIMITS = 1u << 6,
	FZ_NO_CLI = 1u << 7, /* library layer only (faster; the cli layer still runs on other inputs) */
};

/* A failed check is a finding: reported through the sanitizer's report
 * channel (which survives -close_fd_mask), then abort(). */
#define CHECK(cond)                                                                                            \
	do {                                                                                                   \
		if (!(cond))                                                                                   \
			check_failed(__FILE__, __LINE__, #cond);                                               \
	} while (0)

static _Noreturn void check_failed(const char *file, int line, const char *what)
{
	char msg[512];
	snprintf(msg, sizeof msg, "fuzz_reader: check failed at %s:%d: %s", file, line, what);
	__sanitizer_report_error_summary(msg);
	abort();
}

static char dir[4096];
static int keep_dir;
static FILE *devnull;

/* ---- exit() of the commands ---- */

static jmp_buf exit_jb;
static int exit_armed, exit_code;

void sonde_fuzz_exit(int code)
{
	if (exit_armed) {
		exit_armed = 0;
		exit_code = code;
		longjmp(exit_jb, 1);
	}
	fprintf(stderr, "fuzz_reader: exit(%d) outside a command\n", code);
	abort();
}

/* ---- symbol files: not opened while fuzzing ---- */

struct sym_module *__real_sym_open(const char *path, const char **err);
static int open_syms;

struct sym_module *__wrap_sym_open(const char *path, const char **err)
{
	if (open_syms)
		return __real_sym_open(path, err);
	if (err)
		*err = "not opened while fuzzing";
	return NULL;
}

/* ---- the recording directory ---- */

static void write_file(const char *name, const uint8_t *p, size_t n)
{
	char path[4200];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	CHECK(fd >= 0);
	while (n) {
		ssize_t k = write(fd, p, n);
		CHECK(k > 0);
		p += k;
		n -= (size_t)k;
	}
	close(fd);
}

static void remove_file(const char *name)
{
	char path[4200];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	unlink(path);
}

/* Recompute the CRC of every record whose payload lies inside the file. */
static void fix_crcs(uint8_t *p, size_t n)
{
	size_t off = sizeof(struct sonde_file_hdr);
	while (off + sizeof(struct sonde_rec_hdr) <= n) {
		struct sonde_rec_hdr h;
		memcpy(&h, p + off, sizeof h);
		if (h.len > n - off - sizeof h)
			return;
		h.crc = crc32_ieee(0, p + off + sizeof h, h.len);
		memcpy(p + off, &h, sizeof h);
		off += sizeof h + h.len;
	}
}

struct input {
	uint8_t flags, param;
	uint8_t *file[2];
	size_t len[2];
};

static void split(const uint8_t *data, size_t size, struct input *in)
{
	memset(in, 0, sizeof *in);
	if (size < 2)
		return;
	in->flags = data[0];
	in->param = data[1];
	size_t off = 2;
	while (off < size) {
		uint8_t which = data[off++];
		uint32_t len = 0;
		for (int i = 0; i < 4 && off < size; i++)
			len |= (uint32_t)data[off++] << (8 * i);
		if (len > size - off)
			len = (uint32_t)(size - off);
		if (which < 2 && !in->file[which]) {
			in->file[which] = malloc(len ? len : 1);
			memcpy(in->file[which], data + off, len);
			in->len[which] = len;
		}
		off += len;
	}
}

/* ---- layer 1: the library ---- */

/* The decoder's promises: per thread, slices nest (a begin at depth d + 1
 * over d open ones, an end of the innermost) and each lies inside its parent
 * in time; every slice ends after it starts and is closed by the end. */
struct nest {
	const struct recording *r;
	struct nest_thread {
		uint32_t open, cap;   /* slices begun and not ended */
		uint64_t *start;      /* their starts, outermost first */
		uint64_t *kid_end;    /* the latest end of their children so far */
		int state;            /* 0 not started, 1 started, 2 ended */
	} *t;
	uint64_t slices, probes, locks;
};

static void n_begin(void *arg, const struct tr_slice *s)
{
	struct nest *n = arg;
	CHECK(s->thread < (uint32_t)n->r->nthreads);
	struct nest_thread *t = &n->t[s->thread];
	CHECK(t->state == 1);
	CHECK(s->depth == t->open + 1);
	CHECK(s->depth <= RD_MAX_DEPTH);
	CHECK(s->end == 0);
	if (t->open)
		CHECK(s->start >= t->start[t->open - 1]); /* inside its parent */
	if (t->open == t->cap) {
		t->cap = t->cap ? t->cap * 2 : 16;
		t->start = realloc(t->start, sizeof *t->start * t->cap);
		t->kid_end = realloc(t->kid_end, sizeof *t->kid_end * t->cap);
		CHECK(t->start && t->kid_end);
	}
	t->kid_end[t->open] = s->start;
	t->start[t->open++] = s->start;
}

static void n_end(void *arg, const struct tr_slice *s)
{
	struct nest *n = arg;
	CHECK(s->thread < (uint32_t)n->r->nthreads);
	struct nest_thread *t = &n->t[s->thread];
	CHECK(t->state == 1);
	CHECK(s->depth >= 1 && s->depth == t->open);
	CHECK(s->start == t->start[t->open - 1]);
	CHECK(s->end >= s->start);
	CHECK(s->end >= t->kid_end[t->open - 1]); /* its children ended inside it */
	t->open--;
	if (t->open && s->end > t->kid_end[t->open - 1])
		t->kid_end[t->open - 1] = s->end;
	if (!(s->flags & TRS_RESUMED))
		n->slices++; /* tr_stats.calls leaves out the frames a forked child inherited */
}

/* Every event of a thread comes between its start and its end, each once. */
static void n_event_of(struct nest *n, uint32_t thread)
{
	CHECK(thread < (uint32_t)n->r->nthreads);
	CHECK(n->t[thread].state == 1);
}

static void n_lock(void *arg, const struct rd_lock_event *e)
{
	struct nest *n = arg;
	n_event_of(n, e->thread);
	n->locks++;
}

static void n_name(void *arg, uint32_t thread, uint64_t time, const char *name, uint32_t len)
{
	struct nest *n = arg;
	(void)time;
	n_event_of(n, thread);
	volatile char sum = 0;
	for (uint32_t i = 0; i < len; i++) /* the bytes handed over must be readable */
		sum += name[i];
}

static void n_loss(void *arg, const struct rd_loss *l)
{
	struct nest *n = arg;
	CHECK(l->cause >= RDL_GAP && l->cause <= RDL_UNKNOWN_THREAD);
	CHECK(l->count >= 1);
	if (l->cause == RDL_UNKNOWN_THREAD)
		CHECK(l->thread == UINT32_MAX);
	else
		n_event_of(n, l->thread);
}

static void n_thread_start(void *arg, uint32_t thread, uint64_t time)
{
	struct nest *n = arg;
	(void)time;
	CHECK(thread < (uint32_t)n->r->nthreads);
	CHECK(n->t[thread].state == 0);
	n->t[thread].state = 1;
}

static void n_thread_end(void *arg, uint32_t thread, uint64_t time)
{
	struct nest *n = arg;
	(void)time;
	n_event_of(n, thread);
	CHECK(n->t[thread].open == 0); /* its slices were all closed before */
	n->t[thread].state = 2;
}

static void n_probe(void *arg, const struct tr_probe *h)
{
	struct nest *n = arg;
	CHECK(h->thread < (uint32_t)n->r->nthreads);
	CHECK(n->t[h->thread].state == 1);
	CHECK(h->event == TRP_HIT || h->event == TRP_BEGIN || h->event == TRP_END);
	if (h->event == TRP_END)
		CHECK(h->time >= h->start);
	if (h->vkind == TRV_STR && h->slen) {
		volatile char c = h->s[h->slen - 1];
		(void)c;
	}
	n->probes++;
}

static void decode_checked(const struct recording *r, const struct tr_filter *f)
{
	struct nest n = { r, calloc((size_t)r->nthreads + 1, sizeof(struct nest_thread)), 0, 0, 0 };
	const struct rd_event_ops ops = { .call = n_begin, .ret = n_end, .lock = n_lock, .probe = n_probe,
	                                   .name = n_name, .loss = n_loss, .thread_start = n_thread_start,
	                                   .thread_end = n_thread_end };
	struct tr_stats st;
	char err[1024];
	err[0] = 0;
	int rc = rd_each_event(r, f, &ops, &n, &st, err, sizeof err);
	if (rc)
		CHECK(err[0]);
	CHECK(n.locks == st.lock_events);
	for (int i = 0; i < r->nthreads; i++) {
		CHECK(n.t[i].open == 0); /* every slice was closed */
		CHECK(n.t[i].state != 1); /* every thread started was ended */
		free(n.t[i].start);
		free(n.t[i].kid_end);
	}
	CHECK(st.calls == n.slices);
	free(n.t);
}

/* profile.h's invariants, exact in integer ticks:
 *   sum of callers' attributed(f) == inclusive(f)
 *   exclusive(f) + sum of callees' attributed(f) == inclusive(f) */
static void check_profile(const struct profile *p)
{
	if (p->clamped)
		return; /* absurd values were clamped: the sums are bounds, not identities */
	int64_t *in = calloc(p->nfn + 1, sizeof *in), *out = calloc(p->nfn + 1, sizeof *out);
	for (uint32_t i = 0; i < p->npairs; i++) {
		const struct pair_metrics *pm = &p->pairs[i];
		CHECK(pm->caller < p->nfn && pm->callee < p->nfn);
		in[pm->callee] += pm->attr_in;
		out[pm->caller] += pm->attr_out;
	}
	for (uint32_t f = 1; f < p->nfn; f++) {
		CHECK(in[f] == p->fn[f].incl);
		CHECK(p->fn[f].excl + out[f] == p->fn[f].incl);
	}
	free(in);
	free(out);
}

static void library_layer(int tid_pick, int has_range, double from, double to, char *fname, size_t fname_len,
                          int *tid_out)
{
	char err[1024];
	err[0] = 0;
	struct recording *r = rd_open(dir, err, sizeof err);
	if (!r) {
		CHECK(err[0]);
		return;
	}
	struct fn_table ft;
	fn_table_build(r, &ft);
	CHECK(ft.n >= 1);

	/* what info and the reports read */
	(void)rd_meta(r, "command");
	(void)rd_lost_total(r, 0);
	(void)rd_lost_total(r, 1);
	int tid = 0;
	for (int i = 0; i < r->nthreads; i++) {
		(void)rd_proc(r, r->threads[i].r.proc);
		if (tid_pick && !tid && r->threads[i].r.tid)
			tid = r->threads[i].r.tid;
	}
	*tid_out = tid;
	for (uint32_t s = 0; s < r->nmodule_slots; s++)
		if (r->modules[s])
			(void)rd_func_valid(r, SONDE_FUNC(s, 0));
	uint64_t fsum = 0;
	for (uint32_t i = 0; i < ft.n; i++) {
		CHECK(ft.fns[i].name);
		fsum += strlen(ft.fns[i].name);
	}
	(void)fsum;

	/* locks: the aggregates, the events checked against them, the raw events */
	struct lka a;
	if (lka_load(r, &a, err, sizeof err) == 0) {
		for (int i = 0; i < a.nlocks; i++)
			CHECK(a.locks[i].name);
		lka_free(&a);
	}

	/* the timeline: as replay / export see it, then with every filter */
	if (r->has_events) {
		struct tr_filter f;
		tr_filter_init(&f, r, NULL, 0, 0, 0);
		decode_checked(r, &f);
		struct rd_select sel = { tid, 0, NULL };
		tr_filter_init(&f, r, &sel, has_range, from, to);
		f.min_ticks = f.min_ticks ? f.min_ticks : 1000;
		decode_checked(r, &f);
	}

	/* trees from a trace (load.c), then the profiles */
	struct loaded l = { r, ft };
	load_trees(&l);
	struct profile p;
	profile_init(&p, &ft);
	for (int i = 0; i < r->nthreads; i++)
		profile_add_thread(&p, r, &ft, &r->threads[i]);
	check_profile(&p);
	for (uint32_t f = 1; f < p.nfn && fname[0] == 0; f++)
		if (p.fn[f].calls)
			snprintf(fname, fname_len, "%s", ft.fns[f].name);
	profile_free(&p);
	for (int i = 0; i < r->nthreads; i++) {
		if (!r->threads[i].nodes)
			continue;
		profile_init(&p, &ft);
		profile_add_thread(&p, r, &ft, &r->threads[i]);
		check_profile(&p);
		profile_free(&p);
	}

	/* every export format and the flame graph */
	for (int k = 0; export_formats[k]; k++) {
		struct export_ctx x;
		memset(&x, 0, sizeof x);
		x.r = r;
		x.ft = &ft;
		x.out = devnull;
		x.sel.tid = tid;
		x.has_range = has_range;
		x.from_s = from;
		x.to_s = to;
		if (export_formats[k]->write(&x) != 0)
			CHECK(x.err[0]);
	}
	struct rd_select fsel = { tid, 0, NULL };
	CHECK(flame_svg_write(devnull, r, &ft, &fsel, "fuzz") >= 0);
	fn_table_free(&ft);
	rd_close(r);

	/* flamegraph --time-range: trees of a trace built with a time filter */
	r = rd_open(dir, err, sizeof err);
	CHECK(r); /* it opened a moment ago */
	if (r->has_events && !(r->mode & REC_MODE_PROFILE)) {
		fn_table_build(r, &ft);
		struct tr_filter f;
		tr_filter_init(&f, r, 0, 1, from, to);
		struct tr_stats st;
		(void)trace_cct_build(r, &f, &st, err, sizeof err);
		CHECK(flame_svg_write(devnull, r, &ft, 0, "fuzz") >= 0);
		fn_table_free(&ft);
	}
	rd_close(r);
}

/* ---- layer 2: the commands ---- */

/* Live allocations of the running command, filled by the sanitizer's
 * malloc / free hooks (which must not allocate: both arrays are mmap'd once):
 * a dense array of pointers and an open-addressing index into it whose slots
 * carry a generation (bumped to empty the index at once). */
#define TRACK_BITS 18
#define TRACK_CAP (1u << TRACK_BITS)
static uint64_t *slots;   /* gen << 32 | dense index + 1 */
static uintptr_t *dense;
static uint32_t ndense, gen = 1;
/* Per thread: the malloc hooks run in every thread, and libFuzzer's own
 * threads (its RSS watcher starts beside the first inputs) allocate too;
 * only the thread that runs the command tracks (a shared flag made
 * free_tracked free the RSS thread's blocks: a double free in CI). */
static __thread int tracking;
static int track_overflow;

/* The bookkeeping is not the code under test: no coverage feedback from it. */
#define NOCOV __attribute__((no_sanitize("coverage"), noinline))
#define LIVE(v) ((uint32_t)((v) >> 32) == gen)
#define NEXT(h) (((h) + 1) & (TRACK_CAP - 1))

static NOCOV uint32_t track_hash(uintptr_t k)
{
	return (uint32_t)(((uint64_t)k * 0x9e3779b97f4a7c15ull) >> (64 - TRACK_BITS));
}

static NOCOV uint32_t track_find(uintptr_t p)
{
	for (uint32_t h = track_hash(p); LIVE(slots[h]); h = NEXT(h))
		if (dense[(uint32_t)slots[h] - 1] == p)
			return h;
	return UINT32_MAX;
}

static NOCOV void on_malloc(const volatile void *p, size_t size)
{
	(void)size;
	if (!tracking || !p)
		return;
	if (ndense * 2 >= TRACK_CAP) {
		track_overflow = 1;
		return;
	}
	uint32_t h = track_hash((uintptr_t)p);
	while (LIVE(slots[h]))
		h = NEXT(h);
	slots[h] = (uint64_t)gen << 32 | (ndense + 1);
	dense[ndense++] = (uintptr_t)p;
}

static NOCOV void on_free(const volatile void *p)
{
	if (!tracking || !p)
		return;
	uint32_t i = track_find((uintptr_t)p);
	if (i == UINT32_MAX)
		return; /* allocated before the command */
	uint32_t idx = (uint32_t)slots[i] - 1;
	for (uint32_t j = i;;) { /* backward-shift deletion */
		j = NEXT(j);
		if (!LIVE(slots[j]))
			break;
		uint32_t k = track_hash(dense[(uint32_t)slots[j] - 1]);
		if ((j > i && (k <= i || k > j)) || (j < i && k <= i && k > j)) {
			slots[i] = slots[j];
			i = j;
		}
	}
	slots[i] = 0;
	uint32_t last = --ndense;
	if (idx != last) { /* the last pointer takes the freed place */
		uintptr_t moved = dense[last];
		dense[idx] = moved;
		slots[track_find(moved)] = (uint64_t)gen << 32 | (idx + 1);
	}
}

/* After an exit: free what the command left, as the end of the process would. */
static NOCOV void free_tracked(void)
{
	for (uint32_t i = 0; i < ndense; i++)
		free((void *)dense[i]);
	ndense = 0;
	gen++;
}

static void run_cmd(int (*cmd)(struct cli_opts *), const struct cli_opts *tmpl)
{
	struct cli_opts o = *tmpl;
	ndense = 0;
	gen++;
	track_overflow = 0;
	tracking = 1;
	if (!setjmp(exit_jb)) {
		exit_armed = 1;
		int rc = cmd(&o);
		exit_armed = 0;
		tracking = 0;
		CHECK(rc == 0 || rc == EXIT_USAGE || rc == EXIT_DATA);
		/* what is still allocated is a leak: LSan says so */
	} else {
		tracking = 0;
		CHECK(exit_code == EXIT_USAGE || exit_code == EXIT_DATA);
		CHECK(!track_overflow);
		free_tracked();
	}
	ndense = 0;
	gen++;
	fflush(stdout);
}

static void cli_layer(const struct input *in, int tid, double from, double to, char *fname)
{
	struct cli_opts o;
	memset(&o, 0, sizeof o);
	o.input = dir;
	o.format = (in->flags & FZ_JSON) ? "json" : NULL;
	o.threads = (in->flags & FZ_THREADS) != 0;
	o.tid = (in->flags & FZ_TID) ? tid : 0;
	if (in->flags & FZ_RANGE) {
		o.has_time_range = 1;
		o.time_from = from;
		o.time_to = to;
	}
	if (in->flags & FZ_LIMITS) {
		o.limit = 1 + (in->param & 3);
		o.depth = 1 + (in->param >> 2 & 7);
		o.min_percent = (double)(in->param >> 5);
	}
	static const char *const sorts[4] = { NULL, "incl", "calls", "name" };
	static const char *const lsorts[4] = { "hold", "acquisitions", "contended", "name" };
	o.sort = sorts[in->param & 3];
	run_cmd(cmd_report, &o);
	run_cmd(cmd_tree, &o);
	run_cmd(cmd_info, &o);
	run_cmd(cmd_replay, &o);
	o.sort = lsorts[in->param & 3];
	run_cmd(cmd_locks, &o);
	o.sort = NULL;
	char *argv[1] = { fname[0] ? fname : "main" };
	o.argc = 1;
	o.argv = argv;
	run_cmd(cmd_callers, &o);
	o.argc = 0;
	o.argv = NULL;
	run_cmd(cmd_flamegraph, &o);
	for (int k = 0; export_formats[k]; k++) {
		o.format = export_formats[k]->name;
		run_cmd(cmd_export, &o);
	}
}

/* ---- libFuzzer ---- */

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	const char *keep = getenv("SONDE_FUZZ_DIR");
	if (keep && *keep) {
		snprintf(dir, sizeof dir, "%s", keep);
		mkdir(dir, 0755);
		keep_dir = 1;
	} else {
		const char *tmp = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
		snprintf(dir, sizeof dir, "%s/sonde-fuzz.XXXXXX", tmp);
		CHECK(mkdtemp(dir));
	}
	const char *syms = getenv("SONDE_FUZZ_SYMS");
	open_syms = syms && *syms == '1';
	devnull = fopen("/dev/null", "w");
	CHECK(devnull);
	CHECK(freopen("/dev/null", "w", stdout));
	printf("stdout's buffer is allocated now, not by a command\n");
	fflush(stdout);
	slots = mmap(NULL, TRACK_CAP * sizeof *slots, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	dense = mmap(NULL, TRACK_CAP * sizeof *dense, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(slots != MAP_FAILED && dense != MAP_FAILED);
	CHECK(__sanitizer_install_malloc_and_free_hooks(on_malloc, on_free));
	setenv("COLUMNS", "100", 1);
	return 0;
}

static void cleanup(void) __attribute__((destructor));
static void cleanup(void)
{
	if (!dir[0] || keep_dir)
		return;
	remove_file(SONDE_FILE_PROFILE);
	remove_file(SONDE_FILE_EVENTS);
	rmdir(dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct input in;
	split(data, size, &in);
	static const char *const names[2] = { SONDE_FILE_PROFILE, SONDE_FILE_EVENTS };
	for (int k = 0; k < 2; k++) {
		if (!in.file[k]) {
			remove_file(names[k]);
			continue;
		}
		if (in.flags & (k ? FZ_FIX_EVENTS_CRC : FZ_FIX_PROFILE_CRC))
			fix_crcs(in.file[k], in.len[k]);
		write_file(names[k], in.file[k], in.len[k]);
		free(in.file[k]);
	}
	int fd_base = dup(0); /* the lowest free descriptor: the same at the end */
	close(fd_base);
	double from = (in.param & 15) * 0.001, to = from + (in.param >> 4) * 0.01;
	char fname[256] = "";
	int tid = 0;
	library_layer((in.flags & FZ_TID) != 0, (in.flags & FZ_RANGE) != 0, from, to, fname, sizeof fname, &tid);
	if (!(in.flags & FZ_NO_CLI))
		cli_layer(&in, tid, from, to, fname);
	int fd = dup(0); /* no descriptor was left open */
	close(fd);
	if (fd != fd_base) {
		char msg[1024] = "open descriptors:", l[256], path[64];
		for (int k = 0; k < 64; k++) {
			snprintf(path, sizeof path, "/proc/self/fd/%d", k);
			ssize_t n = readlink(path, l, sizeof l - 1);
			if (n > 0) {
				l[n] = 0;
				snprintf(msg + strlen(msg), sizeof msg - strlen(msg), " %d=%s", k, l);
			}
		}
		__sanitizer_report_error_summary(msg);
	}
	CHECK(fd == fd_base);
	return 0;
}
