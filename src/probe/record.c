/* record.c — `sonde probe -o DIR --record`: the hits also go into a sonde
 * recording (docs/FORMAT.md), so that `sonde export --format=perfetto` puts
 * them on the timeline and `sonde info` describes them.
 *
 * Same container and reader as `sonde record`: events.sonde holds REC_CHUNK
 * records, one per full chunk of one traced thread (sequence numbers from 0
 * per thread), whose payload is TRX_PROBE records (common/trace_enc.h) time-
 * stamped with the tick counter; profile.sonde, written at the end, holds
 * META (clock calibration, mode REC_MODE_PROBES, the probes' specs as
 * "probe.<id>"), the process and its threads.  No function profile.
 *
 * Memory is bounded: one chunk buffer per live thread that had a hit,
 * written out when full, when its thread exits, and at the end. */
#include "probe/record.h"

#include "probe/engine.h"
#include "probe/kind.h"
#include "probe/probe.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/ring.h"
#include "common/trace_enc.h"
#include "record/record.h"
#include "record/recorder.h"

#define PR_CHUNK 16384u                              /* bytes per chunk, header included */
#define PR_PAYLOAD (PR_CHUNK - sizeof(struct rec_chunk))
#define PR_MAX_STR 200                               /* string values are cut here */
#define PR_MAX_REC (1 + 1 + 3 * TR_MAX_VARINT + 1 + TR_MAX_VARINT + PR_MAX_STR + 8)

struct pr_thread {
	pid_t tid;
	uint32_t slot;
	int ended;
	char comm[SONDE_COMM_MAX];
	uint64_t start_tsc, end_tsc, last_tsc;
	uint64_t seq, base_tsc, hits;
	uint8_t *buf;            /* PR_PAYLOAD bytes while the thread lives */
	uint32_t used;
};

struct precorder {
	struct recorder rec;
	struct pr_thread *th;
	uint32_t nth, cap;
	int32_t *hash;           /* tid -> index into th, open addressing, -1 free */
	uint32_t hcap;
	uint64_t hits, lost;
	uint64_t dropped;        /* events the agent dropped (its rings full, no ring): precorder_dropped */
	char exe[SONDE_PATH_MAX];
	char cmdline[SONDE_PATH_MAX];    /* NUL-separated */
	uint32_t cmdline_len;
	int32_t ppid;
};

static size_t read_file(const char *path, char *buf, size_t n)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return 0;
	size_t k = fread(buf, 1, n, f);
	fclose(f);
	return k;
}

int precorder_open(struct engine *e, const char *dir, char *err, size_t n)
{
	struct precorder *r = calloc(1, sizeof *r);
	if (!r) {
		snprintf(err, n, "out of memory");
		return -1;
	}
	if (recorder_open(&r->rec, dir, RECORDER_EVENTS, err, n)) {
		free(r);
		return -1;
	}
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/exe", (int)e->t.pid);
	ssize_t k = readlink(path, r->exe, sizeof r->exe - 1);
	r->exe[k > 0 ? k : 0] = 0;
	snprintf(path, sizeof path, "/proc/%d/cmdline", (int)e->t.pid);
	r->cmdline_len = (uint32_t)read_file(path, r->cmdline, sizeof r->cmdline);
	char stat[512];
	snprintf(path, sizeof path, "/proc/%d/stat", (int)e->t.pid);
	size_t sl = read_file(path, stat, sizeof stat - 1);
	stat[sl] = 0;
	const char *rp = strrchr(stat, ')');
	int ppid;
	if (rp && sscanf(rp + 1, " %*c %d", &ppid) == 1)
		r->ppid = ppid;
	e->rec = r;
	return 0;
}

static void flush_chunk(struct precorder *r, struct pr_thread *t)
{
	recorder_chunk_buf(&r->rec, t->slot, t->base_tsc, &t->seq, t->buf, &t->used);
}

static void read_comm(pid_t pid, pid_t tid, char *out)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/task/%d/comm", (int)pid, (int)tid);
	FILE *f = fopen(path, "r");
	out[0] = 0;
	if (f) {
		if (fgets(out, SONDE_COMM_MAX, f))
			out[strcspn(out, "\n")] = 0;
		fclose(f);
	}
}

static int32_t *hash_slot(struct precorder *r, pid_t tid)
{
	uint32_t i = ((uint32_t)tid * 2654435761u) & (r->hcap - 1);
	while (r->hash[i] >= 0 && r->th[r->hash[i]].tid != tid)
		i = (i + 1) & (r->hcap - 1);
	return &r->hash[i];
}

