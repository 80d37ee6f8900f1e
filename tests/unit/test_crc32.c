/* test_crc32.c — the record checksum is the standard CRC-32 (check values of
 * the IEEE polynomial from the CRC catalogue), whatever the split of the input. */
#include <string.h>

#include "common/format.h"
#include "unit.h"

static void check_value(void)
{
	CHECK_EQ_U(crc32_ieee(0, "123456789", 9), 0xcbf43926u); /* the catalogue's check value */
	CHECK_EQ_U(crc32_ieee(0, "", 0), 0);
	CHECK_EQ_U(crc32_ieee(0, "The quick brown fox jumps over the lazy dog", 43), 0x414fa339u);
}

static void chained_equals_whole(void)
{
	unsigned char buf[1000];
	for (int i = 0; i < 1000; i++)
		buf[i] = (unsigned char)(i * 7 + 3);
	uint32_t whole = crc32_ieee(0, buf, sizeof buf);
	for (int cut = 0; cut < 40; cut++)
		CHECK_EQ_U(crc32_ieee(crc32_ieee(0, buf, cut), buf + cut, sizeof buf - cut), whole);
}

/* Bit by bit, the definition. */
static uint32_t crc_bitwise(const unsigned char *p, size_t n)
{
	uint32_t c = ~0u;
	while (n--) {
		c ^= *p++;
		for (int k = 0; k < 8; k++)
			c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
	}
	return ~c;
}

/* Every length to 600 and some long ones, at every alignment mod 16: the
 * tables and the carry-less folding (x86-64, 64 bytes and more) agree with
 * the definition. */
static void equals_bitwise(void)
{
	static unsigned char buf[70000 + 16];
	uint64_t x = 0x9e3779b97f4a7c15ull;
	for (size_t i = 0; i < sizeof buf; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		buf[i] = (unsigned char)x;
	}
	int bad = 0;
	for (size_t n = 0; n <= 600; n++)
		for (size_t a = 0; a < 16; a++)
			bad += crc32_ieee(0, buf + a, n) != crc_bitwise(buf + a, n);
	static const size_t longs[] = { 1023, 1024, 4097, 65536, 65536 + 15, 70000 };
	for (size_t i = 0; i < sizeof longs / sizeof *longs; i++)
		bad += crc32_ieee(0, buf + 3, longs[i]) != crc_bitwise(buf + 3, longs[i]);
	memset(buf, 0xff, 200); /* all ones, all zeros */
	bad += crc32_ieee(0, buf, 200) != crc_bitwise(buf, 200);
	memset(buf, 0, 200);
	bad += crc32_ieee(0, buf, 200) != crc_bitwise(buf, 200);
	CHECK_EQ_U(bad, 0);
}

int main(void)
{
	RUN(check_value);
	RUN(chained_equals_whole);
	RUN(equals_bitwise);
	UNIT_END();
}
