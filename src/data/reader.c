/* reader.c — reads profile.sonde (and streams events.sonde) with every
 * length, checksum and index checked. */
#include "data/reader.h"

#include <errno.h>
#include <fnmatch.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#define ERR(...) (snprintf(err, errlen, __VA_ARGS__), -1)

/* Open a data file for reading: only a regular file (a FIFO or a device
 * named like a data file would block the reader or never end).  Sets *size.
 * NULL with err set otherwise. */
static FILE *open_data(const char *path, uint64_t *size, char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		(void)ERR("%s: cannot open (%s)", path, strerror(errno));
		return NULL;
	}
	struct stat st;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		(void)ERR("%s: not a regular file", path);
		return NULL;
	}
	int fl = fcntl(fd, F_GETFL);
	if (fl != -1)
		fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
	FILE *f = fdopen(fd, "rb");
	if (!f) {
		close(fd);
		(void)ERR("%s: cannot open (%s)", path, strerror(errno));
		return NULL;
	}
	*size = (uint64_t)st.st_size;
	return f;
}

/* A file of SONDE_DATA_VERSION: 0, or -1 with err saying whether the file
 * is older (record it again) or newer (a newer sonde reads it). */
static int check_version(const char *path, uint32_t version, char *err, size_t errlen)
{
	if (version > SONDE_DATA_VERSION)
		return ERR("%s: format version %u is newer than this sonde reads (%u)", path, version, SONDE_DATA_VERSION);
	if (version < SONDE_DATA_VERSION)
		return ERR("%s: written by an older sonde (format version %u, this sonde reads %u); record it again", path,
		           version, SONDE_DATA_VERSION);
	return 0;
}

/* The records of one file, each passed to fn with the offset of its header. */
typedef int (*rec_at_fn)(void *arg, uint32_t type, const uint8_t *p, uint64_t len, uint64_t off);

static int each_record(const char *path, uint32_t kind, rec_at_fn fn, void *arg, char *err, size_t errlen)
{
	uint64_t size;
	FILE *f = open_data(path, &size, err, errlen);
	if (!f)
		return -1;
	struct sonde_file_hdr h;
	if (fread(&h, sizeof h, 1, f) != 1) {
		fclose(f);
		return ERR("%s: truncated at byte 0 (no file header: not a sonde recording)", path);
	}
	if (memcmp(h.magic, SONDE_DATA_MAGIC, 8)) {
		fclose(f);
		return ERR("%s: not a sonde recording (bad magic)", path);
	}
	if (check_version(path, h.version, err, errlen) != 0) {
		fclose(f);
		return -1;
	}
	if (h.kind != kind) {
		fclose(f);
		return ERR("%s: wrong file kind %u", path, h.kind);
	}
	uint64_t off = sizeof h;
	uint8_t *buf = NULL;
	uint64_t cap = 0;
	int rc = 0, ended = 0;
	while (off < size) {
		struct sonde_rec_hdr rh;
		if (size - off < sizeof rh || fread(&rh, sizeof rh, 1, f) != 1) {
			rc = ERR("%s: truncated at byte %llu (partial record header)", path, (unsigned long long)off);
			break;
		}
		if (rh.len > size - off - sizeof rh) {
			rc = ERR("%s: truncated at byte %llu (record of %llu bytes runs past the end of the file)", path,
			         (unsigned long long)off, (unsigned long long)rh.len);
			break;
		}
		if (rh.len > cap) {
			uint8_t *nb = realloc(buf, rh.len);
			if (!nb) {
				rc = ERR("%s: out of memory reading a record of %llu bytes", path, (unsigned long long)rh.len);
				break;
			}
			buf = nb;
			cap = rh.len;
		}
		if (rh.len && fread(buf, rh.len, 1, f) != 1) {
			rc = ERR("%s: read error at byte %llu", path, (unsigned long long)off);
			break;
		}
		if (crc32_ieee(0, buf, rh.len) != rh.crc) {
			rc = ERR("%s: damaged record at byte %llu (checksum mismatch)", path, (unsigned long long)off);
			break;
		}
		if (rh.type == REC_END) {
			ended = 1;
			off += sizeof rh;
			break;
		}
		static const uint8_t empty[1];
		rc = fn(arg, rh.type, rh.len ? buf : empty, rh.len, off); /* never NULL, even for an empty payload */
		if (rc) {
			if (rc == RD_REC_NOMEM)
				rc = ERR("%s: out of memory reading the record at byte %llu", path, (unsigned long long)off);
			else if (rc > 0)
				rc = ERR("%s: damaged record at byte %llu (invalid contents of a type %u record)", path,
				         (unsigned long long)off, rh.type);
			break;
		}
		off += sizeof rh + rh.len;
	}
	if (!rc && !ended)
		rc = ERR("%s: truncated at byte %llu (the recording was not completed)", path, (unsigned long long)off);
	free(buf);
	fclose(f);
	return rc;
}

