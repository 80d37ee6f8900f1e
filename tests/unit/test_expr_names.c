/* test_expr_names.c — expressions whose variables another debug format
 * names (expr_compile_names, the 8051's CDB in src/probe/ucsim/): names
 * compiled through the caller at the given address, read at each
 * evaluation, described and freed through it; operators, short-circuits,
 * an unavailable name and a refused one as with DWARF variables. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "probe/expr.h"
#include "unit/unit.h"

struct fake {
	int64_t val[3];           /* a, b, f (f floating: val / 4) */
	int reads[3], freed;
	uint64_t pc;
	int unreadable;           /* index of a name whose read fails, or -1 */
};

static const char *names[3] = { "a", "b", "f" };

static int f_compile(void *ctx, uint64_t pc, const char *path, void **ref, char *err, size_t n)
{
	struct fake *f = ctx;
	f->pc = pc;
	for (int i = 0; i < 3; i++)
		if (!strcmp(path, names[i])) {
			*ref = (void *)&names[i];
			return 0;
		}
	snprintf(err, n, "no variable '%s'", path);
	return -1;
}

static int f_read(void *ctx, void *ref, struct expr_val *out, char *err, size_t n)
{
	struct fake *f = ctx;
	int i = (int)((const char **)ref - names);
	f->reads[i]++;
	if (i == f->unreadable) {
		snprintf(err, n, "%s: unavailable", names[i]);
		return -1;
	}
	memset(out, 0, sizeof *out);
	if (i == 2) {
		out->is_float = 1;
		out->f = (long double)f->val[i] / 4;
	} else {
		out->i = f->val[i];
	}
	return 0;
}

static const char *f_describe(void *ctx, void *ref)
{
	(void)ctx;
	return *(const char **)ref;
}

static void f_free(void *ctx, void *ref)
{
	(void)ref;
	((struct fake *)ctx)->freed++;
}

static void values(void)
{
	struct fake f = { .val = { 3, 5, 10 }, .unreadable = -1 };
	struct expr_names nm = { f_compile, f_read, f_describe, f_free, &f };
	char err[200];
	struct expr *x = expr_compile_names("a * 2 + b == 11 && f > 2", &nm, 0x1234, err, sizeof err);
	CHECK(x);
	CHECK_EQ_U(f.pc, 0x1234);
	CHECK(!strcmp(expr_describe(x), "a; b; f"));
	CHECK(expr_single_var(x) == NULL);
	struct expr_val v;
	CHECK(expr_eval_env(x, NULL, &v, err, sizeof err) == 0);
	CHECK(!v.is_float && v.i == 1);
	char buf[100];
	expr_values(x, buf, sizeof buf);
	CHECK(!strcmp(buf, "a=3 b=5 f=2.5"));
	/* && short-circuits: f not read when the left side is false */
	f.val[1] = 6;
	int fr = f.reads[2];
	CHECK(expr_eval_env(x, NULL, &v, err, sizeof err) == 0);
	CHECK(v.i == 0 && f.reads[2] == fr);
	expr_free(x);
	CHECK_EQ_U(f.freed, 3);
}

static void unavailable_and_refused(void)
{
	struct fake f = { .val = { 1, 2, 0 }, .unreadable = 1 };
	struct expr_names nm = { f_compile, f_read, f_describe, NULL, &f };
	char err[200];
	struct expr *x = expr_compile_names("-a < b", &nm, 0, err, sizeof err);
	CHECK(x);
	struct expr_val v;
	CHECK(expr_eval_env(x, NULL, &v, err, sizeof err) == -1);
	CHECK(!strcmp(err, "b: unavailable"));
	expr_free(x);   /* no free callback: nothing to drop */
	CHECK(expr_compile_names("a + nosuch", &nm, 0, err, sizeof err) == NULL);
	CHECK(!strcmp(err, "no variable 'nosuch'"));
	CHECK(expr_compile_names("a +", &nm, 0, err, sizeof err) == NULL);
	/* expr_compile without DWARF variables still refuses a name */
	CHECK(expr_compile("x", NULL, 0, err, sizeof err) == NULL);
}

int main(void)
{
	RUN(values);
	RUN(unavailable_and_refused);
	UNIT_END();
}
