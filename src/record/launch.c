/* launch.c — start the program to record: the session descriptor and the
 * preloaded runtime in its environment; exec failures reported through a
 * close-on-exec pipe so "no such program" is an error of sonde's, not a
 * silent exit 127. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "record/record.h"

int launch_program(char **argv, struct session *s, const char *rt_path, struct launched *out)
{
	int pfd[2];
	if (pipe2(pfd, O_CLOEXEC) != 0)
		return -errno;
	/* Orphaned descendants (daemonised children) are reparented to us, so the
	 * recording ends when the whole program tree has. */
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	memset(out, 0, sizeof *out);
	pid_t pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		close(pfd[0]);
		char num[16];
		snprintf(num, sizeof num, "%d", s->fd);
		setenv(SONDE_ENV_FD, num, 1);
		if (rt_path) {
			const char *old = getenv("LD_PRELOAD");
			char *pre;
			if (old && *old) {
				size_t n = strlen(rt_path) + strlen(old) + 2;
				pre = malloc(n);
				if (pre)
					snprintf(pre, n, "%s:%s", rt_path, old);
			} else {
				pre = strdup(rt_path);
			}
			if (pre)
				setenv("LD_PRELOAD", pre, 1);
		}
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		execvp(argv[0], argv);
		int e = errno;
		ssize_t w = write(pfd[1], &e, sizeof e);
		(void)w;
		_exit(127);
	}
	close(pfd[1]);
	int e = 0;
	ssize_t r = read(pfd[0], &e, sizeof e);
	close(pfd[0]);
	out->pid = pid;
	if (r == (ssize_t)sizeof e)
		return -e; /* the collector still reaps the child */
	return 0;
}
