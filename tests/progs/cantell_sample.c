/* cantell_sample.c — a sampling profiler inside the recorded program: a
 * SIGPROF handler (1 kHz of CPU time) walks the stack with backtrace() while
 * the program makes empty recorded calls, so the signal lands anywhere:
 * in the program, in sonde's entry and exit hooks, in the exit trampoline
 * (tests/e2e/record_cantell.sh).  Prints how many samples it took and how
 * many walks reached main; with CALLS given, it makes that many calls. */
#include <execinfo.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include "noipa.h"

static volatile long sink, samples, reached;
static void *main_lo, *main_hi;

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
 * sonde-cc's instrumentation. */
__attribute__((patchable_function_entry(0, 0))) static void on_prof(int sig)
{
	(void)sig;
	void *b[64];
	int n = backtrace(b, 64);
	samples++;
	for (int i = 0; i < n; i++)
		if (b[i] >= main_lo && b[i] < main_hi) {
			reached++;
			break;
		}
}

int main(int argc, char **argv)
{
	long calls = argc > 1 ? atol(argv[1]) : 3000000;
	main_lo = (void *)main;
	main_hi = (char *)main + 512; /* main's code: the return address of its call of spin */
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_prof;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGPROF, &sa, NULL);
	struct itimerval on = { { 0, 1000 }, { 0, 1000 } }, off = { { 0, 0 }, { 0, 0 } };
	setitimer(ITIMER_PROF, &on, NULL);
	spin(calls);
	setitimer(ITIMER_PROF, &off, NULL);
	printf("samples %ld reach main %ld\n", samples, reached);
	return 0;
}