/* The thread of tid, created on its first hit; NULL when out of slots. */
static struct pr_thread *thread_of(struct engine *e, struct precorder *r, pid_t tid, uint64_t now)
{
	if (r->hcap) {
		int32_t *h = hash_slot(r, tid);
		if (*h >= 0 && !r->th[*h].ended)
			return &r->th[*h];
	}
	if (r->nth >= SONDE_MAX_THREADS)
		return NULL;
	if (r->nth * 2 >= r->hcap) { /* grow the hash (and rebuild it) */
		uint32_t cap = r->hcap ? r->hcap * 2 : 64;
		int32_t *h = malloc(sizeof *h * cap);
		if (!h)
			return NULL;
		free(r->hash);
		r->hash = h;
		r->hcap = cap;
		for (uint32_t i = 0; i < cap; i++)
			h[i] = -1;
		for (uint32_t i = 0; i < r->nth; i++)
			if (!r->th[i].ended)
				*hash_slot(r, r->th[i].tid) = (int32_t)i;
	}
	if (r->nth == r->cap) {
		uint32_t cap = r->cap ? r->cap * 2 : 16;
		struct pr_thread *v = realloc(r->th, sizeof *v * cap);
		if (!v)
			return NULL;
		r->th = v;
		r->cap = cap;
	}
	uint8_t *buf = malloc(PR_PAYLOAD);
	if (!buf)
		return NULL;
	struct pr_thread *t = &r->th[r->nth];
	memset(t, 0, sizeof *t);
	t->tid = tid;
	t->slot = r->nth;
	t->buf = buf;
	t->start_tsc = t->last_tsc = now;
	read_comm(e->t.pid, tid, t->comm);
	*hash_slot(r, tid) = (int32_t)r->nth;
	r->nth++;
	return t;
}

void precorder_hit(struct hit *h, struct probe *p, int event, int vkind, int64_t iv, double fv, const char *sv)
{
	if (h->e->rec)
		precorder_event(h->e, h->th->tid, h->ticks ? h->ticks : clock_ticks(), p, event, vkind, iv, fv, sv);
}

void precorder_thread_comm(struct engine *e, pid_t tid, const char *comm)
{
	struct precorder *r = e->rec;
	if (!r || !r->hcap || !comm[0])
		return;
	int32_t *h = hash_slot(r, tid);
	if (*h >= 0 && !r->th[*h].comm[0])
		snprintf(r->th[*h].comm, sizeof r->th[*h].comm, "%s", comm);
}

void precorder_dropped(struct engine *e, uint64_t n)
{
	if (e->rec)
		e->rec->dropped += n;
}

void precorder_event(struct engine *e, pid_t tid, uint64_t now, struct probe *p, int event, int vkind, int64_t iv,
                     double fv, const char *sv)
{
	struct precorder *r = e->rec;
	if (!r)
		return;
	struct pr_thread *t = thread_of(e, r, tid, now);
	if (!t) {
		r->lost++;
		return;
	}
	if (now < t->last_tsc) /* another CPU's counter a little behind: keep the thread's order */
		now = t->last_tsc;
	if (t->used + PR_MAX_REC > PR_PAYLOAD)
		flush_chunk(r, t);
	if (!t->used)
		t->base_tsc = t->last_tsc = now;
	uint8_t *o = t->buf + t->used;
	int n = tr_put_varint(o, (now - t->last_tsc) << 2 | TR_EXT);
	o[n++] = TRX_PROBE;
	uint8_t f[PR_MAX_REC];
	int k = tr_put_varint(f, (uint64_t)(uint32_t)p->id);
	k += tr_put_varint(f + k, (uint64_t)event);
	k += tr_put_varint(f + k, (uint64_t)vkind);
	if (vkind == TRV_INT) {
		k += tr_put_varint(f + k, tr_zigzag(iv));
	} else if (vkind == TRV_FLOAT) {
		memcpy(f + k, &fv, 8);
		k += 8;
	} else if (vkind == TRV_STR) {
		size_t len = strlen(sv);
		if (len > PR_MAX_STR)
			len = PR_MAX_STR;
		k += tr_put_varint(f + k, len);
		memcpy(f + k, sv, len);
		k += (int)len;
	}
	n += tr_put_varint(o + n, (uint64_t)k);
	memcpy(o + n, f, (size_t)k);
	t->used += (uint32_t)(n + k);
	t->last_tsc = now;
	t->hits++;
	r->hits++;
}

void precorder_thread_end(struct engine *e, pid_t tid)
{
	struct precorder *r = e->rec;
	if (!r || !r->hcap)
		return;
	int32_t *h = hash_slot(r, tid);
	if (*h < 0 || r->th[*h].ended)
		return;
	struct pr_thread *t = &r->th[*h];
	flush_chunk(r, t);
	free(t->buf);
	t->buf = NULL;
	t->ended = 1;
	t->end_tsc = clock_ticks();
	if (t->end_tsc < t->last_tsc)
		t->end_tsc = t->last_tsc;
	/* The tid may be reused by a new thread: it gets a new slot.  Rebuild
	 * the hash without the ended thread (open addressing has no delete). */
	for (uint32_t i = 0; i < r->hcap; i++)
		r->hash[i] = -1;
	for (uint32_t i = 0; i < r->nth; i++)
		if (!r->th[i].ended)
			*hash_slot(r, r->th[i].tid) = (int32_t)i;
}

