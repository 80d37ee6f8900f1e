/* expr.h — expressions over program variables (expr.c), for var and assert
 * probes: compiled once per probed address, evaluated on each hit. */
#ifndef SONDE_PROBE_EXPR_H
#define SONDE_PROBE_EXPR_H

#include <stddef.h>
#include <stdint.h>

struct expr;
struct hit;
struct module;
struct vars;

struct expr_val {
	int is_float;
	int64_t i;
	long double f;
};

struct expr *expr_compile(const char *text, struct vars *v, uint64_t link_pc, char *err, size_t n);
/* 0 ok; -1 a variable was unavailable (err says which). */
int expr_eval(const struct expr *x, struct hit *h, struct module *m, struct expr_val *out,
              char *err, size_t n);
/* The same through the caller's access to registers and memory (the
 * remote backend, remote_run.c). */
struct var_env;
int expr_eval_env(const struct expr *x, const struct var_env *env, struct expr_val *out,
                  char *err, size_t n);
/* For assert: the values of the variables of the last evaluation, "a=1 b=2". */
void expr_values(const struct expr *x, char *buf, size_t n);
const char *expr_describe(const struct expr *x);
/* The variable access when the whole expression is one ("x", "p->n"), else
 * NULL (the agent backend runs only those, agent_var.c). */
struct var_ref;
const struct var_ref *expr_single_var(const struct expr *x);
void expr_free(struct expr *x);

#endif
