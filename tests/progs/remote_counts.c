/* remote_counts.c — target of the remote probe tests (tests/e2e/probe_remote.sh),
 * cross-built for aarch64, MIPS and x86-64: it counts, itself, what the
 * probes must find, and prints it.  step() is called N (default 200) times;
 * the MARK_LINE line in account() runs once per call of account(), that is
 * for the odd i only; at MARK_LINE the parameter v (a register) and the
 * global g_total (memory: the byte order of the target matters) are read by
 * the var probes, before the line adds v to g_total. */
#include <stdio.h>
#include <stdlib.h>

#include "noipa.h"

long g_total;                    /* read from memory by var:...:g_total */
static int line_runs;
static long sum_v, sum_total_before, sum_x;
static int step_calls;

NOIPA void account(int v)
{
	line_runs++;
	sum_v += v;
	sum_total_before += g_total;
	g_total += v;                /* MARK_LINE */
	TOUCH();
}

NOIPA int step(int x)
{
	step_calls++;
	sum_x += x;
	TOUCH();
	return 3 * x + 1;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 200;
	for (int i = 0; i < n; i++) {
		int v = step(i);
		if (i & 1)
			account(v);
	}
	printf("step_calls %d sum_x %ld line_runs %d sum_v %ld sum_total_before %ld g_total %ld\n",
	       step_calls, sum_x, line_runs, sum_v, sum_total_before, g_total);
	return 0;
}
