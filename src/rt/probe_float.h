/* probe_float.h — floating point in the agent (probe_float.c): the
 * statistics of float var probes, and assertions with floating point. */
#ifndef SONDE_RT_PROBE_FLOAT_H
#define SONDE_RT_PROBE_FLOAT_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "common/probe_area.h"

/* The value (bits of a float or a double, v->size) into v's statistics;
 * returns it as the bits of a double.  Callable from the code built without
 * floating point (probes.c): the program's x87 and SSE registers are saved
 * around it (fxsave) and put back. */
uint64_t pa_float_hit(struct pa_var *v, uint64_t bits);

/* An assertion whose program has floating point (v->fprog), run as
 * probes.c's var_eval runs the others (the same return codes: 0 and x the
 * truth, 1 no value here, -1 a read failed, -2 a bad program, -3 a division
 * by zero; saved and mask the variables' values, a float variable's as the
 * bits of a double).  The state is saved as for pa_float_hit. */
struct pa_feval {
	const struct pa_var *v;
	const uint64_t *regs;
	uint64_t sp, pc;
	const struct _libc_fpstate *fp;  /* an int3 site's saved registers, or NULL (the jump's: in the registers) */
	int64_t x;
	int64_t saved[PA_VAR_SAVE];
	uint32_t mask;
};
int pa_float_eval(struct pa_feval *a);

/* probes.c's, for the program's reads: memory (bounded, a bad address is
 * -1), and DWARF register r (0-16; 17-32 the live xmm registers). */
int pa_var_read(uint64_t addr, void *buf, size_t n, uint64_t sp, int direct);
int pa_var_reg(int r, const uint64_t *regs, uint64_t sp, uint64_t pc, uint64_t *out);

#endif
