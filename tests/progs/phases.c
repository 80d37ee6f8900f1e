/* phases.c — two phases apart in time: `phases A B` calls early() A times,
 * sleeps 400 ms, then calls late() B times; prints its counts. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "noipa.h"

static volatile unsigned long sink;
NOIPA void early(unsigned long i) { TOUCH(); sink += i; }
NOIPA void late(unsigned long i) { TOUCH(); sink ^= i; }

int main(int argc, char **argv)
{
	unsigned long a = argc > 1 ? strtoul(argv[1], NULL, 10) : 1000, b = argc > 2 ? strtoul(argv[2], NULL, 10) : 700;
	for (unsigned long i = 0; i < a; i++)
		early(i);
	struct timespec ts = { 0, 400 * 1000 * 1000 };
	nanosleep(&ts, NULL);
	for (unsigned long i = 0; i < b; i++)
		late(i);
	printf("early %lu\nlate %lu\n", a, b);
	return 0;
}
