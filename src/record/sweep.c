/* sweep.c — the orphan sweep of session files (session.c): a recorder that
 * was killed leaves its session on tmpfs for the next reader of its
 * recording (recover.c).  When that reader will never come — the recording
 * directory was removed, or recorded into again — the file would hold its
 * memory until the machine restarts.  `sonde record` and each recovery
 * remove such files of this user: their recorder dead, no process of their
 * program still mapping them, and their recording directory's session.ref
 * not naming them.
 *
 * A file of such a name that this sonde cannot read — a session of another
 * sonde version (its header laid out otherwise: the recorder's pid and the
 * recording directory cannot be found in it), or a damaged one — would stay
 * forever: a machine that ran several versions filled its /dev/shm (24 GiB)
 * with them.  It goes when no process maps it (every process of this user
 * looked at) and it has not changed for SWEEP_FOREIGN_AGE seconds: a recorder
 * writing its header this very moment, or a live recording of another
 * version, keeps it.  What is lost: a killed recorder's session that only
 * the other version could have recovered, after an hour. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "record/record.h"

/* Does rec_dir's session.ref name path? */
static int still_named(const char *rec_dir, const char *path)
{
	char named[4200];
	return rec_dir[0] == '/' && session_ref_read(rec_dir, named, sizeof named) == 0 && !strcmp(named, path);
}

#define SWEEP_FOREIGN_AGE 3600 /* seconds unchanged */
#define SWEEP_FOREIGN_MAX 16   /* such files looked at per sweep: each costs a pass over /proc */

/* Does a process of this user (any, for root) other than this one map inode
 * ino?  1 when /proc cannot be read.  A process whose maps cannot be read
 * (not dumpable; a container's first process) is taken as not mapping it:
 * after an hour unchanged, the unlink would only take the name from a live
 * mapping, not its memory. */
static int any_process_maps(unsigned long long ino)
{
	DIR *d = opendir("/proc");
	if (!d)
		return 1;
	uid_t me = geteuid();
	int found = 0;
	struct dirent *de;
	while (!found && (de = readdir(d))) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);
		if (*end || pid <= 0 || pid == getpid())
			continue;
		char dir[64];
		struct stat st;
		snprintf(dir, sizeof dir, "/proc/%ld", pid);
		if (stat(dir, &st) != 0 || (me != 0 && st.st_uid != me))
			continue; /* gone, or another user's: it cannot map a 0600 file of ours */
		found = maps_inode((int)pid, ino, 0);
	}
	closedir(d);
	return found;
}

/* A session file this sonde cannot read: removed when stale (above). */
static void sweep_foreign(const char *path)
{
	struct stat st;
	if (lstat(path, &st) != 0 || !S_ISREG(st.st_mode) || (geteuid() != 0 && st.st_uid != geteuid()))
		return; /* root's may belong to an attached program's user (attach/fd_share.c) */
	time_t now = time(NULL);
	if (now - st.st_mtime < SWEEP_FOREIGN_AGE)
		return;
	if (!any_process_maps((unsigned long long)st.st_ino))
		unlink(path);
}

/* 1 when path could not be read as a session of this version. */
static int sweep_one(const char *path)
{
	struct session s;
	char err[512];
	if (session_open(&s, path, err, sizeof err))
		return 1;
	char rec_dir[SONDE_REC_DIR_MAX];
	size_t k = strnlen(s.hdr->recorder.rec_dir, sizeof rec_dir - 1);
	memcpy(rec_dir, s.hdr->recorder.rec_dir, k);
	rec_dir[k] = 0;
	int stale = !proc_alive(s.hdr->collector_pid, s.hdr->recorder.start_time) && !session_program_running(&s) &&
	            !still_named(rec_dir, path);
	session_keep(&s);
	if (stale)
		unlink(path);
	return 0;
}

void session_sweep(const char *sdir)
{
	DIR *d = opendir(sdir);
	if (!d)
		return;
	char prefix[64], path[4200];
	snprintf(prefix, sizeof prefix, "%s%u-", SESSION_FILE_PREFIX, (unsigned)geteuid());
	struct dirent *de;
	int n = 0, foreign = 0;
	while ((de = readdir(d)) && n < 4096) { /* bounded: a directory full of names costs no more */
		if (strncmp(de->d_name, prefix, strlen(prefix)))
			continue;
		n++;
		if ((size_t)snprintf(path, sizeof path, "%s/%s", sdir, de->d_name) >= sizeof path || !session_name_ok(path))
			continue;
		if (sweep_one(path) && foreign < SWEEP_FOREIGN_MAX) {
			foreign++;
			sweep_foreign(path);
		}
	}
	closedir(d);
}
