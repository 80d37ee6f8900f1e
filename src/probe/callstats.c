/* callstats.c — a function probe's counts (callstats.h). */
#include "probe/callstats.h"

#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "probe/output.h"

void callstats_init(struct call_stats *c)
{
	memset(c, 0, sizeof *c);
	c->min = ~0ull;
}

void callstats_return(struct call_stats *c, uint64_t ns)
{
	c->returns++;
	c->total += ns;
	if (ns < c->min)
		c->min = ns;
	if (ns > c->max)
		c->max = ns;
}

void callstats_caller(struct call_stats *c, uint64_t ret)
{
	callstats_caller_n(c, ret, 1);
}

void callstats_caller_n(struct call_stats *c, uint64_t ret, uint64_t k)
{
	int i;
	for (i = 0; i < c->ncl && c->cl[i].ret != ret; i++)
		;
	if (i == c->ncl && c->ncl < CALLSTATS_MAX_CALLERS) {
		if (c->ncl == c->capcl) {
			int cap = c->capcl ? c->capcl * 2 : 16;
			struct callstats_site *v = realloc(c->cl, (size_t)cap * sizeof *v);
			if (v) {
				c->cl = v;
				c->capcl = cap;
			}
		}
		if (c->ncl < c->capcl)
			c->cl[c->ncl++] = (struct callstats_site){ ret, 0 };
	}
	if (i < c->ncl)
		c->cl[i].n += k;
	else
		c->lost += k;
}

struct named {
	char name[256];
	uint64_t n;
};

static int by_count(const void *a, const void *b)
{
	const struct named *x = a, *y = b;
	return x->n < y->n ? 1 : x->n > y->n ? -1 : strcmp(x->name, y->name);
}

/* Callers merged by name, most calls first; *out is freed by the caller. */
static int callers(const struct call_stats *c, callstats_namer name, void *arg, struct named **out)
{
	struct named *v = calloc((size_t)c->ncl + 1, sizeof *v);
	int k = 0;
	for (int i = 0; v && i < c->ncl; i++) {
		char buf[256];
		const char *nm = name(arg, c->cl[i].ret, buf, sizeof buf);
		int j;
		for (j = 0; j < k && strcmp(v[j].name, nm); j++)
			;
		if (j == k)
			snprintf(v[k++].name, sizeof v->name, "%s", nm);
		v[j].n += c->cl[i].n;
	}
	if (v)
		qsort(v, (size_t)k, sizeof *v, by_count);
	*out = v;
	return k;
}

/* The returns with a time. */
static uint64_t timed(const struct call_stats *c)
{
	return c->returns > c->untimed ? c->returns - c->untimed : 0;
}

void callstats_json(const struct call_stats *c, struct json *j, callstats_namer name, void *arg)
{
	uint64_t t = timed(c);
	json_uint(j, "calls", c->calls);
	json_uint(j, "returns", c->returns);
	json_uint(j, "total_ns", c->total);
	json_uint(j, "min_ns", t ? c->min : 0);
	json_uint(j, "max_ns", c->max);
	json_uint(j, "avg_ns", t ? c->total / t : 0);
	struct named *v;
	int k = callers(c, name, arg, &v);
	json_arr_begin(j, "callers");
	for (int i = 0; i < k; i++) {
		json_obj_begin(j, NULL);
		json_str(j, "name", v[i].name);
		json_uint(j, "calls", v[i].n);
		json_obj_end(j);
	}
	json_arr_end(j);
	free(v);
}

void callstats_table(const struct call_stats *c, FILE *f, callstats_namer name, void *arg)
{
	char a[32], b[32], m[32], t[32];
	uint64_t nt = timed(c);
	fprintf(f, "calls %llu, total %s, avg %s, min %s, max %s", (unsigned long long)c->calls,
	        fmt_time(c->total, t, sizeof t), fmt_time(nt ? c->total / nt : 0, a, sizeof a),
	        fmt_time(nt ? c->min : 0, b, sizeof b), fmt_time(c->max, m, sizeof m));
	struct named *v;
	int k = callers(c, name, arg, &v);
	for (int i = 0; i < k && i < 3; i++)
		fprintf(f, "%s%s x%llu", i ? ", " : "; callers: ", v[i].name, (unsigned long long)v[i].n);
	if (k > 3)
		fprintf(f, ", ...");
	free(v);
}

void callstats_free(struct call_stats *c)
{
	free(c->cl);
	c->cl = NULL;
	c->ncl = c->capcl = 0;
}
