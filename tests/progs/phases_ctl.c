/* phases_ctl.c — three phases of calls of work(), each started by the test:
 *   phases_ctl A B C
 * phase k waits until the file goK exists in the current directory, calls
 * work() A, B or C times, then creates doneK.  Meanwhile a second thread
 * calls other() every 200 us until the end.  Prints the calls per phase and
 * other()'s count. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "noipa.h"

static volatile unsigned long sink;
static volatile int stop;
static unsigned long others;

NOIPA void work(unsigned long i) { TOUCH(); sink += i; }
NOIPA void other(unsigned long i) { TOUCH(); sink ^= i; }

static void *side(void *arg)
{
	(void)arg;
	struct timespec ts = { 0, 200 * 1000 };
	while (!stop) {
		other(others++);
		nanosleep(&ts, NULL);
	}
	return NULL;
}

static int wait_file(const char *name)
{
	struct timespec ts = { 0, 1000 * 1000 };
	for (int i = 0; i < 120000; i++) {
		if (access(name, F_OK) == 0)
			return 0;
		nanosleep(&ts, NULL);
	}
	return -1;
}

int main(int argc, char **argv)
{
	unsigned long n[3];
	for (int k = 0; k < 3; k++)
		n[k] = argc > k + 1 ? strtoul(argv[k + 1], NULL, 10) : 1000;
	pthread_t t;
	pthread_create(&t, NULL, side, NULL);
	for (int k = 0; k < 3; k++) {
		char go[16], done[16];
		snprintf(go, sizeof go, "go%d", k + 1);
		snprintf(done, sizeof done, "done%d", k + 1);
		if (wait_file(go)) {
			fprintf(stderr, "phases_ctl: no %s within 120 s\n", go);
			return 1;
		}
		for (unsigned long i = 0; i < n[k]; i++)
			work(i);
		FILE *f = fopen(done, "w");
		if (f)
			fclose(f);
	}
	stop = 1;
	pthread_join(t, NULL);
	printf("phase1 %lu phase2 %lu phase3 %lu other %lu\n", n[0], n[1], n[2], others);
	return 0;
}
