/* dlcall.c — dlopen, dlmopen and dlsym see the caller they see unrecorded.
 *
 * glibc's dlopen, dlmopen and dlsym take their caller from their own return
 * address: the caller's object decides where dlopen looks for a library
 * (its RUNPATH, $ORIGIN, its namespace), and what RTLD_NEXT and
 * RTLD_DEFAULT mean to dlsym.  A recorded function that ends in a tail call
 * of one of them (`return dlopen(path, mode);` is a `jmp` at -O2, and so is
 * an interposer's `return dlsym(RTLD_NEXT, name);`) hands over its own
 * return address, which is the exit trampoline's while it is recorded:
 * glibc took libsonde-rt for the caller (a library the program's RUNPATH
 * finds was not found; RTLD_NEXT went on from libsonde-rt's place).
 *
 * So the runtime interposes them with stubs (below).  A call whose return
 * address is not an exit trampoline jumps to libc's at once, its return
 * address untouched.  One whose return address is enters libc's with a
 * return address inside the real caller's object: a `ret` byte (a "gadget")
 * in the page of the frame's real return address (found on the shadow
 * stack), which returns to the stub, which returns through the trampoline,
 * so the frame's exit is recorded as usual.  Under a CET shadow stack the
 * gadget's return would be refused: the frame's real return address is put
 * back into its slot instead and glibc returns straight to the caller (the
 * frame then closes as dead at the thread's next event).  Attached, got.c's
 * dlopen and dlmopen trampolines take the gadget from here too
 * (rt_dl_gadget), and dlsym is redirected through the GOT with the
 * unwinder's entry points.  dlvsym is not interposed: the stubs find libc's
 * functions with it.
 */
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "rt/got.h"
#include "rt/rt.h"

RT_HIDDEN void *dl_real_dlopen, *dl_real_dlmopen, *dl_real_dlsym;
RT_HIDDEN const char dl_name_dlopen[] = "dlopen", dl_name_dlmopen[] = "dlmopen", dl_name_dlsym[] = "dlsym";
RT_HIDDEN void dl_stub_dlopen(void), dl_stub_dlmopen(void), dl_stub_dlsym(void);
RT_HIDDEN uintptr_t dl_prepare(uintptr_t *slot, void **real, const char *name);

/* libc's: the stub's own name found with dlvsym (not interposed), in the
 * versions glibc has given it (2.34 moved them from libdl into libc). */
static void *libc_dl(const char *name, void *self)
{
	static const char *const vers[] = { "GLIBC_2.34", "GLIBC_2.3.4", "GLIBC_2.2.5" };
	for (size_t i = 0; i < sizeof vers / sizeof vers[0]; i++) {
		void *p = dlvsym(RTLD_NEXT, name, vers[i]);
		if (!p || p == self)
			p = dlvsym(RTLD_DEFAULT, name, vers[i]);
		if (p && p != self)
			return p;
	}
	return NULL;
}

static void *dl_missing(void)
{
	return NULL; /* no libc function of that name: as a failed look-up */
}

/* A CET shadow stack would refuse the gadget's `ret` (as got.c checks). */
static int no_gadget(void)
{
	static int known = -1;
	int v = __atomic_load_n(&known, __ATOMIC_RELAXED);
	if (v < 0) {
		unsigned long feat = 0;
		v = 0;
#if defined(__x86_64__)
		if (syscall(SYS_arch_prctl, 0x5005 /* ARCH_SHSTK_STATUS */, &feat) == 0 && (feat & 1))
			v = 1;
#endif
		__atomic_store_n(&known, v, __ATOMIC_RELAXED);
	}
	return v;
}

/* A `ret` byte in the page of ra (code of the caller's object, mapped and
 * readable: ra is in it), the nearest before it first; 0 if none. */
static uintptr_t ret_near(uintptr_t ra)
{
	uintptr_t page = ra & ~(uintptr_t)4095;
	for (uintptr_t p = ra; p-- > page;)
		if (*(const volatile uint8_t *)p == 0xc3)
			return p;
	for (uintptr_t p = ra; p < page + 4096; p++)
		if (*(const volatile uint8_t *)p == 0xc3)
			return p;
	return 0;
}

RT_HIDDEN uintptr_t rt_dl_gadget(uintptr_t *slot)
{
	uintptr_t r = *slot;
	struct rt_tls *L = &rt_tls;
	if (!rt_is_exit_tramp(r) || L->state != RT_T_ON)
		return 0;
	struct sonde_thread *t = L->t;
	struct sonde_frame *f = NULL;
	for (uint32_t i = t->depth; i-- > 0;)
		if (t->stack[i].slot == (uintptr_t)slot) {
			f = &t->stack[i];
			break;
		}
	if (!f)
		return 0;
	uintptr_t g = no_gadget() ? 0 : ret_near(f->site);
	if (!g) { /* the real return address back: glibc returns to the caller itself */
		*slot = f->site;
		if (!__atomic_load_n(&rt_agent_ended, __ATOMIC_ACQUIRE))
			f->flags |= SONDE_FRAME_UNHOOKED;
	}
	return g;
}

