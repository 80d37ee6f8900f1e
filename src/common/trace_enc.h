/* trace_enc.h — the encoding of trace records inside ring chunks, shared by
 * the writer (runtime) and the reader (src/data).
 *
 * A record starts with a varint whose low 2 bits are its kind and whose other
 * bits are the time since the previous record of the chunk (the chunk's
 * base_tsc for the first), in ticks:
 *   kind 0 ENTER : followed by varint(func)         (func = SONDE_FUNC(module, number))
 *   kind 1 EXIT  : nothing (the function is the innermost open entry)
 *   kind 2 EXIT_ABNORMAL: the frame ended without returning (longjmp, exception,
 *                  thread or process end); closed at this time
 *   kind 3 EXT   : followed by one byte of extended type and its fields (lock
 *                  events and others, see below)
 * A call costs 2 + 3..4 bytes (enter) + 1..2 bytes (exit) for sub-16 µs gaps:
 * about 6-8 bytes per call before compression.
 */
#ifndef SONDE_COMMON_TRACE_ENC_H
#define SONDE_COMMON_TRACE_ENC_H

#include <stdint.h>

enum { TR_ENTER = 0, TR_EXIT = 1, TR_EXIT_ABNORMAL = 2, TR_EXT = 3 };

/* Extended record types (after a TR_EXT varint). */
enum {
	TRX_LOCK = 1, /* varint(lock index), byte(op), varint(aux): lock events (locks.c) */
	TRX_NAME = 2, /* thread name changed: byte len, bytes */
};

#define TR_MAX_VARINT 10

static inline int tr_put_varint(uint8_t *p, uint64_t v)
{
	int n = 0;
	while (v >= 0x80) {
		p[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (uint8_t)v;
	return n;
}

/* Returns bytes read, 0 on malformed / truncated input. */
static inline int tr_get_varint(const uint8_t *p, const uint8_t *end, uint64_t *v)
{
	uint64_t r = 0;
	for (int i = 0, shift = 0; p + i < end && i < TR_MAX_VARINT; i++, shift += 7) {
		r |= (uint64_t)(p[i] & 0x7f) << shift;
		if (!(p[i] & 0x80)) {
			*v = r;
			return i + 1;
		}
	}
	return 0;
}

#endif
