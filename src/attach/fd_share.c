/* fd_share.c — paths under which a process sonde attaches to opens
 * descriptors of sonde's (the session file or probe memory, the alive
 * pipe): /proc/PID/fd/N.  The kernel lets a process open another's
 * /proc/PID/fd/N only when it may read that process (the same user, and
 * dumpable), and then checks the file's own permissions.  So when sonde is
 * root and the program another user's (a server's), the descriptors are
 * given to that user (fchown) and held, for the time of the start, by a
 * process of that user: sonde's child, which switches to the program's
 * user and group, makes itself dumpable and waits for sonde's word (or its
 * end).  A program of sonde's own user opens sonde's own descriptors. */
#include "attach/fd_share.h"

#include <dirent.h>
#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* The program's file-system user and group (what its open is checked
 * against): the fourth field of "Uid:" and "Gid:" in /proc/PID/status. */
static int target_ids(pid_t pid, uid_t *uid, gid_t *gid)
{
	char path[64], line[256];
	snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return -1;
	int got = 0;
	while (got != 3 && fgets(line, sizeof line, f)) {
		unsigned long r, e, s, fs;
		if (sscanf(line, "Uid: %lu %lu %lu %lu", &r, &e, &s, &fs) == 4) {
			*uid = (uid_t)fs;
			got |= 1;
		} else if (sscanf(line, "Gid: %lu %lu %lu %lu", &r, &e, &s, &fs) == 4) {
			*gid = (gid_t)fs;
			got |= 2;
		}
	}
	fclose(f);
	return got == 3 ? 0 : -1;
}

static int kept(int fd, const int *fds, int n)
{
	for (int i = 0; i < n; i++)
		if (fds[i] == fd)
			return 1;
	return 0;
}

/* In the holder: every descriptor but fds[0..n) and the word pipe closed
 * (above all the alive pipe's write end: its end of file is how the agent
 * sees sonde's end). */
static void close_others(const int *fds, int n, int word)
{
	DIR *d = opendir("/proc/self/fd");
	if (!d)
		return;
	int self = dirfd(d), list[1024], k = 0;
	struct dirent *e;
	while ((e = readdir(d)) && k < (int)(sizeof list / sizeof list[0])) {
		int fd = atoi(e->d_name);
		if (e->d_name[0] >= '0' && e->d_name[0] <= '9' && fd > 2 && fd != self && fd != word && !kept(fd, fds, n))
			list[k++] = fd;
	}
	closedir(d);
	for (int i = 0; i < k; i++)
		close(list[i]);
}

int fd_share_begin(struct fd_share *s, pid_t pid, const int *fds, int n, char *err, size_t en)
{
	s->pid = getpid();
	s->holder = 0;
	s->word = -1;
	uid_t uid;
	gid_t gid;
	if (geteuid() != 0 || target_ids(pid, &uid, &gid) || uid == geteuid())
		return 0; /* our own descriptors (another user's program cannot be attached: ptrace says so) */
	for (int i = 0; i < n; i++)
		if (fchown(fds[i], uid, gid)) {
			snprintf(err, en, "cannot give sonde's memory to user %u of process %d (%s)", (unsigned)uid, (int)pid,
			         strerror(errno));
			return -1;
		}
	int w[2], ready[2];
	if (pipe2(w, O_CLOEXEC))
		goto no_pipe;
	if (pipe2(ready, O_CLOEXEC)) {
		close(w[0]);
		close(w[1]);
		goto no_pipe;
	}
	fflush(NULL);
	pid_t c = fork();
	if (c == 0) {
		close(w[1]); /* sonde's end (killed too): read below sees end of file */
		close(ready[0]);
		int ok = setgroups(0, NULL) == 0 && setresgid(gid, gid, gid) == 0 && setresuid(uid, uid, uid) == 0 &&
		         prctl(PR_SET_DUMPABLE, 1) == 0;
		char b = ok ? 'y' : 'n';
		if (write(ready[1], &b, 1) != 1 || !ok)
			_exit(1);
		close(ready[1]);
		close_others(fds, n, w[0]);
		while (read(w[0], &b, 1) < 0 && errno == EINTR)
			;
		_exit(0);
	}
	close(w[0]);
	close(ready[1]);
	char b = 0;
	ssize_t r = c > 0 ? read(ready[0], &b, 1) : -1;
	close(ready[0]);
	if (c < 0 || r != 1 || b != 'y') {
		snprintf(err, en, "cannot start a process of user %u to hand sonde's memory to process %d (%s)",
		         (unsigned)uid, (int)pid, c < 0 ? strerror(errno) : "it could not take that user");
		close(w[1]);
		if (c > 0)
			waitpid(c, NULL, 0);
		return -1;
	}
	s->holder = c;
	s->pid = c;
	s->word = w[1];
	return 0;
no_pipe:
	snprintf(err, en, "cannot create a pipe (%s)", strerror(errno));
	return -1;
}

void fd_share_end(struct fd_share *s)
{
	if (!s->holder)
		return;
	close(s->word);
	while (waitpid(s->holder, NULL, 0) < 0 && errno == EINTR)
		;
	s->holder = 0;
	s->word = -1;
	s->pid = getpid();
}
