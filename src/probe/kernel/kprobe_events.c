/* kprobe_events.c — sonde's probes in tracefs's kprobe_events
 * (kprobe_events.h).  The guardian: a child forked before the first probe
 * is written, in a session of its own (a Ctrl-C or a kill of sonde's
 * process group does not reach it), holding nothing of sonde's but the
 * read end of a pipe.  When the pipe says end of file (sonde closed it, or
 * sonde is gone: the kernel closed it), it removes every probe of the
 * group still listed, retrying while the kernel says one is busy (a perf
 * event of a dead sonde is released a moment after its pipe).  tracefs
 * and the events' ids and fields come from proc/tracefs.c. */
#include "probe/kernel/kprobe_events.h"

#include "common/file_read.h"
#include "proc/tracefs.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define KPE_LIST_MAX (1 << 20)   /* kprobe_events read: at most this much */
#define KPE_TRIES 500            /* the removal's retries, 10 ms apart: 5 s */

static struct {
	int open;
	char dir[64];            /* tracefs */
	char group[32];          /* sonde_PID */
	int pipe_w;              /* the guardian's pipe, -1 none */
	pid_t guardian;
	int added;
} kp = { .pipe_w = -1 };

static int exists(const char *dir, const char *file)
{
	char p[128];
	snprintf(p, sizeof p, "%s/%s", dir, file);
	return access(p, W_OK) == 0;
}

static const char *const lists[] = { "kprobe_events", "uprobe_events" };

/* One command written to list (kprobe_events, uprobe_events): 0, or -1 with errno. */
static int command(const char *dir, const char *list, const char *cmd)
{
	char p[128];
	snprintf(p, sizeof p, "%s/%s", dir, list);
	int fd = open(p, O_WRONLY | O_APPEND | O_CLOEXEC);
	if (fd < 0)
		return -1;
	size_t l = strlen(cmd);
	ssize_t k = write(fd, cmd, l);
	int en = errno;
	close(fd);
	errno = en;
	return k == (ssize_t)l ? 0 : -1;
}

/* Every probe of group still in list lname removed: how many are left. */
static int remove_listed(const char *dir, const char *lname, const char *group)
{
	char p[128];
	snprintf(p, sizeof p, "%s/%s", dir, lname);
	char *list = file_read_all(p, KPE_LIST_MAX, NULL);
	if (!list)
		return 0;
	int left = 0;
	size_t gl = strlen(group);
	for (char *s = list, *e; *s; s = e + (*e != 0)) {
		e = s + strcspn(s, "\n");
		/* "p:GROUP/NAME WHERE ..." or "r:..." (a maxactive digits after r) */
		char *c = strchr(s, ':');
		if (!c || c > e || strncmp(c + 1, group, gl) || c[1 + gl] != '/')
			continue;
		size_t nl = strcspn(c + 1, " \n");
		char cmd[160];
		snprintf(cmd, sizeof cmd, "-:%.*s\n", (int)(nl < 140 ? nl : 140), c + 1);
		if (command(dir, lname, cmd))
			left++;
	}
	free(list);
	return left;
}

/* The same in both lists. */
static int remove_group(const char *dir, const char *group)
{
	int left = 0;
	for (size_t l = 0; l < sizeof lists / sizeof lists[0]; l++)
		left += remove_listed(dir, lists[l], group);
	return left;
}

