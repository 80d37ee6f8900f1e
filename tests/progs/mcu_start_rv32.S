/* mcu_start_rv32.S — startup of mcu_counts.c on RV32 (qemu-system-riscv32
 * -M virt -bios none: the program at 0x80000000): gp, a stack, .bss zeroed,
 * main(); semihosting (the slli/ebreak/srai sequence, uncompressed: a0 the
 * operation, a1 its argument) for the output and the exit. */
	.section .text.start
	.global _start
_start:
	.option push
	.option norelax
	la gp, __global_pointer$
	.option pop
	la sp, __stack_top
	la t0, __bss_start
	la t1, __bss_end
1:	bgeu t0, t1, 2f
	sw zero, 0(t0)
	addi t0, t0, 4
	j 1b
2:	call main
	call mcu_exit

	.text
	.balign 16
semihost:
	.option push
	.option norvc
	slli zero, zero, 0x1f
	ebreak
	srai zero, zero, 7
	.option pop
	ret

	.global mcu_puts
mcu_puts:
	mv a1, a0
	li a0, 0x04             /* SYS_WRITE0 */
	j semihost

	.global mcu_exit
mcu_exit:
	li a0, 0x18             /* SYS_EXIT */
	li a1, 0x20026          /* ADP_Stopped_ApplicationExit */
	call semihost
3:	j 3b
