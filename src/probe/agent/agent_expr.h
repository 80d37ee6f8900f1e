/* agent_expr.h — an assert probe's expression (expr.c's tree) at one
 * address, compiled into the probe agent's bytecode (struct pa_var with
 * is_assert, common/probe_area.h) for assert probes on the agent backend
 * (agent_kinds.c). */
#ifndef SONDE_PROBE_AGENT_EXPR_H
#define SONDE_PROBE_AGENT_EXPR_H

#include <stddef.h>
#include <stdint.h>

struct expr;
struct pa_var;

/* x's program for an address of a module loaded at bias over [mod_lo,
 * mod_hi) (as agent_var_compile): integers, and floating point (out->fprog), each variable's value kept
 * for the failures (the k-th from the left in saved[k], at most
 * PA_VAR_SAVE), && and || short-circuit as expr.c's.  0, or -1 with why:
 * what the agent does not do (long double, too many variables, a
 * variable agent_var_compile refuses); such a probe stays on ptrace. */
int agent_expr_compile(const struct expr *x, uint64_t bias, uint64_t mod_lo, uint64_t mod_hi, struct pa_var *out,
                       char *why, size_t n);

#endif
