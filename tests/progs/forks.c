/* forks.c — parent calls f() 3 times, forks; the child calls g() 5 times and
 * execs ./leafprog (which calls leaf2() 4 times); the parent waits and calls
 * h() 2 times.  Each process prints the calls it made ("calls F N",
 * "calls A->B N") before it forks, execs or exits. */
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>
#include "noipa.h"

NOIPA void f(void) { TOUCH(); }
NOIPA void g(void) { TOUCH(); }
NOIPA void h(void) { TOUCH(); }
int main(void)
{
	long nf = 0, ng = 0, nh = 0;
	for (int i = 0; i < 3; i++, nf++) f();
	printf("calls f %ld\ncalls main->f %ld\n", nf, nf);
	fflush(stdout);
	pid_t p = fork();
	if (p == 0) {
		for (int i = 0; i < 5; i++, ng++) g();
		printf("calls g %ld\ncalls main->g %ld\n", ng, ng);
		fflush(stdout);
		execl("./leafprog", "leafprog", (char *)NULL);
		_exit(127);
	}
	int st;
	waitpid(p, &st, 0);
	for (int i = 0; i < 2; i++, nh++) h();
	printf("calls h %ld\ncalls main->h %ld\n", nh, nh);
	printf("forks done %d\n", WEXITSTATUS(st));
	return 0;
}
