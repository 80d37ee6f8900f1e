/* crash.c — "kill": SIGKILL itself inside victim(); "segv": a segfault inside
 * victim(); both after 30 ms of work in victim() and 5 calls of before(). */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "work.h"

__attribute__((noipa)) void before(void) { }
__attribute__((noipa)) void victim(const char *how)
{
	work_ms(30);
	fflush(stdout);
	if (!strcmp(how, "kill"))
		kill(getpid(), SIGKILL);
	volatile int *p = (int *)16;
	*p = 1;
}
int main(int argc, char **argv)
{
	for (int i = 0; i < 5; i++)
		before();
	printf("crash starting\n");
	victim(argc > 1 ? argv[1] : "segv");
	return 0;
}
