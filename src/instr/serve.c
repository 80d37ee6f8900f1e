/* serve.c — the plans in the session memory, and the program's requests
 * answered (instr.h, common/instr_abi.h).
 *
 * A request is the program's: every field is checked before use.  The
 * region must lie within ±2 GiB of every function of the module (the stubs
 * are reached by rel32 jumps and reach back the same way), and be as large
 * as the plan says; the answer is written into fresh session memory, and the
 * state set last (release), then the runtime woken on it. */
#include <fnmatch.h>
#include <linux/futex.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "arch/reloc.h"
#include "common/session.h"
#include "instr/instr.h"

/* The region of plan p built now for its place below the module (instr_abi.h):
 * nothing when the module's first page is unknown or too low for it, or
 * when nothing could be built (the program then asks). */
static void prebuild(struct sonde_session_hdr *h, struct sonde_instr_mod *m, const struct instr_plan *p, int live)
{
	const uint64_t gap = 64 * 1024;
	uint64_t rsize = p->region_size;
	if (p->load_vaddr == UINT64_MAX || !p->nfns || !rsize)
		return;
	/* A module linked at 0 (PIE, shared library): rel wraps, bias + rel is
	 * below it.  One linked at a fixed address (bias 0) needs room below. */
	if (p->load_vaddr && p->load_vaddr < rsize + gap + 0x10000)
		return;
	uint64_t rel = p->load_vaddr - rsize - gap;
	uint64_t code_off = sess_alloc(h, rsize);
	uint64_t stubs_off = sess_alloc(h, (uint64_t)p->nfns * sizeof(uint32_t));
	uint64_t rels_off = p->nrts ? sess_alloc(h, (uint64_t)p->nrts * sizeof(int32_t)) : 0;
	if (!code_off || !stubs_off || (p->nrts && !rels_off))
		return; /* the space stays taken: the program asks instead */
	int32_t none = 0;
	uint32_t built = 0, nfix = SONDE_INSTR_NOFIX;
	char err[160];
	size_t fixcap = p->nfns * (RELOC_MAX_EXT + 1);
	uint32_t *fix = malloc(fixcap * sizeof *fix);
	if (instr_build(p, 0, rel, rsize, 0, live, 1, sess_ptr(h, code_off), sess_ptr(h, stubs_off),
	                p->nrts ? sess_ptr(h, rels_off) : &none, &built, fix, fix ? fixcap : 0, &nfix, err,
	                sizeof err) || !built) {
		free(fix);
		return;
	}
	uint64_t fix_off = nfix && nfix != SONDE_INSTR_NOFIX ? sess_alloc(h, (uint64_t)nfix * 4) : 0;
	if (nfix && nfix != SONDE_INSTR_NOFIX && !fix_off)
		nfix = SONDE_INSTR_NOFIX;
	if (fix_off)
		memcpy(sess_ptr(h, fix_off), fix, (size_t)nfix * 4);
	free(fix);
	m->pre_fix_off = fix_off;
	m->pre_nfix = nfix;
	m->pre_rel = (int64_t)rel;
	m->pre_code_off = code_off;
	m->pre_stubs_off = stubs_off;
	m->pre_rels_off = rels_off;
	m->pre_built = built;
	m->pre_live = (uint32_t)live;
}

