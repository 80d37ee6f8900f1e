/* test_profile.c — the metrics of seed 002 (analysis/profile.c) on
 * hand-built calling-context trees with exact tick counts.
 *
 * Expected values are worked by hand from the trees, never read back from
 * the profile: the seed's worked example (its published figures: C's
 * callers A 10 and B 15 units, callees E 10 and F 10, C itself 5), the same
 * tree recorded by two threads, self recursion and mutual recursion by
 * the innermost-activation rule of docs/ARCHITECTURE.md ("Metrics").
 *
 * For each tree the test checks every function's calls, exclusive and
 * inclusive time, and the COMPLETE set of caller -> callee pairs with their
 * calls and attributed times: a pair is looked up read-only in the
 * profile's own table (profile_pair() would create a missing pair with
 * zeros, so a check of a zero would pass for a pair the profile never
 * made), and a pair the profile has but the test does not expect fails.
 * Then both invariants over every function and every pair of the profile:
 *   sum of callers' attributed == inclusive
 *   exclusive + sum of callees' attributed == inclusive
 * and the total equals the sum of the exclusive times.  (<root>, the caller
 * of outermost calls, is not a function: it has no metrics and no callees
 * view, so its pairs' attr_out is 0 and the invariants skip it.) */
#include <stdlib.h>
#include <string.h>

#include "analysis/profile.h"
#include "unit.h"

enum { MAIN = 1, A, B, C, E, F, G, NF };   /* function numbers in module slot 0 */
#define ROOT (-1)                          /* the caller of outermost calls */

struct tree {
	struct rec_node n[64];
	uint32_t used;
};

static void tree_init(struct tree *t)
{
	memset(t, 0, sizeof *t);
	t->used = 1; /* node 0: the root */
}

/* A node: `calls` calls of fn in this context, `ticks` inclusive ticks. */
static uint32_t add(struct tree *t, uint32_t parent, uint32_t fn, uint64_t calls, uint64_t ticks)
{
	CHECK(t->used < 64);
	uint32_t i = t->used++;
	t->n[i] = (struct rec_node){ parent, 0, 0, SONDE_FUNC(0, fn), calls, ticks };
	uint32_t *p = &t->n[parent].first_child; /* last child: call order */
	while (*p)
		p = &t->n[*p].next_sibling;
	*p = i;
	return i;
}

struct fixture {
	struct recording r;
	struct rd_module m;
	struct rd_module *mods[1];
	uint64_t funcs[NF];
	struct fn_table ft;
	struct profile p;
	uint32_t idx[NF];   /* function index of each function number */
};

/* Build the profile of the trees (one per thread). */
static void setup(struct fixture *x, struct tree *const *t, int nt)
{
	memset(x, 0, sizeof *x);
	for (int i = 0; i < NF; i++)
		x->funcs[i] = 0x1000 + 16 * (uint64_t)i;
	x->m.r.nfuncs = NF;
	strcpy(x->m.r.path, "/nonexistent/module");
	x->m.funcs = x->funcs;
	x->mods[0] = &x->m;
	x->r.modules = x->mods;
	x->r.nmodule_slots = 1;
	x->r.nmodules = 1;
	x->r.ticks_per_ns = 1;
	fn_table_build(&x->r, &x->ft);
	/* each function number has its own function index, none the root's */
	for (int i = MAIN; i < NF; i++) {
		x->idx[i] = fn_of(&x->ft, &x->r, SONDE_FUNC(0, i));
		CHECK(x->idx[i] != FN_ROOT && x->idx[i] < x->ft.n);
		for (int k = MAIN; k < i; k++)
			CHECK(x->idx[k] != x->idx[i]);
	}
	profile_init(&x->p, &x->ft);
	for (int i = 0; i < nt; i++) {
		struct rd_thread th;
		memset(&th, 0, sizeof th);
		th.nodes = t[i]->n;
		th.nnodes = t[i]->used;
		profile_add_thread(&x->p, &x->r, &x->ft, &th);
	}
}

static uint32_t IX(const struct fixture *x, int fn) { return fn == ROOT ? FN_ROOT : x->idx[fn]; }

