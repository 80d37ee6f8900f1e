/* syscalls_write.c — N one-byte writes to /dev/null from one function, for
 * bench/syscalls_bench.sh (the cost of the --syscalls wrapper per call). */
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

__attribute__((noinline)) static long writes(int fd, long n)
{
	long ok = 0;
	for (long i = 0; i < n; i++)
		ok += write(fd, "x", 1) == 1;
	return ok;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000000;
	int fd = open("/dev/null", O_WRONLY);
	return fd < 0 || writes(fd, n) != n;
}
