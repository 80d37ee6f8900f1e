/* permission.h — why the kernel refused to let sonde trace a process
 * (permission.c): the reason and what to do, for one error line. */
#ifndef SONDE_PROC_PERMISSION_H
#define SONDE_PROC_PERMISSION_H

#include <stddef.h>
#include <sys/types.h>

/* Explains why ptrace(PTRACE_SEIZE, pid) failed with errno e, into buf:
 * "no such process", "already traced by process 123 (gdb)", "it runs as
 * user 1000, sonde as 1001: run sonde as that user or as root",
 * "kernel.yama.ptrace_scope is 1: ...", or strerror(e). */
void attach_why_refused(pid_t pid, int e, char *buf, size_t n);

/* A field of /proc/PID/status as a number (e.g. "TracerPid", "Uid" gives the
 * first, real, uid).  0 found, -1 not. */
int attach_status_field(pid_t pid, const char *name, long *val);

#endif
