/* mcs51_fw.c — 8051 firmware for the ucsim tests (tests/e2e/probe_ucsim.sh,
 * tests/unit/test_cdb.c), built with Debian's sdcc in the small and the
 * large memory model.  main calls work() N_WORK times; timer 0's interrupt
 * handler calls tick(); the firmware counts its own calls and values and
 * writes them to `own` in xdata (at 0x7f00), which the tests read through
 * the simulator's console, then stops the simulation through ucsim's
 * simulator interface (`s51 -I if=xram[0xffff]`: 's' written there).
 * Variables of every probed type live in data, idata and xdata. */
#include <8051.h>

#ifndef N_WORK
#define N_WORK 8        /* bench/ucsim_bench.sh builds it with more */
#endif

/* What the firmware counted itself, read by the tests at the end. */
struct own {
	unsigned int work_calls, tick_calls, isr_calls, odd, taken;
	long lsum;
	float fsum;
	unsigned char cfinal;
	int ifinal;
	unsigned int done;      /* 0x5a5a once everything above is written */
};
__xdata __at(0x7f00) volatile struct own own;
__xdata __at(0xffff) volatile unsigned char sif;

__data unsigned char c_data;
__idata int i_idata;
__xdata long l_xdata;
__data float f_data;
__idata long l_idata;
__xdata float f_xdata;
__xdata unsigned char c_xdata;
volatile unsigned int ticks;

void tick(void)
{
	ticks++;
	own.tick_calls++;
}

void timer0_isr(void) __interrupt(1)
{
	TH0 = 0xf0;             /* the next overflow in 4096 machine cycles */
	own.isr_calls++;
	tick();
}

int work(int x)
{
	int r = x * 3;
	own.work_calls++;
	if (x & 1)
		own.odd++;
	if (r > 20)
		own.taken++;
	c_data = (unsigned char)(x + 1);
	i_idata = r - 7;
	l_xdata = (long)x * 100000L;
	f_data = (float)x * 0.5f;
	l_idata += x;
	f_xdata += 0.25f;
	c_xdata = (unsigned char)(x ^ 0x55);
	own.lsum += l_xdata;
	own.fsum += f_data;
	return r;
}

void main(void)
{
	int i, acc = 0;
	unsigned char k;
	for (k = 0; k < sizeof own; k++)
		((__xdata volatile unsigned char *)&own)[k] = 0;   /* xdata starts with the simulator's noise */
	TMOD = 0x01;            /* timer 0: 16 bits, reloaded by its handler */
	TH0 = 0xf0;
	TL0 = 0x00;
	ET0 = 1;
	EA = 1;
	TR0 = 1;
	for (i = 0; i < N_WORK; i++)
		acc += work(i);
	TR0 = 0;
	EA = 0;
	own.cfinal = c_data;
	own.ifinal = acc;
	own.done = 0x5a5a;
	sif = 's';
	for (;;)
		;
}
