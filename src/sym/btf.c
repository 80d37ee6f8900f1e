/* btf.c — the return type of a kernel function from BTF (btf.h).  The
 * format is the kernel's (include/uapi/linux/btf.h, Documentation/bpf/btf.rst):
 * a header, a type section of variable-length records (type id i is the
 * i-th record; 0 is void), a string section.  Only the host's byte order
 * is read (the running kernel's). */
#include "sym/btf.h"

#include "common/file_read.h"

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define BTF_MAGIC_ 0xeB9Fu
#define BTF_MAX_FILE (256u << 20)
#define BTF_MAX_TYPES (1u << 24)
#define BTF_MAX_DEPTH 32          /* typedef / qualifier links followed */

enum {
	K_INT = 1, K_PTR, K_ARRAY, K_STRUCT, K_UNION, K_ENUM, K_FWD, K_TYPEDEF, K_VOLATILE, K_CONST, K_RESTRICT,
	K_FUNC, K_FUNC_PROTO, K_VAR, K_DATASEC, K_FLOAT, K_DECL_TAG, K_TYPE_TAG, K_ENUM64,
};

struct btf {
	unsigned char *data;
	const unsigned char *types;   /* the type section, types_len bytes */
	uint32_t types_len;
	const char *strs;             /* the string section, str_len bytes, NUL-terminated */
	uint32_t str_len;
	uint32_t *off;                /* own type k (id start_id + k): its offset in types */
	uint32_t ntypes;
	uint32_t start_id, start_str; /* 1, 0 for a base; after the base's for a split BTF */
	const struct btf *base;
};

static uint32_t rd32(const unsigned char *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return v;
}

static uint16_t rd16(const unsigned char *p)
{
	uint16_t v;
	memcpy(&v, p, 2);
	return v;
}

/* The bytes a record of kind with vlen entries has after its 12: -1 for an unknown kind. */
static int64_t extra(unsigned kind, uint32_t vlen)
{
	switch (kind) {
	case K_INT: case K_VAR: case K_DECL_TAG: return 4;
	case K_PTR: case K_FWD: case K_TYPEDEF: case K_VOLATILE: case K_CONST: case K_RESTRICT:
	case K_FUNC: case K_FLOAT: case K_TYPE_TAG: return 0;
	case K_ARRAY: return 12;
	case K_STRUCT: case K_UNION: case K_DATASEC: case K_ENUM64: return 12 * (int64_t)vlen;
	case K_ENUM: case K_FUNC_PROTO: return 8 * (int64_t)vlen;
	default: return -1;
	}
}

/* The records' offsets: 0, or -1 when a record runs past the section or is of an unknown kind. */
static int index_types(struct btf *b)
{
	uint64_t pos = 0;
	uint32_t n = 0;
	for (int pass = 0; pass < 2; pass++) {
		pos = 0;
		n = 0;
		while (pos < b->types_len) {
			if (b->types_len - pos < 12 || n >= BTF_MAX_TYPES)
				return -1;
			uint32_t info = rd32(b->types + pos + 4);
			int64_t x = extra(info >> 24 & 0x1f, info & 0xffff);
			if (x < 0 || (uint64_t)x > b->types_len - pos - 12)
				return -1;
			if (pass)
				b->off[n] = (uint32_t)pos;
			n++;
			pos += 12 + (uint64_t)x;
		}
		if (!pass) {
			if (!(b->off = malloc(sizeof *b->off * (n ? n : 1))))
				return -1;
			b->ntypes = n;
		}
	}
	return 0;
}

struct btf *btf_from_mem(const void *data, size_t n, const struct btf *base)
{
	if (!data || n < 24 || n > BTF_MAX_FILE || (base && base->base))
		return NULL;
	struct btf *b = calloc(1, sizeof *b);
	if (!b || !(b->data = malloc(n))) {
		free(b);
		return NULL;
	}
	memcpy(b->data, data, n);
	const unsigned char *h = b->data;
	uint32_t hdr_len = rd32(h + 4), type_off = rd32(h + 8), type_len = rd32(h + 12);
	uint32_t str_off = rd32(h + 16), str_len = rd32(h + 20);
	if (rd16(h) != BTF_MAGIC_ || h[2] != 1 || hdr_len < 24 || hdr_len > n)
		goto bad;
	uint64_t body = n - hdr_len;
	if ((uint64_t)type_off + type_len > body || (uint64_t)str_off + str_len > body)
		goto bad;
	if (str_len && b->data[hdr_len + str_off + str_len - 1] != '\0')
		goto bad;
	b->types = b->data + hdr_len + type_off;
	b->types_len = type_len;
	b->strs = (const char *)b->data + hdr_len + str_off;
	b->str_len = str_len;
	b->base = base;
	if (base) {
		uint64_t id = (uint64_t)base->start_id + base->ntypes, so = (uint64_t)base->start_str + base->str_len;
		if (id > UINT32_MAX / 2 || so > UINT32_MAX)
			goto bad;
		b->start_id = (uint32_t)id;
		b->start_str = (uint32_t)so;
	} else {
		b->start_id = 1;
	}
	if (index_types(b))
		goto bad;
	return b;
bad:
	btf_free(b);
	return NULL;
}

