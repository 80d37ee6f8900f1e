/* inject.c — test tool: makes a running process dlopen a library through
 * src/attach/inject.c and prints the handle and where the thread was stopped.
 *   inject [--tid TID] PID LIBRARY
 * Exit 0 loaded, 1 usage, 2 error ("sonde: error: ..." on stderr). */
#include "attach/inject.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int num(const char *s, long *v)
{
	char *end;
	*v = strtol(s, &end, 10);
	return *s && !*end && *v > 0 && *v <= 0x7fffffff ? 0 : -1;
}

int main(int argc, char **argv)
{
	long tid = 0, pid;
	int a = 1;
	if (argc > 2 && !strcmp(argv[1], "--tid")) {
		if (num(argv[2], &tid)) {
			fprintf(stderr, "sonde: error: bad thread id '%s'\n", argv[2]);
			return 1;
		}
		a = 3;
	}
	if (argc - a != 2) {
		fprintf(stderr, "usage: inject [--tid TID] PID LIBRARY\n");
		return 1;
	}
	if (num(argv[a], &pid)) {
		fprintf(stderr, "sonde: error: bad process id '%s'\n", argv[a]);
		return 1;
	}
	char err[1024];
	uint64_t h;
	struct inject_stop st;
	if (inject_dlopen((pid_t)pid, (pid_t)tid, argv[a + 1], &h, &st, err, sizeof err)) {
		fprintf(stderr, "sonde: error: %s\n", err);
		return 2;
	}
	printf("handle 0x%" PRIx64 "\n", h);
	printf("stopped tid %d syscall %ld return %" PRId64 "\n", (int)st.tid, st.syscall, st.sysret);
	return fflush(stdout) == 0 ? 0 : 2;
}
