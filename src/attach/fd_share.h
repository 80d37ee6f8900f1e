/* fd_share.h — descriptors of sonde's that an attached program opens as
 * /proc/PID/fd/N, also when it runs as another user (fd_share.c). */
#ifndef SONDE_ATTACH_FD_SHARE_H
#define SONDE_ATTACH_FD_SHARE_H

#include <fcntl.h>
#include <sys/types.h>

struct fd_share {
	pid_t pid;    /* whose /proc/PID/fd/N the program opens: sonde, or the holder */
	pid_t holder; /* a process of the program's user holding them (0: none) */
	int word;     /* its end: closed by fd_share_end */
};

/* Makes fds[0..n) openable by process pid under /proc/s->pid/fd/N (same
 * numbers): sonde's own when pid runs as sonde's user or sonde is not root;
 * else the files are given to pid's user and a holder of that user keeps
 * them until fd_share_end.  0, or -1 with err. */
int fd_share_begin(struct fd_share *s, pid_t pid, const int *fds, int n, char *err, size_t en);
/* The holder ends (the program has opened its copies). */
void fd_share_end(struct fd_share *s);

#endif
