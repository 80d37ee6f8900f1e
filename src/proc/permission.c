/* permission.c — turns a refused ptrace attach into its reason: the process
 * is gone, another tracer holds it, it belongs to another user, or the Yama
 * security module's ptrace_scope forbids it; each with what to do. */
#include "proc/permission.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int attach_status_field(pid_t pid, const char *name, long *val)
{
	char path[64], line[256];
	snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return -1;
	size_t len = strlen(name);
	int rc = -1;
	while (fgets(line, sizeof line, f))
		if (!strncmp(line, name, len) && line[len] == ':') {
			char *end;
			*val = strtol(line + len + 1, &end, 10);
			rc = end == line + len + 1 ? -1 : 0;
			break;
		}
	fclose(f);
	return rc;
}

static void comm_of(pid_t pid, char *buf, size_t n)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/comm", (int)pid);
	FILE *f = fopen(path, "re");
	buf[0] = 0;
	if (f) {
		if (fgets(buf, (int)n, f))
			buf[strcspn(buf, "\n")] = 0;
		fclose(f);
	}
	if (!buf[0])
		snprintf(buf, n, "?");
}

static int yama_scope(void)
{
	FILE *f = fopen("/proc/sys/kernel/yama/ptrace_scope", "re");
	int v = -1;
	if (f) {
		if (fscanf(f, "%d", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

void attach_why_refused(pid_t pid, int e, char *buf, size_t n)
{
	long tracer = 0, uid = -1;
	if (e == ESRCH) {
		snprintf(buf, n, "no such process");
		return;
	}
	if (e != EPERM) {
		snprintf(buf, n, "%s", strerror(e));
		return;
	}
	if (attach_status_field(pid, "TracerPid", &tracer) == 0 && tracer > 0) {
		char comm[32];
		comm_of((pid_t)tracer, comm, sizeof comm);
		snprintf(buf, n, "already traced by process %ld (%s): a process has one tracer at a time", tracer,
		         comm);
		return;
	}
	int scope = yama_scope();
	if (attach_status_field(pid, "Uid", &uid) == 0 && geteuid() != 0 && (uid_t)uid != geteuid()) {
		snprintf(buf, n, "it runs as user %ld, sonde as user %ld: run sonde as that user or as root", uid,
		         (long)geteuid());
		return;
	}
	switch (scope) {
	case 1:
		snprintf(buf, n, "kernel.yama.ptrace_scope is 1: only a parent may trace its children; run sonde "
		         "as root or set it to 0 (sysctl kernel.yama.ptrace_scope=0)");
		return;
	case 2:
		snprintf(buf, n, "kernel.yama.ptrace_scope is 2: only root (CAP_SYS_PTRACE) may trace; run sonde "
		         "as root");
		return;
	case 3:
		snprintf(buf, n, "kernel.yama.ptrace_scope is 3: ptrace is disabled until the next reboot");
		return;
	}
	snprintf(buf, n, "permission denied: the process is not dumpable (setuid?), or a security module "
	         "(SELinux, AppArmor, a container's seccomp policy) forbids ptrace");
}
