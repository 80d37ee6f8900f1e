/* record_patch.c — see record_patch.h. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "attach/agent.h"
#include "cli/cli.h"
#include "cli/record_patch.h"
#include "common/session.h"
#include "record/record.h"

int record_patch_serve(void *arg)
{
	struct record_patch *p = arg;
	if (!p->s || (!p->set.n && !p->set.nglobs && !p->set.exec_follow))
		return 0;
	int n = instr_serve(p->s->hdr, p->s->size, &p->set);
	instr_policy_step(p->policy, p->s->hdr, p->s->size, &p->set);
	return n;
}

int record_patch_plan(const struct cli_opts *o, const char *prog_path, struct session *s, struct record_patch *p,
                      char *err, size_t n)
{
	memset(p, 0, sizeof *p);
	p->s = s;
	p->set.timing = o->timing;
	p->set.ntimed = o->ntimed; /* (sonde-cc builds' sleds are counted under none without --timed) */
	if (o->no_patch) {
		if (o->nmodules || o->nexecs) {
			snprintf(err, n, "--%s patches functions: it cannot go with --no-patch", o->nmodules ? "module" : "exec");
			return -1;
		}
		return 0;
	}
	p->set.globs = o->modules;
	p->set.nglobs = o->nmodules;
	p->set.live = o->pid > 0; /* record -p: the regions built now are for a running program */
	p->set.timed = o->timed;
	p->set.ntimed = o->ntimed;
	p->set.exec_globs = o->execs;
	p->set.nexec_globs = o->nexecs;
	char why[600];
	int rc = 1;
	if (o->pid > 0 || !o->nexecs || instr_glob_match(o->execs, o->nexecs, prog_path)) {
		rc = instr_plan(prog_path, &p->set.plans[0], why, sizeof why);
		if (rc < 0 && (o->pid <= 0 || (agent_target_alive(o->pid) && !agent_target_exiting(o->pid))))
			cli_warn("%s", why); /* (an attached process gone or exiting already: the attach says so, in one line) */
		else if (rc == 0)
			p->set.n = 1;
		if (rc == 0)
			instr_plan_timing(&p->set.plans[0], p->set.timing, o->timed, o->ntimed);
	}
	/* The programs exec'd in the tree, launched or attached, are planned
	 * when they ask (record --exec: only those matching; the launched
	 * program too, while an attached one is recorded as asked, when it can
	 * be: otherwise the attach is refused as before). */
	p->set.exec_follow = o->pid <= 0 || rc >= 0;
	/* rc > 0: built with sonde-cc, its sleds are the way (or left out by
	 * --exec): its images exec'd again ask nothing */
	struct stat st;
	if (rc != 0 && p->set.exec_follow && stat(prog_path, &st) == 0)
		instr_skip(s->hdr, s->size, &p->set, prog_path, (uint64_t)st.st_dev, (uint64_t)st.st_ino,
		           rc > 0 ? (o->nexecs ? "built with sonde-cc, or not matched by --exec" : "built with sonde-cc") : why);
	if (!p->set.n && !p->set.nglobs && !p->set.exec_follow)
		return 0;
	if (instr_publish(s->hdr, s->size, &p->set, err, n))
		return -1;
	p->policy = instr_policy_new(&p->set);
	return 0;
}

void record_patch_serve_in(struct record_patch *p, struct launched *l)
{
	if (!p->set.n && !p->set.nglobs && !p->set.exec_follow)
		return;
	l->serve = record_patch_serve;
	l->serve_arg = p;
}

#define LEFT_MAX 2000 /* left-out functions named in the recording, per module */

static int add(struct record_patch *p, size_t *cap, const char *key, const char *val)
{
	if (p->nmeta + 3 > *cap) {
		size_t c = *cap ? *cap * 2 : 64;
		char **v = realloc(p->meta, c * sizeof *v);
		if (!v)
			return -1;
		p->meta = v;
		*cap = c;
	}
	p->meta[p->nmeta] = strdup(key);
	p->meta[p->nmeta + 1] = strdup(val);
	if (!p->meta[p->nmeta] || !p->meta[p->nmeta + 1])
		return -1;
	p->nmeta += 2;
	p->meta[p->nmeta] = NULL;
	return 0;
}

/* One META line: the key "patched.<i>.<name>" or "module.<i>.<name>" and a
 * printf-formatted value. */
static void meta(struct record_patch *p, size_t *cap, const char *scope, uint64_t i, const char *name,
                 const char *fmt, ...) __attribute__((format(printf, 6, 7)));
