/* stack_walk.c — leaf called from main through two callers: plain, an
 * ordinary C function, and via_expr (assembly), whose canonical frame
 * address is given in its body by a DWARF expression of two operations
 * (rsp + 16 + 16): a rule the stack probes' walk in the program does not follow,
 * so the stacks through it are copied and unwound by sonde.  And via_bad
 * (assembly), a damaged frame: its call frame information says CFA = rbp +
 * 16 while rbp holds 16, so no unwinder can go past it (the walk must refuse
 * it without reading there; sonde's unwinding of the copy stops there).
 * Prints how many times each path ran.
 *     stack_walk [N_PLAIN] [N_VIA_EXPR] [N_VIA_BAD] */
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) int leaf(int x)
{
	__asm__ volatile("" ::: "memory");
	return x * 2;
}

__attribute__((noinline)) int plain(int x)
{
	return leaf(x) + 1;
}

int via_expr(int x);
__asm__(".text\n"
        ".globl via_expr\n"
        ".type via_expr, @function\n"
        "via_expr:\n"
        ".cfi_startproc\n"
        "push %rbx\n"
        ".cfi_def_cfa_offset 16\n"
        ".cfi_offset rbx, -16\n"
        "sub $16, %rsp\n"
        /* DW_CFA_def_cfa_expression: DW_OP_breg7 (rsp) 16, DW_OP_plus_uconst 16 */
        ".cfi_escape 0x0f, 0x04, 0x77, 0x10, 0x23, 0x10\n"
        "call leaf@PLT\n"
        "add $3, %eax\n"
        "add $16, %rsp\n"
        ".cfi_def_cfa rsp, 16\n"
        "pop %rbx\n"
        ".cfi_def_cfa_offset 8\n"
        "ret\n"
        ".cfi_endproc\n"
        ".size via_expr, .-via_expr\n");

int via_bad(int x);
__asm__(".text\n"
        ".globl via_bad\n"
        ".type via_bad, @function\n"
        "via_bad:\n"
        ".cfi_startproc\n"
        "push %rbp\n"
        ".cfi_def_cfa_offset 16\n"
        ".cfi_offset rbp, -16\n"
        "mov $16, %rbp\n"
        ".cfi_def_cfa rbp, 16\n" /* wrong on purpose: rbp is not this frame's base */
        "call leaf@PLT\n"
        "add $5, %eax\n"
        "pop %rbp\n"
        ".cfi_def_cfa rsp, 8\n"
        "ret\n"
        ".cfi_endproc\n"
        ".size via_bad, .-via_bad\n");

int main(int argc, char **argv)
{
	int np = argc > 1 ? atoi(argv[1]) : 3, nr = argc > 2 ? atoi(argv[2]) : 2, nb = argc > 3 ? atoi(argv[3]) : 0;
	long sum = 0;
	for (int i = 0; i < np; i++)
		sum += plain(i);
	for (int i = 0; i < nr; i++)
		sum += via_expr(i);
	for (int i = 0; i < nb; i++)
		sum += via_bad(i);
	printf("plain %d\nvia_expr %d\nvia_bad %d\nsum %ld\n", np, nr, nb, sum);
	return 0;
}
