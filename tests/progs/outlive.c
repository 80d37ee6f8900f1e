/* outlive.c — a program that outlives its recorder.  It writes its pid to
 * argv[1], waits until the file argv[2] exists (the test kills sonde first),
 * then makes far more calls than a trace ring holds and says how many. */
#include <stdio.h>
#include <unistd.h>

#include "noipa.h"

static volatile unsigned long sink;

NOIPA void leaf(unsigned long i) { sink += i; }

int main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	FILE *f = fopen(argv[1], "w");
	if (!f)
		return 2;
	fprintf(f, "%d\n", (int)getpid());
	fclose(f);
	while (access(argv[2], F_OK) != 0)
		usleep(10000);
	unsigned long n = 20000000; /* 20M calls, some 100 MB of trace: many times the ring */
	for (unsigned long i = 0; i < n; i++)
		leaf(i);
	printf("done: %lu calls\n", n);
	return 0;
}