/* Plan i into the session's table (sonde writes the table, nmods last). */
static int publish_mod(struct sonde_session_hdr *h, struct sonde_instr *in, const struct instr_plan *p, size_t i,
                       int live)
{
	struct sonde_instr_mod *m = &in->mods[i];
	snprintf(m->path, sizeof m->path, "%s", p->path);
	m->dev = p->dev;
	m->ino = p->ino;
	m->nfuncs = (uint32_t)p->nfns;
	m->nfound = (uint32_t)p->nfound;
	m->region_size = p->region_size;
	uint64_t bytes = (uint64_t)p->nfns * sizeof(struct sonde_instr_fn);
	m->fns_off = bytes ? sess_alloc(h, bytes) : 0;
	if (bytes && !m->fns_off)
		return -1;
	if (bytes)
		memcpy(sess_ptr(h, m->fns_off), p->fns, bytes);
	bytes = (uint64_t)p->nrts * sizeof(struct sonde_instr_rt);
	m->rts_off = bytes ? sess_alloc(h, bytes) : 0;
	if (bytes && !m->rts_off)
		return -1;
	if (bytes)
		memcpy(sess_ptr(h, m->rts_off), p->rts, bytes);
	m->nrts = (uint32_t)p->nrts;
	/* the switch array (instr_abi.h): each switched function starts as the
	 * plan's static choice (src/instr/policy.c switches it) */
	m->timed_off = 0;
	if (p->nswitched) {
		uint64_t at = sess_alloc(h, p->nfns);
		if (!at)
			return -1;
		uint8_t *t = sess_ptr(h, at);
		for (size_t i = 0; i < p->nfns; i++)
			t[i] = !p->fns[i].count;
		m->timed_off = at;
	}
	prebuild(h, m, p, live);
	return 0;
}

int instr_publish(struct sonde_session_hdr *h, uint64_t size, const struct instr_set *set, char *err, size_t errn)
{
	size_t n = set->n;
	if (n > SONDE_INSTR_MAX_MODS) {
		snprintf(err, errn, "too many modules to instrument (%zu, at most %u)", n, SONDE_INSTR_MAX_MODS);
		return -1;
	}
	uint64_t off = sess_alloc(h, sizeof(struct sonde_instr));
	if (!off || !sess_inside(size, off, sizeof(struct sonde_instr)))
		goto full;
	struct sonde_instr *in = sess_ptr(h, off);
	memset(in, 0, sizeof *in);
	for (size_t i = 0; i < n; i++)
		if (publish_mod(h, in, &set->plans[i], i, set->live))
			goto full;
	size_t used = 0;
	for (int g = 0; g < set->nglobs; g++) {
		size_t l = strlen(set->globs[g]) + 1;
		if (used + l >= sizeof in->globs) {
			snprintf(err, errn, "the --module globs are too long (%zu bytes at most)", sizeof in->globs - 1);
			return -1;
		}
		memcpy(in->globs + used, set->globs[g], l);
		used += l;
	}
	in->nglobs = (uint32_t)set->nglobs;
	used = 0;
	for (int g = 0; g < set->nexec_globs; g++) {
		size_t l = strlen(set->exec_globs[g]) + 1;
		if (used + l >= sizeof in->exec_globs) {
			snprintf(err, errn, "the --exec globs are too long (%zu bytes at most)", sizeof in->exec_globs - 1);
			return -1;
		}
		memcpy(in->exec_globs + used, set->exec_globs[g], l);
		used += l;
	}
	in->nexec_globs = (uint32_t)set->nexec_globs;
	in->exec_follow = (uint32_t)set->exec_follow;
	for (size_t k = 0; k < set->nskip; k++) {
		in->skip[k].dev = set->skip[k].dev;
		in->skip[k].ino = set->skip[k].ino;
	}
	atomic_store_explicit(&in->nskip, (uint32_t)set->nskip, memory_order_relaxed);
	in->nmods = (uint32_t)n;
	h->instr_off = off;
	return 0;
full:
	snprintf(err, errn, "the session memory has no room for the functions to patch");
	return -1;
}

static void answer(struct sonde_instr_req *r, uint32_t state)
{
	atomic_store_explicit(&r->state, state, memory_order_release);
	syscall(SYS_futex, &r->state, FUTEX_WAKE, 1, NULL, NULL, 0);
}

int instr_glob_match(const char *const *globs, int n, const char *path)
{
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	for (int g = 0; g < n; g++)
		if (!fnmatch(globs[g], path, 0) || !fnmatch(globs[g], base, 0))
			return 1;
	return 0;
}

/* Does path (or its file name) match a glob of set? */
static int glob_ok(const struct instr_set *set, const char *path)
{
	return instr_glob_match(set->globs, set->nglobs, path);
}

