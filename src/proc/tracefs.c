/* tracefs.c — a tracepoint's id and a field's place (tracefs.h), read from
 * the first tracefs that answers: /sys/kernel/tracing, then
 * /sys/kernel/debug/tracing (debugfs's automount of it); root mounts it
 * first where it is not. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

#include "proc/tracefs.h"

static const char *const roots[] = { "/sys/kernel/tracing", "/sys/kernel/debug/tracing" };

/* The file's first n-1 bytes, NUL-terminated: their length, or -errno. */
static long read_small(const char *path, char *buf, size_t n)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	size_t got = 0;
	while (got + 1 < n) {
		ssize_t k = read(fd, buf + got, n - 1 - got);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		got += (size_t)k;
	}
	close(fd);
	buf[got] = 0;
	return (long)got;
}

/* "offset:N;" and "size:N;" of the line `field:TYPE NAME;` in a format file */
static int field_of(const char *fmt, const char *field, uint32_t *off, uint32_t *size)
{
	for (const char *l = fmt; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		const char *f = strstr(l, "field:"), *semi = f ? strchr(f, ';') : NULL, *nl = strchr(l, '\n');
		if (!f || !semi || (nl && semi > nl))
			continue;
		/* the name is the last word before the ';' (an array's "[N]" after it is not ours) */
		const char *e = semi, *b = e;
		while (b > f && b[-1] != ' ' && b[-1] != '\t')
			b--;
		if ((size_t)(e - b) != strlen(field) || memcmp(b, field, (size_t)(e - b)))
			continue;
		const char *o = strstr(semi, "offset:"), *s = strstr(semi, "size:");
		if (!o || !s || (nl && (o > nl || s > nl)))
			return -1;
		char *end;
		unsigned long ov = strtoul(o + 7, &end, 10), sv = strtoul(s + 5, &end, 10);
		if (ov >= 4096 || sv == 0 || sv > 8 || ov + sv > 4096)
			return -1;
		*off = (uint32_t)ov;
		*size = (uint32_t)sv;
		return 0;
	}
	return -1;
}

/* root, tracefs not mounted (its mount point empty): mounted, as perf
 * does (it stays: the kernel's own file system, shared by every tool) */
static void mount_tracefs(void)
{
	if (geteuid() == 0 && access("/sys/kernel/tracing/events", F_OK) != 0 && errno == ENOENT &&
	    access("/sys/kernel/tracing", F_OK) == 0)
		mount("nodev", "/sys/kernel/tracing", "tracefs", 0, NULL);
}

static void not_found(int denied, int mounted, const char *group, const char *event, char *why, size_t whylen)
{
	if (denied)
		snprintf(why, whylen, "tracefs is readable by root only: run sonde as root");
	else if (!mounted)
		snprintf(why, whylen, "tracefs is not mounted: as root, mount -t tracefs nodev /sys/kernel/tracing");
	else
		snprintf(why, whylen, "the kernel has no tracepoint %s:%s", group, event);
}

int tracefs_root(char *dir, size_t n, char *why, size_t whylen)
{
	int denied = 0;
	mount_tracefs();
	for (size_t i = 0; i < sizeof roots / sizeof *roots; i++) {
		char path[128];
		snprintf(path, sizeof path, "%s/events", roots[i]);
		if (access(path, F_OK) == 0) {
			snprintf(dir, n, "%s", roots[i]);
			return 0;
		}
		denied |= errno == EACCES;
	}
	not_found(denied, 0, "", "", why, whylen);
	return -1;
}

int tracefs_event(const char *group, const char *event, const char *const *fields, int nf, uint32_t *id,
                  uint32_t *off, uint32_t *size, char *why, size_t whylen)
{
	char path[512], buf[8192];
	int denied = 0, mounted = 0;
	mount_tracefs();
	for (size_t i = 0; i < sizeof roots / sizeof *roots; i++) {
		snprintf(path, sizeof path, "%s/events", roots[i]);
		if (access(path, F_OK) != 0) {
			if (errno == EACCES)
				denied = 1;
			continue;
		}
		mounted = 1;
		snprintf(path, sizeof path, "%s/events/%s/%s/id", roots[i], group, event);
		long n = read_small(path, buf, 32);
		if (n == -EACCES) {
			denied = 1;
			continue;
		}
		if (n <= 0)
			continue;
		char *end;
		unsigned long v = strtoul(buf, &end, 10);
		if (end == buf || v == 0 || v >= 65536)
			continue;
		snprintf(path, sizeof path, "%s/events/%s/%s/format", roots[i], group, event);
		if (read_small(path, buf, sizeof buf) <= 0) {
			snprintf(why, whylen, "cannot read the format of %s:%s", group, event);
			return -1;
		}
		for (int k = 0; k < nf; k++)
			if (field_of(buf, fields[k], &off[k], &size[k]) != 0) {
				snprintf(why, whylen, "the format of %s:%s has no field %s sonde can read", group, event, fields[k]);
				return -1;
			}
		*id = (uint32_t)v;
		return 0;
	}
	not_found(denied, mounted, group, event, why, whylen);
	return -1;
}

int tracefs_tracepoint(const char *group, const char *event, const char *field, struct tracepoint *tp, char *why,
                       size_t whylen)
{
	return tracefs_event(group, event, &field, 1, &tp->id, &tp->off, &tp->size, why, whylen);
}
