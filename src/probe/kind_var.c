/* kind_var.c — variable probes (var:LOCATION:EXPR: count, min, max, sum,
 * last and a log2 histogram of the value) and assertion probes
 * (assert:LOCATION:EXPR: hits, failures, the first failures with the
 * values of their variables).  The expression is compiled per probed
 * address, since a variable's location differs from one address to the next. */
#include "probe/kind.h"
#include "probe/probe.h"

#include "common/json.h"
#include "common/var_hist.h"
#include "common/trace_enc.h"
#include "probe/engine.h"
#include "probe/place.h"
#include "probe/ptrace/ptrace.h"
#include "probe/expr.h"
#include "proc/modules.h"
#include "probe/record.h"
#include "probe/resolve.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NBUCKETS VAR_HIST_BUCKETS
#define MAX_FIRST 5

struct vsite {
	struct expr *x;
	struct module *m;
};

struct vdata {
	struct vsite *s;
	int ns;
	int is_float;
	uint64_t count, unavailable, failures;
	int64_t imin, imax, ilast;
	__int128 isum;
	long double fmin, fmax, fsum, flast;
	uint64_t hist[NBUCKETS];   /* 0: <0 .. see bucket() */
	char *first[MAX_FIRST];
	int nfirst;
	char *last_err;
};

/* log2 buckets: 64 = 0; 65+k = [2^k, 2^(k+1)); 63-k = (-2^(k+1), -2^k] */
static int bucket(long double v)
{
	if (v == 0 || isnan((double)v))
		return 64;
	long double a = v < 0 ? -v : v;
	int k = a < 1 ? -1 : (int)floorl(log2l(a));
	if (k > 63)
		k = 63;
	if (k < 0)
		return v < 0 ? 63 : 65; /* |v| < 1 with the smallest magnitude bucket */
	return v < 0 ? 63 - k : 65 + k;
}

void var_unavailable(struct probe *p, const char *why)
{
	struct vdata *d = p->data;
	d->unavailable++;
	free(d->last_err);
	d->last_err = strdup(why);
}

/* Count the hit and evaluate the site's expression; an unavailable value
 * (optimised out here, unreadable memory) is counted, kept as the last error
 * and recorded as such.  Returns 0 when v holds a value. */
static int eval_hit(struct probe *p, struct hit *h, int role, struct expr_val *v)
{
	struct vdata *d = p->data;
	struct vsite *s = &d->s[role];
	char err[256];
	p->hits++;
	if (!expr_eval(s->x, h, s->m, v, err, sizeof err))
		return 0;
	var_unavailable(p, err);
	precorder_hit(h, p, TRP_HIT, TRV_STR, 0, 0, "unavailable");
	return -1;
}

static void var_pre(struct probe *p, struct hit *h, int role)
{
	struct expr_val v;
	if (eval_hit(p, h, role, &v))
		return;
	if (v.is_float)
		precorder_hit(h, p, TRP_HIT, TRV_FLOAT, 0, (double)v.f, NULL);
	else
		precorder_hit(h, p, TRP_HIT, TRV_INT, v.i, 0, NULL);
	var_account(p, &v);
}

int var_eval_env(struct probe *p, int role, const struct var_env *env, struct expr_val *v)
{
	char err[256];
	p->hits++;
	if (!expr_eval_env(var_site_expr(p, role), env, v, err, sizeof err))
		return 0;
	var_unavailable(p, err);
	return -1;
}

void assert_account(struct probe *p, int role, long tid, const struct expr_val *v)
{
	assert_count(p);
	if (v->is_float ? v->f == 0 : v->i == 0)
		assert_failed(p, role, tid);
}

void var_account(struct probe *p, const struct expr_val *vp)
{
	struct vdata *d = p->data;
	struct expr_val v = *vp;
	if (v.is_float && !d->is_float && d->count) {
		/* switch to floating statistics */
		d->fmin = (long double)d->imin;
		d->fmax = (long double)d->imax;
		d->fsum = (long double)d->isum;
	}
	if (v.is_float)
		d->is_float = 1;
	long double f = v.is_float ? v.f : (long double)v.i;
	if (d->is_float) {
		if (!d->count || f < d->fmin) d->fmin = f;
		if (!d->count || f > d->fmax) d->fmax = f;
		d->fsum += f;
		d->flast = f;
	} else {
		if (!d->count || v.i < d->imin) d->imin = v.i;
		if (!d->count || v.i > d->imax) d->imax = v.i;
		d->isum += v.i;
		d->ilast = v.i;
	}
	d->count++;
	d->hist[v.is_float ? bucket(f) : var_hist_bucket_i64(v.i)]++;
}