struct want_fn { int fn; uint64_t calls; int64_t excl, incl; };
struct want_pair { int caller, callee; uint64_t calls; int64_t attr_in, attr_out; };

/* Read-only: the profile's pair, or NULL (never creates one). */
static const struct pair_metrics *find_pair(const struct fixture *x, uint32_t caller, uint32_t callee)
{
	const struct pair_metrics *found = NULL;
	for (uint32_t i = 0; i < x->p.npairs; i++)
		if (x->p.pairs[i].caller == caller && x->p.pairs[i].callee == callee) {
			CHECK(found == NULL); /* one record per pair */
			found = &x->p.pairs[i];
		}
	return found;
}

#define CHECK_EQ_I(a, b) do { long long _a = (a), _b = (b); if (_a != _b) { \
	fprintf(stdout, "  check failed: %s == %s (%lld != %lld) (%s:%d)\n", #a, #b, _a, _b, __FILE__, __LINE__); \
	fflush(stdout); _exit(1); } } while (0)

static void expect(const struct fixture *x, const struct want_fn *wf, int nwf, const struct want_pair *wp, int nwp,
                   int64_t total)
{
	/* functions: exactly the listed ones have calls or time */
	int64_t sum_excl = 0;
	for (uint32_t i = 0; i < x->p.nfn; i++) {
		const struct fn_metrics *m = &x->p.fn[i];
		const struct want_fn *w = NULL;
		for (int k = 0; k < nwf; k++)
			if (IX(x, wf[k].fn) == i)
				w = &wf[k];
		if (!w) {
			if (m->calls || m->excl || m->incl)
				printf("  unexpected metrics for function index %u\n", i);
			CHECK(!m->calls && !m->excl && !m->incl);
			continue;
		}
		CHECK_EQ_U(m->calls, w->calls);
		CHECK_EQ_I(m->excl, w->excl);
		CHECK_EQ_I(m->incl, w->incl);
		sum_excl += m->excl;
	}
	/* pairs: exactly the listed ones, with their figures */
	for (int k = 0; k < nwp; k++) {
		const struct want_pair *w = &wp[k];
		const struct pair_metrics *pm = find_pair(x, IX(x, w->caller), IX(x, w->callee));
		if (!pm)
			printf("  missing pair %d -> %d\n", w->caller, w->callee);
		CHECK(pm != NULL);
		CHECK_EQ_U(pm->calls, w->calls);
		CHECK_EQ_I(pm->attr_in, w->attr_in);
		CHECK_EQ_I(pm->attr_out, w->attr_out);
	}
	CHECK_EQ_U(x->p.npairs, nwp); /* and no other */
	CHECK_EQ_U(x->p.clamped, 0); /* a sound tree: no sum was clamped */
	CHECK_EQ_I(x->p.total, total);
	CHECK_EQ_I(sum_excl, total);
	/* both invariants, on every function, over every pair the profile has */
	for (uint32_t f = 1; f < x->p.nfn; f++) {
		const struct fn_metrics *m = &x->p.fn[f];
		int64_t in = 0, out = 0;
		uint64_t calls = 0;
		for (uint32_t i = 0; i < x->p.npairs; i++) {
			if (x->p.pairs[i].callee == f) {
				in += x->p.pairs[i].attr_in;
				calls += x->p.pairs[i].calls;
			}
			if (x->p.pairs[i].caller == f)
				out += x->p.pairs[i].attr_out;
		}
		CHECK_EQ_I(in, m->incl);
		CHECK_EQ_I(m->excl + out, m->incl);
		CHECK_EQ_U(calls, m->calls);
	}
}

/* ---- seed 002's worked example ----
 * main calls A and B; A calls C(10); B calls C(7.5), works 5 units, calls
 * C(7.5); C does 20% itself, 40% in E, 40% in F; F calls G for half of its
 * share.  main itself works 2 units (as tests/progs/seed002.c does).  One
 * unit = U ticks.  B's two calls of C share one context (calls = 2). */
#define U 1000
static void add_c(struct tree *t, uint32_t parent, uint64_t calls, int64_t incl)
{
	uint32_t c = add(t, parent, C, calls, (uint64_t)incl);
	add(t, c, E, calls, (uint64_t)(incl * 2 / 5));
	uint32_t f = add(t, c, F, calls, (uint64_t)(incl * 2 / 5));
	add(t, f, G, calls, (uint64_t)(incl / 5));
}