int precorder_close(struct engine *e, char *err, size_t n)
{
	struct precorder *r = e->rec;
	if (!r)
		return 0;
	e->rec = NULL;
	if (n)
		err[0] = 0;
	int status = INT32_MIN;
	if (e->t.gone)
		status = WIFEXITED(e->t.status) ? WEXITSTATUS(e->t.status) : -WTERMSIG(e->t.status);
	struct recorder *rec = &r->rec;
	uint64_t now = clock_ticks();
	for (uint32_t i = 0; i < r->nth; i++) {
		struct pr_thread *t = &r->th[i];
		if (!t->ended) {
			flush_chunk(r, t);
			t->end_tsc = now > t->last_tsc ? now : t->last_tsc;
		}
	}
	recorder_meta_common(rec, r->exe, r->cmdline, r->cmdline_len, "sonde probe", REC_MODE_PROBES, status);
	struct meta_buf *mb = &rec->meta;
	char num[64];
	meta_add(mb, "probe_target", e->t.launched ? "launched" : "attached");
	snprintf(num, sizeof num, "%llu", (unsigned long long)r->hits);
	meta_add(mb, "probe_records", num);
	snprintf(num, sizeof num, "%d", e->nprobes);
	meta_add(mb, "probes", num);
	for (int i = 0; i < e->nprobes; i++) {
		struct probe *p = e->probes[i];
		char key[48];
		snprintf(key, sizeof key, "probe.%d", p->id);
		meta_add(mb, key, p->spec);
		snprintf(key, sizeof key, "probe.%d.kind", p->id);
		meta_add(mb, key, p->ops->name);
		snprintf(key, sizeof key, "probe.%d.hits", p->id);
		snprintf(num, sizeof num, "%llu", (unsigned long long)p->hits);
		meta_add(mb, key, num);
	}
	if (r->dropped) { /* events the agent could not keep (docs/PROBES.md "Recording on the agent") */
		snprintf(num, sizeof num, "%llu", (unsigned long long)r->dropped);
		char key[32];
		snprintf(key, sizeof key, "lost.%d", REC_LOST_RING_EVENTS);
		meta_add(mb, key, num);
	}
	if (r->lost) { /* hits of threads beyond SONDE_MAX_THREADS */
		snprintf(num, sizeof num, "%llu", (unsigned long long)r->lost);
		char key[32];
		snprintf(key, sizeof key, "lost.%d", REC_LOST_THREAD_SLOTS);
		meta_add(mb, key, num);
	}
	int rc = recorder_profile(rec, err, n);
	if (rec->prof.f) {
		struct rec_process pr;
		memset(&pr, 0, sizeof pr);
		memcpy(pr.exe, r->exe, sizeof pr.exe);
		pr.cmdline_len = r->cmdline_len;
		memcpy(pr.cmdline, r->cmdline, sizeof pr.cmdline);
		pr.index = 0;
		pr.pid = e->t.pid;
		pr.ppid = r->ppid;
		pr.exit_status = status;
		if (e->t.gone && WIFEXITED(e->t.status))
			pr.flags |= REC_PROC_ENDED_BY_EXIT;
		if (e->t.gone && WIFSIGNALED(e->t.status))
			pr.flags |= REC_PROC_KILLED;
		pr.start_tsc = rec->c0.ticks;
		pr.end_tsc = rec->c1.ticks;
		writer_put(&rec->prof, REC_PROCESS, &pr, sizeof pr, NULL, 0);
		for (uint32_t i = 0; i < r->nth; i++) {
			struct pr_thread *t = &r->th[i];
			struct rec_thread rt;
			memset(&rt, 0, sizeof rt);
			rt.index = t->slot;
			rt.proc = 0;
			rt.tid = t->tid;
			memcpy(rt.comm, t->comm, sizeof rt.comm);
			rt.comm[sizeof rt.comm - 1] = 0;
			rt.flags = t->ended ? REC_THREAD_EXITED : 0;
			rt.start_tsc = t->start_tsc;
			rt.end_tsc = t->end_tsc;
			writer_put(&rec->prof, REC_THREAD, &rt, sizeof rt, NULL, 0);
		}
		if (recorder_close(rec, rc ? NULL : err, rc ? 0 : n))
			rc = -1;
	}
	for (uint32_t i = 0; i < r->nth; i++)
		free(r->th[i].buf);
	free(r->th);
	free(r->hash);
	free(r);
	return rc ? -1 : 0;
}