static void meta(struct record_patch *p, size_t *cap, const char *scope, uint64_t i, const char *name,
                 const char *fmt, ...)
{
	char k[96], v[700];
	snprintf(k, sizeof k, "%s.%llu.%s", scope, (unsigned long long)i, name);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(v, sizeof v, fmt, ap);
	va_end(ap);
	add(p, cap, k, v);
}

/* Function k of plan mod: counted the whole recording (want 0), or timed for
 * part of it only (want 1: --timing=auto switched it). */
static int fn_is(const struct record_patch *p, size_t mod, size_t k, int want)
{
	int sw = instr_policy_switched(p->policy, mod, k);
	return want ? sw : p->set.plans[mod].fns[k].count && !sw;
}

/* "module.<slot>.untimed": the numbers of the functions counted, not timed
 * (record --timing), as ranges "a-b,c,..." (analysis/functions.c reads it);
 * "module.<slot>.switched" those timed for part of the recording. */
static void numbers_meta(struct record_patch *p, size_t *cap, uint32_t slot, size_t mod, int want)
{
	const struct instr_plan *pl = &p->set.plans[mod];
	size_t len = 0, room = 64;
	char *v = malloc(room);
	if (!v)
		return;
	v[0] = 0;
	for (size_t a = 0; a < pl->nfns; a++) {
		if (!fn_is(p, mod, a, want))
			continue;
		size_t b = a;
		while (b + 1 < pl->nfns && fn_is(p, mod, b + 1, want))
			b++;
		if (len + 48 > room) {
			char *w = realloc(v, room *= 2);
			if (!w) {
				free(v);
				return;
			}
			v = w;
		}
		len += (size_t)snprintf(v + len, room - len, a == b ? "%s%zu" : "%s%zu-%zu", len ? "," : "", a, b);
		a = b;
	}
	if (len) {
		char k[64];
		snprintf(k, sizeof k, "module.%u.%s", slot, want ? "switched" : "untimed");
		add(p, cap, k, v);
	}
	free(v);
}

/* --timing=auto's switches: "timing.windows", "timing.probes",
 * "timing.switches" (all), and the first INSTR_POLICY_LOG_MAX as
 * "timing.switch.<k>": plan, number, ms since the start, "counted" or
 * "timed", the deciding window's calls and average ns. */
static void timing_meta(struct record_patch *p, size_t *cap)
{
	if (!p->policy)
		return;
	size_t n;
	uint64_t total, windows, probes;
	const struct instr_switch *v = instr_policy_log(p->policy, &n, &total, &windows, &probes);
	char k[64], val[160];
	snprintf(val, sizeof val, "%llu", (unsigned long long)windows);
	add(p, cap, "timing.windows", val);
	snprintf(val, sizeof val, "%u", INSTR_POLICY_WINDOW_MS);
	add(p, cap, "timing.window_ms", val);
	snprintf(val, sizeof val, "%llu", (unsigned long long)probes);
	add(p, cap, "timing.probes", val);
	snprintf(val, sizeof val, "%llu", (unsigned long long)total);
	add(p, cap, "timing.switches", val);
	for (size_t i = 0; i < n; i++) {
		snprintf(k, sizeof k, "timing.switch.%zu", i);
		snprintf(val, sizeof val, "%u\t%u\t%.3f\t%s\t%llu\t%llu", v[i].mod, v[i].fn, (double)v[i].t_ns / 1e6,
		         v[i].to_timed ? "timed" : "counted", (unsigned long long)v[i].calls, (unsigned long long)v[i].mean_ns);
		add(p, cap, k, val);
	}
}

/* A --timed glob that named no function of any module planned: said (a
 * stripped library hides its internal functions; a typo). */
static void warn_unmatched_timed(const struct instr_set *set)
{
	uint64_t hit = 0;
	for (size_t i = 0; i < set->n; i++)
		hit |= set->plans[i].timed_matched;
	for (int g = 0; set->timing != INSTR_TIME_ALL && set->n && g < set->ntimed && g < 64; g++)
		if (!(hit >> g & 1))
			cli_warn("--timed '%s' names no function of the %zu module%s patched (a stripped object keeps only its "
			         "exported names): nothing timed by it", set->timed[g], set->n, set->n == 1 ? "" : "s");
}

