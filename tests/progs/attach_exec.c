/* attach_exec.c — a target of `sonde record -p` whose tree execs
 * (tests/e2e/attach_exec.sh): `attach_exec FIFO PIDFILE INPUT` writes its pid
 * to PIDFILE, waits for a line on FIFO (sonde attaches meanwhile), then
 * phase 1: calls tick() 1000 times and runs Debian's gzip on INPUT four ways:
 *  - a fork child execs sh -c 'gzip ...' (the shell execs gzip in turn);
 *  - posix_spawnp of gzip;
 *  - a vfork child execs sh -c 'exec gzip ...' with an environment of PATH
 *    alone (as env -i would);
 *  - and a fork child execs sh -c 'env | grep ...' that counts the entries of
 *    its environment naming SONDE_ or LD_PRELOAD (0 without sonde: sonde's
 *    part must be gone from what each new image sees).
 * Then it execs itself (phase 2): the new image calls tick() 777 times, runs
 * gzip once more (fork and execvp) and ./st if there is one (a static
 * program), prints its line and waits for a second line on FIFO before it
 * exits with status 0.  It prints its own counts. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static volatile unsigned ticks;

__attribute__((noinline)) void tick(void)
{
	ticks++;
	__asm__ volatile("" ::: "memory");
}

static int status_of(pid_t p)
{
	int st = 0;
	while (waitpid(p, &st, 0) < 0)
		;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int sh(const char *cmd)
{
	fflush(stdout);
	pid_t p = fork();
	if (p == 0) {
		execlp("sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	return status_of(p);
}

static void wait_line(int fd)
{
	char c;
	while (read(fd, &c, 1) == 1 && c != '\n')
		;
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: attach_exec FIFO PIDFILE INPUT\n");
		return 2;
	}
	const char *in = argv[3];
	char cmd[4096];
	if (argc > 5 && !strcmp(argv[4], "again")) { /* phase 2, the new image */
		int fd = atoi(argv[5]);
		for (int i = 0; i < 777; i++)
			tick();
		fflush(stdout);
		pid_t p = fork();
		if (p == 0) {
			int o = open("/dev/null", O_WRONLY);
			dup2(o, 1);
			execvp("gzip", (char *[]){ "gzip", "-c", (char *)in, NULL });
			_exit(127);
		}
		int s = status_of(p), s5 = -1;
		if (access("./st", X_OK) == 0) { /* a static program: a process without functions */
			fflush(stdout);
			pid_t q = fork();
			if (q == 0) {
				execv("./st", (char *[]){ "st", NULL });
				_exit(127);
			}
			s5 = status_of(q);
		}
		printf("phase 2: tick %u, gzip %d, static %d\n", ticks, s, s5);
		fflush(stdout);
		wait_line(fd);
		return 0;
	}
	FILE *pf = fopen(argv[2], "w");
	if (!pf)
		return 2;
	fprintf(pf, "%d\n", (int)getpid());
	fclose(pf);
	int fd = open(argv[1], O_RDONLY); /* kept across the exec */
	if (fd < 0)
		return 2;
	wait_line(fd);
	for (int i = 0; i < 1000; i++)
		tick();
	snprintf(cmd, sizeof cmd, "gzip -c '%s' > /dev/null", in);
	int s1 = sh(cmd);
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	pid_t sp;
	int s2 = posix_spawnp(&sp, "gzip", &fa, NULL, (char *[]){ "gzip", "-c", (char *)in, NULL }, environ);
	s2 = s2 ? 200 + s2 : status_of(sp);
	posix_spawn_file_actions_destroy(&fa);
	snprintf(cmd, sizeof cmd, "exec gzip -c '%s' > /dev/null", in);
	fflush(stdout);
	pid_t v = vfork();
	if (v == 0) {
		execle("/bin/sh", "sh", "-c", cmd, (char *)NULL, (char *[]){ "PATH=/usr/bin:/bin", NULL });
		_exit(127);
	}
	int s3 = status_of(v);
	printf("phase 1: tick %u, gzip %d %d %d, sonde's variables seen: ", ticks, s1, s2, s3);
	int s4 = sh("env | grep -c -E '^(SONDE_|LD_PRELOAD=)'");
	printf("(grep %d)\n", s4);
	fflush(stdout);
	char fds[16];
	snprintf(fds, sizeof fds, "%d", fd);
	execv("/proc/self/exe", (char *[]){ argv[0], argv[1], argv[2], argv[3], "again", fds, NULL });
	return 3;
}