static struct sonde_instr *instr_of(struct sonde_session_hdr *h, uint64_t size)
{
	if (!h->instr_off || !sess_inside(size, h->instr_off, sizeof(struct sonde_instr)))
		return NULL;
	return sess_ptr(h, h->instr_off);
}

void instr_skip(struct sonde_session_hdr *h, uint64_t size, struct instr_set *set, const char *path, uint64_t dev,
                uint64_t ino, const char *why)
{
	struct sonde_instr *in = instr_of(h, size);
	for (size_t k = 0; k < set->nskip; k++)
		if (set->skip[k].dev == dev && set->skip[k].ino == ino)
			return;
	if (set->nskip == SONDE_INSTR_MAX_SKIP)
		return; /* the runtime asks again, and is answered the same */
	size_t k = set->nskip++;
	set->skip[k].dev = dev;
	set->skip[k].ino = ino;
	snprintf(set->refused[k].path, sizeof set->refused[k].path, "%s", path);
	snprintf(set->refused[k].why, sizeof set->refused[k].why, "%s", why);
	if (in) {
		in->skip[k].dev = dev;
		in->skip[k].ino = ino;
		atomic_store_explicit(&in->nskip, (uint32_t)set->nskip, memory_order_release);
	}
}

/* A library the program found (its path matched a --module glob): planned
 * now, or found among the plans. */
static void serve_plan(struct sonde_session_hdr *h, uint64_t size, struct sonde_instr *in, struct sonde_instr_req *r,
                       struct instr_set *set, int exec)
{
	char path[sizeof r->path];
	memcpy(path, r->path, sizeof path);
	path[sizeof path - 1] = 0;
	uint64_t dev = r->dev, ino = r->ino;
	struct stat st;
	uint32_t asked = exec ? SONDE_IR_PLAN_EXEC : SONDE_IR_PLAN;
	int ok = exec ? set->exec_follow && (!set->nexec_globs || instr_glob_match(set->exec_globs, set->nexec_globs, path))
	              : glob_ok(set, path);
	if (!ok || stat(path, &st) != 0 || (uint64_t)st.st_dev != dev || (uint64_t)st.st_ino != ino) {
		snprintf(r->msg, sizeof r->msg, exec ? "not a program sonde follows" : "not a library given with --module");
		answer(r, SONDE_IR_FAILED);
		return;
	}
	size_t i;
	for (i = 0; i < set->n; i++)
		if (set->plans[i].dev == dev && set->plans[i].ino == ino)
			break;
	if (i == set->n) {
		if (set->n == SONDE_INSTR_MAX_MODS) {
			snprintf(r->msg, sizeof r->msg, "too many modules to patch");
			answer(r, SONDE_IR_FAILED);
			return;
		}
		char err[600];
		int rc = instr_plan(path, &set->plans[i], err, sizeof err);
		if (rc != 0) { /* a sonde-cc build (its sleds are the way), or not ELF */
			snprintf(r->msg, sizeof r->msg, "%.150s", rc > 0 ? "built with sonde-cc" : err);
			if (exec) /* the next image of this program asks nothing */
				instr_skip(h, size, set, path, dev, ino, r->msg);
			answer(r, SONDE_IR_FAILED);
			return;
		}
		instr_plan_timing(&set->plans[i], set->timing, set->timed, set->ntimed);
		if (publish_mod(h, in, &set->plans[i], i, set->live)) {
			instr_plan_free(&set->plans[i]);
			snprintf(r->msg, sizeof r->msg, "the session memory is full");
			answer(r, SONDE_IR_FAILED);
			return;
		}
		set->n++;
		atomic_store_explicit((_Atomic uint32_t *)&in->nmods, (uint32_t)set->n, memory_order_release);
	}
	r->mod = (uint32_t)i;
	uint32_t want = asked;
	if (atomic_compare_exchange_strong(&r->state, &want, SONDE_IR_PLANNED))
		syscall(SYS_futex, &r->state, FUTEX_WAKE, 1, NULL, NULL, 0);
}

