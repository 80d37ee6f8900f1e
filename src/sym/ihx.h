/* ihx.h — an Intel HEX firmware image (SDCC's .ihx for the 8051): the bytes
 * of its 64 KiB of code memory and which of them the file fills. */
#ifndef SONDE_SYM_IHX_H
#define SONDE_SYM_IHX_H

#include <stddef.h>
#include <stdint.h>

struct ihx_image {
	uint8_t code[65536];
	uint8_t used[65536 / 8];   /* bit a: code[a] comes from the file */
};

/* path read into im (data records, type 00; records past 64 KiB are
 * ignored).  0, or -1 with err (unreadable, not Intel HEX, no code). */
int ihx_read(struct ihx_image *im, const char *path, char *err, size_t n);

static inline int ihx_has(const struct ihx_image *im, uint32_t a)
{
	return a < 65536 && (im->used[a / 8] >> (a & 7) & 1);
}

#endif
