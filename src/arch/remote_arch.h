/* remote_arch.h — what the GDB remote protocol client (src/probe/remote/remote.c)
 * needs to know about an architecture: the breakpoint instruction, where the
 * pc is reported after it, the core registers in the stub's numbering (the
 * order of the `g` packet and of `p`/`P`, as the standard target.xml
 * features declare them), the return address (a register, or the word at
 * the stack pointer), DWARF register numbers, and the conditional branches
 * of branch probes (decoded here, their condition evaluated on the
 * registers at the branch).  One instance per
 * architecture, in src/arch/<arch>/remote.c. */
#ifndef SONDE_ARCH_REMOTE_ARCH_H
#define SONDE_ARCH_REMOTE_ARCH_H

#include <stddef.h>
#include <stdint.h>

#define RARCH_MAX_BP 4

/* One instruction as a branch probe sees it (rarch.decode). */
enum rbranch_kind {
	RB_OTHER,           /* flows on to the next instruction (calls too) */
	RB_COND,            /* a conditional branch: the probe's kind of instruction */
	RB_END,             /* unconditional jump or return: the straight-line block ends */
};

struct rbranch {
	int kind;
	int len;            /* bytes of the instruction */
	int delay;          /* bytes of the delay slot after it (MIPS: 4), else 0 */
	int likely;         /* MIPS branch-likely: the delay slot runs only when taken */
	int links;          /* a call (jal, bal, jalr): writes the return address */
	uint64_t addr;
	uint64_t target;    /* where a taken branch goes */
	uint64_t next;      /* where a branch not taken goes: addr + len + delay */
	int cond;           /* the architecture's condition code (or capstone id on x86-64) */
	int ra, rb;         /* registers tested (stub numbering), -1 none */
	int bit;            /* tbz / tbnz: the bit tested */
	int wide;           /* aarch64 cbz/cbnz: 64-bit register (else its low 32 bits) */
	char text[64];      /* "b.ne 0x400a10" */
};

/* A register of the stopped thread, for rarch.taken: 0 ok, -1 unavailable. */
typedef int (*rarch_reg_fn)(void *ctx, int regno, uint64_t *val);

/* One instruction executed by sonde instead of the target (rarch.emulate),
 * so that a hit resumes without a single step.  In: the stopped thread's
 * registers and memory, through reg and read (ctx theirs).  Out: the
 * registers it changes (the pc last, always), and at most one store, in the
 * target's byte order.  Nothing is written to the target by emulate itself. */
#define REMU_MAX_SET 4
struct remu {
	rarch_reg_fn reg;
	int (*read)(void *ctx, uint64_t addr, void *buf, size_t n);   /* 0, or -1 unreadable */
	void *ctx;
	int nset;
	struct { int regno; uint64_t val; } set[REMU_MAX_SET];
	uint64_t store_addr;
	int store_len;              /* 0: no store */
	uint8_t store[16];
};

