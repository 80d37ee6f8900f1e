/* pprof.c — the profile as gzipped pprof (profile.proto of
 * github.com/google/pprof: `go tool pprof`, Pyroscope, Parca, Cloud Profiler).
 *
 * One sample per calling-context node that has calls or time: its stack is
 * the node's call path (leaf first), its values the node's calls and
 * exclusive nanoseconds (sample types calls/count and time/nanoseconds), its
 * labels the thread (num "thread" = tid, str "thread_name" = comm, num
 * "pid").  pprof's flat time of a function is then the sum of its nodes'
 * exclusive time (sonde's exclusive), and its cumulative time the sum over
 * the samples whose stack holds it, counted once per sample (pprof dedups a
 * function within a stack): sonde's inclusive time, recursion included.
 * Whole nanoseconds: a node's time is the growth of its function's rounded
 * running total (ticks summed as integers, converted, rounded), so the flat
 * time of every function is exactly sonde's exclusive_ns, and a cumulative
 * time (a sum over the nodes of several functions) is within 1 ns per
 * sample of sonde's inclusive_ns.
 *
 * A recording whose threads split their time into on-CPU and off-CPU
 * (issue 38; every selected thread) adds the sample types cpu/nanoseconds
 * and off_cpu/nanoseconds: each node's exclusive time on a CPU and waiting
 * (analysis/profile.h's CPU ticks of the node less its children's), their
 * sum the time value.
 *
 * A --locks --trace recording adds the sample types wait/nanoseconds and
 * hold/nanoseconds: each node's lock wait and hold (analysis/lock_cct.h),
 * and per thread a "<root>" sample for lock time outside every call.
 *
 * One location and one function per sonde function (both with its function
 * index as id), the location at the function's entry address, its line the
 * function's first line; one mapping per module slot that a location uses
 * (address range spanning the module's numbered functions, build-id in hex).
 * Every mapping says it has functions, files and lines, so pprof does not
 * try to symbolize the addresses again.
 *
 * Streaming into zlib (gzip framing): one top-level field at a time, the
 * string table last (protobuf keeps the order of a repeated field however
 * its elements are interleaved with other fields).  Memory: the string
 * table and a few arrays by function; samples are not kept. */
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "analysis/lock_cct.h"
#include "analysis/profile.h"
#include "common/session.h"
#include "export/export.h"
#include "export/protobuf.h"

/* Field numbers of perftools.profiles (proto/profile.proto). */
enum {
	P_SAMPLE_TYPE = 1, P_SAMPLE = 2, P_MAPPING = 3, P_LOCATION = 4, P_FUNCTION = 5, P_STRING = 6,
	P_TIME_NANOS = 9, P_DURATION = 10, P_PERIOD_TYPE = 11, P_PERIOD = 12, P_COMMENT = 13,
	P_DEFAULT_TYPE = 14,
	VT_TYPE = 1, VT_UNIT = 2,
	S_LOCATION = 1, S_VALUE = 2, S_LABEL = 3,
	LB_KEY = 1, LB_STR = 2, LB_NUM = 3,
	M_ID = 1, M_START = 2, M_LIMIT = 3, M_OFFSET = 4, M_FILE = 5, M_BUILD_ID = 6, M_HAS_FUNCTIONS = 7,
	M_HAS_FILENAMES = 8, M_HAS_LINES = 9,
	L_ID = 1, L_MAPPING = 2, L_ADDRESS = 3, L_LINE = 4,
	LN_FUNCTION = 1, LN_LINE = 2,
	F_ID = 1, F_NAME = 2, F_SYSTEM_NAME = 3, F_FILE = 4, F_START_LINE = 5,
};

/* The string table: "" first, each string once. */
struct strtab {
	char **s;
	uint32_t n, cap;
	uint32_t *hash;          /* open addressing: index + 1 */
	uint32_t hcap;
	int oom;
};

