/* test_protobuf.c — the protobuf writer (src/export/protobuf.h) against the
 * encodings worked out in the protobuf documentation ("Encoding": 150 as
 * field 1 is 08 96 01, "testing" as field 2 is 12 07 74 65 73 74 69 6e 67,
 * a message holding 08 96 01 as field 3 is 1a 03 08 96 01), an int64 -1 as
 * ten bytes, and a nested message longer than 127 bytes (padded length). */
#include <string.h>

#include "export/protobuf.h"
#include "unit.h"

static int same(const struct pb_buf *b, const unsigned char *want, size_t n)
{
	return b->n == n && !memcmp(b->p, want, n);
}

static void documented_encodings(void)
{
	struct pb_buf b = { 0 };
	pb_uint(&b, 1, 150);
	static const unsigned char a[] = { 0x08, 0x96, 0x01 };
	CHECK(same(&b, a, sizeof a));
	b.n = 0;
	pb_str(&b, 2, "testing");
	static const unsigned char s[] = { 0x12, 0x07, 0x74, 0x65, 0x73, 0x74, 0x69, 0x6e, 0x67 };
	CHECK(same(&b, s, sizeof s));
	b.n = 0;
	size_t m = pb_open(&b, 3);
	pb_uint(&b, 1, 150);
	pb_close(&b, m);
	static const unsigned char c[] = { 0x1a, 0x03, 0x08, 0x96, 0x01 };
	CHECK(same(&b, c, sizeof c));
	b.n = 0;
	pb_int(&b, 1, -1);
	static const unsigned char neg[] = { 0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01 };
	CHECK(same(&b, neg, sizeof neg));
	CHECK(!b.oom);
	pb_free(&b);
}

static void long_nested_message(void)
{
	struct pb_buf b = { 0 };
	char body[201];
	memset(body, 'x', 200);
	body[200] = 0;
	size_t m = pb_open(&b, 4);
	pb_str(&b, 1, body); /* 0a c8 01 + 200 bytes = 203 bytes */
	pb_close(&b, m);
	/* key 0x22, then 203 as a 5-byte varint: cb 81 80 80 00 */
	static const unsigned char head[] = { 0x22, 0xcb, 0x81, 0x80, 0x80, 0x00, 0x0a, 0xc8, 0x01 };
	CHECK_EQ_U(b.n, 1 + 5 + 203);
	CHECK(!memcmp(b.p, head, sizeof head));
	CHECK(b.p[b.n - 1] == 'x');
	pb_free(&b);
}

int main(void)
{
	RUN(documented_encodings);
	RUN(long_nested_message);
	UNIT_END();
}
