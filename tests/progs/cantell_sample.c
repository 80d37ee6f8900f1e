/* cantell_sample.c — a sampling profiler inside the recorded program: a
 * SIGPROF handler (1 kHz of CPU time) walks the stack with backtrace() while
 * the program makes empty recorded calls, so the signal lands anywhere:
 * in the program, in sonde's entry and exit hooks, in the exit trampoline
 * (tests/e2e/record_cantell.sh).  Prints how many samples it took and how
 * many walks reached main; with CALLS given, it makes that many calls,
 * else it calls until it has 100 samples (bounded). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <execinfo.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include "noipa.h"

#define MAX_SAMPLES 4096
#define MAX_FRAMES 64
static volatile long sink;
static void *frames[MAX_SAMPLES][MAX_FRAMES];
static int nframes[MAX_SAMPLES];
static volatile int samples;

NOIPA void leaf(long i)
{
	sink += i;
}

NOIPA void mid(long i)
{
	leaf(i);
	leaf(i + 1);
	TOUCH();
}

NOIPA void spin(long n)
{
	for (long i = 0; i < n; i++)
		mid(i);
	TOUCH();
}

/* A profiler's handler lives in its own library, not recorded: kept out of
 * sonde-cc's instrumentation.  It keeps the walk; main names the frames
 * after (dladdr is no handler's business). */
__attribute__((patchable_function_entry(0, 0))) static void on_prof(int sig)
{
	(void)sig;
	int k = samples;
	if (k < MAX_SAMPLES) {
		nframes[k] = backtrace(frames[k], MAX_FRAMES);
		samples = k + 1;
	}
}

int main(int argc, char **argv)
{
	/* CALLS given: that many; else rounds of a million until 100 samples
	 * are taken (CPU time in the kernel's ticks: a loaded machine gave
	 * the recorded run 18 where 20 were asked), at most 1000 rounds */
	long calls = argc > 1 ? atol(argv[1]) : 1000000;
	int rounds = argc > 1 ? 1 : 1000;
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_prof;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGPROF, &sa, NULL);
	struct itimerval on = { { 0, 1000 }, { 0, 1000 } }, off = { { 0, 0 }, { 0, 0 } };
	setitimer(ITIMER_PROF, &on, NULL);
	for (int r = 0; r < rounds && (r == 0 || samples < 100); r++)
		spin(calls);
	setitimer(ITIMER_PROF, &off, NULL);
	int reached = 0; /* walks with a frame in main (built with -rdynamic: dladdr names it) */
	for (int k = 0; k < samples; k++)
		for (int i = 1; i < nframes[k]; i++) { /* 0: the handler's own */
			Dl_info di;
			if (dladdr(frames[k][i], &di) && di.dli_sname && !strcmp(di.dli_sname, "main")) {
				reached++;
				break;
			}
		}
	printf("samples %d reach main %d\n", samples, reached);
	return 0;
}
