/* forks.c — parent calls f() 3 times, forks; the child calls g() 5 times and
 * execs ./leafprog (which calls leaf2() 4 times); the parent waits and calls
 * h() 2 times. */
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

__attribute__((noipa)) void f(void) { }
__attribute__((noipa)) void g(void) { }
__attribute__((noipa)) void h(void) { }
int main(void)
{
	for (int i = 0; i < 3; i++) f();
	fflush(stdout);
	pid_t p = fork();
	if (p == 0) {
		for (int i = 0; i < 5; i++) g();
		execl("./leafprog", "leafprog", (char *)NULL);
		_exit(127);
	}
	int st;
	waitpid(p, &st, 0);
	for (int i = 0; i < 2; i++) h();
	printf("forks done %d\n", WEXITSTATUS(st));
	return 0;
}
