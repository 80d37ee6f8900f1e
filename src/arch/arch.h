/* arch.h — the architecture layer of the probe engine: breakpoint encoding,
 * register access, instruction decoding and classification, emulation of the
 * displaced instruction, and out-of-line slot code.  x86-64 is implemented in
 * src/arch/x86_64/.  What the remote protocol client needs of x86-64,
 * aarch64 and MIPS is in remote_arch.h. */
#ifndef SONDE_ARCH_ARCH_H
#define SONDE_ARCH_ARCH_H

#include <stddef.h>
#include <stdint.h>
#include <sys/user.h>

typedef struct user_regs_struct arch_regs;
typedef struct user_fpregs_struct arch_fpregs;

/* The breakpoint instruction (int3) and how far the pc has moved past it
 * when the trap is reported. */
#define ARCH_BP_LEN 1
#define ARCH_TRAP_PC_ADJ 1
#define ARCH_MAX_INSN 15
extern const uint8_t arch_bp_insn[ARCH_BP_LEN];

static inline uint64_t arch_pc(const arch_regs *r) { return r->rip; }
static inline void arch_set_pc(arch_regs *r, uint64_t pc) { r->rip = pc; }
static inline uint64_t arch_sp(const arch_regs *r) { return r->rsp; }
/* The thread pointer (fs base): 0 until the dynamic loader has set up the
 * thread's TLS (src/attach/inject.c, "a safe stop"). */
static inline uint64_t arch_tls_base(const arch_regs *r) { return r->fs_base; }

/* What the engine needs to know about one instruction. */
enum arch_kind {
	AI_OTHER,   /* executed out of line */
	AI_NOP,     /* nop, endbr64 */
	AI_PUSH, AI_POP, AI_MOV, AI_LEA,
	AI_JMP, AI_JCC, AI_CALL, AI_RET,
	AI_BAD,     /* cannot be displaced (loop, jrcxz-like with no emulation, xbegin, int3) */
};

struct arch_op {
	int type;           /* 1 reg, 2 imm, 3 mem */
	int size;           /* bytes */
	int reg;            /* capstone register id */
	int64_t imm;
	int base, index, scale, seg;
	int64_t disp;
};

struct arch_insn {
	uint64_t addr;
	int len;
	uint8_t bytes[16];
	int id;             /* capstone instruction id */
	int kind;           /* enum arch_kind */
	int emulable;       /* arch_emulate can execute it */
	int rip_rel;        /* has a RIP-relative memory operand */
	int disp_off;       /* offset of its 32-bit displacement in bytes[] */
	int nops;
	struct arch_op op[4];
	char text[200];     /* "mnemonic operands" */
	int groups;         /* ARCH_GRP_*: what the relocator refuses to move */
};
#define ARCH_GRP_INT  1     /* int, int3, int1, syscall, sysenter */
#define ARCH_GRP_IRET 2
#define ARCH_GRP_PRIV 4     /* privileged (faults in user mode) */

/* Decode one instruction at addr from buf[0..n).  0 ok, -1 invalid. */
int arch_decode(const uint8_t *buf, size_t n, uint64_t addr, struct arch_insn *out);
/* Direct target of a relative jmp/jcc/call (0 if indirect). */
uint64_t arch_branch_target(const struct arch_insn *i);

/* What a linear sweep of code needs of one instruction (src/arch/x86_64/brief.c). */
struct arch_brief {
	int len;
	int kind;           /* AI_NOP, AI_JMP, AI_JCC, AI_CALL, AI_RET, AI_BAD (loop, int3), else AI_OTHER */
	int terminal;       /* nothing runs on after it: jmp, ret, call (at a function's end, of one
	                       that does not return), int3, ud2, hlt */
	uint64_t target;    /* a direct jmp / jcc / call's target, else 0 */
};
/* 0 and *out, or -1 (invalid); from the encoding where the quick decoder
 * knows it, else from arch_decode. */