struct prefix {
	int64_t end;
	uint64_t chunks, bytes;
};

static int on_prefix_record(void *arg, uint32_t type, const uint8_t *p, uint64_t len, uint64_t off)
{
	struct prefix *x = arg;
	x->end = (int64_t)(off + sizeof(struct sonde_rec_hdr) + len);
	if ((type == REC_CHUNK || type == REC_CHUNK_ZSTD) && len >= sizeof(struct rec_chunk)) {
		struct rec_chunk c;
		memcpy(&c, p, sizeof c);
		x->chunks++;
		x->bytes += c.used;
	}
	return 0;
}

int64_t rd_valid_prefix(const char *path, uint32_t kind, uint64_t *chunks, uint64_t *bytes)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return -1;
	struct sonde_file_hdr h;
	int ok = fread(&h, sizeof h, 1, f) == 1 && !memcmp(h.magic, SONDE_DATA_MAGIC, 8) &&
	         h.version == SONDE_DATA_VERSION && h.kind == kind;
	fclose(f);
	if (!ok)
		return -1;
	struct prefix x = { (int64_t)sizeof h, 0, 0 };
	char err[64];
	each_record(path, kind, on_prefix_record, &x, err, sizeof err); /* its error is the tail: dropped */
	*chunks = x.chunks;
	*bytes = x.bytes;
	return x.end;
}

struct plain_fn {
	rd_rec_fn fn;
	void *arg;
};

static int call_plain(void *arg, uint32_t type, const uint8_t *p, uint64_t len, uint64_t off)
{
	(void)off;
	struct plain_fn *f = arg;
	return f->fn(f->arg, type, p, len);
}

int rd_each_record(const char *path, uint32_t kind, rd_rec_fn fn, void *arg, char *err, size_t errlen)
{
	struct plain_fn f = { fn, arg };
	return each_record(path, kind, call_plain, &f, err, errlen);
}

/* p (n elements of size sz in use, *cap allocated) with room for one more,
 * or NULL when out of memory (p and *cap unchanged). */
static void *grow(void *p, int n, int *cap, size_t sz)
{
	if (n < *cap)
		return p;
	if (*cap > INT32_MAX / 2)
		return NULL;
	int c = *cap ? *cap * 2 : 16;
	void *q = realloc(p, (size_t)c * sz);
	if (q)
		*cap = c;
	return q;
}

