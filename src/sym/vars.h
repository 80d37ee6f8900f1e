/* vars.h — program variables from DWARF (libdw), for probes: find a local,
 * parameter or global by name at a code address, follow `p->field`, `s.f`,
 * `a[i]`, `*p`, and read its value from a stopped thread.  Locations: register,
 * memory (DW_OP_fbreg through the CFA, DW_OP_breg, DW_OP_addr), location lists,
 * DW_OP_stack_value / implicit values and pieces.  Types: char, short, int,
 * long, long long (signed/unsigned), bool, enums, pointers, float, double,
 * long double. */
#ifndef SONDE_SYM_VARS_H
#define SONDE_SYM_VARS_H

#include <stddef.h>
#include <stdint.h>

struct sym_module;
struct vars;
struct var_ref;

/* How to read the stopped thread (callbacks return 0 ok, -1 unavailable). */
struct var_env {
	int (*reg)(void *ctx, int dwreg, uint64_t *val);
	int (*fpreg)(void *ctx, int dwreg, uint8_t buf[16]);
	int (*mem)(void *ctx, uint64_t addr, void *buf, size_t n);
	void *ctx;
	uint64_t bias;          /* run-time minus link-time address of the module */
};

enum { VAR_INT, VAR_UINT, VAR_FLOAT };

struct var_value {
	int type;               /* VAR_INT, VAR_UINT or VAR_FLOAT */
	int64_t i;
	uint64_t u;
	long double f;
};

/* The variables of module m, read from the module's own DWARF (the one that
 * sym_open found, in the file or in its separate debug file) and its call
 * frame information; built on first use, freed by sym_close.  NULL when the
 * module has no DWARF (*err, when err is not NULL, says so). */
struct vars *sym_vars(struct sym_module *m, const char **err);

/* Compile access path `expr` (e.g. "entry->hits", "a[i]", "x") valid at
 * link-time address pc.  The variables of an inlined copy are its instance's
 * (name and type from the abstract origin), their stack locations relative to
 * the frame base of the out-of-line function the copy sits in.  0 ok, -1 with
 * err; a variable with no location at pc (optimized out) compiles, and
 * vars_eval says "optimized out here". */
int vars_compile(struct vars *v, uint64_t pc, const char *expr, struct var_ref **out,
                 char *err, size_t errlen);
/* 0 ok, -1 unavailable at run time (err says why). */
int vars_eval(const struct var_ref *r, const struct var_env *env, struct var_value *out,
              char *err, size_t errlen);
/* "int n: register rdi" — type and where the value lives at pc. */
const char *vars_describe(const struct var_ref *r);
void vars_free(struct var_ref *r);

/* What vars_compile resolved, for a backend that evaluates it elsewhere (the
 * probe agent's bytecode, src/probe/agent/agent_var.c): the DWARF operations of
 * the location at pc, of the frame base and of the CFA there, then the steps
 * of the access path.  Valid while r is. */
struct vars_op {
	uint8_t atom;
	uint64_t n1, n2;
	const uint8_t *block;   /* DW_OP_implicit_value data */
};

struct vars_shape {
	const char *no_value;   /* optimized out here: why */
	int has_const;          /* the value is cval */
	int64_t cval;
	int enc, size;          /* VAR_INT / VAR_UINT / VAR_FLOAT, bytes */
	int nsteps;
	const struct vars_op *loc, *fb, *cfa;
	size_t nloc, nfb, ncfa;
};

enum { VARS_MEMBER, VARS_DEREF, VARS_INDEX };

struct vars_step {
	int kind;               /* VARS_MEMBER: +off; VARS_DEREF; VARS_INDEX: +idx*esz (through the pointer if via_ptr) */
	int64_t off;
	uint64_t esz;
	int64_t idx;
	int idx_is_var;         /* the index is a variable (not idx) */
	int via_ptr;
};

void vars_shape(const struct var_ref *r, struct vars_shape *out);
void vars_step(const struct var_ref *r, int i, struct vars_step *out);

#endif
