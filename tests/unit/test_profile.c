/* test_profile.c — the metrics of seed 002 on hand-built calling-context
 * trees with exact tick counts: the worked example's published figures, self
 * recursion with all work in the deepest call, mutual recursion.  Expected
 * values are the seed's / the innermost-activation rule worked by hand. */
#include <stdlib.h>
#include <string.h>

#include "analysis/profile.h"
#include "unit.h"

enum { MAIN = 0, A, B, C, E, F, G, NF };

struct tree {
	struct sonde_node n[64];
	uint32_t used;
};

static uint32_t add(struct tree *t, uint32_t parent, uint32_t fn, uint64_t calls, uint64_t ticks)
{
	uint32_t i = t->used++;
	t->n[i] = (struct sonde_node){ parent, 0, 0, SONDE_FUNC(0, fn), calls, ticks };
	if (i) { /* append as last child so the order is the call order */
		uint32_t *p = &t->n[parent].first_child;
		while (*p)
			p = &t->n[*p].next_sibling;
		*p = i;
	}
	return i;
}

struct fixture {
	struct recording r;
	struct rd_module m;
	struct rd_module *mods[1];
	uint64_t funcs[NF];
	struct fn_table ft;
	struct profile p;
};

static void setup(struct fixture *x, struct tree *t)
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
	x->r.ticks_per_ns = 1;
	fn_table_build(&x->r, &x->ft);
	struct rd_thread th;
	memset(&th, 0, sizeof th);
	th.nodes = t->n;
	th.nnodes = t->used;
	profile_init(&x->p, &x->ft);
	profile_add_thread(&x->p, &x->r, &x->ft, &th);
}

static uint32_t F_(struct fixture *x, int fn) { return fn_of(&x->ft, &x->r, SONDE_FUNC(0, fn)); }
static struct fn_metrics *M(struct fixture *x, int fn) { return &x->p.fn[F_(x, fn)]; }
static struct pair_metrics *P(struct fixture *x, int a, int b)
{
	return profile_pair(&x->p, a < 0 ? FN_ROOT : F_(x, a), F_(x, b));
}

/* The seed's example in units of 100 ticks: main 32 incl (2 own), A->C(10),
 * B->C(7.5), 5 own, C(7.5); C: 20% own, 40% E, 40% F; F: half own, half G. */
static void seed_example(void)
{
	struct tree t = { .used = 0 };
	add(&t, 0, 0, 0, 0); /* root */
	uint32_t m = add(&t, 0, MAIN, 1, 3200);
	uint32_t a = add(&t, m, A, 1, 1000);
	uint32_t b = add(&t, m, B, 1, 2000);
	uint32_t ca = add(&t, a, C, 1, 1000), cb = add(&t, b, C, 2, 1500);
	add(&t, ca, E, 1, 400);
	uint32_t fa = add(&t, ca, F, 1, 400);
	add(&t, fa, G, 1, 200);
	add(&t, cb, E, 2, 600);
	uint32_t fb = add(&t, cb, F, 2, 600);
	add(&t, fb, G, 2, 300);
	struct fixture x;
	setup(&x, &t);
	CHECK_EQ_U(M(&x, MAIN)->incl, 3200); CHECK_EQ_U(M(&x, MAIN)->excl, 200);
	CHECK_EQ_U(M(&x, A)->incl, 1000); CHECK_EQ_U(M(&x, A)->excl, 0);
	CHECK_EQ_U(M(&x, B)->incl, 2000); CHECK_EQ_U(M(&x, B)->excl, 500);
	CHECK_EQ_U(M(&x, C)->incl, 2500); CHECK_EQ_U(M(&x, C)->excl, 500); CHECK_EQ_U(M(&x, C)->calls, 3);
	CHECK_EQ_U(M(&x, E)->incl, 1000); CHECK_EQ_U(M(&x, F)->incl, 1000); CHECK_EQ_U(M(&x, F)->excl, 500);
	CHECK_EQ_U(M(&x, G)->incl, 500);
	/* C's callers view: A 10, B 15 units; callees view: E 10, F 10 */
	CHECK_EQ_U(P(&x, A, C)->attr_in, 1000); CHECK_EQ_U(P(&x, B, C)->attr_in, 1500);
	CHECK_EQ_U(P(&x, B, C)->calls, 2);
	CHECK_EQ_U(P(&x, C, E)->attr_out, 1000); CHECK_EQ_U(P(&x, C, F)->attr_out, 1000);
	CHECK_EQ_U(P(&x, MAIN, A)->attr_out, 1000); CHECK_EQ_U(P(&x, MAIN, B)->attr_out, 2000);
	CHECK_EQ_U(x.p.total, 3200);
}