static int parse_meta(struct recording *r, const uint8_t *p, uint64_t len)
{
	char *s = malloc(len + 1);
	if (!s)
		return -1;
	memcpy(s, p, len);
	s[len] = 0;
	int cap = r->nmeta, rc = 0;
	for (char *save = NULL, *line = strtok_r(s, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *eq = strchr(line, '=');
		if (!eq)
			continue;
		*eq = 0;
		int kc = cap, vc = cap;
		char *k = strdup(line), *v = strdup(eq + 1);
		char **keys = k && v ? grow(r->meta_keys, r->nmeta, &kc, sizeof(char *)) : NULL;
		if (keys)
			r->meta_keys = keys;
		char **vals = keys ? grow(r->meta_vals, r->nmeta, &vc, sizeof(char *)) : NULL;
		if (!vals) {
			free(k);
			free(v);
			rc = -1;
			break;
		}
		r->meta_vals = vals;
		cap = kc < vc ? kc : vc; /* both hold at least this many */
		r->meta_keys[r->nmeta] = k;
		r->meta_vals[r->nmeta] = v;
		r->nmeta++;
	}
	free(s);
	return rc;
}

/* State of rd_open while it reads profile.sonde. */
struct open_ctx {
	struct recording *r;
	int capprocs, capthreads;
	uint8_t proc_seen[REC_MAX_PROCS / 8], thread_seen[REC_MAX_THREADS / 8];
};

/* Mark slot i (< n) in a bitmap: 0, or 1 if it was marked already. */
static int seen_once(uint8_t *bits, uint32_t i)
{
	if (bits[i / 8] & (1u << (i % 8)))
		return 1;
	bits[i / 8] |= (uint8_t)(1u << (i % 8));
	return 0;
}

/* The thread read with slot index (the last one of that slot), NULL if none. */
static struct rd_thread *thread_slot(struct recording *r, uint32_t index)
{
	struct rd_thread *t = NULL;
	for (int i = 0; i < r->nthreads; i++)
		if (r->threads[i].r.index == index)
			t = &r->threads[i];
	return t;
}

static int on_record(void *arg, uint32_t type, const uint8_t *p, uint64_t len, uint64_t off)
{
	struct open_ctx *c = arg;
	struct recording *r = c->r;
	switch (type) {
	case REC_META:
		return parse_meta(r, p, len) ? RD_REC_NOMEM : 0;
	case REC_PROCESS: {
		struct rec_process pr;
		if (len != sizeof pr)
			return RD_REC_DAMAGED;
		memcpy(&pr, p, len);
		/* one record per process slot */
		if (pr.index >= REC_MAX_PROCS || seen_once(c->proc_seen, pr.index))
			return RD_REC_DAMAGED;
		pr.exe[REC_PATH_MAX - 1] = 0;
		if (pr.cmdline_len > REC_PATH_MAX)
			pr.cmdline_len = REC_PATH_MAX;
		struct rec_process *procs = grow(r->procs, r->nprocs, &c->capprocs, sizeof *r->procs);
		if (!procs)
			return RD_REC_NOMEM;
		r->procs = procs;
		r->procs[r->nprocs++] = pr;
		return 0;
	}
	case REC_THREAD: {
		if (len != sizeof(struct rec_thread))
			return RD_REC_DAMAGED;
		struct rd_thread t;
		memset(&t, 0, sizeof t);
		memcpy(&t.r, p, len);
		t.r.comm[REC_COMM_MAX - 1] = 0;
		/* thread slots are unique over the recording */
		if (t.r.index >= REC_MAX_THREADS || seen_once(c->thread_seen, t.r.index))
			return RD_REC_DAMAGED;
		struct rd_thread *threads = grow(r->threads, r->nthreads, &c->capthreads, sizeof *r->threads);
		if (!threads)
			return RD_REC_NOMEM;
		r->threads = threads;
		r->threads[r->nthreads++] = t;
		return 0;
	}
	case REC_MODULE: {
		struct rec_module mr;
		if (len < sizeof mr)
			return RD_REC_DAMAGED;
		memcpy(&mr, p, sizeof mr);
		mr.path[REC_PATH_MAX - 1] = 0;
		if ((len - sizeof mr) != (uint64_t)mr.nfuncs * 8 || mr.index >= REC_MAX_MODULES ||
		    mr.nfuncs >= SONDE_MAX_FUNCS_PER_MODULE || mr.build_id_len > sizeof mr.build_id)
			return RD_REC_DAMAGED;
		if (mr.index < r->nmodule_slots && r->modules[mr.index])
			return RD_REC_DAMAGED; /* one record per module slot */
		if (mr.index >= r->nmodule_slots) {
			uint32_t n = mr.index + 1;
			struct rd_module **nm = realloc(r->modules, sizeof *r->modules * n);
			if (!nm)
				return RD_REC_NOMEM;
			memset(nm + r->nmodule_slots, 0, sizeof *nm * (n - r->nmodule_slots));
			r->modules = nm;
			r->nmodule_slots = n;
		}
		struct rd_module *m = calloc(1, sizeof *m);
		uint64_t *funcs = malloc((uint64_t)mr.nfuncs * 8 + 8);
		if (!m || !funcs) {
			free(m);
			free(funcs);
			return RD_REC_NOMEM;
		}
		m->r = mr;
		m->funcs = funcs;
		memcpy(m->funcs, p + sizeof mr, (uint64_t)mr.nfuncs * 8);
		r->modules[mr.index] = m;
		r->nmodules++;
		return 0;
	}
	case REC_CCT: {
		struct rec_cct hdr;
		if (len < sizeof hdr)
			return RD_REC_DAMAGED;
		memcpy(&hdr, p, sizeof hdr);
		if (len - sizeof hdr != (uint64_t)hdr.count * sizeof(struct rec_node) || hdr.count == 0)
			return RD_REC_DAMAGED;
		struct rd_thread *t = thread_slot(r, hdr.thread);
		if (!t || t->nodes)
			return RD_REC_DAMAGED;
		t->nodes = malloc(len - sizeof hdr);
		if (!t->nodes)
			return RD_REC_NOMEM;
		t->cct_off = off;
		memcpy(t->nodes, p + sizeof hdr, len - sizeof hdr);
		t->nnodes = hdr.count;
		return 0;
	}
	case REC_CCT_CPU: {
		struct rec_cct_cpu hdr;
		if (len < sizeof hdr)
			return RD_REC_DAMAGED;
		memcpy(&hdr, p, sizeof hdr);
		struct rd_thread *t = thread_slot(r, hdr.thread);
		/* after the thread's REC_CCT, once; all its nodes or none */
		if (!t || !t->nodes || t->cpu_split || (hdr.split == 1) != (hdr.count != 0) ||
		    (hdr.count && hdr.count != t->nnodes) || hdr.split == 0 || (hdr.flags & ~(uint32_t)REC_CPU_RUNNABLE) ||
		    len - sizeof hdr != (uint64_t)hdr.count * sizeof(uint64_t) * (hdr.flags & REC_CPU_RUNNABLE ? 2 : 1))
			return RD_REC_DAMAGED;
		t->cpu_split = hdr.split;
		if (hdr.count) {
			size_t each = (size_t)hdr.count * sizeof(uint64_t);
			t->off_ns = malloc(each);
			t->run_ns = hdr.flags & REC_CPU_RUNNABLE ? malloc(each) : NULL;
			if (!t->off_ns || ((hdr.flags & REC_CPU_RUNNABLE) && !t->run_ns))
				return RD_REC_NOMEM;
			memcpy(t->off_ns, p + sizeof hdr, each);
			if (t->run_ns)
				memcpy(t->run_ns, p + sizeof hdr + each, each);
		}
		return 0;
	}
	case REC_COUNTED: {
		struct rec_counted hdr;
		if (len < sizeof hdr)
			return RD_REC_DAMAGED;
		memcpy(&hdr, p, sizeof hdr);
		struct rd_thread *t = thread_slot(r, hdr.thread);
		if (!t || t->counted || hdr.count == 0 || len - sizeof hdr != (uint64_t)hdr.count * sizeof(struct rec_count))
			return RD_REC_DAMAGED;
		t->counted = malloc(len - sizeof hdr);
		if (!t->counted)
			return RD_REC_NOMEM;
		memcpy(t->counted, p + sizeof hdr, len - sizeof hdr);
		t->ncounted = hdr.count;
		for (uint32_t i = 0; i < hdr.count; i++)
			if (!rd_func_valid(r, t->counted[i].func) || t->counted[i].calls == 0)
				return RD_REC_DAMAGED;
		return 0;
	}
	default:
		return 0; /* other record types belong to other readers (locks) */
	}
}

uint64_t rd_max_ticks(const struct recording *r)
{
	double tpn = r->ticks_per_ns > 0 && r->ticks_per_ns < 1 ? r->ticks_per_ns : 1.0;
	return (uint64_t)ldexp(tpn, 62);
}

/* The tree structure must be sound before any analysis walks it: links in
 * range and to the right parent (a node's parent comes before it), every
 * node but the root reached exactly once from the children lists (so no
 * cycle, no node shared by two lists, none unreachable), depth at most
 * RD_MAX_DEPTH, functions known, and each node's time and the sum of its
 * children's at most rd_max_ticks() (the sums made from them cannot
 * overflow).  A tree that sonde wrote always passes (record/audit.c makes
 * sure of it before writing).  0, or -1 with what is wrong in why. */
static int check_cct(const struct recording *r, const struct rd_thread *t, char *why, size_t n_why)
{
	const uint32_t n = t->nnodes;
	const struct rec_node *nd = t->nodes;
	const uint64_t maxt = rd_max_ticks(r);
#define BAD(...) do { snprintf(why, n_why, __VA_ARGS__); rc = -1; goto out; } while (0)
	int rc = 0;
	uint32_t *depth = NULL;
	uint8_t *seen = NULL;
	for (uint32_t i = 0; i < n; i++) {
		if (nd[i].first_child >= n || nd[i].next_sibling >= n)
			BAD("node %u: link out of range", i);
		if (nd[i].ticks > maxt)
			BAD("node %u: impossible time", i);
		if (nd[i].first_child && nd[nd[i].first_child].parent != i)
			BAD("node %u: first child of another parent", i);
		if (i == 0) {
			if (nd[0].next_sibling)
				BAD("the root has a sibling");
			continue;
		}
		if (nd[i].parent >= i)
			BAD("node %u: parent after it", i);
		if (!rd_func_valid(r, nd[i].func))
			BAD("node %u: unknown function id 0x%x", i, nd[i].func);
		if (nd[i].next_sibling && nd[nd[i].next_sibling].parent != nd[i].parent)
			BAD("node %u: sibling of another parent", i);
	}
	/* Parents come first, so depth[] is known for the parent of each node. */
	depth = malloc(sizeof *depth * n);
	seen = calloc(n, 1);
	if (!depth || !seen)
		BAD("out of memory");
	depth[0] = 0;
	for (uint32_t i = 1; i < n; i++) {
		depth[i] = depth[nd[i].parent] + 1;
		if (depth[i] > RD_MAX_DEPTH)
			BAD("node %u: deeper than %u calls", i, RD_MAX_DEPTH);
	}
	uint32_t reached = 0;
	for (uint32_t v = 0; v < n; v++) {
		uint64_t kids = 0;
		for (uint32_t c = nd[v].first_child; c; c = nd[c].next_sibling) {
			if (seen[c])
				BAD("node %u: reached twice (a cycle, or in two lists)", c);
			seen[c] = 1;
			reached++;
			kids = rd_sat_add(kids, nd[c].ticks);
		}
		if (kids > maxt)
			BAD("node %u: impossible time of its children", v);
	}
	if (reached != n - 1)
		BAD("%u node%s in no list", n - 1 - reached, n - 1 - reached == 1 ? "" : "s");
out:
#undef BAD
	free(depth);
	free(seen);
	return rc;
}

struct recording *rd_open(const char *dir, char *err, size_t errlen)
{
	struct stat st;
	if (stat(dir, &st) != 0) {
		snprintf(err, errlen, "%s: no such recording (%s; run 'sonde record' first, or pass -i DIR)", dir,
		         strerror(errno));
		return NULL;
	}
	if (!S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "%s: not a recording directory", dir);
		return NULL;
	}
	struct recording *r = calloc(1, sizeof *r);
	struct open_ctx *c = calloc(1, sizeof *c);
	if (!r || !c || !(r->dir = strdup(dir))) {
		snprintf(err, errlen, "%s: out of memory", dir);
		free(c);
		rd_close(r);
		return NULL;
	}
	c->r = r;
	char path[4096];
	snprintf(path, sizeof path, "%s/%s", dir, SONDE_FILE_PROFILE);
	int rc = each_record(path, SONDE_KIND_PROFILE, on_record, c, err, errlen);
	free(c);
	if (rc != 0) {
		rd_close(r);
		return NULL;
	}
	const char *tpn = rd_meta(r, "ticks_per_ns");
	r->ticks_per_ns = tpn ? strtod(tpn, NULL) : 0;
	if (!(r->ticks_per_ns > 0.01 && r->ticks_per_ns < 100)) {
		snprintf(err, errlen, "%s: damaged (missing or impossible clock calibration)", path);
		rd_close(r);
		return NULL;
	}
	const char *s = rd_meta(r, "start_ticks");
	r->start_ticks = s ? strtoull(s, NULL, 10) : 0;
	s = rd_meta(r, "start_mono_ns");
	r->start_mono_ns = s ? strtoull(s, NULL, 10) : 0;
	s = rd_meta(r, "mode");
	r->mode = s ? (uint32_t)strtoul(s, NULL, 10) : 0;
	for (int i = 0; i < r->nthreads; i++) {
		struct rd_thread *t = &r->threads[i];
		char why[128];
		if (t->nodes && check_cct(r, t, why, sizeof why) != 0) {
			snprintf(err, errlen, "%s: damaged calling-context tree of thread %d (record at byte %llu: %s)", path,
			         t->r.tid, (unsigned long long)t->cct_off, why);
			rd_close(r);
			return NULL;
		}
	}
	snprintf(path, sizeof path, "%s/%s", dir, SONDE_FILE_EVENTS);
	r->has_events = access(path, R_OK) == 0;
	return r;
}