const char *const *record_patch_meta(struct record_patch *p)
{
	if (!p->s)
		return NULL; /* nothing was planned */
	warn_unmatched_timed(&p->set);
	size_t cap = 0;
	struct sonde_session_hdr *h = p->s->hdr;
	for (size_t i = 0; i < p->set.n; i++) {
		const struct instr_plan *pl = &p->set.plans[i];
		meta(p, &cap, "patched", i, "path", "%s", pl->path);
		meta(p, &cap, "patched", i, "found", "%zu", pl->nfound);
		meta(p, &cap, "patched", i, "patchable", "%zu", pl->nfns);
		meta(p, &cap, "patched", i, "int3", "%zu", pl->nint3);
		meta(p, &cap, "patched", i, "retargeted", "%zu", pl->nretarget);
		meta(p, &cap, "patched", i, "left", "%zu", pl->nleft);
		meta(p, &cap, "patched", i, "plan_ms", "%.3f", pl->plan_ms);
		size_t counted = 0;
		for (size_t k = 0; k < pl->nfns; k++)
			counted += pl->fns[k].count;
		meta(p, &cap, "patched", i, "counted", "%zu", counted);
		for (size_t j = 0; j < pl->nleft && j < LEFT_MAX; j++) {
			char name[32];
			snprintf(name, sizeof name, "left.%zu", j);
			meta(p, &cap, "patched", i, name, "0x%llx\t%s\t%s", (unsigned long long)pl->left[j].vaddr,
			     pl->left[j].name, pl->left[j].why);
		}
	}
	/* functions whose code was not the file's when the program patched them */
	const struct sonde_instr *in = h->instr_off && sess_inside(p->s->size, h->instr_off, sizeof(struct sonde_instr))
	                                   ? sess_ptr(h, h->instr_off) : NULL;
	uint32_t nr = in ? atomic_load((_Atomic uint32_t *)&in->nreqs) : 0;
	for (uint32_t i = 0; i < nr && i < SONDE_INSTR_MAX_REQS; i++) {
		uint32_t c = in->reqs[i].changed, mod = in->reqs[i].mod;
		if (!c || mod >= p->set.n)
			continue;
		cli_warn("%u function%s of %s not patched: %s code is not the file's (changed by another tool, or "
		         "by 'sonde probe'); %s not recorded", c, c == 1 ? "" : "s", p->set.plans[mod].path,
		         c == 1 ? "its" : "their", c == 1 ? "it is" : "they are");
		meta(p, &cap, "patched", mod, "changed", "%u", c);
	}
	uint32_t nm = sess_nmodules(h);
	for (uint32_t i = 0; i < nm; i++) {
		const struct sonde_module *m = &h->modules[i];
		/* a sonde-cc build under --timing=none: every function counted
		 * through its sled (rt/hooks.c, SONDE_MODE_NO_CPU) */
		if (m->how == SONDE_MOD_SLEDS && p->set.timing == INSTR_TIME_NONE && !p->set.ntimed && m->nfuncs &&
		    m->nfuncs <= SONDE_MAX_FUNCS_PER_MODULE) {
			char k[64], v[32];
			snprintf(k, sizeof k, "module.%u.untimed", i);
			snprintf(v, sizeof v, m->nfuncs == 1 ? "0" : "0-%u", m->nfuncs - 1);
			add(p, &cap, k, v);
		}
		if (m->how != SONDE_MOD_PATCHED)
			continue;
		meta(p, &cap, "module", i, "how", "patched");
		if (in && m->instr_req < SONDE_INSTR_MAX_REQS)
			meta(p, &cap, "module", i, "stubs", "%s",
			     in->reqs[m->instr_req].prebuilt == 2 ? "moved" : in->reqs[m->instr_req].prebuilt ? "prebuilt" : "asked");
		meta(p, &cap, "module", i, "unpatched", "%u", m->dormant <= m->nfuncs ? m->dormant : m->nfuncs);
		uint32_t mod = in && m->instr_req < SONDE_INSTR_MAX_REQS ? in->reqs[m->instr_req].mod : UINT32_MAX;
		if (mod < p->set.n) {
			numbers_meta(p, &cap, i, mod, 0);
			numbers_meta(p, &cap, i, mod, 1);
			meta(p, &cap, "module", i, "patched", "%u", mod);
		}
	}
	timing_meta(p, &cap);
	return p->nmeta ? (const char *const *)p->meta : NULL;
}

void record_patch_end(struct record_patch *p)
{
	for (size_t i = 0; i < p->nmeta; i++)
		free(p->meta[i]);
	free(p->meta);
	p->meta = NULL;
	p->nmeta = 0;
	for (size_t i = 0; i < p->set.n; i++)
		instr_plan_free(&p->set.plans[i]);
	p->set.n = 0;
	instr_policy_free(p->policy);
	p->policy = NULL;
}
