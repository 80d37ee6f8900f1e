/* attach_target.c — a plain program that tests/e2e/attach_inject.sh makes
 * load libraries while it runs.  Its threads stand where an injection must
 * not be noticed:
 *   sleeper  loops in nanosleep(50 ms), each sleep measured on CLOCK_MONOTONIC;
 *   reader   blocked in open() and read() of a FIFO the script writes later;
 *   recurse  deep in recursion (DEPTH frames), computing at the bottom;
 *   main     in pthread_join.
 * Each checks itself that no call failed with EINTR and no sleep was short,
 * and main prints results that do not depend on timing, so that the output
 * of a run with injections must equal a run without.
 *   attach_target FIFO TIDFILE      (TIDFILE: "main|sleeper|reader|recurse TID"
 *                                    lines, written once every thread runs)
 * Exit status 3. */
#include "noipa.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define SLEEP_NS 50000000L
#define DEPTH 20000
#define BOTTOM_WORK 200000

static pthread_barrier_t started;
static volatile int reader_done;
static pid_t tids[3];

static int sleeps, sleep_eintr, sleep_short;
static long read_bytes, read_sum;
static int read_eintr, read_errors;
static unsigned long rec_value;
static int rec_rounds, rec_mismatch;

static long ns_since(const struct timespec *a)
{
	struct timespec b;
	clock_gettime(CLOCK_MONOTONIC, &b);
	return (b.tv_sec - a->tv_sec) * 1000000000L + (b.tv_nsec - a->tv_nsec);
}

static void *sleeper(void *arg)
{
	(void)arg;
	tids[0] = (pid_t)syscall(SYS_gettid);
	pthread_barrier_wait(&started);
	while (!reader_done || sleeps < 10) {
		struct timespec t0, req = { 0, SLEEP_NS }, rem;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		int r = nanosleep(&req, &rem);
		long el = ns_since(&t0);
		if (r < 0 && errno == EINTR)
			sleep_eintr++;
		if (el < SLEEP_NS)
			sleep_short++;
		sleeps++;
	}
	return NULL;
}

static void *reader(void *arg)
{
	tids[1] = (pid_t)syscall(SYS_gettid);
	pthread_barrier_wait(&started);
	int fd;
	while ((fd = open(arg, O_RDONLY)) < 0) {
		if (errno != EINTR) {
			read_errors++;
			reader_done = 1;
			return NULL;
		}
		read_eintr++;
	}
	unsigned char buf[97];
	for (;;) {
		ssize_t n = read(fd, buf, sizeof buf);
		if (n < 0 && errno == EINTR) {
			read_eintr++;
			continue;
		}
		if (n < 0)
			read_errors++;
		if (n <= 0)
			break;
		read_bytes += n;
		for (ssize_t i = 0; i < n; i++)
			read_sum += buf[i];
	}
	close(fd);
	reader_done = 1;
	return NULL;
}

NOIPA static unsigned long bottom(unsigned long seed)
{
	unsigned long x = seed;
	for (int i = 0; i < BOTTOM_WORK; i++)
		x = x * 6364136223846793005ul + 1442695040888963407ul;
	TOUCH();
	return x;
}

NOIPA static unsigned long recurse(int depth, unsigned long acc)
{
	volatile unsigned long frame[2] = { acc, (unsigned long)depth };
	if (depth == 0)
		return bottom(frame[0]);
	unsigned long r = recurse(depth - 1, frame[0] * 31 + frame[1]);
	TOUCH();
	return r ^ frame[1];
}

static void *recurser(void *arg)
{
	(void)arg;
	tids[2] = (pid_t)syscall(SYS_gettid);
	pthread_barrier_wait(&started);
	do {
		unsigned long v = recurse(DEPTH, 7);
		if (rec_rounds++ == 0)
			rec_value = v;
		else if (v != rec_value)
			rec_mismatch++;
	} while (!reader_done);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: attach_target FIFO TIDFILE\n");
		return 1;
	}
	pthread_t th[3];
	pthread_barrier_init(&started, NULL, 4);
	pthread_create(&th[0], NULL, sleeper, NULL);
	pthread_create(&th[1], NULL, reader, argv[1]);
	pthread_create(&th[2], NULL, recurser, NULL);
	pthread_barrier_wait(&started);
	char tmp[4096];
	snprintf(tmp, sizeof tmp, "%s.tmp", argv[2]);
	FILE *f = fopen(tmp, "w");
	if (!f || fprintf(f, "main %d\nsleeper %d\nreader %d\nrecurse %d\n", (int)getpid(), (int)tids[0],
	                  (int)tids[1], (int)tids[2]) < 0 || fclose(f) || rename(tmp, argv[2])) {
		perror("attach_target: tid file");
		return 1;
	}
	int join_errors = 0;
	for (int i = 0; i < 3; i++)
		join_errors += pthread_join(th[i], NULL) != 0;
	printf("sleeper: at least 10 sleeps %s, eintr %d, short %d\n", sleeps >= 10 ? "yes" : "no", sleep_eintr,
	       sleep_short);
	printf("reader: %ld bytes, sum %ld, eintr %d, errors %d\n", read_bytes, read_sum, read_eintr, read_errors);
	printf("recurse: depth %d, value %lu, mismatches %d\n", DEPTH, rec_value, rec_mismatch);
	printf("main: join errors %d\n", join_errors);
	printf("attach_target: done\n");
	return 3;
}