static void merge_unavailable(struct vdata *d, uint64_t unavailable, const char *why)
{
	if (unavailable) {
		d->unavailable += unavailable;
		free(d->last_err);
		d->last_err = strdup(why ? why : "unavailable");
	}
}

void var_merge_float(struct probe *p, const struct var_fagg *a)
{
	struct vdata *d = p->data;
	merge_unavailable(d, a->unavailable, a->why);
	if (!a->count)
		return;
	if (!d->is_float && d->count) { /* switch to floating statistics, as var_account */
		d->fmin = (long double)d->imin;
		d->fmax = (long double)d->imax;
		d->fsum = (long double)d->isum;
	}
	d->is_float = 1;
	if (!d->count || a->min < d->fmin) d->fmin = a->min;
	if (!d->count || a->max > d->fmax) d->fmax = a->max;
	d->fsum += a->sum;
	d->flast = a->last;
	d->count += a->count;
	for (int b = 0; b < NBUCKETS; b++)
		d->hist[b] += a->hist[b];
}

void var_merge(struct probe *p, const struct var_agg *a)
{
	struct vdata *d = p->data;
	merge_unavailable(d, a->unavailable, a->why);
	if (!a->count)
		return;
	if (d->is_float) {
		long double mn = (long double)a->min, mx = (long double)a->max;
		if (!d->count || mn < d->fmin) d->fmin = mn;
		if (!d->count || mx > d->fmax) d->fmax = mx;
		d->fsum += (long double)a->sum;
		d->flast = (long double)a->last;
	} else {
		if (!d->count || a->min < d->imin) d->imin = a->min;
		if (!d->count || a->max > d->imax) d->imax = a->max;
		d->isum += a->sum;
		d->ilast = a->last;
	}
	d->count += a->count;
	for (int b = 0; b < NBUCKETS; b++)
		d->hist[b] += a->hist[b];
}

static void assert_pre(struct probe *p, struct hit *h, int role)
{
	struct vdata *d = p->data;
	struct vsite *s = &d->s[role];
	struct expr_val v;
	if (eval_hit(p, h, role, &v))
		return;
	int ok = v.is_float ? v.f != 0 : v.i != 0;
	if (h->e->rec) {
		char vals[400], buf[420];
		if (!ok)
			expr_values(s->x, vals, sizeof vals);
		snprintf(buf, sizeof buf, "%s%s%s", ok ? "pass" : "fail", ok || !vals[0] ? "" : ": ", ok ? "" : vals);
		precorder_hit(h, p, TRP_HIT, TRV_STR, 0, 0, buf);
	}
	assert_account(p, role, (long)h->th->tid, &v);
}

void assert_failed(struct probe *p, int role, long tid)
{
	struct vdata *d = p->data;
	d->failures++;
	assert_first(p, role, tid);
}

void assert_first(struct probe *p, int role, long tid)
{
	struct vdata *d = p->data;
	if (d->nfirst < MAX_FIRST) {
		char vals[400], buf[512];
		expr_values(d->s[role].x, vals, sizeof vals);
		snprintf(buf, sizeof buf, "tid %ld: %s", tid, vals[0] ? vals : "(no variables)");
		d->first[d->nfirst++] = strdup(buf);
	}
}

void var_reset(struct probe *p)
{
	struct vdata *d = p->data;
	for (int i = 0; i < d->nfirst; i++)
		free(d->first[i]);
	free(d->last_err);
	struct vsite *s = d->s;
	int ns = d->ns;
	memset(d, 0, sizeof *d);
	d->s = s;
	d->ns = ns;
}

void assert_set(struct probe *p, uint64_t evaluated, uint64_t failures, uint64_t unavailable, const char *why)
{
	struct vdata *d = p->data;
	var_reset(p);
	d->count = evaluated;
	d->failures = failures;
	d->unavailable = unavailable;
	if (unavailable)
		d->last_err = strdup(why ? why : "unavailable");
}

int var_data_new(struct probe *p, int nsites)
{
	struct vdata *d = calloc(1, sizeof *d);
	p->data = d;
	if (!d || !(d->s = calloc((size_t)nsites, sizeof *d->s)))
		return -1;
	return 0;
}

void var_site_set(struct probe *p, int i, struct expr *x, struct module *m)
{
	struct vdata *d = p->data;
	d->s[i].x = x;
	d->s[i].m = m;
	if (i >= d->ns)
		d->ns = i + 1;
}

struct expr *var_site_expr(struct probe *p, int i)
{
	struct vdata *d = p->data;
	return d->s[i].x;
}

void assert_count(struct probe *p)
{
	struct vdata *d = p->data;
	d->count++;
}