static void guardian(int rfd, const char *dir, const char *group)
{
	signal(SIGINT, SIG_IGN);
	signal(SIGTERM, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	setsid();
	/* nothing of sonde's held (its perf events would keep the probes busy) */
#ifdef SYS_close_range
	if (rfd > 0)
		syscall(SYS_close_range, 0u, (unsigned)rfd - 1, 0u);
	if (syscall(SYS_close_range, (unsigned)rfd + 1, ~0u, 0u))
#endif
		for (int fd = 0; fd < 65536; fd++)
			if (fd != rfd)
				close(fd);
	char b[16];
	for (;;) {
		ssize_t k = read(rfd, b, sizeof b);
		if (k > 0 && memchr(b, 'd', (size_t)k))
			_exit(0);   /* sonde removed its probes itself */
		if (k == 0 || (k < 0 && errno != EINTR))
			break;
	}
	for (int t = 0; t < KPE_TRIES && remove_group(dir, group); t++) {
		struct timespec ts = { 0, 10000000 };
		nanosleep(&ts, NULL);
	}
	_exit(0);
}

int kpe_open(char *err, size_t n)
{
	if (kp.open)
		return 0;
	char why[200];
	if (tracefs_root(kp.dir, sizeof kp.dir, why, sizeof why)) {
		snprintf(err, n, "kernel variables need tracefs's kprobe_events: %s", why);
		return -1;
	}
	snprintf(kp.group, sizeof kp.group, "sonde_%d", (int)getpid());
	int p[2];
	if (pipe2(p, O_CLOEXEC)) {
		snprintf(err, n, "pipe: %s", strerror(errno));
		return -1;
	}
	pid_t c = fork();
	if (c < 0) {
		snprintf(err, n, "fork: %s", strerror(errno));
		close(p[0]);
		close(p[1]);
		return -1;
	}
	if (!c)
		guardian(p[0], kp.dir, kp.group);
	close(p[0]);
	kp.pipe_w = p[1];
	kp.guardian = c;
	kp.open = 1;
	return 0;
}

/* The kernel's last reason in tracefs's error_log ("error: Invalid fetch
 * argument" and the command's position), into why; "" if none. */
static void last_error(char *why, size_t n)
{
	char p[128];
	why[0] = 0;
	snprintf(p, sizeof p, "%s/error_log", kp.dir);
	char *log = file_read_all(p, 64 << 10, NULL);
	if (!log)
		return;
	char *e = NULL;
	for (char *s = strstr(log, "error: "); s; s = strstr(s + 1, "error: "))
		e = s;
	if (e)
		snprintf(why, n, ": %.*s", (int)strcspn(e, "\n"), e);
	free(log);
}

int kpe_add(int user, const char *name, const char *where, const char *const *args, int nargs, struct kpe_event *ev,
            char *err, size_t n)
{
	const char *list = lists[!!user];
	if (!kp.open && kpe_open(err, n))
		return -1;
	if (!exists(kp.dir, list)) {
		snprintf(err, n, "no %s/%s writable: a kernel without CONFIG_%s_EVENTS?", kp.dir, list,
		         user ? "UPROBE" : "KPROBE");
		return -1;
	}
	if (nargs < 0 || nargs > KPE_MAX_ARGS || strlen(name) >= sizeof ev->name) {
		snprintf(err, n, "too many variables (at most %d) or too long a name", KPE_MAX_ARGS);
		return -1;
	}
	memset(ev, 0, sizeof *ev);
	snprintf(ev->name, sizeof ev->name, "%s", name);
	ev->nargs = nargs;
	size_t cap = 512 + (size_t)nargs * 280, len;
	char *cmd = malloc(cap);
	if (!cmd) {
		snprintf(err, n, "out of memory");
		return -1;
	}
	len = (size_t)snprintf(cmd, cap, "p:%s/%s %s", kp.group, name, where);
	for (int i = 0; i < nargs && len < cap; i++)
		len += (size_t)snprintf(cmd + len, cap - len, " a%d=%s", i, args[i]);
	if (len + 2 >= cap) {
		free(cmd);
		snprintf(err, n, "the probe's definition is too long");
		return -1;
	}
	strcat(cmd, "\n");
	if (command(kp.dir, list, cmd)) {
		int en = errno;
		char why[300];
		last_error(why, sizeof why);
		cmd[strlen(cmd) - 1] = 0;
		snprintf(err, n, "the kernel refused the %s event '%.300s' (%s)%s", user ? "uprobe" : "kprobe", cmd,
		         strerror(en), why);
		free(cmd);
		return -1;
	}
	free(cmd);
	kp.added++;
	char fn[KPE_MAX_ARGS][8];
	const char *f[KPE_MAX_ARGS];
	for (int i = 0; i < nargs; i++) {
		snprintf(fn[i], sizeof fn[i], "a%d", i);
		f[i] = fn[i];
	}
	uint32_t id = 0;
	if (tracefs_event(kp.group, name, f, nargs, &id, ev->off, ev->size, err, n))
		return -1;
	ev->id = (int)id;
	return 0;
}

int kpe_missed(const char *name, uint64_t *missed)
{
	char p[128];
	snprintf(p, sizeof p, "%s/kprobe_profile", kp.dir);
	char *prof = kp.open ? file_read_all(p, KPE_LIST_MAX, NULL) : NULL;
	int rc = -1;
	for (char *s = prof; s && *s && rc; s += strcspn(s, "\n"), s += *s == '\n') {
		char ev[128];
		unsigned long long hit, miss;
		if (sscanf(s, " %127s %llu %llu", ev, &hit, &miss) == 3 && !strcmp(ev, name)) {
			*missed = miss;
			rc = 0;
		}
	}
	free(prof);
	return rc;
}

void kpe_close(void)
{
	if (!kp.open)
		return;
	if (kp.added)
		for (int t = 0; t < KPE_TRIES && remove_group(kp.dir, kp.group); t++) {
			struct timespec ts = { 0, 10000000 };
			nanosleep(&ts, NULL);
		}
	if (write(kp.pipe_w, "d", 1) != 1) {
		/* the guardian is gone: nothing to tell */
	}
	close(kp.pipe_w);
	if (kp.guardian > 0)
		waitpid(kp.guardian, NULL, 0);
	memset(&kp, 0, sizeof kp);
	kp.pipe_w = -1;
}
