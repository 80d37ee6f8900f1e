/* proc_stat.c — whether a process still lives, from /proc (proc_stat.h);
 * the recorder's sweep and recovery, and the runtime's agent, use it. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/proc_stat.h"

/* The start time, and *state the state letter (field 3). */
static uint64_t stat_of(int pid, char *state)
{
	char path[64], buf[1024];
	snprintf(path, sizeof path, "/proc/%d/stat", pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	char *p = strrchr(buf, ')'); /* the command name may hold spaces and parentheses */
	if (!p)
		return 0;
	if (state && p[1] == ' ')
		*state = p[2];
	/* after ")": field 3 (state) ... field 22 (starttime) */
	for (int field = 2; field < 22 && p; field++)
		p = strchr(p + 1, ' ');
	return p ? strtoull(p + 1, NULL, 10) : 0;
}

uint64_t proc_start_time(int pid)
{
	return stat_of(pid, NULL);
}

/* Is process pid alive and the one that started at start_time (0: any)?
 * A zombie (killed, its parent not reaping it yet) is not. */
int proc_alive(int pid, uint64_t start_time)
{
	if (pid <= 0)
		return 0;
	if (kill(pid, 0) != 0 && errno == ESRCH)
		return 0;
	char state = 0;
	uint64_t st = stat_of(pid, &state);
	if (state == 'Z' || state == 'X')
		return 0;
	return !start_time || !st || st == start_time;
}

