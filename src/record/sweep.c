/* sweep.c — the orphan sweep of session files (session.c): a recorder that
 * was killed leaves its session on tmpfs for the next reader of its
 * recording (recover.c).  When that reader will never come — the recording
 * directory was removed, or recorded into again — the file would hold its
 * memory until the machine restarts.  `sonde record` and each recovery
 * remove such files of this user: their recorder dead, no process of their
 * program still mapping them, and their recording directory's session.ref
 * not naming them.  A file whose header is not (yet) a session's is left
 * alone: a recorder may be writing it this very moment. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "record/record.h"

/* Does rec_dir's session.ref name path? */
static int still_named(const char *rec_dir, const char *path)
{
	char named[4200];
	return rec_dir[0] == '/' && session_ref_read(rec_dir, named, sizeof named) == 0 && !strcmp(named, path);
}

static void sweep_one(const char *path)
{
	struct session s;
	char err[512];
	if (session_open(&s, path, err, sizeof err))
		return; /* not one this sonde can read: left alone */
	char rec_dir[SONDE_REC_DIR_MAX];
	size_t k = strnlen(s.hdr->recorder.rec_dir, sizeof rec_dir - 1);
	memcpy(rec_dir, s.hdr->recorder.rec_dir, k);
	rec_dir[k] = 0;
	int stale = !proc_alive(s.hdr->collector_pid, s.hdr->recorder.start_time) && !session_program_running(&s) &&
	            !still_named(rec_dir, path);
	session_keep(&s);
	if (stale)
		unlink(path);
}

void session_sweep(const char *sdir)
{
	DIR *d = opendir(sdir);
	if (!d)
		return;
	char prefix[64], path[4200];
	snprintf(prefix, sizeof prefix, "%s%u-", SESSION_FILE_PREFIX, (unsigned)geteuid());
	struct dirent *de;
	int n = 0;
	while ((de = readdir(d)) && n < 4096) { /* bounded: a directory full of names costs no more */
		if (strncmp(de->d_name, prefix, strlen(prefix)))
			continue;
		n++;
		if ((size_t)snprintf(path, sizeof path, "%s/%s", sdir, de->d_name) >= sizeof path || !session_name_ok(path))
			continue;
		sweep_one(path);
	}
	closedir(d);
}
