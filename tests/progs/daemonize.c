/* daemonize.c — a program that leaves a daemon behind: `daemonize SECS FILE`
 * forks a child that calls tick() 10 times a second for SECS seconds, then
 * writes "ticks N" to FILE; the parent calls tick() once and exits at once. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "noipa.h"

static volatile int sink;
NOIPA void tick(void) { TOUCH(); sink++; }

int main(int argc, char **argv)
{
	int secs = argc > 1 ? atoi(argv[1]) : 3, n = 0;
	tick();
	fflush(stdout);
	pid_t p = fork();
	if (p == 0) {
		setsid();
		for (; n < secs * 10; n++) {
			tick();
			usleep(100000);
		}
		FILE *f = fopen(argc > 2 ? argv[2] : "/dev/null", "w");
		if (f) {
			fprintf(f, "ticks %d\n", n);
			fclose(f);
		}
		_exit(0);
	}
	printf("parent ticks 1, daemon pid %d\n", (int)p);
	return p > 0 ? 0 : 1;
}
