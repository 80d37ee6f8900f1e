/* fnrows.c — functions matched across recordings (fnrows.h). */
#include "cli/fnrows.h"

#include <stdlib.h>
#include <string.h>

static void die_oom(void)
{
	cli_die(EXIT_DATA, "out of memory");
}

static const char *base_name(const char *p)
{
	const char *s = p ? strrchr(p, '/') : NULL;
	return s ? s + 1 : p ? p : "?";
}

static char *fn_key(const struct fn_info *f)
{
	const char *file = f->file ? base_name(f->file) : base_name(f->module);
	size_t n = strlen(f->name) + strlen(file) + 2;
	char *k = malloc(n);
	if (!k)
		die_oom();
	snprintf(k, n, "%s\t%s", f->name, file);
	return k;
}

void fnrows_load(const struct cli_opts *o, const char *dir, struct fn_input *in)
{
	in->o = *o;
	in->o.input = dir;
	load_profile(&in->o, &in->l, &in->p);
	in->keys = calloc(in->l.ft.n + 1, sizeof *in->keys);
	if (!in->keys)
		die_oom();
	for (uint32_t i = 1; i < in->l.ft.n; i++)
		in->keys[i] = fn_key(&in->l.ft.fns[i]);
}

void fnrows_free_input(struct fn_input *in)
{
	for (uint32_t i = 1; i < in->l.ft.n; i++)
		free(in->keys[i]);
	free(in->keys);
	profile_free(&in->p);
	load_free(&in->l);
}

struct fn_row *fnrows_add(struct fn_rows *s, char *key, const struct fn_info *fn)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 256;
		struct fn_row *v = realloc(s->v, sizeof *v * s->cap);
		if (!v)
			die_oom();
		s->v = v;
	}
	struct fn_row *r = &s->v[s->n++];
	memset(r, 0, sizeof *r);
	r->key = key;
	r->fn = fn;
	return r;
}

void fnrows_functions(const struct fn_input *in, int k, struct fn_rows *s)
{
	for (uint32_t i = 1; i < in->p.nfn; i++) {
		const struct fn_metrics *m = &in->p.fn[i];
		if (!m->calls && !m->incl)
			continue;
		struct fn_row *r = fnrows_add(s, strdup(in->keys[i]), &in->l.ft.fns[i]);
		if (!r->key)
			die_oom();
		r->calls[k] = m->calls;
		r->timed_calls[k] = m->timed_calls;
		r->excl[k] = rd_ns(in->l.r, m->excl);
		r->incl[k] = rd_ns(in->l.r, m->incl);
		r->excl_cpu[k] = rd_ns(in->l.r, m->excl_cpu);
		r->incl_cpu[k] = rd_ns(in->l.r, m->incl_cpu);
	}
}

static int by_key(const void *a, const void *b)
{
	return strcmp(((const struct fn_row *)a)->key, ((const struct fn_row *)b)->key);
}

void fnrows_fold(struct fn_rows *s)
{
	if (s->n)
		qsort(s->v, s->n, sizeof *s->v, by_key);
	size_t o = 0;
	for (size_t i = 0; i < s->n; i++) {
		if (o && !strcmp(s->v[o - 1].key, s->v[i].key)) {
			struct fn_row *d = &s->v[o - 1];
			for (int k = 0; k < 2; k++) {
				d->calls[k] += s->v[i].calls[k];
				d->timed_calls[k] += s->v[i].timed_calls[k];
				d->excl[k] += s->v[i].excl[k];
				d->incl[k] += s->v[i].incl[k];
				d->excl_cpu[k] += s->v[i].excl_cpu[k];
				d->incl_cpu[k] += s->v[i].incl_cpu[k];
			}
			free(s->v[i].key);
		} else {
			s->v[o++] = s->v[i];
		}
	}
	s->n = o;
}

void fnrows_free(struct fn_rows *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i].key);
	free(s->v);
	s->v = NULL;
	s->n = s->cap = 0;
}