struct pp {
	struct export_ctx *x;
	struct pb_buf b;         /* the top-level field being written */
	struct strtab st;
	z_stream z;
	int zok;
	uint8_t zout[1 << 16];
	uint8_t *used;           /* by location id: a sample uses it */
	uint32_t *slot;          /* by location id: module slot + 1 (0: none) */
	uint64_t *addr;          /* by location id: run-time address */
	uint64_t *acc;           /* by location id: exclusive ticks written so far */
	uint64_t *accw, *acch;   /* by location id: wait / hold ticks written so far */
	uint64_t *accc, *acco;   /* by location id: CPU / off-CPU ticks written so far (cpu) */
	int cpu;                 /* every selected thread has its nodes' CPU time: the cpu and off_cpu types */
	uint32_t unknown;        /* location id of frames without a function (ft->n) */
	uint32_t root;           /* location id "<root>": lock time outside every call (ft->n + 1) */
	struct lock_cct *lk;     /* wait and hold per node (--locks --trace), or NULL */
};

static uint32_t str_hash(const char *s)
{
	uint32_t h = 2166136261u;
	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 16777619u;
	return h;
}

static int str_rehash(struct strtab *t)
{
	uint32_t cap = t->hcap ? t->hcap * 2 : 1024;
	uint32_t *h = calloc(cap, sizeof *h);
	if (!h)
		return -1;
	for (uint32_t i = 0; i < t->n; i++) {
		uint32_t k = str_hash(t->s[i]) & (cap - 1);
		while (h[k])
			k = (k + 1) & (cap - 1);
		h[k] = i + 1;
	}
	free(t->hash);
	t->hash = h;
	t->hcap = cap;
	return 0;
}

/* Index of s in the table, added if new (0, "", when out of memory). */
static int64_t str_id(struct strtab *t, const char *s)
{
	if (t->oom)
		return 0;
	if ((t->n + 1) * 2 > t->hcap && str_rehash(t)) {
		t->oom = 1;
		return 0;
	}
	uint32_t k = str_hash(s) & (t->hcap - 1);
	for (; t->hash[k]; k = (k + 1) & (t->hcap - 1))
		if (!strcmp(t->s[t->hash[k] - 1], s))
			return t->hash[k] - 1;
	if (t->n == t->cap) {
		uint32_t cap = t->cap ? t->cap * 2 : 1024;
		char **p = realloc(t->s, sizeof *p * cap);
		if (!p) {
			t->oom = 1;
			return 0;
		}
		t->s = p;
		t->cap = cap;
	}
	char *c = strdup(s);
	if (!c) {
		t->oom = 1;
		return 0;
	}
	t->s[t->n] = c;
	t->hash[k] = ++t->n;
	return t->n - 1;
}

static void str_free(struct strtab *t)
{
	for (uint32_t i = 0; i < t->n; i++)
		free(t->s[i]);
	free(t->s);
	free(t->hash);
}

/* Deflate the field in p->b into the output. */
static void emit(struct pp *p, int flush)
{
	if (!p->zok)
		return;
	p->z.next_in = p->b.p;
	p->z.avail_in = (uInt)p->b.n;
	for (;;) {
		p->z.next_out = p->zout;
		p->z.avail_out = sizeof p->zout;
		int rc = deflate(&p->z, flush);
		if (rc == Z_STREAM_ERROR) {
			p->zok = 0;
			return;
		}
		size_t k = sizeof p->zout - p->z.avail_out;
		if (k)
			fwrite(p->zout, 1, k, p->x->out);
		if (flush == Z_FINISH ? rc == Z_STREAM_END : p->z.avail_out != 0)
			break;
	}
	p->b.n = 0;
}

static void value_type(struct pp *p, int field, const char *type, const char *unit)
{
	size_t m = pb_open(&p->b, field);
	pb_int(&p->b, VT_TYPE, str_id(&p->st, type));
	pb_int(&p->b, VT_UNIT, str_id(&p->st, unit));
	pb_close(&p->b, m);
	emit(p, Z_NO_FLUSH);
}

