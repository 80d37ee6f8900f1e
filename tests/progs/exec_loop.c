/* exec_loop.c — a program that execs itself until STOPFILE exists (for
 * attaching while it execs, tests/e2e/attach_races.sh): each image calls
 * work() 200 times and passes the count of images and of calls on to the
 * next in argv; the last prints both and exits with status 3.
 * Usage: exec_loop STOPFILE [IMAGES CALLS] */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

__attribute__((noinline)) int work(int i)
{
	return i * 3;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	long images = argc > 3 ? atol(argv[2]) : 0, total = argc > 3 ? atol(argv[3]) : 0;
	volatile int s = 0;
	int n = 0;
	for (int i = 0; i < 200; i++, n++)
		s += work(i);
	images++;
	total += n;
	if (access(argv[1], F_OK) != 0) {
		char a[32], b[32];
		snprintf(a, sizeof a, "%ld", images);
		snprintf(b, sizeof b, "%ld", total);
		execl("/proc/self/exe", argv[0], argv[1], a, b, (char *)NULL);
		perror("execl");
		return 1;
	}
	printf("images %ld calls %ld\n", images, total);
	return 3;
}