void rd_drop_trees(struct recording *r)
{
	for (int i = 0; i < r->nthreads; i++) {
		struct rd_thread *t = &r->threads[i];
		free(t->nodes);
		free(t->off_ns);
		free(t->run_ns);
		t->nodes = NULL;
		t->off_ns = t->run_ns = NULL;
		t->nnodes = 0;
		t->cpu_split = 0;
	}
}

void rd_close(struct recording *r)
{
	if (!r)
		return;
	for (int i = 0; i < r->nmeta; i++) {
		free(r->meta_keys[i]);
		free(r->meta_vals[i]);
	}
	free(r->meta_keys);
	free(r->meta_vals);
	for (int i = 0; i < r->nthreads; i++) {
		free(r->threads[i].nodes);
		free(r->threads[i].off_ns);
		free(r->threads[i].run_ns);
		free(r->threads[i].counted);
	}
	free(r->threads);
	for (uint32_t i = 0; r->modules && i < r->nmodule_slots; i++)
		if (r->modules[i]) {
			free(r->modules[i]->funcs);
			free(r->modules[i]);
		}
	free(r->modules);
	free(r->procs);
	free(r->dir);
	free(r);
}

const char *rd_meta(const struct recording *r, const char *key)
{
	for (int i = 0; i < r->nmeta; i++)
		if (!strcmp(r->meta_keys[i], key))
			return r->meta_vals[i];
	return NULL;
}

