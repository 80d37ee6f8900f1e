/* mcu_profile.c — firmware for `sonde record --target` (tests/e2e/record_mcu.sh),
 * bare metal on QEMU's Cortex-M3 (mps2-an385) and RV32 (virt), built with
 * mcu_start_cortexm.c / mcu_start_rv32.S like mcu_counts.c.  Its calls have
 * the shapes a profile must get right: a leaf called in a loop and from a
 * function that two callers call (shared, from_a, from_b), a recursion
 * (fib), a function that spins for a while (spin).  It counts its calls
 * itself and measures spin's time with the same counter sonde reads
 * (CLOCK_ADDR: -DCLOCK_ADDR=0x40028018 on mps2, the FPGA counter; the low
 * word of the CLINT's mtime, 0x0200bff8, on virt), prints one line through
 * semihosting and exits.  Built a second time with -finstrument-functions
 * and mcu_cyg.c, it also prints how often each function was entered, by
 * address: the oracle of the call counts.  -DROUNDS=N repeats the calls N
 * times (a long run for the tests that leave early). */
#include "noipa.h"

#ifndef ROUNDS
#define ROUNDS 1
#endif
#ifndef CLOCK_ADDR
#error "give -DCLOCK_ADDR=..."
#endif

void mcu_puts(const char *s);
void mcu_exit(void);
extern void cyg_dump(void) __attribute__((weak));   /* mcu_cyg.c, in the oracle's build only */

static int leaf_calls, shared_calls, fib_calls, spin_calls;
static unsigned int spin_ticks;

NOIPA int leaf(int x)
{
	leaf_calls++;
	TOUCH();
	return x * 2 + 1;
}

NOIPA int shared(int x)
{
	shared_calls++;
	return leaf(x) + 1;
}

NOIPA int from_a(int x)
{
	TOUCH();
	return shared(x) + 3;
}

NOIPA int from_b(int x)
{
	TOUCH();
	return shared(x) ^ 5;
}

NOIPA int fib(int n)
{
	fib_calls++;
	if (n < 2)
		return n;
	return fib(n - 1) + fib(n - 2);
}

NOIPA void spin(int n)
{
	volatile unsigned int *clock = (volatile unsigned int *)CLOCK_ADDR;
	unsigned int t0 = *clock;
	for (volatile int i = 0; i < n; i++)
		;
	spin_ticks += *clock - t0;
	spin_calls++;
}

NOIPA char *put_num(char *p, const char *name, unsigned long v)
{
	while (*name)
		*p++ = *name++;
	*p++ = ' ';
	char b[24];
	int i = 0;
	do { b[i++] = (char)('0' + v % 10); v /= 10; } while (v);
	while (i)
		*p++ = b[--i];
	*p++ = ' ';
	return p;
}

int main(void)
{
	int acc = 0;
	for (int r = 0; r < ROUNDS; r++) {
		for (int i = 0; i < 40; i++) {
			acc += leaf(i);
			if (i % 4 == 0)
				acc += from_a(i);
			if (i % 5 == 0)
				acc += from_b(i);
		}
		acc += fib(10);
	}
	for (int i = 0; i < 4; i++)
		spin(3000);
	static char out[256];
	char *p = out;
	p = put_num(p, "leaf_calls", (unsigned long)leaf_calls);
	p = put_num(p, "shared_calls", (unsigned long)shared_calls);
	p = put_num(p, "fib_calls", (unsigned long)fib_calls);
	p = put_num(p, "spin_calls", (unsigned long)spin_calls);
	p = put_num(p, "spin_ticks", spin_ticks);
	p = put_num(p, "acc", (unsigned long)acc);
	p[-1] = '\n';
	*p = 0;
	mcu_puts(out);
	if (cyg_dump)
		cyg_dump();
	mcu_exit();
	return 0;
}
