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

int main(void)
{
	RUN(check_value);
	RUN(chained_equals_whole);
	UNIT_END();
}