/* Grow a running total by t ticks; the whole nanoseconds that adds. */
static int64_t grow_ns(const struct recording *r, uint64_t *acc, uint64_t t)
{
	uint64_t lim = rd_max_ticks(r), a0 = *acc, a1 = rd_sat_add(a0, t);
	a1 = a1 < lim ? a1 : lim;
	*acc = a1;
	return (int64_t)(rd_ns(r, (int64_t)a1) + 0.5) - (int64_t)(rd_ns(r, (int64_t)a0) + 0.5);
}

static uint32_t loc_of(const struct pp *p, uint32_t fn)
{
	return fn ? fn : p->unknown;
}

static void label(struct pp *p, int64_t key, int is_num, int64_t v)
{
	size_t m = pb_open(&p->b, S_LABEL);
	pb_int(&p->b, LB_KEY, key);
	pb_int(&p->b, is_num ? LB_NUM : LB_STR, v);
	pb_close(&p->b, m);
}

/* The samples of one thread (index i): one per node with calls, time,
 * wait or hold; and one "<root>" sample for lock time outside every call. */
static int thread_samples(struct pp *p, int i)
{
	const struct export_ctx *x = p->x;
	const struct recording *r = x->r;
	const struct rd_thread *t = &r->threads[i];
	uint32_t n = t->nodes ? t->nnodes : 0;
	uint64_t *kids = calloc(n + 1, sizeof *kids);
	if (!kids)
		return -1;
	for (uint32_t v = 1; v < n; v++)
		if (t->nodes[v].parent < n)
			kids[t->nodes[v].parent] = rd_sat_add(kids[t->nodes[v].parent], t->nodes[v].ticks);
	const struct rec_process *proc = rd_proc(r, t->r.proc);
	int64_t k_thread = str_id(&p->st, "thread"), k_name = str_id(&p->st, "thread_name");
	int64_t k_pid = str_id(&p->st, "pid");
	int64_t comm = str_id(&p->st, t->r.comm[0] ? t->r.comm : "thread");
	int64_t *cv = p->cpu && n ? profile_node_cpu(r, t) : NULL;
	int64_t *kidc = cv ? calloc(n + 1, sizeof *kidc) : NULL;
	if (p->cpu && n && (!cv || !kidc)) {
		free(kids);
		free(cv);
		free(kidc);
		return -1;
	}
	for (uint32_t v = 1; kidc && v < n; v++)
		if (t->nodes[v].parent < n)
			kidc[t->nodes[v].parent] += cv[v];
	const uint64_t *wait = p->lk ? p->lk->wait[i] : NULL, *hold = p->lk ? p->lk->hold[i] : NULL;
	uint32_t nlk = p->lk ? p->lk->n[i] : 0;
	for (uint32_t v = p->lk ? 0 : 1; v < (n > nlk ? n : nlk); v++) {
		int nd = v && v < n; /* a node of the tree; v == 0: the root (lock time only) */
		if (!nd && v) /* a node only the lock data has (cannot happen: same tree) */
			continue;
		uint64_t ticks = nd ? t->nodes[v].ticks : 0, calls = nd ? t->nodes[v].calls : 0;
		uint64_t ex = ticks > kids[v] ? ticks - kids[v] : 0;
		uint32_t leaf = nd ? loc_of(p, fn_of(x->ft, r, t->nodes[v].func)) : p->root;
		int64_t ns = grow_ns(r, &p->acc[leaf], ex), w = 0, h = 0, c = 0, o = 0;
		if (cv && nd) {
			uint64_t cx = cv[v] > kidc[v] ? (uint64_t)(cv[v] - kidc[v]) : 0;
			cx = cx < ex ? cx : ex;
			c = grow_ns(r, &p->accc[leaf], cx);
			o = grow_ns(r, &p->acco[leaf], ex - cx);
		}
		if (wait && v < nlk) {
			w = grow_ns(r, &p->accw[leaf], wait[v]);
			h = grow_ns(r, &p->acch[leaf], hold[v]);
		}
		if (!calls && !ns && !w && !h)
			continue;
		size_t s = pb_open(&p->b, P_SAMPLE);
		size_t m = pb_open(&p->b, S_LOCATION); /* packed, leaf first */
		if (!v) {
			p->used[p->root] = 1;
			pb_varint(&p->b, p->root);
		}
		uint32_t d = 0;
		for (uint32_t u = v; u && u < n && d < RD_MAX_DEPTH; u = t->nodes[u].parent, d++) {
			uint32_t id = loc_of(p, fn_of(x->ft, r, t->nodes[u].func));
			p->used[id] = 1;
			pb_varint(&p->b, id);
		}
		pb_close(&p->b, m);
		m = pb_open(&p->b, S_VALUE);
		pb_varint(&p->b, calls > INT64_MAX ? INT64_MAX : calls);
		pb_varint(&p->b, (uint64_t)ns);
		if (p->cpu) {
			pb_varint(&p->b, (uint64_t)c);
			pb_varint(&p->b, (uint64_t)o);
		}
		if (p->lk) {
			pb_varint(&p->b, (uint64_t)w);
			pb_varint(&p->b, (uint64_t)h);
		}
		pb_close(&p->b, m);
		label(p, k_thread, 1, t->r.tid);
		label(p, k_name, 0, comm);
		if (proc)
			label(p, k_pid, 1, proc->pid);
		pb_close(&p->b, s);
		emit(p, Z_NO_FLUSH);
	}
	free(kids);
	free(cv);
	free(kidc);
	return 0;
}

