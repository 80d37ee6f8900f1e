/* crc32.c — CRC-32 (IEEE 802.3, reflected 0xEDB88320) for record checksums,
 * slicing-by-8: eight table lookups per 8 bytes (the collector checksums every
 * event chunk it stores, so this is on the recorder's busy path). */
#include <stdint.h>
#include <string.h>

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

uint32_t crc32_ieee(uint32_t crc, const void *buf, uint64_t len)
{
	if (!table[0][1])
		init_table();
	const uint8_t *p = buf;
	crc = ~crc;
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
