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

#endif