/* Module slot and address of each location used (its first slot in the
 * table: a function shared by several processes has one location). */
static void place_locations(struct pp *p)
{
	const struct export_ctx *x = p->x;
	const struct recording *r = x->r;
	for (uint32_t s = 0; s < x->ft->nslots && s < r->nmodule_slots; s++) {
		const struct rd_module *md = r->modules[s];
		if (!md || !x->ft->map[s])
			continue;
		for (uint32_t num = 0; num <= md->r.nfuncs; num++) {
			uint32_t fn = x->ft->map[s][num];
			if (!fn || fn >= p->unknown || !p->used[fn] || p->slot[fn])
				continue;
			p->slot[fn] = s + 1;
			p->addr[fn] = num < md->r.nfuncs ? md->r.load_bias + md->funcs[num] : 0;
		}
	}
}

static void mappings(struct pp *p)
{
	const struct export_ctx *x = p->x;
	const struct recording *r = x->r;
	uint8_t *done = calloc(r->nmodule_slots + 1, 1);
	if (!done) {
		p->b.oom = 1;
		return;
	}
	for (uint32_t id = 1; id < p->unknown; id++) {
		uint32_t s = p->slot[id];
		if (!s || s > r->nmodule_slots || done[s - 1])
			continue;
		done[s - 1] = 1;
		const struct rd_module *md = r->modules[s - 1];
		uint64_t lo = UINT64_MAX, hi = 0;
		for (uint32_t i = 0; i < md->r.nfuncs; i++) {
			lo = md->funcs[i] < lo ? md->funcs[i] : lo;
			hi = md->funcs[i] > hi ? md->funcs[i] : hi;
		}
		char bid[2 * sizeof md->r.build_id + 1] = "";
		for (uint32_t i = 0; i < md->r.build_id_len && i < sizeof md->r.build_id; i++)
			snprintf(bid + 2 * i, 3, "%02x", md->r.build_id[i]);
		size_t m = pb_open(&p->b, P_MAPPING);
		pb_uint(&p->b, M_ID, s);
		if (lo <= hi) {
			pb_uint(&p->b, M_START, md->r.load_bias + lo);
			pb_uint(&p->b, M_LIMIT, md->r.load_bias + hi + 1);
		}
		pb_uint(&p->b, M_OFFSET, 0);
		pb_int(&p->b, M_FILE, str_id(&p->st, md->r.path));
		pb_int(&p->b, M_BUILD_ID, str_id(&p->st, bid));
		pb_uint(&p->b, M_HAS_FUNCTIONS, 1);
		pb_uint(&p->b, M_HAS_FILENAMES, 1);
		pb_uint(&p->b, M_HAS_LINES, 1);
		pb_close(&p->b, m);
		emit(p, Z_NO_FLUSH);
	}
	free(done);
}

