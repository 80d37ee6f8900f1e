/* flight.c — for the flight recorder (record --trace --keep-last): a long
 * first phase of many short calls (old()), then a short last phase
 * (recent() N times, then last() once).  `flight A B` calls old() A times
 * and recent() B times; it prints its counts.  `flight A B kill` then dies
 * of SIGKILL. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "noipa.h"

static volatile unsigned long sink;
NOIPA void old(unsigned long i) { TOUCH(); sink += i; }
NOIPA void recent(unsigned long i) { TOUCH(); sink ^= i; }
NOIPA void last(void) { TOUCH(); sink++; }

int main(int argc, char **argv)
{
	unsigned long a = argc > 1 ? strtoul(argv[1], NULL, 10) : 10000000, b = argc > 2 ? strtoul(argv[2], NULL, 10) : 1000;
	for (unsigned long i = 0; i < a; i++)
		old(i);
	for (unsigned long i = 0; i < b; i++)
		recent(i);
	last();
	printf("old %lu\nrecent %lu\nlast 1\n", a, b);
	if (argc > 3 && !strcmp(argv[3], "kill")) {
		fflush(stdout);
		raise(SIGKILL);
	}
	return 0;
}
