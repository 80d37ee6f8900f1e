/* kprobe_events.c — sonde's probes in tracefs's kprobe_events
 * (kprobe_events.h).  The guardian: a child forked before the first probe
 * is written, in a session of its own (a Ctrl-C or a kill of sonde's
 * process group does not reach it), holding nothing of sonde's but the
 * read end of a pipe.  When the pipe says end of file (sonde closed it, or
 * sonde is gone: the kernel closed it), it removes every probe of the
 * group still listed, retrying while the kernel says one is busy (a perf
 * event of a dead sonde is released a moment after its pipe), and
 * unmounts tracefs if sonde mounted it. */
#include "probe/kernel/kprobe_events.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define KPE_TRACEFS "/sys/kernel/tracing"
#define KPE_DEBUGFS "/sys/kernel/debug/tracing"
#define KPE_LIST_MAX (1 << 20)   /* kprobe_events read: at most this much */
#define KPE_TRIES 500            /* the removal's retries, 10 ms apart: 5 s */

static struct {
	int open;
	char dir[64];            /* tracefs */
	char group[32];          /* sonde_PID */
	int mounted;             /* sonde mounted tracefs at dir */
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

/* The file's contents (at most max bytes, NUL-terminated, malloc'd), or NULL. */
static char *slurp(const char *path, size_t max)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	size_t cap = 4096, len = 0;
	char *b = malloc(cap + 1);
	while (b) {
		if (len == cap) {
			if (cap >= max)
				break;
			char *nb = realloc(b, 2 * cap + 1);
			if (!nb) {
				free(b);
				b = NULL;
				break;
			}
			b = nb;
			cap *= 2;
		}
		ssize_t k = read(fd, b + len, cap - len);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		len += (size_t)k;
	}
	close(fd);
	if (b)
		b[len] = 0;
	return b;
}

/* One command written to kprobe_events: 0, or -1 with errno. */
static int command(const char *dir, const char *cmd)
{
	char p[128];
	snprintf(p, sizeof p, "%s/kprobe_events", dir);
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

/* Every probe of group still in dir's list removed: how many are left. */
static int remove_group(const char *dir, const char *group)
{
	char p[128];
	snprintf(p, sizeof p, "%s/kprobe_events", dir);
	char *list = slurp(p, KPE_LIST_MAX);
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
		if (command(dir, cmd))
			left++;
	}
	free(list);
	return left;
}

static void guardian(int rfd, const char *dir, const char *group, int mounted)
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
	if (mounted)
		umount2(dir, MNT_DETACH);
	_exit(0);
}

int kpe_open(char *err, size_t n)
{
	if (kp.open)
		return 0;
	if (exists(KPE_TRACEFS, "kprobe_events"))
		snprintf(kp.dir, sizeof kp.dir, "%s", KPE_TRACEFS);
	else if (exists(KPE_DEBUGFS, "kprobe_events"))
		snprintf(kp.dir, sizeof kp.dir, "%s", KPE_DEBUGFS);
	else if (!mount("nodev", KPE_TRACEFS, "tracefs", 0, NULL) && exists(KPE_TRACEFS, "kprobe_events")) {
		snprintf(kp.dir, sizeof kp.dir, "%s", KPE_TRACEFS);
		kp.mounted = 1;
	} else {
		snprintf(err, n, "no kprobe_events in tracefs (%s, %s; mounting tracefs at %s: %s): a kernel without "
		         "CONFIG_KPROBE_EVENTS?", KPE_TRACEFS, KPE_DEBUGFS, KPE_TRACEFS, strerror(errno));
		return -1;
	}
	snprintf(kp.group, sizeof kp.group, "sonde_%d", (int)getpid());
	int p[2];
	if (pipe2(p, O_CLOEXEC)) {
		snprintf(err, n, "pipe: %s", strerror(errno));
		goto fail;
	}
	pid_t c = fork();
	if (c < 0) {
		snprintf(err, n, "fork: %s", strerror(errno));
		close(p[0]);
		close(p[1]);
		goto fail;
	}
	if (!c)
		guardian(p[0], kp.dir, kp.group, kp.mounted);
	close(p[0]);
	kp.pipe_w = p[1];
	kp.guardian = c;
	kp.open = 1;
	return 0;
fail:
	if (kp.mounted)
		umount2(kp.dir, MNT_DETACH);
	kp.mounted = 0;
	return -1;
}