static void locations_and_functions(struct pp *p)
{
	const struct fn_table *ft = p->x->ft;
	for (uint32_t id = 1; id <= p->root; id++) {
		if (!p->used[id])
			continue;
		const struct fn_info *fi = id < p->unknown ? &ft->fns[id] : NULL;
		int line = fi && fi->line > 0 ? fi->line : 0;
		size_t m = pb_open(&p->b, P_LOCATION);
		pb_uint(&p->b, L_ID, id);
		if (p->slot[id])
			pb_uint(&p->b, L_MAPPING, p->slot[id]);
		if (p->addr[id])
			pb_uint(&p->b, L_ADDRESS, p->addr[id]);
		size_t l = pb_open(&p->b, L_LINE);
		pb_uint(&p->b, LN_FUNCTION, id);
		if (line)
			pb_int(&p->b, LN_LINE, line);
		pb_close(&p->b, l);
		pb_close(&p->b, m);
		emit(p, Z_NO_FLUSH);

		const char *name = fi ? fi->name : id == p->root ? "<root>" : "<unknown>";
		const char *file = fi ? (fi->file ? fi->file : fi->module) : NULL;
		m = pb_open(&p->b, P_FUNCTION);
		pb_uint(&p->b, F_ID, id);
		pb_int(&p->b, F_NAME, str_id(&p->st, name));
		/* "<root>" and "<unknown>" get no system name: pprof would try to
		 * demangle it into its display name (and make "" of it). */
		if (fi)
			pb_int(&p->b, F_SYSTEM_NAME, str_id(&p->st, fi->mangled ? fi->mangled : name));
		if (file)
			pb_int(&p->b, F_FILE, str_id(&p->st, file));
		if (line)
			pb_int(&p->b, F_START_LINE, line);
		pb_close(&p->b, m);
		emit(p, Z_NO_FLUSH);
	}
}

static uint64_t meta_u64(const struct recording *r, const char *key)
{
	const char *v = rd_meta(r, key);
	return v ? strtoull(v, NULL, 10) : 0;
}

static void header(struct pp *p)
{
	const struct recording *r = p->x->r;
	struct pb_buf *b = &p->b;
	uint64_t t0 = meta_u64(r, "start_mono_ns"), t1 = meta_u64(r, "end_mono_ns");
	uint64_t dur = t1 > t0 ? t1 - t0 : 0, end_s = meta_u64(r, "time");
	if (end_s && end_s < INT64_MAX / 1000000000u && end_s * 1000000000u > dur)
		pb_int(b, P_TIME_NANOS, (int64_t)(end_s * 1000000000u - dur)); /* the wall clock at the end, less the duration */
	if (dur)
		pb_int(b, P_DURATION, (int64_t)(dur < INT64_MAX ? dur : INT64_MAX));
	emit(p, Z_NO_FLUSH);
	value_type(p, P_PERIOD_TYPE, "time", "nanoseconds");
	pb_int(b, P_PERIOD, 1); /* every call is measured: nothing is sampled */
	pb_int(b, P_DEFAULT_TYPE, str_id(&p->st, "time"));
	pb_int(b, P_COMMENT, str_id(&p->st, "sonde: exact profile, one sample per calling context "
	                                    "(values: its calls and exclusive time)"));
	const char *cmd = rd_meta(r, "command");
	if (cmd)
		pb_int(b, P_COMMENT, str_id(&p->st, cmd));
	emit(p, Z_NO_FLUSH);
}