static void serve_one(struct sonde_session_hdr *h, uint64_t size, struct sonde_instr_req *r,
                      const struct instr_plan *plans, size_t n)
{
	uint32_t mod = r->mod;
	if (mod >= n) {
		snprintf(r->msg, sizeof r->msg, "no such planned module (%u)", mod);
		answer(r, SONDE_IR_FAILED);
		return;
	}
	const struct instr_plan *p = &plans[mod];
	uint64_t region = r->region, rsize = r->region_size, bias = r->bias;
	if (rsize != p->region_size || !p->nfns) {
		snprintf(r->msg, sizeof r->msg, "a region of %llu bytes for a plan of %llu",
		         (unsigned long long)rsize, (unsigned long long)p->region_size);
		answer(r, SONDE_IR_FAILED);
		return;
	}
	uint64_t lo = p->fns[0].vaddr + bias, hi = p->fns[p->nfns - 1].vaddr + bias;
	if (!sonde_instr_near(region, rsize, lo, hi)) {
		snprintf(r->msg, sizeof r->msg, "the region at 0x%llx is not within 2 GiB of the module",
		         (unsigned long long)region);
		answer(r, SONDE_IR_FAILED);
		return;
	}
	uint64_t code_off = sess_alloc(h, rsize);
	uint64_t stubs_off = sess_alloc(h, (uint64_t)p->nfns * sizeof(uint32_t));
	if (!code_off || !stubs_off || !sess_inside(size, code_off, rsize) ||
	    !sess_inside(size, stubs_off, (uint64_t)p->nfns * sizeof(uint32_t))) {
		snprintf(r->msg, sizeof r->msg, "the session memory is full");
		answer(r, SONDE_IR_FAILED);
		return;
	}
	uint64_t rels_off = p->nrts ? sess_alloc(h, (uint64_t)p->nrts * sizeof(int32_t)) : 0;
	if (p->nrts && (!rels_off || !sess_inside(size, rels_off, (uint64_t)p->nrts * sizeof(int32_t)))) {
		snprintf(r->msg, sizeof r->msg, "the session memory is full");
		answer(r, SONDE_IR_FAILED);
		return;
	}
	int32_t none = 0;
	uint32_t built = 0;
	if (instr_build(p, bias, region, rsize, r->hook, r->live != 0, 0, sess_ptr(h, code_off), sess_ptr(h, stubs_off),
	                p->nrts ? sess_ptr(h, rels_off) : &none, &built, NULL, 0, NULL, r->msg, sizeof r->msg)) {
		answer(r, SONDE_IR_FAILED);
		return;
	}
	r->code_off = code_off;
	r->stubs_off = stubs_off;
	r->rels_off = rels_off;
	r->built = built;
	/* the runtime may have given up waiting meanwhile: then it never reads this */
	uint32_t want = SONDE_IR_ASKED;
	if (atomic_compare_exchange_strong(&r->state, &want, SONDE_IR_BUILT))
		syscall(SYS_futex, &r->state, FUTEX_WAKE, 1, NULL, NULL, 0);
}

int instr_serve(struct sonde_session_hdr *h, uint64_t size, struct instr_set *set)
{
	if (!h->instr_off || !sess_inside(size, h->instr_off, sizeof(struct sonde_instr)))
		return 0;
	struct sonde_instr *in = sess_ptr(h, h->instr_off);
	uint32_t nr = atomic_load_explicit(&in->nreqs, memory_order_acquire);
	if (nr > SONDE_INSTR_MAX_REQS)
		nr = SONDE_INSTR_MAX_REQS;
	int served = 0;
	for (uint32_t i = 0; i < nr; i++) {
		struct sonde_instr_req *r = &in->reqs[i];
		uint32_t st = atomic_load_explicit(&r->state, memory_order_acquire);
		if (st == SONDE_IR_PLAN || st == SONDE_IR_PLAN_EXEC)
			serve_plan(h, size, in, r, set, st == SONDE_IR_PLAN_EXEC);
		else if (st == SONDE_IR_ASKED)
			serve_one(h, size, r, set->plans, set->n);
		else
			continue;
		served++;
	}
	return served;
}
