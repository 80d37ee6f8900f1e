/* seccomp_run.c — `seccomp_run PROGRAM ARGS...`: PROGRAM under a seccomp
 * filter that allows every system call (exit 111 if the filter cannot be
 * set, 112 if the exec fails).  sonde does not try the on-CPU / off-CPU
 * split under a filter (issue 38): a recording without the split. */
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <unistd.h>
int main(int argc, char **argv)
{
	struct sock_filter allow[] = { BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW) };
	struct sock_fprog prog = { 1, allow };
	if (argc < 2 || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog))
		return 111;
	execv(argv[1], argv + 1);
	return 112;
}
