/* info_patched.c — what `sonde info` says of the functions patched without
 * a rebuild (the META lines of cli/record_patch.c): per planned module, the
 * functions found, patched, and each one left out with the reason; per
 * module of the recording, how it was instrumented. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/functions.h"
#include "cli/info_patched.h"
#include "common/json.h"

static const char *meta_k(const struct recording *r, const char *fmt, unsigned a, unsigned b)
{
	char k[96];
	snprintf(k, sizeof k, fmt, a, b);
	return rd_meta(r, k);
}

const char *info_module_how(const struct recording *r, uint32_t slot)
{
	const char *h = meta_k(r, "module.%u.how", slot, 0);
	return h && !strcmp(h, "patched") ? "patched" : "sleds";
}

const char *info_module_stubs(const struct recording *r, uint32_t slot)
{
	const char *s = meta_k(r, "module.%u.stubs", slot, 0);
	return s && (!strcmp(s, "prebuilt") || !strcmp(s, "moved") || !strcmp(s, "asked")) ? s : NULL;
}

/* One left-out line "0xADDR\tNAME\tWHY" split in place into its parts. */
static int split(const char *line, char *buf, size_t n, char **addr, char **name, char **why)
{
	snprintf(buf, n, "%s", line);
	char *t1 = strchr(buf, '\t'), *t2 = t1 ? strchr(t1 + 1, '\t') : NULL;
	if (!t1 || !t2)
		return -1;
	*t1 = *t2 = 0;
	*addr = buf;
	*name = t1 + 1;
	*why = t2 + 1;
	return 0;
}

void info_patched_json(const struct recording *r, struct json *j)
{
	json_arr_begin(j, "patched");
	for (unsigned i = 0; meta_k(r, "patched.%u.path", i, 0); i++) {
		json_obj_begin(j, NULL);
		json_str(j, "path", meta_k(r, "patched.%u.path", i, 0));
		const char *s;
		json_uint(j, "functions_found", (s = meta_k(r, "patched.%u.found", i, 0)) ? strtoull(s, NULL, 10) : 0);
		json_uint(j, "patchable", (s = meta_k(r, "patched.%u.patchable", i, 0)) ? strtoull(s, NULL, 10) : 0);
		json_uint(j, "int3", (s = meta_k(r, "patched.%u.int3", i, 0)) ? strtoull(s, NULL, 10) : 0);
		json_uint(j, "retargeted", (s = meta_k(r, "patched.%u.retargeted", i, 0)) ? strtoull(s, NULL, 10) : 0);
		/* counted, not timed (record --timing); which: the report's "timed" */
		json_uint(j, "counted_only", (s = meta_k(r, "patched.%u.counted", i, 0)) ? strtoull(s, NULL, 10) : 0);
		json_double(j, "plan_ms", (s = meta_k(r, "patched.%u.plan_ms", i, 0)) ? strtod(s, NULL) : 0);
		json_uint(j, "left_out_count", (s = meta_k(r, "patched.%u.left", i, 0)) ? strtoull(s, NULL, 10) : 0);
		json_arr_begin(j, "left_out");
		for (unsigned k = 0; (s = meta_k(r, "patched.%u.left.%u", i, k)); k++) {
			char buf[800], *a, *n, *w;
			if (split(s, buf, sizeof buf, &a, &n, &w))
				continue;
			json_obj_begin(j, NULL);
			json_str(j, "address", a);
			json_str(j, "name", n[0] ? n : NULL);
			json_str(j, "why", w);
			json_obj_end(j);
		}
		json_arr_end(j);
		json_obj_end(j);
	}
	json_arr_end(j);
}

void info_patched_table(const struct recording *r)
{
	for (unsigned i = 0; meta_k(r, "patched.%u.path", i, 0); i++) {
		const char *found = meta_k(r, "patched.%u.found", i, 0), *ok = meta_k(r, "patched.%u.patchable", i, 0);
		const char *left = meta_k(r, "patched.%u.left", i, 0), *s;
		const char *int3 = meta_k(r, "patched.%u.int3", i, 0);
		unsigned long long nj = ok ? strtoull(ok, NULL, 10) : 0, ni = int3 ? strtoull(int3, NULL, 10) : 0;
		printf("patched:      %s: %s functions found, %llu take a jump, %llu an int3 (exact, a signal a call), "
		       "%s left out (not recorded)%s\n", meta_k(r, "patched.%u.path", i, 0), found ? found : "?",
		       nj >= ni ? nj - ni : 0, ni, left ? left : "?", left && strcmp(left, "0") ? ":" : "");
		const char *counted = meta_k(r, "patched.%u.counted", i, 0);
		if (counted && strcmp(counted, "0"))
			printf("  %s of them counted, not timed (record --timing; report marks them untimed)\n", counted);
		unsigned k;
		for (k = 0; k < 10 && (s = meta_k(r, "patched.%u.left.%u", i, k)); k++) {
			char buf[800], *a, *n, *w;
			if (!split(s, buf, sizeof buf, &a, &n, &w))
				printf("  %s %s: %s\n", a, n[0] ? n : "(no name)", w);
		}
		if (left && strtoull(left, NULL, 10) > k)
			printf("  ... and %llu more (sonde info --format=json lists them)\n",
			       (unsigned long long)(strtoull(left, NULL, 10) - k));
	}
}

