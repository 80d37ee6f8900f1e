/* exec_storm.c — a program that execs itself N times (for attaching while
 * it execs): each image calls work() 200 times; the last one prints the
 * images' total and exits with status 3.  Usage: exec_storm N [TOTAL] */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

__attribute__((noinline)) int work(int i)
{
	return i * 3;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 0;
	long total = argc > 2 ? atol(argv[2]) : 0;
	volatile int s = 0;
	for (int i = 0; i < 200; i++)
		s += work(i);
	total += 200;
	if (n > 0) {
		char a[16], b[32];
		snprintf(a, sizeof a, "%d", n - 1);
		snprintf(b, sizeof b, "%ld", total);
		execl("/proc/self/exe", argv[0], a, b, (char *)NULL);
		perror("execl");
		return 1;
	}
	printf("calls %ld\n", total);
	return 3;
}
