/* writer.c — writes the record container of format.h (header, typed records
 * with length and CRC, and an END record that marks a complete file). */
#include <errno.h>
#include <string.h>

#include "record/record.h"

int writer_open(struct rec_writer *w, const char *path, uint32_t kind)
{
	memset(w, 0, sizeof *w);
	w->path = path;
	w->f = fopen(path, "wb");
	if (!w->f)
		return -errno;
	struct sonde_file_hdr h;
	memcpy(h.magic, SONDE_DATA_MAGIC, 8);
	h.version = SONDE_DATA_VERSION;
	h.kind = kind;
	if (fwrite(&h, sizeof h, 1, w->f) != 1)
		w->failed = 1;
	w->bytes = sizeof h;
	return 0;
}

int writer_put(struct rec_writer *w, uint32_t type, const void *a, uint64_t alen, const void *b, uint64_t blen)
{
	struct sonde_rec_hdr h = { type, 0, alen + blen };
	h.crc = crc32_ieee(crc32_ieee(0, a, alen), b, blen);
	if (fwrite(&h, sizeof h, 1, w->f) != 1 || (alen && fwrite(a, alen, 1, w->f) != 1) ||
	    (blen && fwrite(b, blen, 1, w->f) != 1)) {
		w->failed = 1;
		return -EIO;
	}
	w->bytes += sizeof h + alen + blen;
	return 0;
}

int writer_close(struct rec_writer *w)
{
	if (!w->f)
		return 0;
	writer_put(w, REC_END, NULL, 0, NULL, 0);
	int rc = fclose(w->f) != 0 || w->failed ? -EIO : 0;
	w->f = NULL;
	return rc;
}
