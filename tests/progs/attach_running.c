/* attach_running.c — a program to attach to while it is deep in recursion
 * and blocked in system calls (tests/e2e/attach_running.sh).
 * Usage: attach_running FIFO PIDFILE DEPTH
 * The main thread recurses DEPTH levels into deep(), and at the bottom
 * blocks in read() on FIFO (after writing its pid to PIDFILE: the test
 * attaches then).  A second thread, napper(), sleeps in nanosleep() 20 ms
 * at a time until main has read its line.  Then main calls leaf() LEAVES
 * times at the bottom and returns level by level; napper calls leaf()
 * NAPLEAVES times.  Every system call's return value and errno are checked
 * and printed: an EINTR sonde leaked would show.  Prints its own counts;
 * exits with status 5. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <fcntl.h>

#include "noipa.h"

#define LEAVES 5000
#define NAPLEAVES 3000

static atomic_long n_leaf, n_deep, nap_calls;
static atomic_int released;
static int fd;
static ssize_t read_rc;
static int read_errno;
static long nap_bad, nap_bad_errno;
static char line[64];

NOIPA static long leaf(long x)
{
	TOUCH();
	atomic_fetch_add_explicit(&n_leaf, 1, memory_order_relaxed);
	return x * 3 + 1;
}

NOIPA static void wait_line(void)
{
	TOUCH();
	errno = 0;
	read_rc = read(fd, line, sizeof line - 1);
	read_errno = errno;
	atomic_store(&released, 1);
}

NOIPA static long deep(int d)
{
	TOUCH();
	atomic_fetch_add_explicit(&n_deep, 1, memory_order_relaxed);
	if (d == 0) {
		wait_line();
		long s = 0;
		for (long i = 0; i < LEAVES; i++)
			s += leaf(i);
		return s;
	}
	volatile long here = d; /* read after the call: a real recursion, not a loop */
	long r = deep(d - 1);
	return r + here;
}

NOIPA static void *napper(void *arg)
{
	TOUCH();
	(void)arg;
	while (!atomic_load(&released)) {
		struct timespec ts = { 0, 20 * 1000 * 1000 };
		errno = 0;
		int rc = nanosleep(&ts, NULL);
		atomic_fetch_add(&nap_calls, 1);
		if (rc != 0) {
			nap_bad++;
			nap_bad_errno = errno;
		}
	}
	long s = 0;
	for (long i = 0; i < NAPLEAVES; i++)
		s += leaf(i);
	return (void *)(intptr_t)(s & 1);
}

int main(int argc, char **argv)
{
	if (argc < 4)
		return 2;
	int depth = atoi(argv[3]);
	fd = open(argv[1], O_RDONLY); /* blocks until the test opens the write end */
	if (fd < 0)
		return 2;
	pthread_t th;
	pthread_create(&th, NULL, napper, NULL);
	FILE *pf = fopen(argv[2], "w");
	if (!pf)
		return 2;
	fprintf(pf, "%d\n", (int)getpid());
	fclose(pf);
	long r = deep(depth);
	pthread_join(th, NULL);
	printf("read returned %zd errno %d (%s)\n", read_rc, read_errno, read_errno ? strerror(read_errno) : "-");
	printf("nanosleep failures %ld errno %ld\n", nap_bad, nap_bad_errno);
	printf("leaf %ld deep %ld result %ld\n", atomic_load(&n_leaf), atomic_load(&n_deep), r);
	fflush(stdout);
	return 5;
}