double rd_ns(const struct recording *r, int64_t ticks)
{
	return (double)ticks / r->ticks_per_ns;
}

uint64_t rd_mono_ticks(const struct recording *r, uint64_t mono)
{
	if (!r->start_mono_ns || mono < r->start_mono_ns)
		return 0;
	double t = (double)r->start_ticks + (double)(mono - r->start_mono_ns) * r->ticks_per_ns;
	return t < 1.8e19 ? (uint64_t)t : UINT64_MAX;
}

struct rec_process *rd_proc(const struct recording *r, uint32_t slot)
{
	for (int i = 0; i < r->nprocs; i++)
		if (r->procs[i].index == slot)
			return &r->procs[i];
	return NULL;
}

int rd_thread_selected(const struct recording *r, const struct rd_select *s, const struct rd_thread *t)
{
	if (!s)
		return 1;
	if (s->tid && t->r.tid != s->tid)
		return 0;
	if (!s->pid && !s->comm)
		return 1;
	const struct rec_process *p = rd_proc(r, t->r.proc);
	if (!p || (s->pid && p->pid != s->pid))
		return 0;
	if (s->comm) {
		char exe[sizeof p->exe];
		memcpy(exe, p->exe, sizeof exe);
		exe[sizeof exe - 1] = 0; /* the file's bytes: NUL-ended here */
		const char *base = strrchr(exe, '/');
		base = base ? base + 1 : exe;
		if (fnmatch(s->comm, base, 0) != 0 && fnmatch(s->comm, exe, 0) != 0)
			return 0;
	}
	return 1;
}

