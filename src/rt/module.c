/* module.c — the module object (seed 000's __fast_search.o).
 *
 * Linked by sonde-cc into every instrumented executable and shared library,
 * with hidden visibility, so each module has its own copy: its own hooks, its
 * own function count and its own numbering.  It is never instrumented itself.
 *
 * Numbering: the compiler emits, for every instrumented function, 8 bytes of
 * never-executed padding before the entry and an entry in the section
 * __patchable_function_entries; the linker concatenates those entries in link
 * order and defines __start_/__stop_ symbols for the section.  So the linker
 * numbers the functions: function i is entry i, and the module's total is
 * (stop - start).  At load time (and only when sonde's runtime is present),
 * the constructor writes each function's number and a check tag into its
 * padding.  The hooks then read them at fn - 8: no hash, no search.
 *
 * A function without the padding (built without sonde's flags) fails the tag
 * check and is reported under the module's "unnumbered" number, counted, never
 * attributed to another function.
 */
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "rt/modabi.h"

#define HIDDEN __attribute__((visibility("hidden")))
#define NOINSTR __attribute__((no_instrument_function))

extern const uint64_t __start___patchable_function_entries[] __attribute__((weak, visibility("hidden")));
extern const uint64_t __stop___patchable_function_entries[] __attribute__((weak, visibility("hidden")));

static struct sonde_modhook sonde_module_hook;

NOINSTR static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Write number + tag into every function's padding.  The text pages are made
 * writable for the duration (they become private copies of the file pages). */
NOINSTR static int number_functions(struct sonde_modhook *m)
{
	const uint64_t *e = m->entries;
	uint32_t n = m->nfuncs;
	uintptr_t lo = UINTPTR_MAX, hi = 0;
	for (uint32_t i = 0; i < n; i++) {
		if (e[i] < lo) lo = e[i];
		if (e[i] > hi) hi = e[i];
	}
	long pg = sysconf(_SC_PAGESIZE);
	uintptr_t plo = lo & ~(uintptr_t)(pg - 1);
	uintptr_t phi = (hi + SONDE_PAD + pg - 1) & ~(uintptr_t)(pg - 1);
	if (mprotect((void *)plo, phi - plo, PROT_READ | PROT_WRITE | PROT_EXEC) != 0)
		return -1;
	/* Break copy-on-write for the whole range in one call instead of one
	 * fault per page (Linux >= 5.14; older kernels fault page by page). */
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
	madvise((void *)plo, phi - plo, MADV_POPULATE_WRITE);
	for (uint32_t i = 0; i < n; i++) {
		uint32_t *pad = (uint32_t *)(uintptr_t)e[i];
		pad[0] = i;
		pad[1] = sonde_tag(i, m->salt);
	}
	mprotect((void *)plo, phi - plo, PROT_READ | PROT_EXEC);
	__builtin___clear_cache((char *)plo, (char *)phi);
	m->lo = lo;
	m->span = hi - lo;
	return 0;
}

NOINSTR __attribute__((constructor(101))) static void sonde_module_init(void)
{
	struct sonde_modhook *m = &sonde_module_hook;
	sonde_register_fn reg = (sonde_register_fn)dlsym(RTLD_DEFAULT, SONDE_REGISTER_SYM);
	if (!reg || !__start___patchable_function_entries)
		return; /* no sonde: hooks stay dormant */
	m->version = SONDE_MODABI_VERSION;
	m->entries = __start___patchable_function_entries;
	m->nfuncs = (uint32_t)(__stop___patchable_function_entries - __start___patchable_function_entries);
	m->anchor = (const void *)&sonde_module_hook;
	uint64_t t0 = now_ns();
	m->salt = (uint32_t)(t0 ^ ((uintptr_t)m >> 4) ^ ((uintptr_t)m >> 36));
	m->lo = 1;
	m->span = 0; /* nothing passes the range check until numbered */
	m->numbered = m->nfuncs && number_functions(m) == 0;
	m->numbering_ns = now_ns() - t0;
	if (reg(m) == 0)
		__atomic_store_n(&m->active, 1, __ATOMIC_RELEASE);
}

NOINSTR __attribute__((destructor(101))) static void sonde_module_fini(void)
{
	struct sonde_modhook *m = &sonde_module_hook;
	if (!m->active)
		return;
	sonde_unregister_fn unreg = (sonde_unregister_fn)dlsym(RTLD_DEFAULT, SONDE_UNREGISTER_SYM);
	__atomic_store_n(&m->active, 0, __ATOMIC_RELEASE);
	if (unreg)
		unreg(m);
}

/* The number of fn, or SONDE_UNNUMBERED.  fn - 8 is read only when it lies
 * inside the module's padding range, which is mapped. */
NOINSTR static inline uint32_t number_of(struct sonde_modhook *m, void *fn)
{
	uintptr_t pad = (uintptr_t)fn - SONDE_PAD;
	if (pad - m->lo <= m->span) {
		const uint32_t *w = (const uint32_t *)pad;
		uint32_t num = w[0];
		if (num < m->nfuncs && w[1] == sonde_tag(num, m->salt))
			return num;
	}
	return 0xfffffu; /* SONDE_UNNUMBERED */
}

/* The instrumented function's frame pointer: constant through its body (the
 * hooks run after its prologue and before its epilogue), so enter and exit of
 * one activation report the same value and deeper activations smaller ones.
 * sonde-cc compiles with -fno-omit-frame-pointer; this file too, so our own
 * frame's saved %rbp is the caller's. */
#define caller_frame() (*(const uintptr_t *)__builtin_frame_address(0))

HIDDEN NOINSTR void __cyg_profile_func_enter(void *fn, void *site)
{
	struct sonde_modhook *m = &sonde_module_hook;
	if (!m->active)
		return;
	m->enter(m, number_of(m, fn), caller_frame(), (uintptr_t)site);
}

HIDDEN NOINSTR void __cyg_profile_func_exit(void *fn, void *site)
{
	struct sonde_modhook *m = &sonde_module_hook;
	if (!m->active)
		return;
	m->exit(m, number_of(m, fn), caller_frame(), (uintptr_t)site);
}
