/* sys_user.c — one process of tests/e2e/probe_system.sh: it maps
 * libsys_lib.so and, told on stdin, calls sys_work N times and says its
 * own counts.  Commands, one a line:
 *   calls N   N calls of sys_work(0..N-1); prints "PID calls N odd K sum S"
 *   byte      prints "PID byte XX": the first byte of sys_work as this
 *             process sees it (0xcc while a uprobe is in its text)
 *   quit      exits 0 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int sys_work(int x);
extern int sys_odd_calls;

int main(void)
{
	char line[128];
	long long sum = 0;
	printf("%d ready\n", (int)getpid());
	fflush(stdout);
	while (fgets(line, sizeof line, stdin)) {
		if (!strncmp(line, "calls ", 6)) {
			int n = atoi(line + 6), odd0 = sys_odd_calls;
			for (int i = 0; i < n; i++)
				sum += sys_work(i);
			printf("%d calls %d odd %d sum %lld\n", (int)getpid(), n, sys_odd_calls - odd0, sum);
		} else if (!strncmp(line, "byte", 4)) {
			printf("%d byte %02x\n", (int)getpid(), *(volatile unsigned char *)(void *)sys_work);
		} else if (!strncmp(line, "quit", 4))
			return 0;
		fflush(stdout);
	}
	return 0;
}
