/* module.c — the module object (seed 000's __fast_search.o).
 *
 * Linked by sonde-cc into every instrumented executable and shared library,
 * with hidden visibility, so each module has its own copy: its own function
 * count, its own numbering and its own entry trampoline.  Never instrumented.
 *
 * Numbering: the compiler emits, for every function that exists in the
 * machine code, an entry in the section __patchable_function_entries (the
 * address of the function's padding); the linker concatenates those entries in
 * link order and defines __start_/__stop_ symbols for the section.  So the
 * linker numbers the functions: function i is entry i, and the module's total
 * is (stop - start).  When sonde's runtime is present, the constructor hands
 * the list to it; the runtime writes each number into the function's padding
 * and turns the entry sleds into calls to sonde_module_tramp below.  Without
 * sonde nothing is written to the code: the sleds stay nops and the program
 * runs as built.
 *
 * Found late (`sonde record -p`, docs/ATTACH.md).  A program started without
 * sonde has no runtime to register with, so each module must be findable
 * afterwards by the agent (the runtime, dlopen'ed into the running process).
 * The module carries an ELF note (.note.sonde, in a PT_NOTE segment, so it
 * is mapped and dl_iterate_phdr shows it) whose descriptor holds the
 * module's ABI version and the offset from the note to sonde_module_hook; a
 * link-time constant (both are in this module and hidden), so the note needs
 * no relocation and costs nothing at run time.  The constructor fills the
 * hook's description (entries, count, trampoline) in every run, runtime or
 * not: a few stores into this module's own .bss, no system call.
 */
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>

#include "rt/modabi.h"

#define HIDDEN __attribute__((visibility("hidden")))

extern const uint64_t __start___patchable_function_entries[] __attribute__((weak, visibility("hidden")));
extern const uint64_t __stop___patchable_function_entries[] __attribute__((weak, visibility("hidden")));
/* sonde-as's records of the exit sleds (GCC builds; none with Clang) */
extern const int32_t __start___sonde_exit_sleds[] __attribute__((weak, visibility("hidden")));
extern const int32_t __stop___sonde_exit_sleds[] __attribute__((weak, visibility("hidden")));

HIDDEN struct sonde_modhook sonde_module_hook;
HIDDEN void sonde_module_tramp(void);

/* The entry trampolines.  A patched sled at fn calls one, so on entry
 *   (%rsp)    = fn + 5         (our return address: back into the function)
 *   8(%rsp)   = the function's return address, in its caller's frame
 * It keeps every register that can carry an argument (rdi rsi rdx rcx r8 r9,
 * rax = vector-argument count of variadic calls, r10 = static chain); the
 * hook is compiled with -mgeneral-regs-only and leaves vector and x87
 * registers alone.  8 pushes keep the stack 16-byte aligned at the call.
 * sonde_module_tramp calls the hook's `enter` (+0), sonde_module_tramp_sled
 * (functions with exit sleds) its `enter_sled` (+80). */