/* One switch line "PLAN\tNUMBER\tMS\tTO\tCALLS\tMEAN_NS" (record_patch.c). */
struct sw_line {
	unsigned plan, fn;
	double ms;
	char to[16];
	unsigned long long calls, mean_ns;
};

static int sw_parse(const char *s, struct sw_line *w)
{
	return s && sscanf(s, "%u\t%u\t%lf\t%15[a-z]\t%llu\t%llu", &w->plan, &w->fn, &w->ms, w->to, &w->calls,
	                   &w->mean_ns) == 6 ? 0 : -1;
}

/* The name of function number fn of plan `plan`: through the first module
 * slot patched from that plan (META module.<slot>.patched). */
static const char *sw_name(const struct recording *r, const struct fn_table *ft, unsigned plan, unsigned fn)
{
	for (uint32_t s = 0; ft && s < r->nmodule_slots && s < ft->nslots; s++) {
		const char *v = meta_k(r, "module.%u.patched", s, 0);
		if (!v || strtoul(v, NULL, 10) != plan || !ft->map[s] || !r->modules[s] || fn >= r->modules[s]->r.nfuncs)
			continue;
		return ft->fns[ft->map[s][fn]].name;
	}
	return NULL;
}

static unsigned long long meta_n(const struct recording *r, const char *k)
{
	const char *v = rd_meta(r, k);
	return v ? strtoull(v, NULL, 10) : 0;
}

void info_timing_json(const struct recording *r, const struct fn_table *ft, struct json *j)
{
	if (!rd_meta(r, "timing.windows"))
		return;
	json_obj_begin(j, "timing_switches");
	json_uint(j, "window_ms", meta_n(r, "timing.window_ms"));
	json_uint(j, "windows", meta_n(r, "timing.windows"));
	json_uint(j, "probes", meta_n(r, "timing.probes"));
	json_uint(j, "switches", meta_n(r, "timing.switches"));
	json_arr_begin(j, "kept");
	const char *s;
	for (unsigned k = 0; (s = meta_k(r, "timing.switch.%u", k, 0)); k++) {
		struct sw_line w;
		if (sw_parse(s, &w))
			continue;
		json_obj_begin(j, NULL);
		json_double(j, "at_ms", w.ms);
		json_str(j, "function", sw_name(r, ft, w.plan, w.fn));
		json_uint(j, "patched", w.plan);
		json_uint(j, "number", w.fn);
		json_str(j, "to", w.to);
		json_str(j, "why", strcmp(w.to, "counted") ? "slow or rare again when looked at" : "short and frequent");
		json_uint(j, "window_calls", w.calls);
		json_uint(j, "window_mean_ns", w.mean_ns);
		json_obj_end(j);
	}
	json_arr_end(j);
	json_obj_end(j);
}

void info_timing_table(const struct recording *r, const struct fn_table *ft)
{
	if (!rd_meta(r, "timing.windows"))
		return;
	unsigned long long total = meta_n(r, "timing.switches");
	unsigned long long nw = meta_n(r, "timing.windows"), np = meta_n(r, "timing.probes");
	printf("timing:       auto: %llu switch%s in %llu window%s of %llu ms, %llu probe%s (a counted function timed "
	       "again for a window)\n", total, total == 1 ? "" : "es", nw, nw == 1 ? "" : "s", meta_n(r, "timing.window_ms"),
	       np, np == 1 ? "" : "s");
	const char *s;
	unsigned k;
	for (k = 0; k < 10 && (s = meta_k(r, "timing.switch.%u", k, 0)); k++) {
		struct sw_line w;
		if (sw_parse(s, &w))
			continue;
		const char *n = sw_name(r, ft, w.plan, w.fn);
		printf("  %10.3f ms  %-8s %s (%llu calls in the window, %llu ns each)\n", w.ms, w.to, n ? n : "?", w.calls,
		       w.mean_ns);
	}
	if (total > k)
		printf("  ... and %llu more (sonde info --format=json lists them)\n", total - k);
}
