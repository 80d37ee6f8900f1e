/* file_read.h — a whole file into memory, bounded (file_read.c): for the
 * kernel's files (sysfs, tracefs, procfs), whose st_size says nothing of
 * what a read gives. */
#ifndef SONDE_COMMON_FILE_READ_H
#define SONDE_COMMON_FILE_READ_H

#include <stddef.h>

/* The contents of path, read to its end, NUL-terminated (one byte past
 * *len), malloc'd: NULL with errno (unreadable; EFBIG when longer than max
 * bytes; ENOMEM). */
char *file_read_all(const char *path, size_t max, size_t *len);

#endif
