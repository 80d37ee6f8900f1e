/* file_read.c — a whole file into memory, bounded (file_read.h). */
#include "common/file_read.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

char *file_read_all(const char *path, size_t max, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	size_t cap = 4096, got = 0;
	char *b = malloc(cap + 1);
	int en = ENOMEM;
	while (b) {
		if (got == cap) {
			/* past max: too long (at most twice max read to know) */
			char *nb = got > max ? NULL : realloc(b, 2 * cap + 1);
			if (!nb) {
				en = got > max ? EFBIG : ENOMEM;
				free(b);
				b = NULL;
				break;
			}
			b = nb;
			cap *= 2;
		}
		ssize_t k = read(fd, b + got, cap - got);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			en = errno;
			free(b);
			b = NULL;
		} else if (k == 0)
			break;
		else
			got += (size_t)k;
	}
	close(fd);
	if (!b) {
		errno = en;
		return NULL;
	}
	if (got > max) {
		free(b);
		errno = EFBIG;
		return NULL;
	}
	b[got] = 0;
	if (len)
		*len = got;
	return b;
}
