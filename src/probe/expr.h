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
/* Variables of another debug format than DWARF (SDCC's CDB, the 8051's
 * engine src/probe/ucsim/): compile makes the caller's handle of a
 * variable named path (as written: "x", "p->n") visible at pc, 0 or -1
 * with err; read gives its value now (0, or -1 with err: unavailable);
 * describe says what it is ("x (data)"); free (may be NULL) drops the
 * handle.  names must outlive the expression; expr_eval_env evaluates it,
 * env then unused (NULL). */
struct expr_names {
	int (*compile)(void *ctx, uint64_t pc, const char *path, void **ref, char *err, size_t n);
	int (*read)(void *ctx, void *ref, struct expr_val *out, char *err, size_t n);
	const char *(*describe)(void *ctx, void *ref);
	void (*free)(void *ctx, void *ref);
	void *ctx;
};
struct expr *expr_compile_names(const char *text, const struct expr_names *names, uint64_t pc, char *err, size_t n);
/* For assert: the values of the variables of the last evaluation, "a=1 b=2". */
void expr_values(const struct expr *x, char *buf, size_t n);
const char *expr_describe(const struct expr *x);
/* The variable access when the whole expression is one ("x", "p->n"), else
 * NULL (the agent backend runs only those, agent_var.c). */
struct var_ref;
const struct var_ref *expr_single_var(const struct expr *x);
void expr_free(struct expr *x);

/* The tree, for another evaluator (the agent's, agent_expr.c). */
enum expr_node { EXPR_NUM, EXPR_VAR, EXPR_NOT, EXPR_NEG, EXPR_BIN };
enum expr_op {
	EXPR_OR, EXPR_AND, EXPR_EQ, EXPR_NE, EXPR_LT, EXPR_LE, EXPR_GT, EXPR_GE,
	EXPR_ADD, EXPR_SUB, EXPR_MUL, EXPR_DIV, EXPR_MOD
};
struct expr_view {
	int type, op;                   /* enum expr_node, enum expr_op (EXPR_BIN) */
	const struct expr *a, *b;       /* operands (NOT, NEG: a) */
	struct expr_val num;            /* EXPR_NUM */
	const struct var_ref *ref;      /* EXPR_VAR */
};
void expr_view(const struct expr *x, struct expr_view *out);
/* The variables' values of an evaluation made elsewhere, for expr_values:
 * vals[k] is the k-th variable of the tree from the left (the order of
 * expr_values), read when bit k of have is set (k < 32). */
void expr_set_values(struct expr *x, const int64_t *vals, uint32_t have);
/* The same, the values of mask dbl being the bits of doubles (floating-point variables). */
void expr_set_values_dbl(struct expr *x, const int64_t *vals, uint32_t have, uint32_t dbl);

#endif
