/* bits.h — sign extension of an instruction's immediate field, for the
 * decoders, emulators and trampoline builders of every architecture. */
#ifndef SONDE_ARCH_BITS_H
#define SONDE_ARCH_BITS_H

#include <stdint.h>

/* The low `bits` bits of v (1..64), sign-extended. */
static inline int64_t sext(uint64_t v, int bits)
{
	uint64_t m = 1ull << (bits - 1);
	if (bits < 64)
		v &= (1ull << bits) - 1;
	return (int64_t)((v ^ m) - m);
}

#endif
