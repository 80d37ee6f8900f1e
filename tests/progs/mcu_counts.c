/* mcu_counts.c — firmware for the microcontroller probe tests
 * (tests/e2e/probe_mcu.sh): Cortex-M0 (qemu-system-arm -M microbit), M3
 * (mps2-an385), M4F (mps2-an386) and RV32IMAC (qemu-system-riscv32 -M virt),
 * bare metal, built with mcu_start_cortexm.c / mcu_start_rv32.S and their
 * linker scripts.  It counts, itself, what the probes must find, prints it
 * through semihosting (SYS_WRITE0) and ends with SYS_EXIT, which makes QEMU
 * exit (and close the GDB connection):
 *   step_calls  calls of step()                           (func:step)
 *   line_runs   runs of MARK_LINE in account()            (line)
 *   sum_v       sum of the int v at MARK_LINE             (var, integer)
 *   sum_f_milli sum of g_f at MARK_LINE, times 1000       (var, float: in memory there,
 *               and bump()'s parameter f, in a register, has the same values)
 *   sevens      how often v % 7 == 0 at MARK_LINE         (assert v % 7 != 0)
 *   thirds      how often the branch at BRANCH_LINE calls third()
 *   clamped     how often the conditional (an IT block on Thumb-2) at
 *               CLAMP_LINE chose the limit
 *   ticks       calls of tick(), whose time the time probes measure
 * The counts are of N iterations (60; -DN=... for a longer run); the
 * output is one line. */
#include "noipa.h"

#ifndef N
#define N 60
#endif

void mcu_puts(const char *s);
void mcu_exit(void);

int g_total;                     /* memory: var:...:g_total */
float g_f = 0.5f;                /* memory, a float: var:...:g_f */
static int line_runs, step_calls, thirds, sevens, clamped, ticks;
static long sum_v, sum_f_milli;

NOIPA void third(void)
{
	thirds++;
	TOUCH();
}

NOIPA int clamp(int x, int lim)
{
	int r = x > lim ? lim : x;   /* CLAMP_LINE */
	if (r == lim)
		clamped++;
	return r;
}

NOIPA float bump(float f)       /* f: s0 on the M4F (hard float), r0 / a0 elsewhere */
{
	TOUCH();
	return f + 0.25f;
}

NOIPA void account(int v)
{
	line_runs++;
	sum_v += v;
	sum_f_milli += (long)(g_f * 1000.0f + 0.5f);
	if (v % 7 == 0)
		sevens++;
	g_total += v;                /* MARK_LINE */
	g_f = bump(g_f);
	TOUCH();
}

NOIPA int step(int x)
{
	step_calls++;
	if (x % 3 == 0)              /* BRANCH_LINE */
		third();
	TOUCH();
	return 3 * x + 1;
}

NOIPA void tick(void)
{
	ticks++;
	TOUCH();
}

static char *put_num(char *p, const char *name, long v)
{
	while (*name)
		*p++ = *name++;
	*p++ = ' ';
	char b[24];
	int i = 0;
	unsigned long u = v < 0 ? (unsigned long)-v : (unsigned long)v;
	do { b[i++] = (char)('0' + u % 10); u /= 10; } while (u);
	if (v < 0)
		*p++ = '-';
	while (i)
		*p++ = b[--i];
	*p++ = ' ';
	return p;
}

int main(void)
{
	for (int i = 0; i < N; i++) {
		int v = step(i);
		if (i & 1)
			account(clamp(v, 150));
		tick();
	}
	static char out[256];
	char *p = out;
	p = put_num(p, "step_calls", step_calls);
	p = put_num(p, "line_runs", line_runs);
	p = put_num(p, "sum_v", sum_v);
	p = put_num(p, "sum_f_milli", sum_f_milli);
	p = put_num(p, "sevens", sevens);
	p = put_num(p, "thirds", thirds);
	p = put_num(p, "clamped", clamped);
	p = put_num(p, "ticks", ticks);
	p = put_num(p, "g_total", g_total);
	p[-1] = '\n';
	*p = 0;
	mcu_puts(out);
	mcu_exit();
	return 0;
}
