/* reader.c — reads profile.sonde (and streams events.sonde) with every
 * length, checksum and index checked. */
#include "data/reader.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define ERR(...) (snprintf(err, errlen, __VA_ARGS__), -1)

int rd_each_record(const char *path, uint32_t kind, rd_rec_fn fn, void *arg, char *err, size_t errlen)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return ERR("%s: cannot open (%s)", path, strerror(errno));
	struct sonde_file_hdr h;
	if (fread(&h, sizeof h, 1, f) != 1) {
		fclose(f);
		return ERR("%s: truncated at byte 0 (no file header: not a sonde recording)", path);
	}
	if (memcmp(h.magic, SONDE_DATA_MAGIC, 8)) {
		fclose(f);
		return ERR("%s: not a sonde recording (bad magic)", path);
	}
	if (h.version != SONDE_DATA_VERSION) {
		fclose(f);
		return ERR("%s: format version %u, this sonde reads version %u", path, h.version, SONDE_DATA_VERSION);
	}
	if (h.kind != kind) {
		fclose(f);
		return ERR("%s: wrong file kind %u", path, h.kind);
	}
	fseeko(f, 0, SEEK_END);
	uint64_t size = (uint64_t)ftello(f);
	fseeko(f, sizeof h, SEEK_SET);
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
		rc = fn(arg, rh.type, buf, rh.len);
		if (rc) {
			if (rc > 0)
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

static int parse_meta(struct recording *r, const uint8_t *p, uint64_t len)
{
	char *s = malloc(len + 1);
	if (!s)
		return 1;
	memcpy(s, p, len);
	s[len] = 0;
	for (char *line = strtok(s, "\n"); line; line = strtok(NULL, "\n")) {
		char *eq = strchr(line, '=');
		if (!eq)
			continue;
		*eq = 0;
		r->meta_keys = realloc(r->meta_keys, sizeof(char *) * (r->nmeta + 1));
		r->meta_vals = realloc(r->meta_vals, sizeof(char *) * (r->nmeta + 1));
		r->meta_keys[r->nmeta] = strdup(line);
		r->meta_vals[r->nmeta] = strdup(eq + 1);
		r->nmeta++;
	}
	free(s);
	return 0;
}

static int on_record(void *arg, uint32_t type, const uint8_t *p, uint64_t len)
{
	struct recording *r = arg;
	switch (type) {
	case REC_META:
		return parse_meta(r, p, len);
	case REC_PROCESS:
		if (len != sizeof(struct rec_process))
			return 1;
		r->procs = realloc(r->procs, sizeof *r->procs * (r->nprocs + 1));
		memcpy(&r->procs[r->nprocs++], p, len);
		return 0;
	case REC_THREAD: {
		if (len != sizeof(struct rec_thread))
			return 1;
		r->threads = realloc(r->threads, sizeof *r->threads * (r->nthreads + 1));
		struct rd_thread *t = &r->threads[r->nthreads++];
		memset(t, 0, sizeof *t);
		memcpy(&t->r, p, len);
		t->r.comm[SONDE_COMM_MAX - 1] = 0;
		return 0;
	}
	case REC_MODULE: {
		if (len < sizeof(struct rec_module))
			return 1;
		struct rd_module *m = calloc(1, sizeof *m);
		memcpy(&m->r, p, sizeof m->r);
		m->r.path[SONDE_PATH_MAX - 1] = 0;
		if ((len - sizeof m->r) != (uint64_t)m->r.nfuncs * 8 || m->r.index >= SONDE_MAX_MODULES ||
		    m->r.nfuncs >= SONDE_MAX_FUNCS_PER_MODULE) {
			free(m);
			return 1;
		}
		m->funcs = malloc((uint64_t)m->r.nfuncs * 8 + 8);
		memcpy(m->funcs, p + sizeof m->r, (uint64_t)m->r.nfuncs * 8);
		if (m->r.index >= r->nmodule_slots) {
			uint32_t n = m->r.index + 1;
			r->modules = realloc(r->modules, sizeof *r->modules * n);
			memset(r->modules + r->nmodule_slots, 0, sizeof *r->modules * (n - r->nmodule_slots));
			r->nmodule_slots = n;
		}
		if (r->modules[m->r.index]) {
			free(m->funcs);
			free(m);
			return 1;
		}
		r->modules[m->r.index] = m;
		r->nmodules++;
		return 0;
	}
	case REC_CCT: {
		uint32_t hdr[2];
		if (len < sizeof hdr)
			return 1;
		memcpy(hdr, p, sizeof hdr);
		if (len - sizeof hdr != (uint64_t)hdr[1] * sizeof(struct sonde_node) || hdr[1] == 0)
			return 1;
		struct rd_thread *t = NULL;
		for (int i = 0; i < r->nthreads; i++)
			if (r->threads[i].r.index == hdr[0])
				t = &r->threads[i];
		if (!t || t->nodes)
			return 1;
		t->nodes = malloc(len - sizeof hdr);
		memcpy(t->nodes, p + sizeof hdr, len - sizeof hdr);
		t->nnodes = hdr[1];
		return 0;
	}
	default:
		return 0; /* other record types belong to other readers (locks) */
	}
}

/* The tree structure must be sound before any analysis walks it. */
static int check_cct(const struct recording *r, const struct rd_thread *t)
{
	for (uint32_t i = 0; i < t->nnodes; i++) {
		const struct sonde_node *n = &t->nodes[i];
		if (n->first_child >= t->nnodes || n->next_sibling >= t->nnodes)
			return -1;
		if (n->first_child && n->first_child <= i)
			return -1; /* children are created after their parent */
		if (i == 0)
			continue;
		if (n->parent >= i || !rd_func_valid(r, n->func))
			return -1;
		if (n->next_sibling && t->nodes[n->next_sibling].parent != n->parent)
			return -1;
	}
	return 0;
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
	r->dir = strdup(dir);
	char path[4096];
	snprintf(path, sizeof path, "%s/%s", dir, SONDE_FILE_PROFILE);
	if (rd_each_record(path, 1, on_record, r, err, errlen) != 0) {
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
	s = rd_meta(r, "mode");
	r->mode = s ? (uint32_t)strtoul(s, NULL, 10) : 0;
	for (int i = 0; i < r->nthreads; i++) {
		struct rd_thread *t = &r->threads[i];
		if (t->nodes && check_cct(r, t) != 0) {
			snprintf(err, errlen, "%s: damaged calling-context tree of thread %d", path, t->r.tid);
			rd_close(r);
			return NULL;
		}
	}
	snprintf(path, sizeof path, "%s/%s", dir, SONDE_FILE_EVENTS);
	r->has_events = access(path, R_OK) == 0;
	return r;
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
	for (int i = 0; i < r->nthreads; i++)
		free(r->threads[i].nodes);
	free(r->threads);
	for (uint32_t i = 0; i < r->nmodule_slots; i++)
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

int rd_func_valid(const struct recording *r, uint32_t func)
{
	uint32_t mod = SONDE_FUNC_MOD(func), num = SONDE_FUNC_NUM(func);
	return mod < r->nmodule_slots && r->modules[mod] && (num < r->modules[mod]->r.nfuncs || num == SONDE_UNNUMBERED);
}

struct rec_process *rd_proc(const struct recording *r, uint32_t slot)
{
	for (int i = 0; i < r->nprocs; i++)
		if (r->procs[i].index == slot)
			return &r->procs[i];
	return NULL;
}

uint64_t rd_lost_total(const struct recording *r, int include_unnumbered)
{
	uint64_t n = 0;
	for (int i = 0; i < r->nthreads; i++)
		for (int k = 0; k < SONDE_LOST_COUNT_; k++)
			if (include_unnumbered || k != SONDE_LOST_UNNUMBERED)
				n += r->threads[i].r.lost[k];
	for (int i = 0; i < r->nmeta; i++)
		if (!strncmp(r->meta_keys[i], "lost.", 5))
			n += strtoull(r->meta_vals[i], NULL, 10);
	return n;
}

int rd_events_open(const struct recording *r, struct rd_events *ev, char *err, size_t errlen)
{
	memset(ev, 0, sizeof *ev);
	snprintf(ev->path, sizeof ev->path, "%s/%s", r->dir, SONDE_FILE_EVENTS);
	ev->f = fopen(ev->path, "rb");
	if (!ev->f)
		return ERR("%s: no events in this recording (record with --trace or --locks=events)", ev->path);
	struct sonde_file_hdr h;
	if (fread(&h, sizeof h, 1, ev->f) != 1 || memcmp(h.magic, SONDE_DATA_MAGIC, 8) || h.kind != 2 ||
	    h.version != SONDE_DATA_VERSION) {
		fclose(ev->f);
		ev->f = NULL;
		return ERR("%s: not a sonde events file of version %u", ev->path, SONDE_DATA_VERSION);
	}
	ev->off = sizeof h;
	return 0;
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
	ev->f = NULL;
	ev->data = NULL;
}
