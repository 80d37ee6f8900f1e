/* crc32.c — CRC-32 (IEEE 802.3, reflected 0xEDB88320) for record checksums,
 * slicing-by-8: eight table lookups per 8 bytes (the collector checksums every
 * event chunk it stores, so this is on the recorder's busy path, and every
 * reader checks every record).  On x86-64 with PCLMULQDQ the whole 16-byte
 * blocks of inputs of 64 bytes or more are folded with carry-less
 * multiplications instead (Gopal et al., "Fast CRC Computation for Generic
 * Polynomials Using PCLMULQDQ", Intel 2009; the constants of its bit-reflected
 * form for this polynomial, as in zlib's and Linux's versions), the rest by
 * the tables: the same CRC (tests/unit/test_crc32.c checks it against a
 * bitwise one). */
#include <stdint.h>
#include <string.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "common/format.h"

static uint32_t table[8][256];

static void init_table(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
		table[0][i] = c;
	}
	for (uint32_t i = 0; i < 256; i++)
		for (int t = 1; t < 8; t++)
			table[t][i] = (table[t - 1][i] >> 8) ^ table[0][table[t - 1][i] & 0xff];
}

#if defined(__x86_64__)
/* The CRC register (not inverted) after len bytes at p, len a multiple of 16
 * and at least 64: four 128-bit lanes folded 64 bytes at a time, folded into
 * one, then 16 bytes at a time, then to 64 bits and a Barrett reduction. */
__attribute__((target("pclmul,sse4.1"))) static uint32_t crc32_fold(uint32_t crc, const uint8_t *p, uint64_t len)
{
	const __m128i k1k2 = _mm_set_epi64x(0x01c6e41596, 0x0154442bd4);
	const __m128i k3k4 = _mm_set_epi64x(0x00ccaa009e, 0x01751997d0);
	const __m128i k5k0 = _mm_set_epi64x(0, 0x0163cd6124);
	const __m128i poly = _mm_set_epi64x(0x01f7011641, 0x01db710641);
	const __m128i mask32 = _mm_setr_epi32(~0, 0, ~0, 0);
	__m128i x1 = _mm_loadu_si128((const __m128i *)p), x2 = _mm_loadu_si128((const __m128i *)(p + 16));
	__m128i x3 = _mm_loadu_si128((const __m128i *)(p + 32)), x4 = _mm_loadu_si128((const __m128i *)(p + 48));
	x1 = _mm_xor_si128(x1, _mm_cvtsi32_si128((int)crc));
	p += 64;
	len -= 64;
	while (len >= 64) {
		__m128i x5 = _mm_clmulepi64_si128(x1, k1k2, 0x00), x6 = _mm_clmulepi64_si128(x2, k1k2, 0x00);
		__m128i x7 = _mm_clmulepi64_si128(x3, k1k2, 0x00), x8 = _mm_clmulepi64_si128(x4, k1k2, 0x00);
		x1 = _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(x1, k1k2, 0x11), x5), _mm_loadu_si128((const __m128i *)p));
		x2 = _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(x2, k1k2, 0x11), x6),
		                   _mm_loadu_si128((const __m128i *)(p + 16)));
		x3 = _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(x3, k1k2, 0x11), x7),
		                   _mm_loadu_si128((const __m128i *)(p + 32)));
		x4 = _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(x4, k1k2, 0x11), x8),
		                   _mm_loadu_si128((const __m128i *)(p + 48)));
		p += 64;
		len -= 64;
	}
	/* the four lanes into one */
	x1 = _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(x1, k3k4, 0x11), x2), _mm_clmulepi64_si128(x1, k3k4, 0x00));
	x1 = _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(x1, k3k4, 0x11), x3), _mm_clmulepi64_si128(x1, k3k4, 0x00));
	x1 = _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(x1, k3k4, 0x11), x4), _mm_clmulepi64_si128(x1, k3k4, 0x00));
	while (len >= 16) {
		x1 = _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(x1, k3k4, 0x11), _mm_loadu_si128((const __m128i *)p)),
		                   _mm_clmulepi64_si128(x1, k3k4, 0x00));
		p += 16;
		len -= 16;
	}
	/* 128 bits to 64 */
	x2 = _mm_clmulepi64_si128(x1, k3k4, 0x10);
	x1 = _mm_xor_si128(_mm_srli_si128(x1, 8), x2);
	x2 = _mm_srli_si128(x1, 4);
	x1 = _mm_xor_si128(_mm_clmulepi64_si128(_mm_and_si128(x1, mask32), k5k0, 0x00), x2);
	/* Barrett reduction to 32 bits */
	x2 = _mm_clmulepi64_si128(_mm_and_si128(x1, mask32), poly, 0x10);
	x2 = _mm_clmulepi64_si128(_mm_and_si128(x2, mask32), poly, 0x00);
	x1 = _mm_xor_si128(x1, x2);
	return (uint32_t)_mm_extract_epi32(x1, 1);
}

/* 1: the CPU has PCLMULQDQ and SSE4.1; -1: not; 0: not asked yet. */
static int have_clmul;
#endif

uint32_t crc32_ieee(uint32_t crc, const void *buf, uint64_t len)
{
	if (!table[0][1])
		init_table();
	const uint8_t *p = buf;
	crc = ~crc;
#if defined(__x86_64__)
	if (len >= 64) {
		if (!have_clmul)
			have_clmul = __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1") ? 1 : -1;
		if (have_clmul > 0) {
			uint64_t n = len & ~(uint64_t)15;
			crc = crc32_fold(crc, p, n);
			p += n;
			len -= n;
		}
	}
#endif
	while (len >= 8) {
		uint32_t lo, hi;
		memcpy(&lo, p, 4);
		memcpy(&hi, p + 4, 4);
		lo ^= crc;
		crc = table[7][lo & 0xff] ^ table[6][(lo >> 8) & 0xff] ^ table[5][(lo >> 16) & 0xff] ^ table[4][lo >> 24] ^
		      table[3][hi & 0xff] ^ table[2][(hi >> 8) & 0xff] ^ table[1][(hi >> 16) & 0xff] ^ table[0][hi >> 24];
		p += 8;
		len -= 8;
	}
	while (len--)
		crc = table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return ~crc;
}