static void bucket_range(int b, long double *lo, long double *hi)
{
	if (b == 64) { *lo = *hi = 0; return; }
	if (b > 64) { *lo = ldexpl(1, b - 65); *hi = ldexpl(1, b - 64); if (b == 65) *lo = 0; return; }
	*hi = -ldexpl(1, 63 - b);
	*lo = -ldexpl(1, 64 - b);
	if (b == 63) *hi = 0;
}

static void num(struct json *j, const char *k, struct vdata *d, int64_t i, long double f)
{
	if (d->is_float)
		json_double(j, k, (double)f);
	else
		json_int(j, k, i);
}

static void var_json(struct probe *p, struct json *j)
{
	struct vdata *d = p->data;
	if (!d)
		return;
	json_uint(j, "count", d->count);
	json_uint(j, "unavailable", d->unavailable);
	json_str(j, "type", d->is_float ? "float" : "int");
	if (d->count) {
		num(j, "min", d, d->imin, d->fmin);
		num(j, "max", d, d->imax, d->fmax);
		if (d->is_float)
			json_double(j, "sum", (double)d->fsum);
		else if (d->isum >= INT64_MIN && d->isum <= INT64_MAX)
			json_int(j, "sum", (int64_t)d->isum);
		else
			json_double(j, "sum", (double)d->isum);
		num(j, "last", d, d->ilast, d->flast);
		json_double(j, "mean", d->is_float ? (double)(d->fsum / d->count) : (double)d->isum / (double)d->count);
	}
	json_arr_begin(j, "histogram");
	for (int b = 0; b < NBUCKETS; b++)
		if (d->hist[b]) {
			long double lo, hi;
			bucket_range(b, &lo, &hi);
			json_obj_begin(j, NULL);
			json_double(j, "lo", (double)lo);
			json_double(j, "hi", (double)hi);
			json_uint(j, "count", d->hist[b]);
			json_obj_end(j);
		}
	json_arr_end(j);
	if (d->last_err)
		json_str(j, "unavailable_why", d->last_err);
}

static void var_table(struct probe *p, FILE *f)
{
	struct vdata *d = p->data;
	if (!d)
		return;
	if (!d->count) {
		fprintf(f, "no value read%s%s", d->last_err ? ": " : "", d->last_err ? d->last_err : "");
		return;
	}
	if (d->is_float)
		fprintf(f, "count %llu, min %Lg, max %Lg, sum %Lg, mean %Lg, last %Lg",
		        (unsigned long long)d->count, d->fmin, d->fmax, d->fsum, d->fsum / d->count, d->flast);
	else
		fprintf(f, "count %llu, min %lld, max %lld, sum %.0f, mean %.3g, last %lld",
		        (unsigned long long)d->count, (long long)d->imin, (long long)d->imax, (double)d->isum,
		        (double)d->isum / (double)d->count, (long long)d->ilast);
	if (d->unavailable)
		fprintf(f, ", unavailable %llu", (unsigned long long)d->unavailable);
}

static void assert_json(struct probe *p, struct json *j)
{
	struct vdata *d = p->data;
	if (!d)
		return;
	json_uint(j, "evaluated", d->count);
	json_uint(j, "failures", d->failures);
	json_uint(j, "passes", d->count - d->failures);
	json_uint(j, "unavailable", d->unavailable);
	json_arr_begin(j, "first_failures");
	for (int i = 0; i < d->nfirst; i++)
		json_str(j, NULL, d->first[i]);
	json_arr_end(j);
	if (d->last_err)
		json_str(j, "unavailable_why", d->last_err);
}

static void assert_table(struct probe *p, FILE *f)
{
	struct vdata *d = p->data;
	if (!d)
		return;
	fprintf(f, "failures %llu of %llu", (unsigned long long)d->failures, (unsigned long long)d->count);
	if (d->nfirst)
		fprintf(f, "; first: %s", d->first[0]);
	if (d->unavailable)
		fprintf(f, "; unavailable %llu", (unsigned long long)d->unavailable);
}

static void fr(struct probe *p)
{
	struct vdata *d = p->data;
	if (!d)
		return;
	for (int i = 0; i < d->ns; i++)
		expr_free(d->s[i].x);
	free(d->s);
	for (int i = 0; i < d->nfirst; i++)
		free(d->first[i]);
	free(d->last_err);
	free(d);
}

const struct kind_ops kind_var = {
	.name = "var", .needs_location = 1, .setup = kind_place, .pre = var_pre,
	.json = var_json, .table = var_table, .free = fr,
};

const struct kind_ops kind_assert = {
	.name = "assert", .needs_location = 1, .setup = kind_place, .pre = assert_pre,
	.json = assert_json, .table = assert_table, .free = fr,
};
