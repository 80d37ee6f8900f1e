/* agent_var.h — a variable's DWARF location at one address, compiled into
 * the probe agent's bytecode (struct pa_var, common/probe_area.h) for var
 * probes on the agent backend (agent_kinds.c). */
#ifndef SONDE_PROBE_AGENT_VAR_H
#define SONDE_PROBE_AGENT_VAR_H

#include <stddef.h>
#include <stdint.h>

struct pa_var;
struct var_ref;

/* r as resolved by vars_compile for one address of a module loaded at bias
 * (run-time minus link-time) over [mod_lo, mod_hi) (a global inside is read
 * directly by the agent: the module stays while its code runs): out's program, type and size (the statistics
 * are set to their start).  0, or -1 with why: what the bytecode does not
 * do (floating point, pieces, entry values, an index by a variable...); such
 * a probe stays on the ptrace engine.  A variable optimized out there
 * compiles (a program that says "no value here"). */
int agent_var_compile(const struct var_ref *r, uint64_t bias, uint64_t mod_lo, uint64_t mod_hi, struct pa_var *out,
                      char *why, size_t n);
/* One instruction appended to v's program (agent_expr.c's too); -1 with
 * why when the program is full ("the WHAT needs more than N instructions"). */
int agent_emit(struct pa_var *v, uint8_t op, uint8_t a, int64_t k, const char *what, char *why, size_t n);

#endif
