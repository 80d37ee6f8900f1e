/* probe_stack.h — the agent's side of stack probes (probe_stack.c): at a
 * hit, the registers and a bounded copy of the stack into the thread's
 * stack ring of the shared area (common/probe_area.h, struct pa_sring). */
#ifndef SONDE_RT_PROBE_STACK_H
#define SONDE_RT_PROBE_STACK_H

#include <stdint.h>

#include "common/probe_area.h"

/* A new session's area h: its stack rings, when it has them (h->stk_on). */
void pa_stack_start(struct pa_hdr *h);
/* A hit of site record s (index idx) with stack pointer sp and the
 * registers regs (enum pa_reg): one record in this thread's ring, or one
 * more in s->stack_lost. */
void pa_stack_put(struct pa_site *s, uint32_t idx, uint64_t sp, const uint64_t *regs);

/* Provided by probes.c: the end of this thread's stack mapping when sp is
 * inside it (0), else -1 (memory there is read through the kernel). */
int pa_stack_end(uint64_t sp, uint64_t *hi);
/* Provided by probes.c: the return addresses that func probes replaced by
 * their exit stub (this thread's shadow stack) put back in copy, the n bytes
 * of the stack from sp. */
void pa_shadow_unpatch(uint64_t sp, uint8_t *copy, uint32_t n);

/* Provided by probes.c: the return address v read at slot, or the real one
 * when a func probe replaced it there by its exit stub. */
uint64_t pa_shadow_ret(uint64_t slot, uint64_t v);

#endif
