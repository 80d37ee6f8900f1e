/* cputime.c — the benches' launcher: runs PROGRAM ARGS... as its child and
 * writes the child's CPU time (user + sys, from wait4: the recorded
 * program's own, not sonde's) to cpu.txt in the working directory; exits
 * with the child's status.  Built by trace_floor_bench.sh and
 * trace_pin_bench.sh.  Usage: cpu PROGRAM ARGS... */
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
int main(int argc, char **argv)
{
	(void)argc;
	pid_t p = fork();
	if (p == 0) {
		execv(argv[1], argv + 1);
		_exit(127);
	}
	int st;
	struct rusage ru;
	if (p < 0 || wait4(p, &st, 0, &ru) != p)
		return 1;
	FILE *f = fopen("cpu.txt", "w");
	if (f) {
		fprintf(f, "%.6f\n", ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6);
		fclose(f);
	}
	return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}
