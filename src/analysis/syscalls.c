/* syscalls.c (analysis) — REC_SYSCALLS records into per-function and
 * per-process rows.  Every value of the record is bounded before use. */
#include <stdlib.h>
#include <string.h>

#include "analysis/syscalls.h"
#include "common/sys_session.h"

#define SYS_NAME(id, name, bytes) name,
static const char *const names[] = { SYS_CALLS(SYS_NAME) };
#undef SYS_NAME

const char *sca_call_name(uint32_t call)
{
	return call < SYS_NCALLS ? names[call] : NULL;
}

struct load_ctx {
	const struct recording *r;
	const struct fn_table *ft;
	struct sca *a;
	uint64_t maxt;
};

/* Add s to the row of (fn, pid, call) in v[0..*n) (found by a linear scan:
 * the rows are few, one per distinct function and call). */
static int add(struct sca_row **v, uint32_t *n, const struct sca_row *s)
{
	for (uint32_t i = 0; i < *n; i++) {
		struct sca_row *d = &(*v)[i];
		if (d->fn == s->fn && d->pid == s->pid && d->call == s->call) {
			d->count = rd_sat_add(d->count, s->count);
			d->bytes = rd_sat_add(d->bytes, s->bytes);
			d->errors = rd_sat_add(d->errors, s->errors);
			d->ns += s->ns;
			return 0;
		}
	}
	struct sca_row *nv = realloc(*v, sizeof **v * (*n + 1));
	if (!nv)
		return -1;
	*v = nv;
	nv[(*n)++] = *s;
	return 0;
}

static int on_rec(void *arg, uint32_t type, const uint8_t *p, uint64_t len)
{
	struct load_ctx *c = arg;
	if (type != REC_SYSCALLS)
		return 0;
	struct rec_sys_hdr h;
	if (len < sizeof h || c->a->present)
		return RD_REC_DAMAGED;
	memcpy(&h, p, sizeof h);
	if (len - sizeof h != (uint64_t)h.count * sizeof(struct rec_sys) || h.count > SYS_TABLE_SLOTS ||
	    h.ncalls > 255)
		return RD_REC_DAMAGED;
	c->a->present = 1;
	c->a->lost = h.lost;
	for (uint32_t i = 0; i < h.count; i++) {
		struct rec_sys s;
		memcpy(&s, p + sizeof h + (uint64_t)i * sizeof s, sizeof s);
		struct rec_process *pr = rd_proc(c->r, s.proc);
		if (s.call >= SYS_NCALLS || !pr || s.ticks > c->maxt || s.errors > s.count ||
		    (s.func != SYS_NO_FUNC && !rd_func_valid(c->r, s.func)))
			return RD_REC_DAMAGED;
		struct sca_row row = { s.func == SYS_NO_FUNC ? FN_ROOT : fn_of(c->ft, c->r, s.func), 0, s.call,
		                       s.count, s.bytes, s.errors, rd_ns(c->r, (int64_t)s.ticks) };
		if (add(&c->a->by_fn, &c->a->nfn, &row))
			return RD_REC_NOMEM;
		row.fn = FN_ROOT;
		row.pid = pr->pid;
		if (add(&c->a->by_proc, &c->a->nproc, &row))
			return RD_REC_NOMEM;
	}
	return 0;
}

static int by_time(const void *x, const void *y)
{
	const struct sca_row *a = x, *b = y;
	if (a->ns != b->ns)
		return a->ns < b->ns ? 1 : -1;
	if (a->fn != b->fn)
		return a->fn < b->fn ? -1 : 1;
	return (a->call > b->call) - (a->call < b->call);
}

static int by_pid(const void *x, const void *y)
{
	const struct sca_row *a = x, *b = y;
	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	return (a->call > b->call) - (a->call < b->call);
}

int sca_load(const struct recording *r, const struct fn_table *ft, struct sca *a, char *err, size_t errlen)
{
	memset(a, 0, sizeof *a);
	struct load_ctx c = { r, ft, a, rd_max_ticks(r) };
	char path[4200];
	snprintf(path, sizeof path, "%s/%s", r->dir, SONDE_FILE_PROFILE);
	if (rd_each_record(path, SONDE_KIND_PROFILE, on_rec, &c, err, errlen) != 0) {
		sca_free(a);
		return -1;
	}
	if (a->nfn)
		qsort(a->by_fn, a->nfn, sizeof *a->by_fn, by_time);
	if (a->nproc)
		qsort(a->by_proc, a->nproc, sizeof *a->by_proc, by_pid);
	return 0;
}

void sca_free(struct sca *a)
{
	free(a->by_fn);
	free(a->by_proc);
	memset(a, 0, sizeof *a);
}
