/* brk.h — AArch64 breakpoint encoding: BRK #0, 4 bytes (little-endian in
 * memory); the pc is reported on the BRK itself, so no rewind is needed.
 * Used by the remote protocol client's description of aarch64
 * (src/arch/aarch64/remote.c); the local engine is x86-64 only today. */
#ifndef SONDE_ARCH_AARCH64_BRK_H
#define SONDE_ARCH_AARCH64_BRK_H
#define AARCH64_BP_INSN      0xd4200000u   /* brk #0 */
#define AARCH64_BP_LEN       4
#define AARCH64_TRAP_PC_ADJ  0
#endif
