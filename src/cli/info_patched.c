/* info_patched.c — what `sonde info` says of the functions patched without
 * a rebuild (the META lines of cli/record_patch.c): per planned module, the
 * functions found, patched, and each one left out with the reason; per
 * module of the recording, how it was instrumented. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