int arch_brief(const uint8_t *buf, size_t n, uint64_t addr, struct arch_brief *out);
/* The quick decoder alone: 0, or 1 when it leaves the instruction to arch_decode. */
int arch_brief_quick(const uint8_t *buf, size_t n, uint64_t addr, struct arch_brief *out);
/* The same read off a decoded instruction. */
void arch_brief_of(const struct arch_insn *in, struct arch_brief *out);

/* Memory access into the target, for the emulator and the variable reader. */
struct arch_mem {
	int (*read)(void *ctx, uint64_t addr, void *buf, size_t n);
	int (*write)(void *ctx, uint64_t addr, const void *buf, size_t n);
	void *ctx;
};

/* Execute i as the CPU would, on r and through m.  0 done (r->rip updated),
 * -1 a memory access failed (r unchanged), 1 not emulable. */
int arch_emulate(const struct arch_insn *i, arch_regs *r, const struct arch_mem *m);
/* Condition of a jcc on the flags (and rcx for jrcxz). */
int arch_cond_true(const struct arch_insn *i, const arch_regs *r);

/* Out-of-line slots: each slot holds the displaced instruction (RIP-relative
 * displacement rewritten for the slot's address) followed by either an int3
 * (when a post-handler needs a stop after it) or an absolute jump back to
 * addr+len.  Returns the code length, or -1 with *why set. */
#define ARCH_SLOT_SIZE 32
int arch_ool_build(const struct arch_insn *i, uint64_t slot, int post_trap, uint8_t *out,
                   const char **why);
/* Offset in the slot of the trap after the instruction (post_trap slots). */
static inline int arch_ool_trap_off(const struct arch_insn *i) { return i->len; }

/* System call injection: code written at pc (syscall; int3), and the
 * registers to run it with. */
#define ARCH_SYSCALL_CODE_LEN 3
extern const uint8_t arch_syscall_code[ARCH_SYSCALL_CODE_LEN];
void arch_syscall_regs(arch_regs *r, uint64_t pc, long nr, const uint64_t args[6]);
int64_t arch_syscall_result(const arch_regs *r);
#define ARCH_NR_MMAP 9
#define ARCH_NR_MUNMAP 11

/* Function call injection (System V AMD64 ABI): the registers to call func
 * with up to six integer arguments, with the stack pointer (16-byte aligned
 * before the call) at sp.  The caller writes the return address, one word,
 * at arch_sp(r) afterwards (x86-64 passes it on the stack).  ARCH_RED_ZONE
 * is the area below the interrupted stack pointer that leaf code may use
 * and that injected data and frames must stay clear of.  The result is
 * arch_call_result(); arch_in_syscall() tells whether the stopped thread
 * entered the kernel through a system call (whose restart the saved
 * registers carry: see src/attach/inject.c). */
#define ARCH_RED_ZONE 128
#define ARCH_STACK_ALIGN 16
void arch_call_regs(arch_regs *r, uint64_t func, uint64_t sp, const uint64_t args[6]);
uint64_t arch_call_result(const arch_regs *r);
int arch_in_syscall(const arch_regs *r);
/* The stopped thread is in a system call that changes its memory map (brk,
 * mmap, munmap, mremap, madvise, mprotect): the ones malloc makes half-way
 * through changing the heap (src/attach/inject.c: not a safe stop in libc). */
int arch_in_memory_syscall(const arch_regs *r);
/* The regset holding every FP/vector register (NT_X86_XSTATE), and the
 * smaller fallback when the kernel has no xstate regset (NT_PRFPREG). */
#define ARCH_NT_VECTOR 0x202
#define ARCH_NT_FP 2

/* DWARF register numbers.  Integer registers: 0 ok; xmm (17..32) and x87
 * (33..40) registers are read from fp into buf (16 bytes).  -1 unknown. */
int arch_dwarf_reg(const arch_regs *r, int regno, uint64_t *val);
int arch_dwarf_fpreg(const arch_fpregs *fp, int regno, uint8_t buf[16]);
int arch_dwarf_is_fp(int regno);
const char *arch_dwarf_reg_name(int regno);
#define ARCH_DWARF_SP 7
#define ARCH_DWARF_PC 16

#endif
