/* times.c — SONDE_ATTACH_TIMES=1: the phases of an attach on stderr
 * (times.h).  The clock starts in a constructor, so the first line also
 * shows what sonde's own start (option parsing, the recorder's directory,
 * the session memory) cost before the attach proper. */
#include "attach/times.h"
#include "common/clock.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double t_start, t_prev;
static int enabled = -1;

__attribute__((constructor)) static void times_start(void)
{
	t_start = t_prev = (double)clock_mono_ns() / 1e6;
}

void attach_time(const char *phase)
{
	if (enabled < 0) {
		const char *e = getenv("SONDE_ATTACH_TIMES");
		enabled = e && *e && *e != '0';
	}
	if (!enabled)
		return;
	double t = (double)clock_mono_ns() / 1e6;
	fprintf(stderr, "sonde: attach: %-24s %8.2f ms (+%.2f ms)\n", phase, t - t_start, t - t_prev);
	t_prev = t;
}
