/* syscall_fork.c — system calls in a parent and its forked child, for
 * tests/e2e/record_syscalls.sh: writes(3) in the parent, writes(7) in the
 * child, writes(2) in the parent again; prints "parent PID 5 child PID 7"
 * (the writes each process made itself). */
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

__attribute__((noinline)) static int writes(int n)
{
	int k = 0;
	for (int i = 0; i < n; i++)
		k += write(1, "", 0) == 0;
	return k;
}

int main(void)
{
	int mine = writes(3);
	fflush(stdout);
	pid_t p = fork();
	if (p == 0)
		_exit(writes(7) == 7 ? 0 : 1);
	int st = 0;
	waitpid(p, &st, 0);
	mine += writes(2);
	printf("parent %d %d child %d %d\n", (int)getpid(), mine, (int)p, WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 7 : -1);
	return 0;
}
