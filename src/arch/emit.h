/* emit.h — what the trampoline builders of the 16/32-bit instruction sets
 * (src/arch/arm/remote_tramp.c, src/arch/riscv/remote_tramp.c) share: the
 * output buffer they append little-endian halfwords to (its length counted
 * past the end, so that a builder learns the size it needs) and the address
 * of what comes next. */
#ifndef SONDE_ARCH_EMIT_H
#define SONDE_ARCH_EMIT_H

#include <stddef.h>
#include <stdint.h>

struct em {
	uint8_t *o;
	size_t max, k;
	uint64_t at; /* the target address of o[0] */
};

static inline void e16(struct em *e, uint32_t h)
{
	if (e->k + 2 <= e->max) {
		e->o[e->k] = (uint8_t)h;
		e->o[e->k + 1] = (uint8_t)(h >> 8);
	}
	e->k += 2;
}

static inline uint64_t here(const struct em *e)
{
	return e->at + e->k;
}

/* In-target timing of calls (record --target, remote_record_mcu.c): the
 * words of the control block at the start of --target-ram that the entry
 * and exit trampolines and the ring writer share with sonde. */
enum {
	REC_CTL_SSP = 0,        /* the shadow stack: its next free frame */
	REC_CTL_SEND = 4,       /* its end: a call finding it full is not hooked (counted in REC_CTL_LOST) */
	REC_CTL_WP = 8,         /* the ring: where the next event goes */
	REC_CTL_REND = 12,      /* its end: an event finding it full stops at the ring writer's breakpoint */
	REC_CTL_LOST = 16,      /* calls not hooked: an exception entry (Cortex-M), the shadow stack full */
	REC_CTL_SBASE = 20,     /* the shadow stack's first frame */
	REC_CTL_RBASE = 24,     /* the ring's first event */
	REC_CTL_LEN = 32,
	REC_FRAME = 12,         /* a shadow frame: the return address, the function's id, the stack pointer */
	REC_EVENT = 8,          /* an event: id << 1 | (1 for a return), the clock's raw value */
};

/* Where a function's entry trampoline finds what it needs (run-time
 * addresses in the target). */
struct rec_addrs {
	uint64_t ctl;           /* the control block */
	uint64_t clock;         /* the 32-bit counter read at each event */
	uint64_t exit;          /* the exit trampoline (shared) */
	uint64_t put;           /* the ring writer (shared) */
};

#endif
