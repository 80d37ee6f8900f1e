/* probe_float.h — floating-point var probes on the agent (probe_float.c). */
#ifndef SONDE_RT_PROBE_FLOAT_H
#define SONDE_RT_PROBE_FLOAT_H

#include <stdint.h>

#include "common/probe_area.h"

/* The value (bits of a float or a double, v->size) into v's statistics;
 * returns it as the bits of a double.  Callable from the code built without
 * floating point (probes.c): the program's x87 and SSE registers are saved
 * around it (fxsave) and put back. */
uint64_t pa_float_hit(struct pa_var *v, uint64_t bits);

#endif