static int write_pprof(struct export_ctx *x)
{
	struct pp *p = calloc(1, sizeof *p);
	if (!p) {
		snprintf(x->err, sizeof x->err, "out of memory");
		return -1;
	}
	p->x = x;
	p->unknown = x->ft->n;
	p->root = p->unknown + 1;
	size_t nid = (size_t)p->root + 1;
	p->used = calloc(nid, 1);
	p->slot = calloc(nid, sizeof *p->slot);
	p->addr = calloc(nid, sizeof *p->addr);
	p->acc = calloc(nid, sizeof *p->acc);
	p->accw = calloc(nid, sizeof *p->accw);
	p->acch = calloc(nid, sizeof *p->acch);
	p->accc = calloc(nid, sizeof *p->accc);
	p->acco = calloc(nid, sizeof *p->acco);
	int rc = -1;
	struct lock_cct lk;
	int has_lk = 0;
	if (!p->used || !p->slot || !p->addr || !p->acc || !p->accw || !p->acch || !p->accc || !p->acco || str_id(&p->st, "") != 0 || p->st.oom) {
		snprintf(x->err, sizeof x->err, "out of memory");
		goto out;
	}
	if (deflateInit2(&p->z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16 /* gzip */, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
		snprintf(x->err, sizeof x->err, "zlib: cannot start compression");
		goto out;
	}
	p->zok = 1;
	if ((x->r->mode & SONDE_MODE_LOCK_EVENTS) && x->r->has_events) {
		if (lock_cct_build(x->r, x->sel.tid, &lk, x->err, sizeof x->err) != 0) {
			lock_cct_free(&lk);
			deflateEnd(&p->z);
			goto out;
		}
		has_lk = 1;
		p->lk = &lk;
	}
	value_type(p, P_SAMPLE_TYPE, "calls", "count");
	value_type(p, P_SAMPLE_TYPE, "time", "nanoseconds");
	p->cpu = 0;
	for (int i = 0; i < x->r->nthreads; i++) {
		const struct rd_thread *t = &x->r->threads[i];
		if (!t->nodes || !rd_thread_selected(x->r, &x->sel, t))
			continue;
		if (!t->off_ns) {
			p->cpu = 0;
			break;
		}
		p->cpu = 1;
	}
	if (p->cpu) {
		value_type(p, P_SAMPLE_TYPE, "cpu", "nanoseconds");
		value_type(p, P_SAMPLE_TYPE, "off_cpu", "nanoseconds");
	}
	if (p->lk) {
		value_type(p, P_SAMPLE_TYPE, "wait", "nanoseconds");
		value_type(p, P_SAMPLE_TYPE, "hold", "nanoseconds");
	}
	header(p);
	for (int i = 0; i < x->r->nthreads; i++) {
		const struct rd_thread *t = &x->r->threads[i];
		if ((!t->nodes && !p->lk) || !rd_thread_selected(x->r, &x->sel, t))
			continue;
		if (thread_samples(p, i)) {
			p->b.oom = 1;
			break;
		}
	}
	place_locations(p);
	mappings(p);
	locations_and_functions(p);
	for (uint32_t i = 0; i < p->st.n; i++) {
		pb_str(&p->b, P_STRING, p->st.s[i]);
		emit(p, Z_NO_FLUSH);
	}
	emit(p, Z_FINISH);
	if (p->b.oom || p->st.oom)
		snprintf(x->err, sizeof x->err, "out of memory");
	else if (!p->zok)
		snprintf(x->err, sizeof x->err, "zlib: compression failed");
	else if (ferror(x->out))
		snprintf(x->err, sizeof x->err, "write error");
	else
		rc = 0;
	deflateEnd(&p->z);
out:
	pb_free(&p->b);
	str_free(&p->st);
	free(p->used);
	free(p->slot);
	free(p->addr);
	free(p->acc);
	free(p->accw);
	free(p->acch);
	free(p->accc);
	free(p->acco);
	if (has_lk)
		lock_cct_free(&lk);
	free(p);
	return rc;
}

const struct export_ops export_pprof = {
	"pprof", "gzipped pprof profile.proto, one sample per calling context (go tool pprof, Pyroscope)", 0,
	write_pprof,
};