/* The kernel's last reason in tracefs's error_log ("error: Invalid fetch
 * argument" and the command's position), into why; "" if none. */
static void last_error(char *why, size_t n)
{
	char p[128];
	why[0] = 0;
	snprintf(p, sizeof p, "%s/error_log", kp.dir);
	char *log = slurp(p, 64 << 10);
	if (!log)
		return;
	char *e = NULL;
	for (char *s = strstr(log, "error: "); s; s = strstr(s + 1, "error: "))
		e = s;
	if (e)
		snprintf(why, n, ": %.*s", (int)strcspn(e, "\n"), e);
	free(log);
}

/* The fields of the event's format ("field:TYPE NAME; offset:N; size:N;"):
 * a0..a(nargs-1) into ev. */
static int fields(struct kpe_event *ev, char *err, size_t n)
{
	char p[256];
	snprintf(p, sizeof p, "%s/events/%s/%s/format", kp.dir, kp.group, ev->name);
	char *f = slurp(p, 64 << 10);
	if (!f) {
		snprintf(err, n, "cannot read %s: %s", p, strerror(errno));
		return -1;
	}
	int found = 0;
	for (int i = 0; i < ev->nargs; i++)
		ev->off[i] = ev->size[i] = -1;
	for (char *s = strstr(f, "field:"); s; s = strstr(s + 1, "field:")) {
		char *semi = strchr(s, ';'), *sp = semi;
		int off, size;
		if (!semi)
			break;
		while (sp > s && sp[-1] != ' ' && sp[-1] != '\t')
			sp--;
		char *o = strstr(semi, "offset:"), *z = strstr(semi, "size:");
		if (!o || !z || sscanf(o, "offset:%d;", &off) != 1 || sscanf(z, "size:%d;", &size) != 1)
			continue;
		int k;
		char tail;
		if (sp[0] != 'a' || sscanf(sp + 1, "%d%c", &k, &tail) != 2 || tail != ';' || k < 0 || k >= ev->nargs)
			continue;
		if (off < 0 || off > 4096 || (size != 1 && size != 2 && size != 4 && size != 8))
			continue;
		if (ev->off[k] < 0)
			found++;
		ev->off[k] = off;
		ev->size[k] = size;
	}
	free(f);
	if (found != ev->nargs) {
		snprintf(err, n, "%s: %d of the event's %d fields found in its format", p, found, ev->nargs);
		return -1;
	}
	return 0;
}

int kpe_add(const char *name, const char *where, const char *const *args, int nargs, struct kpe_event *ev,
            char *err, size_t n)
{
	if (!kp.open && kpe_open(err, n))
		return -1;
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
	if (command(kp.dir, cmd)) {
		int en = errno;
		char why[300];
		last_error(why, sizeof why);
		cmd[strlen(cmd) - 1] = 0;
		snprintf(err, n, "the kernel refused the kprobe event '%.300s' (%s)%s", cmd, strerror(en), why);
		free(cmd);
		return -1;
	}
	free(cmd);
	kp.added++;
	char p[256], b[32];
	snprintf(p, sizeof p, "%s/events/%s/%s/id", kp.dir, kp.group, name);
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	ssize_t k = fd >= 0 ? read(fd, b, sizeof b - 1) : -1;
	if (fd >= 0)
		close(fd);
	if (k <= 0 || (b[k] = 0, sscanf(b, "%d", &ev->id) != 1) || ev->id <= 0) {
		snprintf(err, n, "cannot read the event's id (%s)", p);
		return -1;
	}
	return fields(ev, err, n);
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
	if (kp.mounted)
		umount2(kp.dir, MNT_DETACH);
	if (write(kp.pipe_w, "d", 1) != 1) {
		/* the guardian is gone: nothing to tell */
	}
	close(kp.pipe_w);
	if (kp.guardian > 0)
		waitpid(kp.guardian, NULL, 0);
	memset(&kp, 0, sizeof kp);
	kp.pipe_w = -1;
}
