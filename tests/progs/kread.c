/* kread.c — N read(2) calls of one byte from /dev/zero, then "reads N" (its
 * own count): tests/e2e/probe_kernel.sh counts vfs_read for this program
 * alone while other processes read too.  Built -static (no loader reads). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000, done = 0;
	char b;
	int fd = open("/dev/zero", O_RDONLY);
	if (fd < 0)
		return 1;
	for (long i = 0; i < n; i++)
		done += read(fd, &b, 1) == 1;
	close(fd);
	printf("reads %ld\n", done);
	return 0;
}
