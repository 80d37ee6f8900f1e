/* crc32.c — CRC-32 (IEEE 802.3, reflected 0xEDB88320) for record checksums. */
#include <stdint.h>

#include "common/format.h"

static uint32_t table[256];

static void init_table(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
		table[i] = c;
	}
}

uint32_t crc32_ieee(uint32_t crc, const void *buf, uint64_t len)
{
	if (!table[1])
		init_table();
	const uint8_t *p = buf;
	crc = ~crc;
	while (len--)
		crc = table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return ~crc;
}
