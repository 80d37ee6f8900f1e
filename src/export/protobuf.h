/* protobuf.h — the project's protobuf wire-format writer (no library, no
 * code generation): varints, length-delimited fields and nested messages
 * into a growing buffer.  Used by the Perfetto and pprof exports.
 *
 * Out of memory: the buffer keeps what it had, every later write is
 * skipped and b->oom says so; the caller reports it once at the end. */
#ifndef SONDE_EXPORT_PROTOBUF_H
#define SONDE_EXPORT_PROTOBUF_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct pb_buf {
	uint8_t *p;
	size_t n, cap;
	int oom;
};

enum { PB_VARINT = 0, PB_I64 = 1, PB_LEN = 2 };

static inline int pb_grow(struct pb_buf *b, size_t k)
{
	if (b->oom)
		return -1;
	size_t cap = (b->n + k) * 2 + 256;
	uint8_t *p = realloc(b->p, cap);
	if (!p) {
		b->oom = 1;
		return -1;
	}
	b->p = p;
	b->cap = cap;
	return 0;
}

/* Room for k more bytes: 0, or -1 (out of memory, nothing may be written). */
static inline __attribute__((always_inline)) int pb_need(struct pb_buf *b, size_t k)
{
	return b->n + k <= b->cap ? 0 : pb_grow(b, k);
}

static inline void pb_free(struct pb_buf *b)
{
	free(b->p);
	memset(b, 0, sizeof *b);
}

static inline __attribute__((always_inline)) void pb_varint(struct pb_buf *b, uint64_t v)
{
	if (pb_need(b, 10))
		return;
	while (v >= 0x80) {
		b->p[b->n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	b->p[b->n++] = (uint8_t)v;
}

static inline __attribute__((always_inline)) void pb_uint(struct pb_buf *b, int field, uint64_t v)
{
	pb_varint(b, (uint64_t)field << 3 | PB_VARINT);
	pb_varint(b, v);
}

/* int64 fields are varints of the two's complement (10 bytes when negative). */
static inline void pb_int(struct pb_buf *b, int field, int64_t v)
{
	pb_uint(b, field, (uint64_t)v);
}

static inline void pb_fixed64(struct pb_buf *b, int field, const void *p8)
{
	pb_varint(b, (uint64_t)field << 3 | PB_I64);
	if (pb_need(b, 8))
		return;
	memcpy(b->p + b->n, p8, 8);
	b->n += 8;
}

static inline void pb_bytes(struct pb_buf *b, int field, const void *p, size_t n)
{
	pb_varint(b, (uint64_t)field << 3 | PB_LEN);
	pb_varint(b, n);
	if (pb_need(b, n))
		return;
	memcpy(b->p + b->n, p, n);
	b->n += n;
}

static inline void pb_str(struct pb_buf *b, int field, const char *s)
{
	pb_bytes(b, field, s, strlen(s));
}

/* Nested messages (and packed repeated fields): open reserves a 5-byte
 * length (a padded varint), close fills it in. */
static inline size_t pb_open(struct pb_buf *b, int field)
{
	pb_varint(b, (uint64_t)field << 3 | PB_LEN);
	if (pb_need(b, 5))
		return 0;
	size_t at = b->n;
	b->n += 5;
	return at;
}

static inline void pb_close(struct pb_buf *b, size_t at)
{
	if (b->oom)
		return;
	uint32_t len = (uint32_t)(b->n - at - 5);
	if (len < 128) { /* the usual case: a one-byte length, the body moved up */
		b->p[at] = (uint8_t)len;
		memmove(b->p + at + 1, b->p + at + 5, len);
		b->n -= 4;
		return;
	}
	for (int i = 0; i < 5; i++)
		b->p[at + i] = (uint8_t)(((len >> (7 * i)) & 0x7f) | (i < 4 ? 0x80 : 0));
}

#endif
