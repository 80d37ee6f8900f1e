/* baremetal_start.S — entry of baremetal_counts.c on QEMU's virt machine:
 * a stack, a zeroed .bss, then cmain(). */
	.section .text.start
	.global _start
_start:
	ldr x0, =__stack_top
	mov sp, x0
	ldr x0, =__bss_start
	ldr x1, =__bss_end
1:	cmp x0, x1
	b.hs 2f
	str xzr, [x0], #8
	b 1b
2:	bl cmain
3:	b 3b