#define ENTRY_TRAMP(name, off)                                                                     \
	"	.text\n"                                                                                \
	"	.p2align 4\n"                                                                           \
	"	.globl " #name "\n"                                                                     \
	"	.hidden " #name "\n"                                                                    \
	"	.type " #name ",@function\n" #name ":\n"                                                \
	"	.cfi_startproc\n"                                                                       \
	"	push %rdi\n	.cfi_adjust_cfa_offset 8\n"                                             \
	"	push %rsi\n	.cfi_adjust_cfa_offset 8\n"                                             \
	"	push %rdx\n	.cfi_adjust_cfa_offset 8\n"                                             \
	"	push %rcx\n	.cfi_adjust_cfa_offset 8\n"                                             \
	"	push %r8\n	.cfi_adjust_cfa_offset 8\n"                                              \
	"	push %r9\n	.cfi_adjust_cfa_offset 8\n"                                              \
	"	push %rax\n	.cfi_adjust_cfa_offset 8\n"                                             \
	"	push %r10\n	.cfi_adjust_cfa_offset 8\n"                                             \
	"	lea sonde_module_hook(%rip), %rdi\n"                                                    \
	"	mov 64(%rsp), %rsi\n"                                                                   \
	"	sub $5, %rsi\n"                                                                         \
	"	lea 72(%rsp), %rdx\n"                                                                   \
	"	call *" #off "(%rdi)\n"                                                                 \
	"	pop %r10\n	.cfi_adjust_cfa_offset -8\n"                                             \
	"	pop %rax\n	.cfi_adjust_cfa_offset -8\n"                                             \
	"	pop %r9\n	.cfi_adjust_cfa_offset -8\n"                                              \
	"	pop %r8\n	.cfi_adjust_cfa_offset -8\n"                                              \
	"	pop %rcx\n	.cfi_adjust_cfa_offset -8\n"                                             \
	"	pop %rdx\n	.cfi_adjust_cfa_offset -8\n"                                             \
	"	pop %rsi\n	.cfi_adjust_cfa_offset -8\n"                                             \
	"	pop %rdi\n	.cfi_adjust_cfa_offset -8\n"                                             \
	"	ret\n"                                                                                  \
	"	.cfi_endproc\n"                                                                         \
	"	.size " #name ", .-" #name "\n"
__asm__(ENTRY_TRAMP(sonde_module_tramp, 0) ENTRY_TRAMP(sonde_module_tramp_sled, 80));
_Static_assert(offsetof(struct sonde_modhook, enter) == 0, "sonde_module_tramp reads enter at +0");
_Static_assert(offsetof(struct sonde_modhook, enter_sled) == 80, "sonde_module_tramp_sled reads enter_sled at +80");
_Static_assert(offsetof(struct sonde_modhook, exit_sled) == 88, "sonde_module_exit_tramp reads exit_sled at +88");

/* The exit trampoline: a patched exit sled, just before the function's
 * `ret`, calls it, so (%rsp) is the `ret`'s address and 8(%rsp) the slot of
 * the function's return address.  It keeps the return value's registers:
 * rax and rdx here; xmm0, xmm1, st0 and st1 are not touched by the hook
 * (-mgeneral-regs-only, as the entry hook).  Two pushes keep the stack
 * 16-byte aligned at the call (the slot is 8 mod 16). */
__asm__(
	"	.text\n"
	"	.p2align 4\n"
	"	.globl sonde_module_exit_tramp\n"
	"	.hidden sonde_module_exit_tramp\n"
	"	.type sonde_module_exit_tramp,@function\n"
	"sonde_module_exit_tramp:\n"
	"	.cfi_startproc\n"
	"	push %rax\n	.cfi_adjust_cfa_offset 8\n"
	"	push %rdx\n	.cfi_adjust_cfa_offset 8\n"
	"	lea 24(%rsp), %rdi\n"
	"	call *sonde_module_hook+88(%rip)\n"
	"	pop %rdx\n	.cfi_adjust_cfa_offset -8\n"
	"	pop %rax\n	.cfi_adjust_cfa_offset -8\n"
	"	ret\n"
	"	.cfi_endproc\n"
	"	.size sonde_module_exit_tramp, .-sonde_module_exit_tramp\n");
/* The tail trampoline: a patched sled just before a tail call (`jmp f`, the
 * stack as at the function's entry) calls it, so (%rsp) is the jump's
 * address and 8(%rsp) the slot.  The callee's arguments are in the argument
 * registers: it keeps them, as the entry trampoline does. */
