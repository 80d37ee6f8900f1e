/* vfork_child.c — a vfork child that runs instrumented code before it
 * _exits (tests/e2e/profile_vfork.sh): the parent calls parent_work() 3
 * times before and 2 times after; the child calls child_work() 4 times.
 * Prints its counts and exits 5. */
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile long sink;

__attribute__((noinline)) void parent_work(int i) { sink += i; }
__attribute__((noinline)) void child_work(int i) { sink += 2 * i; }

__attribute__((noinline)) int spawn(void)
{
	pid_t pid = vfork();
	if (pid == 0) {
		for (int i = 0; i < 4; i++)
			child_work(i);
		_exit(7);
	}
	if (pid < 0)
		return -1;
	int st = 0;
	waitpid(pid, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int main(void)
{
	for (int i = 0; i < 3; i++)
		parent_work(i);
	int child = spawn();
	for (int i = 0; i < 2; i++)
		parent_work(i);
	printf("calls parent_work 5 child_work 4 (in the child) spawn 1; child status %d\n", child);
	return 5;
}