struct rarch {
	const char *name;           /* as in target.xml's <architecture> (prefix) */
	int elf_machine;            /* EM_* */
	int ptr_size;               /* bytes of a register and of an address */
	uint8_t bp_le[RARCH_MAX_BP]; /* the breakpoint instruction, little-endian target */
	uint8_t bp_be[RARCH_MAX_BP]; /* big-endian target */
	int bp_len;                 /* also the Z0 "kind", unless bp_kind */
	/* The Z0/z0 "kind" for the instruction code[0..n) at the address (ARM
	 * Thumb: 2 or 3; RISC-V: 2 or 4), NULL: bp_len.  The bytes written when
	 * the stub has no Z0 are bp_len's in every case. */
	int (*bp_kind)(const uint8_t *code, size_t n, int big_endian);
	int thumb_bit;              /* return addresses have bit 0 set (the Thumb state): cleared */
	int trap_pc_adj;            /* pc after a written breakpoint minus its address */
	int insn_align;             /* probed addresses must be multiples of this */
	int ncore;                  /* core registers at the start of `g`, each ptr_size */
	int pc, sp;                 /* stub register numbers */
	int ra;                     /* return-address register, -1: the word at sp */
	int ret_sp_adj;             /* sp after the return minus sp at the entry */
	/* Stub register number of DWARF register dw, -1 if not a core register. */
	int (*dwarf_to_stub)(int dw);
	const char *(*dwarf_name)(int dw);
	int has_delay_slots;        /* branches run the next instruction before they land (MIPS) */
	int flags;                  /* the condition flags register (cpsr, eflags; 4 bytes after the core
	                             * registers in `g`), -1 none (MIPS compares registers) */
	/* Decode the instruction at addr (code[0..n), in the target's byte
	 * order): 0, or -1 when it is not a valid instruction. */
	int (*decode)(const uint8_t *code, size_t n, uint64_t addr, int big_endian, struct rbranch *out);
	/* Whether the conditional branch b, about to execute (the thread
	 * stopped on it), will be taken: 1, 0, or -1 when a register could not
	 * be read.  Read before the branch runs, so that a delay slot (MIPS)
	 * that changes the registers does not matter. */
	int (*taken)(const struct rbranch *b, rarch_reg_fn reg, void *ctx);
	/* Execute the instruction at addr (code[0..n), the original bytes, in
	 * the target's byte order) on u: 0 done (u->set ends with the pc);
	 * 1 not an instruction this emulates (the engine single-steps it);
	 * -1 a register or memory it needs could not be read (single-step too:
	 * the target then takes its own fault).  NULL: no emulation. */
	int (*emulate)(const uint8_t *code, size_t n, uint64_t addr, int big_endian, struct remu *u);
	/* ARM Thumb-2: whether addr is inside an IT block, the function's code
	 * code[0..n) decoded from start: 1 with *it the IT instruction, 0 not,
	 * -1 addr is not an instruction boundary from start.  NULL: no such blocks. */
	int (*it_start)(const uint8_t *code, size_t n, uint64_t start, uint64_t addr, uint64_t *it);
};

extern const struct rarch rarch_x86_64, rarch_aarch64, rarch_mips, rarch_arm, rarch_riscv32, rarch_mcs51;

/* The 8051 (src/arch/mcs51/remote.c), for the ucsim engine: what its
 * rarch.taken reads through reg — r0..r7 of the current bank, A, PSW, SP,
 * the pc, a direct address (below 0x80 internal RAM, above the SFRs), a
 * bit address, internal RAM read indirectly (0..0xff). */
enum { MCS51_R0 = 0, MCS51_A = 8, MCS51_PSW, MCS51_SP, MCS51_PC };
#define MCS51_DIRECT(d) (0x100 + (d))
#define MCS51_BIT(b)    (0x200 + (b))
#define MCS51_IND(a)    (0x300 + (int)(a))
/* Bytes of the instruction at code (-1 fewer than it needs); an LCALL /
 * LJMP to target written into out (3 bytes, the count returned). */
int rarch_mcs51_insn_len(const uint8_t *code, size_t n);
int rarch_mcs51_lcall(uint16_t target, uint8_t out[3]);
int rarch_mcs51_ljmp(uint16_t target, uint8_t out[3]);

/* Instruction lengths (2 or 4; -1 fewer bytes than the instruction needs). */
int rarch_arm_insn_len(const uint8_t *code, size_t n);
int rarch_riscv_insn_len(const uint8_t *code, size_t n);
int rarch_arm_it_start(const uint8_t *code, size_t n, uint64_t start, uint64_t addr, uint64_t *it);

/* The emulators (src/arch/<arch>/remote_emulate.c), rarch.emulate. */
int rarch_aarch64_emulate(const uint8_t *code, size_t n, uint64_t addr, int big_endian, struct remu *u);
int rarch_mips_emulate(const uint8_t *code, size_t n, uint64_t addr, int big_endian, struct remu *u);
int rarch_arm_emulate(const uint8_t *code, size_t n, uint64_t addr, int big_endian, struct remu *u);
int rarch_riscv_emulate(const uint8_t *code, size_t n, uint64_t addr, int big_endian, struct remu *u);
int rarch_x86_64_emulate(const uint8_t *code, size_t n, uint64_t addr, int big_endian, struct remu *u);

#endif