__asm__(
	"	.text\n"
	"	.p2align 4\n"
	"	.globl sonde_module_tail_tramp\n"
	"	.hidden sonde_module_tail_tramp\n"
	"	.type sonde_module_tail_tramp,@function\n"
	"sonde_module_tail_tramp:\n"
	"	.cfi_startproc\n"
	"	push %rdi\n	.cfi_adjust_cfa_offset 8\n"
	"	push %rsi\n	.cfi_adjust_cfa_offset 8\n"
	"	push %rdx\n	.cfi_adjust_cfa_offset 8\n"
	"	push %rcx\n	.cfi_adjust_cfa_offset 8\n"
	"	push %r8\n	.cfi_adjust_cfa_offset 8\n"
	"	push %r9\n	.cfi_adjust_cfa_offset 8\n"
	"	push %rax\n	.cfi_adjust_cfa_offset 8\n"
	"	push %r10\n	.cfi_adjust_cfa_offset 8\n"
	"	lea 72(%rsp), %rdi\n"
	"	call *sonde_module_hook+136(%rip)\n"
	"	pop %r10\n	.cfi_adjust_cfa_offset -8\n"
	"	pop %rax\n	.cfi_adjust_cfa_offset -8\n"
	"	pop %r9\n	.cfi_adjust_cfa_offset -8\n"
	"	pop %r8\n	.cfi_adjust_cfa_offset -8\n"
	"	pop %rcx\n	.cfi_adjust_cfa_offset -8\n"
	"	pop %rdx\n	.cfi_adjust_cfa_offset -8\n"
	"	pop %rsi\n	.cfi_adjust_cfa_offset -8\n"
	"	pop %rdi\n	.cfi_adjust_cfa_offset -8\n"
	"	ret\n"
	"	.cfi_endproc\n"
	"	.size sonde_module_tail_tramp, .-sonde_module_tail_tramp\n");
_Static_assert(offsetof(struct sonde_modhook, tail_sled) == 136, "sonde_module_tail_tramp reads tail_sled at +136");
HIDDEN void sonde_module_tramp_sled(void), sonde_module_exit_tramp(void), sonde_module_tail_tramp(void);

/* The note the agent finds (see the top comment and SONDE_NOTE_* in
 * modabi.h): name "sonde", descriptor { u32 version, u32 0, i64 offset of
 * sonde_module_hook from the descriptor's third word }. */
#define STR_(x) #x
#define STR(x) STR_(x)
__asm__(
	"	.pushsection .note.sonde,\"a\",@note\n"
	"	.p2align 2\n"
	"	.globl sonde_module_note\n"
	"	.hidden sonde_module_note\n"
	"sonde_module_note:\n"
	"	.long 6\n"                            /* namesz: "sonde\0" */
	"	.long 16\n"                           /* descsz */
	"	.long " STR(SONDE_NOTE_TYPE) "\n"
	"	.asciz \"sonde\"\n"
	"	.p2align 2\n"
	"	.long " STR(SONDE_MODABI_VERSION) "\n"
	"	.long 0\n"
	"	.quad sonde_module_hook - .\n"
	"	.popsection\n");
HIDDEN extern const char sonde_module_note[];

__attribute__((constructor(101))) static void sonde_module_init(void)
{
	struct sonde_modhook *m = &sonde_module_hook;
	/* Keeps the note alive under --gc-sections (this function is kept). */
	__asm__ volatile("" : : "r"(sonde_module_note));
	if (!__start___patchable_function_entries)
		return; /* no function to record */
	m->version = SONDE_MODABI_VERSION;
	m->entries = __start___patchable_function_entries;
	m->nfuncs = (uint32_t)(__stop___patchable_function_entries - __start___patchable_function_entries);
	m->anchor = (const void *)&sonde_module_hook;
	m->tramp = (const void *)sonde_module_tramp;
	m->exits = __start___sonde_exit_sleds;
	m->exits_end = __stop___sonde_exit_sleds;
	m->tramp_sled = (const void *)sonde_module_tramp_sled;
	m->exit_tramp = (const void *)sonde_module_exit_tramp;
	m->tail_tramp = (const void *)sonde_module_tail_tramp;
	sonde_register_fn reg = (sonde_register_fn)dlsym(RTLD_DEFAULT, SONDE_REGISTER_SYM);
	if (reg)
		reg(m); /* sonde record: the runtime is preloaded */
}

__attribute__((destructor(101))) static void sonde_module_fini(void)
{
	struct sonde_modhook *m = &sonde_module_hook;
	if (!m->patched)
		return;
	sonde_unregister_fn unreg = (sonde_unregister_fn)dlsym(RTLD_DEFAULT, SONDE_UNREGISTER_SYM);
	if (unreg)
		unreg(m);
}
