/* fork_server.c — a forking server for tests/e2e/record_forkserver.sh:
 * listens on the unix socket argv[1], accepts argv[2] connections and forks
 * a backend for each.  A backend answers each line it reads with one line
 * ("ok N"), through handle_request and parse_request, and at the end of
 * its client's input prints "served PID COUNT" (its own count of requests)
 * and exits; the parent reaps every backend and prints "parent done N". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

NOINLINE static int parse_request(const char *line)
{
	int n = 0;
	for (const char *p = line; *p; p++)
		n += *p == 'q';
	return n;
}

NOINLINE static int handle_request(const char *line, char *reply, size_t n)
{
	return snprintf(reply, n, "ok %d\n", parse_request(line));
}

NOINLINE static void serve(int c)
{
	FILE *in = fdopen(c, "r");
	char line[256], reply[64];
	long count = 0;
	while (in && fgets(line, sizeof line, in)) {
		int k = handle_request(line, reply, sizeof reply);
		count++;
		if (write(c, reply, (size_t)k) != k)
			break;
	}
	printf("served %d %ld\n", (int)getpid(), count);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: fork_server SOCKET CONNECTIONS\n");
		return 2;
	}
	int n = atoi(argv[2]), s = socket(AF_UNIX, SOCK_STREAM, 0);
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	snprintf(a.sun_path, sizeof a.sun_path, "%s", argv[1]);
	unlink(a.sun_path);
	if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof a) || listen(s, 16)) {
		perror("fork_server");
		return 1;
	}
	for (int i = 0; i < n; i++) {
		int c = accept(s, NULL, NULL);
		if (c < 0) {
			perror("accept");
			return 1;
		}
		pid_t p = fork();
		if (p == 0) {
			close(s);
			serve(c);
			_exit(0);
		}
		close(c);
	}
	int st, ok = 0;
	while (wait(&st) > 0)
		ok += WIFEXITED(st) && WEXITSTATUS(st) == 0;
	unlink(a.sun_path);
	printf("parent done %d\n", ok);
	return ok == n ? 0 : 1;
}
