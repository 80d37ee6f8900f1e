/* exec_self.c — target of tests/e2e/probe_exec.sh:
 *   exec_self N1 N2 [how]
 * calls work() N1 times, then execs itself (execv, or execvp / execl / execle
 * as how says) as "exec_self -second N2", which calls work() N2 times.
 * Each image prints what it did: "first work N1" and "second work N2"; the
 * second exits 4. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern char **environ;

__attribute__((noipa)) long work(long i)
{
	return i * 5 + 2;
}

static long run(long n)
{
	long s = 0;
	for (long i = 0; i < n; i++)
		s += work(i);
	return s;
}

int main(int argc, char **argv)
{
	if (argc >= 3 && !strcmp(argv[1], "-second")) {
		long n = atol(argv[2]);
		long s = run(n);
		printf("second work %ld sum %ld\n", n, s);
		return 4;
	}
	if (argc < 3)
		return 2;
	long n1 = atol(argv[1]);
	long s = run(n1);
	printf("first work %ld sum %ld\n", n1, s);
	fflush(stdout);
	const char *how = argc > 3 ? argv[3] : "execv";
	char *av[] = { argv[0], (char *)"-second", argv[2], NULL };
	if (!strcmp(how, "execvp"))
		execvp(argv[0], av);
	else if (!strcmp(how, "execl"))
		execl("/proc/self/exe", argv[0], "-second", argv[2], (char *)NULL);
	else if (!strcmp(how, "execle"))
		execle("/proc/self/exe", argv[0], "-second", argv[2], (char *)NULL, environ);
	else
		execv("/proc/self/exe", av);
	perror("exec");
	return 1;
}
