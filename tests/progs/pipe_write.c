/* pipe_write.c — writes to a pipe nobody reads: with SIGPIPE ignored (as
 * the program got it) it prints the write's EPIPE; else SIGPIPE kills it. */
#include <errno.h>
#include <stdio.h>
#include <unistd.h>

#include "noipa.h"

NOIPA ssize_t put(int fd) { TOUCH(); return write(fd, "x", 1); }

int main(void)
{
	int p[2];
	if (pipe(p))
		return 2;
	close(p[0]);
	ssize_t r = put(p[1]);
	printf("write %zd errno %d\n", r, r < 0 ? errno : 0);
	return 0;
}