struct btf *btf_open(const char *path, const struct btf *base)
{
	/* sysfs gives a size in st_size (the blob's), but reads to the end all the same */
	size_t len = 0;
	unsigned char *buf = (unsigned char *)file_read_all(path, BTF_MAX_FILE, &len);
	struct btf *b = buf ? btf_from_mem(buf, len, base) : NULL;
	free(buf);
	return b;
}

void btf_free(struct btf *b)
{
	if (!b)
		return;
	free(b->off);
	free(b->data);
	free(b);
}

/* The record of type id (12 bytes and its extra in bounds), or NULL (also for void, id 0). */
static const unsigned char *type_of(const struct btf *b, uint32_t id)
{
	if (id < b->start_id)
		return b->base ? type_of(b->base, id) : NULL;
	if (id - b->start_id >= b->ntypes)
		return NULL;
	return b->types + b->off[id - b->start_id];
}

/* The string at offset off of b's string space (its base's, then its own), or NULL. */
static const char *str_of(const struct btf *b, uint32_t off)
{
	if (off < b->start_str)
		return b->base ? str_of(b->base, off) : NULL;
	off -= b->start_str;
	return off < b->str_len ? b->strs + off : NULL;
}

static unsigned kind_of(const unsigned char *t) { return rd32(t + 4) >> 24 & 0x1f; }

/* The C name of type id into buf ("void", "ssize_t", "struct file *"): 0, or -1. */
static int type_name(const struct btf *b, uint32_t id, char *buf, size_t n, int depth)
{
	for (; depth < BTF_MAX_DEPTH; depth++) {
		if (id == 0) {
			snprintf(buf, n, "void");
			return 0;
		}
		const unsigned char *t = type_of(b, id);
		if (!t)
			return -1;
		unsigned k = kind_of(t);
		const char *s = str_of(b, rd32(t));
		if (k == K_CONST || k == K_VOLATILE || k == K_RESTRICT || k == K_TYPE_TAG) {
			id = rd32(t + 8);
			continue;
		}
		if (k == K_PTR) {
			char in[80];
			if (type_name(b, rd32(t + 8), in, sizeof in, depth + 1))
				return -1;
			snprintf(buf, n, "%s%s*", in, in[strlen(in) - 1] == '*' ? "" : " ");
			return 0;
		}
		const char *tag = k == K_STRUCT ? "struct " : k == K_UNION ? "union " : k == K_ENUM || k == K_ENUM64 ? "enum "
		                : k == K_FWD ? (rd32(t + 4) >> 31 ? "union " : "struct ") : k == K_FUNC_PROTO ? "func" : NULL;
		if (k == K_FUNC_PROTO) {
			snprintf(buf, n, "func");
			return 0;
		}
		if (!s)
			return -1;
		if (!tag && k != K_INT && k != K_TYPEDEF && k != K_FLOAT)
			return -1;
		snprintf(buf, n, "%s%s", tag ? tag : "", *s ? s : "(anon)");
		return 0;
	}
	return -1;
}

int btf_func_ret(const struct btf *b, const char *func, struct sym_ret *r)
{
	memset(r, 0, sizeof *r);
	if (!b || !func)
		return -1;
	const unsigned char *fn = NULL;
	for (uint32_t k = 0; k < b->ntypes && !fn; k++) {
		const unsigned char *t = b->types + b->off[k];
		const char *s;
		if (kind_of(t) == K_FUNC && (s = str_of(b, rd32(t))) && !strcmp(s, func))
			fn = t;
	}
	if (!fn)
		return -1;
	const unsigned char *proto = type_of(b, rd32(fn + 8));
	if (!proto || kind_of(proto) != K_FUNC_PROTO)
		return -1;
	uint32_t id = rd32(proto + 8);
	if (type_name(b, id, r->name, sizeof r->name, 0))
		return -1;
	for (int depth = 0; depth < BTF_MAX_DEPTH; depth++) {
		if (id == 0) {
			r->is_void = 1;
			return 0;
		}
		const unsigned char *t = type_of(b, id);
		if (!t)
			return -1;
		uint32_t info = rd32(t + 4), sz = rd32(t + 8);
		switch (kind_of(t)) {
		case K_TYPEDEF: case K_CONST: case K_VOLATILE: case K_RESTRICT: case K_TYPE_TAG:
			id = sz;   /* the union of size and type: here the type */
			continue;
		case K_PTR:
			r->is_ptr = 1;
			r->size = 8;
			return 0;
		case K_INT: {
			uint32_t enc = rd32(t + 12);
			if (sz != 1 && sz != 2 && sz != 4 && sz != 8)
				return -1;
			r->size = sz;
			r->is_signed = (enc >> 24 & 1) != 0;
			r->is_bool = (enc >> 24 & 4) != 0;
			return 0;
		}
		case K_ENUM: case K_ENUM64:
			if (sz != 1 && sz != 2 && sz != 4 && sz != 8)
				return -1;
			r->size = sz;
			r->is_enum = 1;
			r->is_signed = (int)(info >> 31);   /* kflag: a signed enum */
			return 0;
		default:
			return -1;     /* a struct, union, float, array...: not an integer in AX */
		}
	}
	return -1;
}