RT_HIDDEN uintptr_t dl_prepare(uintptr_t *slot, void **real, const char *name)
{
	if (!__atomic_load_n(real, __ATOMIC_ACQUIRE)) {
		void *self = real == &dl_real_dlopen ? (void *)dl_stub_dlopen
		           : real == &dl_real_dlmopen ? (void *)dl_stub_dlmopen : (void *)dl_stub_dlsym;
		void *p = libc_dl(name, self);
		__atomic_store_n(real, p ? p : (void *)dl_missing, __ATOMIC_RELEASE);
	}
	return rt_dl_gadget(slot);
}

/* The stubs, entered as the function they stand for: [rsp] = R, the
 * caller's return address (rsp = 8 mod 16).  R not an exit trampoline (and
 * libc's function known): a jump to it.  Else dl_prepare, then libc's
 * function entered with [rsp] = the gadget, [rsp+8] = dl_after, [rsp+16] =
 * R (still 8 mod 16): it returns to the gadget, whose `ret` goes to
 * dl_after, whose `ret` goes to R. */
#define DL_STUB(stub, real, name)                               \
	"	.globl " stub "\n"                                \
	"	.hidden " stub "\n"                               \
	"	.type " stub ",@function\n"                       \
	stub ":\n"                                                \
	"	mov " real "(%rip), %r11\n"                       \
	"	test %r11, %r11\n"                                \
	"	jz 2f\n"                                          \
	"	mov (%rsp), %rax\n"                               \
	"	lea rt_exit_tramp(%rip), %r10\n"                  \
	"	cmp %r10, %rax\n"                                 \
	"	je 2f\n"                                          \
	"	lea rt_exit_tramp_full(%rip), %r10\n"             \
	"	cmp %r10, %rax\n"                                 \
	"	je 2f\n"                                          \
	"	jmp *%r11\n"                                      \
	"2:	push %rdi\n"                                      \
	"	push %rsi\n"                                      \
	"	push %rdx\n"                                      \
	"	push %rcx\n"                                      \
	"	lea 32(%rsp), %rdi\n"                             \
	"	lea " real "(%rip), %rsi\n"                       \
	"	lea " name "(%rip), %rdx\n"                       \
	"	sub $8, %rsp\n"                                   \
	"	call dl_prepare\n"                                \
	"	add $8, %rsp\n"                                   \
	"	pop %rcx\n"                                       \
	"	pop %rdx\n"                                       \
	"	pop %rsi\n"                                       \
	"	pop %rdi\n"                                       \
	"	test %rax, %rax\n"                                \
	"	jz 3f\n"                                          \
	"	lea dl_after(%rip), %r11\n"                       \
	"	push %r11\n"                                      \
	"	push %rax\n"                                      \
	"3:	jmp *" real "(%rip)\n"                            \
	"	.size " stub ", .-" stub "\n"

#if defined(__x86_64__)
__asm__("	.text\n"
	"	.p2align 4\n"
	DL_STUB("dl_stub_dlopen", "dl_real_dlopen", "dl_name_dlopen")
	"	.p2align 4\n"
	DL_STUB("dl_stub_dlmopen", "dl_real_dlmopen", "dl_name_dlmopen")
	"	.p2align 4\n"
	DL_STUB("dl_stub_dlsym", "dl_real_dlsym", "dl_name_dlsym")
	"	.p2align 4\n"
	"	.type dl_after,@function\n"
	"dl_after:\n"
	"	ret\n"
	"	.size dl_after, .-dl_after\n"
	/* the exported names (runtime.map) */
	"	.globl dlopen\n	.type dlopen,@function\n	.set dlopen, dl_stub_dlopen\n"
	"	.globl dlmopen\n	.type dlmopen,@function\n	.set dlmopen, dl_stub_dlmopen\n"
	"	.globl dlsym\n	.type dlsym,@function\n	.set dlsym, dl_stub_dlsym\n");
#endif

static const struct rt_got_sym dlcall_wrappers[] = {
	{ "dlsym", (void *)dl_stub_dlsym }, /* dlopen, dlmopen: got.c's own trampolines */
};

RT_HIDDEN int rt_dlcall_wrappers(const struct rt_got_sym **out)
{
	dl_prepare(&(uintptr_t){ 0 }, &dl_real_dlsym, dl_name_dlsym);
	*out = dlcall_wrappers;
	return (int)(sizeof dlcall_wrappers / sizeof dlcall_wrappers[0]);
}
