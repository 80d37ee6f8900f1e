/* bulk_out.h — the output of a streaming export, written in large blocks.
 *
 * The format builds its text in place in one buffer (bo_room, then
 * bo_put with the end of what it wrote); the buffer goes out 1 MiB at a
 * time.  To a regular file it goes with O_DIRECT, through a second open
 * file description of the same file (/proc/self/fd/N), at explicit offsets:
 * writing through the page cache (the copy, and ext4's delayed allocation
 * with its buffer heads) was 35-45% of a Chrome export's CPU time.  The
 * caller's descriptor and its flags are not touched; at the end its offset
 * is moved past what was written.  The last partial block goes with an
 * ordinary write, and so does everything when O_DIRECT is refused (tmpfs
 * before Linux 6.6, an unaligned start, O_APPEND, no /proc) or
 * SONDE_EXPORT_DIRECT=0 says not to, and the rest of it when the export has
 * spent more than a quarter of its time waiting for a disk that does not
 * keep up (the page cache then takes the data, as for any file).  A pipe, a terminal or /dev/null get
 * ordinary write(2)s of the whole buffer.  Ordinary writes at the end of a
 * regular file allocate its blocks 64 MiB ahead (fallocate, the size kept),
 * so that the page cache's writes skip ext4's per-block delayed allocation
 * (sys time of the 1.1 GB Perfetto export through the page cache: 0.40 ->
 * 0.28 s); bo_close gives back what lies past the end.
 *
 * bo_stream is a stdio stream that appends to the same buffer, for the
 * format's rarer, printf-made text. */
#ifndef SONDE_EXPORT_BULK_OUT_H
#define SONDE_EXPORT_BULK_OUT_H

#include <stddef.h>
#include <stdio.h>

#define BO_ROOM_MAX (64u << 10) /* bo_room gives at least this much */

/* The part of struct bulk_out the inline functions use (its first member). */
struct bulk_out_at {
	char *at;   /* where the next byte goes */
	char *full; /* at or past it, the buffer is handed out */
};
struct bulk_out;

/* Takes over writing to f's file (f is flushed first; write nothing more
 * through it until bo_close).  NULL: out of memory. */
struct bulk_out *bo_open(FILE *f);
/* Hands out what is buffered (bo_put does when a block is full). */
void bo_flush(struct bulk_out *b);

/* Where to write next: BO_ROOM_MAX bytes at least. */
static inline char *bo_room(struct bulk_out *b)
{
	return ((struct bulk_out_at *)b)->at;
}

/* The bytes from bo_room's pointer up to end are part of the output. */
static inline void bo_put(struct bulk_out *b, char *end)
{
	struct bulk_out_at *a = (struct bulk_out_at *)b;
	a->at = end;
	if (end >= a->full)
		bo_flush(b);
}

/* A stdio stream appending to the buffer, unbuffered itself: what is
 * printed to it lands in order with what bo_put adds. */
FILE *bo_stream(struct bulk_out *b);
/* Writes what is left and frees b; 0, or -1 with errno of the first
 * failed write. */
int bo_close(struct bulk_out *b);

#endif