static void seed_tree(struct tree *t)
{
	tree_init(t);
	uint32_t m = add(t, 0, MAIN, 1, (10 + 2 + 7.5 + 5 + 7.5) * U);
	uint32_t a = add(t, m, A, 1, 10 * U);
	add_c(t, a, 1, 10 * U);
	uint32_t b = add(t, m, B, 1, (7.5 + 5 + 7.5) * U);
	add_c(t, b, 2, (7.5 + 7.5) * U);
}

/* The seed's figures, in units: exclusive main 2, A 0, B 5, C 5 (20% of 25),
 * E 10, F 5, G 5; inclusive main 32, A 10, B 20, C 25, E 10, F 10, G 5.
 * C's callers: A 10, B 15; C's callees: E 10, F 10.  No recursion, so a
 * pair's attributed time is the same in both views, except for the pair
 * <root> -> main: <root> is not a function and has no callees view (0);
 * that pair carries main's callers view only. */
static const struct want_fn SEED_FN[] = {
	{ MAIN, 1, 2 * U, 32 * U }, { A, 1, 0, 10 * U }, { B, 1, 5 * U, 20 * U }, { C, 3, 5 * U, 25 * U },
	{ E, 3, 10 * U, 10 * U }, { F, 3, 5 * U, 10 * U }, { G, 3, 5 * U, 5 * U },
};
static const struct want_pair SEED_PAIRS[] = {
	{ ROOT, MAIN, 1, 32 * U, 0 },
	{ MAIN, A, 1, 10 * U, 10 * U },
	{ MAIN, B, 1, 20 * U, 20 * U },
	{ A, C, 1, 10 * U, 10 * U },
	{ B, C, 2, 15 * U, 15 * U },
	{ C, E, 3, 10 * U, 10 * U },
	{ C, F, 3, 10 * U, 10 * U },
	{ F, G, 3, 5 * U, 5 * U },
};
#define N(a) ((int)(sizeof a / sizeof a[0]))

static void seed_example(void)
{
	struct tree t;
	seed_tree(&t);
	struct tree *ts[] = { &t };
	struct fixture x;
	setup(&x, ts, 1);
	expect(&x, SEED_FN, N(SEED_FN), SEED_PAIRS, N(SEED_PAIRS), 32 * U);
}

/* The same tree recorded by two threads: every figure doubles. */
static void seed_example_two_threads(void)
{
	struct tree t1, t2;
	seed_tree(&t1);
	seed_tree(&t2);
	struct tree *ts[] = { &t1, &t2 };
	struct fixture x;
	setup(&x, ts, 2);
	struct want_fn wf[N(SEED_FN)];
	struct want_pair wp[N(SEED_PAIRS)];
	for (int i = 0; i < N(SEED_FN); i++)
		wf[i] = (struct want_fn){ SEED_FN[i].fn, 2 * SEED_FN[i].calls, 2 * SEED_FN[i].excl, 2 * SEED_FN[i].incl };
	for (int i = 0; i < N(SEED_PAIRS); i++)
		wp[i] = (struct want_pair){ SEED_PAIRS[i].caller, SEED_PAIRS[i].callee, 2 * SEED_PAIRS[i].calls,
		                            2 * SEED_PAIRS[i].attr_in, 2 * SEED_PAIRS[i].attr_out };
	expect(&x, wf, N(wf), wp, N(wp), 64 * U);
}

/* ---- self recursion: main -> A1 -> A2 -> A3 -> A4 ----
 * Own work: main 1, A1 2, A2 4, A3 8, A4 16 ticks (inclusive 31, 30, 28,
 * 24, 16).  A's inclusive counts A1's span once: 30; its exclusive is
 * 2 + 4 + 8 + 16 = 30.  Callers view (each instant to the innermost A's
 * caller): A1 on top (2) -> main->A; A2, A3, A4 on top (4 + 8 + 16) -> A->A.
 * Callees view: the innermost A is always the top, so A->A gets 0 and all
 * of A's time is exclusive; main's callee A gets main's 30 ticks under it. */
