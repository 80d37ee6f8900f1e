/* brk.h — AArch64 breakpoint encoding for the probe engine.  Not built yet:
 * the x86-64 layer is the only one compiled; this names what the aarch64
 * port of arch.h will write (BRK #0, little-endian, 4 bytes; the pc is
 * reported on the BRK itself, so no rewind is needed). */
#ifndef SONDE_ARCH_AARCH64_BRK_H
#define SONDE_ARCH_AARCH64_BRK_H
#define AARCH64_BP_INSN      0xd4200000u   /* brk #0 */
#define AARCH64_BP_LEN       4
#define AARCH64_TRAP_PC_ADJ  0
#endif
