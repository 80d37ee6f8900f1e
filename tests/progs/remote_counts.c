/* remote_counts.c — target of the remote probe tests (tests/e2e/probe_remote.sh),
 * cross-built for aarch64, MIPS and x86-64: it counts, itself, what the
 * probes must find, and prints it.  step() is called N (default 200) times;
 * the MARK_LINE line in account() runs once per call of account(), that is
 * for the odd i only; at MARK_LINE the parameter v (a register) and the
 * global g_total (memory: the byte order of the target matters) are read by
 * the var probes, before the line adds v to g_total.  BRANCH_LINE in step()
 * branches to a call for the x that are multiples of 3 (counted in thirds);
 * g_tp is a pointer (4 bytes on MIPS) to the tally whose runs step() counts,
 * read through it by var:...:g_tp->runs in account(). */
#include <stdio.h>
#include <stdlib.h>

#include "noipa.h"

long g_total;                    /* read from memory by var:...:g_total */
static int line_runs;
static long sum_v, sum_total_before, sum_x;
static int step_calls, thirds;
static long sum_runs;

struct tally { long runs; long pad; };
static struct tally tally;
struct tally *g_tp = &tally;     /* read through by var:...:g_tp->runs */

NOIPA void third(void)
{
	thirds++;
	TOUCH();
}

NOIPA void account(int v)
{
	line_runs++;
	sum_v += v;
	sum_total_before += g_total;
	sum_runs += g_tp->runs;
	g_total += v;                /* MARK_LINE */
	TOUCH();
}

NOIPA int step(int x)
{
	step_calls++;
	sum_x += x;
	g_tp->runs++;
	if (x % 3 == 0)              /* BRANCH_LINE */
		third();
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
	printf("step_calls %d sum_x %ld line_runs %d sum_v %ld sum_total_before %ld g_total %ld thirds %d sum_runs %ld\n",
	       step_calls, sum_x, line_runs, sum_v, sum_total_before, g_total, thirds, sum_runs);
	return 0;
}
