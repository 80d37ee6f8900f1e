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
 * A call costs 1..2 + 1..4 bytes (enter) + 1..2 bytes (exit) for gaps under
 * 4096 ticks (~1.4 us at 3 GHz; 32 ticks fit in one byte): 4-8 bytes per call
 * before compression, the function number of a module slot >= 1 taking 4.
 */
#ifndef SONDE_COMMON_TRACE_ENC_H
#define SONDE_COMMON_TRACE_ENC_H

#include <stdint.h>

enum { TR_ENTER = 0, TR_EXIT = 1, TR_EXIT_ABNORMAL = 2, TR_EXT = 3 };

/* Extended record types (after a TR_EXT varint comes one type byte).
 * Lengths, so that a reader skips the types it does not know:
 *  - types 1..63 have the fixed layouts listed here;
 *  - types 64..255 are followed by varint(len) and len bytes of fields
 *    (new kinds of event use this form, and old readers skip them).
 * An EXT record is not a call: it never changes the nesting of slices. */
enum {
	TRX_LOCK = 1, /* varint(lock index), byte(op), varint(aux): lock events (locks.c) */
	TRX_NAME = 2, /* thread name changed: byte len, bytes */
	TRX_SIZED = 64, /* first type of the "varint(len), bytes" form */
	TRX_PROBE = 64, /* a dynamic-probe hit (sonde probe --record), sized form, fields:
	                 *   varint(probe id)    the probe's spec is META "probe.<id>"
	                 *   varint(event)       TRP_*: a hit, or the begin / end of a slice
	                 *   varint(value kind)  TRV_*, then the value:
	                 *     TRV_NONE  nothing
	                 *     TRV_INT   varint(zigzag(int64))
	                 *     TRV_FLOAT 8 bytes, IEEE-754 double, little-endian
	                 *     TRV_STR   varint(n), n bytes (UTF-8, no NUL)
	                 * Fields after the value (a later version's) are skipped. */
	TRX_RESUME = 65, /* sized form, fields: varint(func).  A frame that is open
	                  * but was not entered here: the forked child's copies of
	                  * its parent's frames, written at the fork, the calls
	                  * running at an attach, a coroutine's frames when it runs
	                  * again (swapcontext, rt/context.c); outermost first.
	                  * A slice for the nesting and the callers, not a call; it
	                  * ends with an EXIT record like any other. */
	TRX_OFFCPU = 66, /* sized form, fields: varint(ns)[, varint(run)].  The
	                  * thread was off the CPU (preempted or blocked) for ns
	                  * nanoseconds since its previous record, all of it
	                  * inside the innermost open call (issue 38,
	                  * rt/cpu_time.c): written by the first hook after a
	                  * context switch, before that hook's own record.  run,
	                  * when there: the part of ns it was runnable (switched
	                  * out by preemption), the rest blocked; not there: not
	                  * known. */
	TRX_SWITCH = 67, /* sized form, fields: varint(out), varint(len),
	                  * varint(how), varint(cpu).  One of the waits of the
	                  * TRX_OFFCPU that follows: the thread was switched out
	                  * at CLOCK_MONOTONIC ns `out` for len ns; how bit 0:
	                  * runnable (preempted), else blocked; cpu: 1 + the CPU
	                  * it ran on after it, 0 not known (issue 38, a trace's
	                  * thread-state track; rt/cpu_time.c). */
	TRX_SYSCALL = 68, /* sized form, fields: varint(call), varint(ticks),
	                   * varint(result).  A system call of `record --syscalls`
	                   * (rt/syscalls.c), ending at the record's time after
	                   * `ticks`, made inside the innermost open call; call:
	                   * enum sys_call (common/sys_session.h); result 0 an
	                   * error, else 1 + the call's result (bytes for the
	                   * read/write-like ones). */
	TRX_LAST_KNOWN = TRX_SYSCALL, /* the last type this version writes (readers skip those after it) */
};

/* TRX_PROBE events and value kinds. */
enum { TRP_HIT = 0, TRP_BEGIN = 1, TRP_END = 2 };
enum { TRV_NONE = 0, TRV_INT = 1, TRV_FLOAT = 2, TRV_STR = 3 };

static inline uint64_t tr_zigzag(int64_t v) { return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63); }
static inline int64_t tr_unzigzag(uint64_t v) { return (int64_t)(v >> 1) ^ -(int64_t)(v & 1); }

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
	/* One and two bytes, most of a trace's varints (times between events,
	 * function numbers), without the loop; the same values as the loop. */
	if (p < end && p[0] < 0x80) {
		*v = p[0];
		return 1;
	}
	if (p + 1 < end && p[1] < 0x80) {
		*v = (uint64_t)(p[0] & 0x7f) | (uint64_t)p[1] << 7;
		return 2;
	}
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

/* Skip the fields of an EXT record of type `type` (p points after the type
 * byte).  Returns the bytes skipped, or -1 when malformed / truncated. */
static inline int tr_skip_ext(uint8_t type, const uint8_t *p, const uint8_t *end)
{
	uint64_t v;
	int n, k;
	switch (type) {
	case TRX_LOCK:
		if (!(n = tr_get_varint(p, end, &v)) || p + n + 1 > end)
			return -1;
		n += 1;
		if (!(k = tr_get_varint(p + n, end, &v)))
			return -1;
		return n + k;
	case TRX_NAME:
		if (p >= end || p + 1 + p[0] > end)
			return -1;
		return 1 + p[0];
	default:
		if (type < TRX_SIZED)
			return -1; /* a fixed layout this reader does not know: cannot skip */
		if (!(n = tr_get_varint(p, end, &v)) || v > (uint64_t)(end - p - n))
			return -1;
		return n + (int)v;
	}
}

/* The calls (ENTER records) in a chunk's payload, up to a malformed record
 * if any (the flight recorder counts what it lets go). */
static inline uint64_t tr_count_calls(const uint8_t *p, const uint8_t *end)
{
	uint64_t calls = 0, v;
	while (p < end) {
		int n = tr_get_varint(p, end, &v);
		if (!n)
			break;
		p += n;
		if ((v & 3) == TR_ENTER) {
			if (!(n = tr_get_varint(p, end, &v)))
				break;
			p += n;
			calls++;
		} else if ((v & 3) == TR_EXT) {
			if (p >= end || (n = tr_skip_ext(p[0], p + 1, end)) < 0)
				break;
			p += 1 + n;
		}
	}
	return calls;
}

#endif