uint64_t rd_lost_total(const struct recording *r, int include_unnumbered)
{
	uint64_t n = 0;
	for (int i = 0; i < r->nthreads; i++)
		for (int k = 0; k < REC_LOST_COUNT; k++)
			if (include_unnumbered || k != REC_LOST_UNNUMBERED)
				n = rd_sat_add(n, r->threads[i].r.lost[k]);
	for (int i = 0; i < r->nmeta; i++)
		if (!strncmp(r->meta_keys[i], "lost.", 5))
			n = rd_sat_add(n, strtoull(r->meta_vals[i], NULL, 10));
	return n;
}

int rd_events_open(const struct recording *r, struct rd_events *ev, char *err, size_t errlen)
{
	memset(ev, 0, sizeof *ev);
	snprintf(ev->path, sizeof ev->path, "%s/%s", r->dir, SONDE_FILE_EVENTS);
	if (access(ev->path, F_OK) != 0)
		return ERR("%s: no events in this recording (record with --trace or --locks=events)", ev->path);
	ev->f = open_data(ev->path, &ev->size, err, errlen);
	if (!ev->f)
		return -1;
	struct sonde_file_hdr h;
	int bad = fread(&h, sizeof h, 1, ev->f) != 1 || memcmp(h.magic, SONDE_DATA_MAGIC, 8) || h.kind != SONDE_KIND_EVENTS
	          ? ERR("%s: not a sonde events file", ev->path) : check_version(ev->path, h.version, err, errlen);
	if (bad) {
		fclose(ev->f);
		ev->f = NULL;
		return -1;
	}
	ev->off = sizeof h;
	return 0;
}

