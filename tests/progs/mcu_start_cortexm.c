/* mcu_start_cortexm.c — startup of mcu_counts.c on Cortex-M (M0, M3, M4F):
 * the vector table (initial sp, reset), .data copied from flash, .bss
 * zeroed, the FPU enabled where there is one, then main(); semihosting
 * (BKPT 0xAB: r0 the operation, r1 its argument) for the output and the
 * exit. */
extern unsigned int __data_load[], __data_start[], __data_end[], __bss_start[], __bss_end[], __stack_top[];
int main(void);

static int semihost(int op, const void *arg)
{
	register int r0 __asm__("r0") = op;
	register const void *r1 __asm__("r1") = arg;
	__asm__ volatile("bkpt 0xab" : "+r"(r0) : "r"(r1) : "memory");
	return r0;
}

void mcu_puts(const char *s)
{
	semihost(0x04, s);          /* SYS_WRITE0 */
}

void mcu_exit(void)
{
	semihost(0x18, (const void *)0x20026);  /* SYS_EXIT, ADP_Stopped_ApplicationExit */
	for (;;)
		;
}

void reset_handler(void)
{
	unsigned int *s = __data_load, *d = __data_start;
	while (d < __data_end)
		*d++ = *s++;
	for (d = __bss_start; d < __bss_end;)
		*d++ = 0;
#if defined(__ARM_FP)
	*(volatile unsigned int *)0xe000ed88 |= 0xfu << 20;   /* CPACR: CP10, CP11 full access */
	__asm__ volatile("dsb\n\tisb");
#endif
	main();
	mcu_exit();
}

static void fault(void)
{
	mcu_puts("fault\n");
	mcu_exit();
}

__attribute__((section(".vectors"), used)) static void (*const vectors[16])(void) = {
	(void (*)(void))__stack_top, reset_handler, fault, fault, fault, fault, fault, 0, 0, 0, 0, fault, fault, 0,
	fault, fault,
};
