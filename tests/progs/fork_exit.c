/* fork_exit.c — the parent works 200 ms, forks a child that _exits at once,
 * waits for it and works 200 ms more: the child's main must be charged the
 * child's own few microseconds, not the parent's 400 ms. */
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>
#include "work.h"

__attribute__((noipa)) void busy(void) { work_ms(200); }
int main(void)
{
	busy();
	fflush(stdout);
	pid_t p = fork();
	if (p == 0)
		_exit(0);
	int st;
	waitpid(p, &st, 0);
	busy();
	printf("fork_exit done\n");
	return 0;
}