/* A REC_CHUNK_ZSTD record (len bytes in ev->data): its events into ev->data. */
static int unzstd_chunk(struct rd_events *ev, uint64_t len, char *err, size_t errlen)
{
	uint64_t at = ev->off - len;
	if (len < sizeof ev->chunk)
		return ERR("%s: damaged chunk at byte %llu", ev->path, (unsigned long long)at);
	memcpy(&ev->chunk, ev->data, sizeof ev->chunk);
	uint32_t used = ev->chunk.used;
	if (used > REC_CHUNK_MAX_USED)
		return ERR("%s: damaged chunk at byte %llu (impossible length)", ev->path, (unsigned long long)at);
	if (used > ev->zcap) {
		uint8_t *nb = realloc(ev->zdata, used);
		if (!nb)
			return ERR("%s: out of memory", ev->path);
		ev->zdata = nb;
		ev->zcap = used;
	}
	if (!ev->zdctx && !(ev->zdctx = ZSTD_createDCtx()))
		return ERR("%s: out of memory", ev->path);
	size_t n = ZSTD_decompressDCtx(ev->zdctx, ev->zdata, used, ev->data + sizeof ev->chunk, len - sizeof ev->chunk);
	if (ZSTD_isError(n) || n != used)
		return ERR("%s: damaged chunk at byte %llu (%s)", ev->path, (unsigned long long)at,
		           ZSTD_isError(n) ? ZSTD_getErrorName(n) : "length mismatch");
	/* the events where readers expect them: swap the buffers */
	uint8_t *t = ev->data;
	uint64_t c = ev->cap;
	ev->data = ev->zdata;
	ev->cap = ev->zcap;
	ev->zdata = t;
	ev->zcap = c;
	return 1;
}

