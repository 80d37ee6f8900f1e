/* flight.c — for the flight recorder (record --trace --keep-last): a long
 * first phase of many short calls (old()), then a short last phase
 * (recent() N times, then last() once).  `flight A B` calls old() A times
 * and recent() B times; it prints its counts.  `flight A B kill` then dies
 * of SIGKILL.  `flight A B wait` creates the file flight.ready after the
 * calls of old() and waits (up to 60 s) for the file flight.go before the
 * calls of recent(): a snapshot taken meanwhile holds old() only. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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
	if (argc > 3 && !strcmp(argv[3], "wait")) {
		FILE *f = fopen("flight.ready", "w");
		if (f)
			fclose(f);
		struct timespec ts = { 0, 10000000 };
		for (int i = 0; i < 6000 && access("flight.go", F_OK) != 0; i++)
			nanosleep(&ts, NULL);
	}
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
