/* baremetal_counts.c — a freestanding aarch64 program for QEMU's virt machine
 * (no OS): tests/e2e/probe_remote.sh runs it under qemu-system-aarch64 -S -gdb.
 * It calls tick() N times, sums its argument, prints its own counts on the
 * PL011 UART and ends through semihosting (SYS_EXIT), which makes QEMU exit
 * and close the GDB connection.  Built with baremetal_start.S and
 * baremetal.ld: -ffreestanding -nostdlib -mgeneral-regs-only. */
#define UART0 ((volatile unsigned int *)0x09000000)
#define N 300

static int calls;
static long sum_k;

static void putc_uart(char c) { *UART0 = (unsigned int)c; }

static void puts_uart(const char *s)
{
	while (*s)
		putc_uart(*s++);
}

static void putu(unsigned long v)
{
	char b[24];
	int i = 0;
	do { b[i++] = (char)('0' + v % 10); v /= 10; } while (v);
	while (i)
		putc_uart(b[--i]);
}

__attribute__((noipa)) long tick(long k)
{
	calls++;
	sum_k += k;
	return k * 2;
}

static void semihosting_exit(void)
{
	/* SYS_EXIT (0x18) with ADP_Stopped_ApplicationExit (0x20026): a block on AArch64. */
	static unsigned long block[2] = { 0x20026, 0 };
	register unsigned long x0 __asm__("x0") = 0x18;
	register unsigned long *x1 __asm__("x1") = block;
	__asm__ volatile("hlt #0xf000" : : "r"(x0), "r"(x1) : "memory");
}

void cmain(void)
{
	long acc = 0;
	for (long k = 0; k < N; k++)
		acc += tick(k);
	puts_uart("calls ");
	putu((unsigned long)calls);
	puts_uart(" sum_k ");
	putu((unsigned long)sum_k);
	puts_uart(" acc ");
	putu((unsigned long)acc);
	puts_uart("\n");
	semihosting_exit();
	for (;;)
		;
}