int rd_events_next(struct rd_events *ev, char *err, size_t errlen)
{
	for (;;) {
		struct sonde_rec_hdr rh;
		size_t got = fread(&rh, 1, sizeof rh, ev->f);
		if (got == 0)
			return ERR("%s: truncated at byte %llu (the recording was not completed)", ev->path,
			           (unsigned long long)ev->off);
		if (got != sizeof rh)
			return ERR("%s: truncated at byte %llu (partial record header)", ev->path, (unsigned long long)ev->off);
		if (rh.type == REC_END)
			return 0;
		if (rh.len > (1ull << 30))
			return ERR("%s: damaged record at byte %llu (impossible length)", ev->path, (unsigned long long)ev->off);
		/* never allocate more than the file holds */
		if (ev->size < ev->off + sizeof rh || rh.len > ev->size - ev->off - sizeof rh)
			return ERR("%s: truncated at byte %llu (record of %llu bytes runs past the end of the file)", ev->path,
			           (unsigned long long)ev->off, (unsigned long long)rh.len);
		if (rh.len > ev->cap) {
			uint8_t *nb = realloc(ev->data, rh.len);
			if (!nb)
				return ERR("%s: out of memory", ev->path);
			ev->data = nb;
			ev->cap = rh.len;
		}
		if (rh.len && fread(ev->data, rh.len, 1, ev->f) != 1)
			return ERR("%s: truncated at byte %llu (record of %llu bytes runs past the end of the file)", ev->path,
			           (unsigned long long)ev->off, (unsigned long long)rh.len);
		if (crc32_ieee(0, ev->data, rh.len) != rh.crc)
			return ERR("%s: damaged record at byte %llu (checksum mismatch)", ev->path, (unsigned long long)ev->off);
		ev->off += sizeof rh + rh.len;
		if (rh.type == REC_CHUNK_ZSTD)
			return unzstd_chunk(ev, rh.len, err, errlen);
		if (rh.type != REC_CHUNK)
			continue;
		if (rh.len < sizeof ev->chunk)
			return ERR("%s: damaged chunk at byte %llu", ev->path, (unsigned long long)ev->off);
		memcpy(&ev->chunk, ev->data, sizeof ev->chunk);
		if (ev->chunk.used != rh.len - sizeof ev->chunk)
			return ERR("%s: damaged chunk at byte %llu (length mismatch)", ev->path, (unsigned long long)ev->off);
		memmove(ev->data, ev->data + sizeof ev->chunk, ev->chunk.used);
		return 1;
	}
}

void rd_events_close(struct rd_events *ev)
{
	if (ev->f)
		fclose(ev->f);
	free(ev->data);
	free(ev->zdata);
	ZSTD_freeDCtx(ev->zdctx);
	ev->zdctx = NULL;
	ev->f = NULL;
	ev->data = ev->zdata = NULL;
}