static void self_recursion(void)
{
	struct tree t;
	tree_init(&t);
	uint32_t p = add(&t, 0, MAIN, 1, 31);
	p = add(&t, p, A, 1, 30);
	p = add(&t, p, A, 1, 28);
	p = add(&t, p, A, 1, 24);
	add(&t, p, A, 1, 16);
	struct tree *ts[] = { &t };
	struct fixture x;
	setup(&x, ts, 1);
	static const struct want_fn wf[] = { { MAIN, 1, 1, 31 }, { A, 4, 30, 30 } };
	static const struct want_pair wp[] = {
		{ ROOT, MAIN, 1, 31, 0 },
		{ MAIN, A, 1, 2, 30 },
		{ A, A, 3, 28, 0 },
	};
	expect(&x, wf, N(wf), wp, N(wp), 31);
}

/* ---- self recursion, all the work in the deepest call ----
 * main -> A -> A -> A -> A, 100 ticks of work in the deepest A only (every
 * node inclusive 100).  A: 4 calls, inclusive 100 (once), exclusive 100.
 * The outer activations count zero: main->A's callers view is 0 although
 * the pair exists (1 call, and main's callees view of A is 100); A->A gets
 * the 100 in A's callers view and 0 in its callees view (the innermost A is
 * the top). */
static void self_recursion_deepest(void)
{
	struct tree t;
	tree_init(&t);
	uint32_t p = add(&t, 0, MAIN, 1, 100);
	for (int i = 0; i < 4; i++)
		p = add(&t, p, A, 1, 100);
	struct tree *ts[] = { &t };
	struct fixture x;
	setup(&x, ts, 1);
	static const struct want_fn wf[] = { { MAIN, 1, 0, 100 }, { A, 4, 100, 100 } };
	static const struct want_pair wp[] = {
		{ ROOT, MAIN, 1, 100, 0 },
		{ MAIN, A, 1, 0, 100 },
		{ A, A, 3, 100, 0 },
	};
	expect(&x, wf, N(wf), wp, N(wp), 100);
}

/* ---- mutual recursion: main -> E1 -> F1 -> E2 -> F2 ----
 * Own work: main 0, E1 10, F1 10, E2 10, F2 10 (inclusive 40, 40, 30, 20,
 * 10).  E: inclusive 40 (E1's span), exclusive 20; F: inclusive 30,
 * exclusive 20.  Instant by instant (top: innermost E / innermost F):
 *   E1 on top (10): E1 / -      -> main->E in 10; E excl 10; main->E out 10
 *   F1 on top (10): E1 / F1     -> main->E in 10, E->F in 10; E->F out 10 (E1's callee F1); F excl 10
 *   E2 on top (10): E2 / F1     -> F->E in 10, E->F in 10; E excl 10; F->E out 10 (F1's callee E2)
 *   F2 on top (10): E2 / F2     -> F->E in 10, E->F in 10; E->F out 10 (E2's callee F2); F excl 10
 * main's callee E has main's whole 40. */
static void mutual_recursion(void)
{
	struct tree t;
	tree_init(&t);
	uint32_t m = add(&t, 0, MAIN, 1, 40);
	uint32_t e1 = add(&t, m, E, 1, 40);
	uint32_t f1 = add(&t, e1, F, 1, 30);
	uint32_t e2 = add(&t, f1, E, 1, 20);
	add(&t, e2, F, 1, 10);
	struct tree *ts[] = { &t };
	struct fixture x;
	setup(&x, ts, 1);
	static const struct want_fn wf[] = { { MAIN, 1, 0, 40 }, { E, 2, 20, 40 }, { F, 2, 20, 30 } };
	static const struct want_pair wp[] = {
		{ ROOT, MAIN, 1, 40, 0 },
		{ MAIN, E, 1, 20, 40 },
		{ E, F, 2, 30, 20 },
		{ F, E, 1, 20, 10 },
	};
	expect(&x, wf, N(wf), wp, N(wp), 40);
}

int main(void)
{
	RUN(seed_example);
	RUN(seed_example_two_threads);
	RUN(self_recursion);
	RUN(self_recursion_deepest);
	RUN(mutual_recursion);
	UNIT_END();
}
