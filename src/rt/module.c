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
 * sonde nothing is written: the sleds stay nops and the program runs as built.
 */
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>

#include "rt/modabi.h"

#define HIDDEN __attribute__((visibility("hidden")))

extern const uint64_t __start___patchable_function_entries[] __attribute__((weak, visibility("hidden")));
extern const uint64_t __stop___patchable_function_entries[] __attribute__((weak, visibility("hidden")));

HIDDEN struct sonde_modhook sonde_module_hook;
HIDDEN void sonde_module_tramp(void);

/* The entry trampoline.  A patched sled at fn calls it, so on entry
 *   (%rsp)    = fn + 5         (our return address: back into the function)
 *   8(%rsp)   = the function's return address, in its caller's frame
 * It keeps every register that can carry an argument (rdi rsi rdx rcx r8 r9,
 * rax = vector-argument count of variadic calls, r10 = static chain); the
 * hook is compiled with -mgeneral-regs-only and leaves vector and x87
 * registers alone.  8 pushes keep the stack 16-byte aligned at the call. */
__asm__(
	"	.text\n"
	"	.p2align 4\n"
	"	.globl sonde_module_tramp\n"
	"	.hidden sonde_module_tramp\n"
	"	.type sonde_module_tramp,@function\n"
	"sonde_module_tramp:\n"
	"	.cfi_startproc\n"
	"	push %rdi\n	.cfi_adjust_cfa_offset 8\n"
	"	push %rsi\n	.cfi_adjust_cfa_offset 8\n"
	"	push %rdx\n	.cfi_adjust_cfa_offset 8\n"
	"	push %rcx\n	.cfi_adjust_cfa_offset 8\n"
	"	push %r8\n	.cfi_adjust_cfa_offset 8\n"
	"	push %r9\n	.cfi_adjust_cfa_offset 8\n"
	"	push %rax\n	.cfi_adjust_cfa_offset 8\n"
	"	push %r10\n	.cfi_adjust_cfa_offset 8\n"
	"	lea sonde_module_hook(%rip), %rdi\n"
	"	mov 64(%rsp), %rsi\n"
	"	sub $5, %rsi\n"
	"	lea 72(%rsp), %rdx\n"
	"	call *(%rdi)\n"
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
	"	.size sonde_module_tramp, .-sonde_module_tramp\n");

__attribute__((constructor(101))) static void sonde_module_init(void)
{
	struct sonde_modhook *m = &sonde_module_hook;
	sonde_register_fn reg = (sonde_register_fn)dlsym(RTLD_DEFAULT, SONDE_REGISTER_SYM);
	if (!reg || !__start___patchable_function_entries)
		return; /* no sonde: the sleds stay nops */
	m->version = SONDE_MODABI_VERSION;
	m->entries = __start___patchable_function_entries;
	m->nfuncs = (uint32_t)(__stop___patchable_function_entries - __start___patchable_function_entries);
	m->anchor = (const void *)&sonde_module_hook;
	m->tramp = (const void *)sonde_module_tramp;
	reg(m);
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