/* main -> A -> A -> A -> A (100 ticks of work in the deepest A only). */
static void self_recursion(void)
{
	struct tree t = { .used = 0 };
	add(&t, 0, 0, 0, 0);
	uint32_t m = add(&t, 0, MAIN, 1, 100);
	uint32_t p = m;
	for (int i = 0; i < 4; i++)
		p = add(&t, p, A, 1, 100);
	struct fixture x;
	setup(&x, &t);
	CHECK_EQ_U(M(&x, A)->calls, 4);
	CHECK_EQ_U(M(&x, A)->incl, 100); /* counted once */
	CHECK_EQ_U(M(&x, A)->excl, 100);
	CHECK_EQ_U(P(&x, MAIN, A)->attr_in, 0);   /* outer activation counts zero */
	CHECK_EQ_U(P(&x, A, A)->attr_in, 100);    /* innermost is called by A */
	CHECK_EQ_U(P(&x, A, A)->attr_out, 0);     /* innermost is the top: exclusive */
	CHECK_EQ_U(P(&x, MAIN, A)->attr_out, 100); /* main's callees view */
}

/* main -> E -> F -> E -> F, with 10 ticks of own work at every level. */
static void mutual_recursion(void)
{
	struct tree t = { .used = 0 };
	add(&t, 0, 0, 0, 0);
	uint32_t m = add(&t, 0, MAIN, 1, 40);
	uint32_t e1 = add(&t, m, E, 1, 40);
	uint32_t f1 = add(&t, e1, F, 1, 30);
	uint32_t e2 = add(&t, f1, E, 1, 20);
	add(&t, e2, F, 1, 10);
	struct fixture x;
	setup(&x, &t);
	CHECK_EQ_U(M(&x, E)->incl, 40);
	CHECK_EQ_U(M(&x, F)->incl, 30);
	CHECK_EQ_U(M(&x, E)->excl, 20);
	CHECK_EQ_U(P(&x, MAIN, E)->attr_in, 20); /* instants where e1 is E's innermost: e1 own + f1 own */
	CHECK_EQ_U(P(&x, F, E)->attr_in, 20);    /* e2 and below */
	CHECK_EQ_U(P(&x, E, F)->attr_in, 30);    /* f1 own 10 + under e2: f2 is innermost F with caller E */
	CHECK_EQ_U(P(&x, E, F)->attr_out, 20);   /* e1->f1 while e1 innermost (10) + e2->f2 (10) */
	CHECK_EQ_U(P(&x, F, E)->attr_out, 10);   /* f1 innermost F with callee e2: only e2's own 10 */
	/* invariants, exactly */
	CHECK_EQ_U(P(&x, MAIN, E)->attr_in + P(&x, F, E)->attr_in, M(&x, E)->incl);
	CHECK_EQ_U(M(&x, E)->excl + P(&x, E, F)->attr_out, M(&x, E)->incl);
	CHECK_EQ_U(M(&x, F)->excl + P(&x, F, E)->attr_out, M(&x, F)->incl);
}

int main(void)
{
	RUN(seed_example);
	RUN(self_recursion);
	RUN(mutual_recursion);
	UNIT_END();
}
