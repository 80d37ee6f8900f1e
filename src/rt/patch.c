/* patch.c — writes into a module's code: the function numbers into the
 * padding before each entry, and the entry sleds (see modabi.h).
 *
 * At registration (module constructor, before any of the module's code has
 * run) the text pages are made writable for the duration, numbers are
 * written and the sleds of the functions to record become
 *     e8 <rel32>   call sonde_module_tramp
 * (the trampoline is in the module itself, so rel32 always reaches it).
 * Functions kept out of a recording (-N, outside --domain) keep their nops:
 * they cost nothing.  GCC's sled is five one-byte nops, Clang's one five-byte
 * nop; both become one instruction, written while no thread can be inside it.
 * rt_unpatch_module switches sleds back to the five-byte nop 0f 1f 44 00 00
 * while the program runs (the agent, docs/ATTACH.md); see write_sled for
 * what is safe to write into code that other threads execute. */
#include <link.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "rt/rt.h"
#include "common/clock.h"

/* Make [lo, hi) writable (1) or read-only executable again (0). */
RT_HIDDEN int rt_text_writable(uintptr_t lo, uintptr_t hi, int on)
{
	long pg = sysconf(_SC_PAGESIZE);
	uintptr_t plo = lo & ~(uintptr_t)(pg - 1);
	uintptr_t phi = (hi + pg - 1) & ~(uintptr_t)(pg - 1);
	if (!on) {
		mprotect((void *)plo, phi - plo, PROT_READ | PROT_EXEC);
		__builtin___clear_cache((char *)plo, (char *)phi);
		return 0;
	}
	if (mprotect((void *)plo, phi - plo, PROT_READ | PROT_WRITE | PROT_EXEC) != 0)
		return -1;
	/* Break copy-on-write for the whole range in one call instead of one
	 * fault per page (Linux >= 5.14; older kernels fault page by page). */
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
	madvise((void *)plo, phi - plo, MADV_POPULATE_WRITE);
	return 0;
}

/* Set by the agent (agent.c): the program is running while sleds change. */
RT_HIDDEN int rt_patch_live;

static void store2(uint8_t *at, const uint8_t b[2])
{
	uint16_t v;
	memcpy(&v, b, 2);
	__atomic_store_n((uint16_t *)at, v, __ATOMIC_RELEASE);
}

/* Write the sled at `at` (5 bytes): a call to `tramp`, or the 5-byte nop.
 * Returns 0, or -1 when it cannot be written safely while threads run.
 *
 * Cross-modifying code.  Another thread may be fetching the sled while it
 * changes, so every state it can see must be one whole instruction:
 *  - the sled lies within one aligned qword (GCC and Clang align functions
 *    at -O2, and fn = 16k + 8 then): one aligned 8-byte store, which the
 *    other cores see all or nothing, instruction fetch included (the same
 *    assumption as XRay's 2-byte swap and the kernel's aligned text pokes);
 *  - otherwise, when its first two bytes are within one qword (XRay's
 *    order): those two bytes become `jmp .+5` (eb 03) first, so a thread
 *    that arrives skips the sled; then bytes 2..4 are written; then the two
 *    first bytes of the new instruction, one 2-byte store.  A thread sees a
 *    whole nop, the jump over bytes in flux, or the whole new instruction;
 *  - a sled whose first two bytes straddle a qword (fn = 8k + 7, only in
 *    unaligned code, e.g. -Os) cannot be switched that way: it is left
 *    alone while the program runs (the function is not recorded, counted
 *    as dormant).
 * At load time (no thread can be in the module's code yet) any sled is
 * written directly. */
static int write_sled(uint8_t *at, const void *tramp, int on)
{
	uint8_t b[SONDE_SLED] = { 0x0f, 0x1f, 0x44, 0x00, 0x00 };
	if (on) {
		int32_t rel = (int32_t)((intptr_t)tramp - (intptr_t)(at + SONDE_SLED));
		b[0] = 0xe8;
		memcpy(b + 1, &rel, 4);
	}
	uintptr_t q = (uintptr_t)at & ~(uintptr_t)7;
	if ((uintptr_t)at + SONDE_SLED <= q + 8) { /* one aligned 8-byte store */
		uint64_t w;
		memcpy(&w, (void *)q, 8);
		memcpy((uint8_t *)&w + ((uintptr_t)at - q), b, SONDE_SLED);
		__atomic_store_n((uint64_t *)q, w, __ATOMIC_RELEASE);
		return 0;
	}
	if (!rt_patch_live) {
		memcpy(at, b, SONDE_SLED);
		return 0;
	}
	if (((uintptr_t)at & 7) == 7)
		return -1;
	static const uint8_t skip[2] = { 0xeb, 0x03 };
	store2(at, skip);
	memcpy(at + 2, b + 2, SONDE_SLED - 2);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	store2(at, b);
	return 0;
}

/* Is the sled at `at` one this module can patch: nops as the compiler left
 * them, or a call that is ours? */
static int sled_ok(const uint8_t *at)
{
	static const uint8_t nop1[SONDE_SLED] = { 0x90, 0x90, 0x90, 0x90, 0x90 };
	return !memcmp(at, nop1, SONDE_SLED) || (at[0] == 0x0f && at[1] == 0x1f && at[2] == 0x44) || at[0] == 0xe8;
}

/* Is the sled at `at` a call to tramp? */
static int sled_is_call(const uint8_t *at, const void *tramp)
{
	int32_t rel;
	memcpy(&rel, at + 1, 4);
	return at[0] == 0xe8 && (uintptr_t)(at + SONDE_SLED) + (intptr_t)rel == (uintptr_t)tramp;
}

/* Exit sleds (modabi.h; sonde-as): at load time only (rt_patch_live = 0),
 * for each function of __sonde_exit_sleds whose entry sled was switched on
 * just now, every sled before a `ret` becomes `call exit_tramp`, every one
 * before a tail call `call tail_tramp`, and then the entry sled `call
 * tramp_sled` (its return address is kept).  A record that does
 * not check out (its padding not a numbered entry of this module, a sled not
 * the nop sonde-as wrote) leaves the function on return-address replacement.
 * The text is writable from lo to hi (rt_patch_module); sleds outside it
 * (a cold part elsewhere) get it for the duration, as long as they are in
 * the executable segment of the entries (a function with one elsewhere is
 * left on replacement).  Returns how many
 * functions use their exit sleds. */
static const uint8_t nop5[SONDE_SLED] = { 0x0f, 0x1f, 0x44, 0x00, 0x00 };

/* How many sleds a record lists: its ret sleds and its tail sleds. */
#define SLEDS(w) ((int32_t)(((uint32_t)(w) & 0xffff) + ((uint32_t)(w) >> 16)))

/* The address a field of __sonde_exit_sleds names: an offset from itself. */
static uintptr_t exit_at(const int32_t *field)
{
	return (uintptr_t)field + (intptr_t)*field;
}

/* The executable segment that holds `at`: [*lo, *hi). */
struct seg_find { uintptr_t at, lo, hi; };
static int seg_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	struct seg_find *f = arg;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t a = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) && f->at >= a && f->at < a + ph->p_memsz) {
			f->lo = a;
			f->hi = a + ph->p_memsz;
			return 1;
		}
	}
	return 0;
}

static uint32_t patch_exits(struct sonde_modhook *m, uintptr_t lo, uintptr_t hi)
{
	const int32_t *r = m->exits, *end = m->exits_end;
	if (!r || end <= r || !m->enter_sled || !m->exit_sled || !m->tramp_sled || !m->exit_tramp || !m->tail_sled ||
	    !m->tail_tramp)
		return 0;
	/* every sled must be in the module's code: the segment of its entries */
	struct seg_find seg = { lo, 0, 0 };
	if (!dl_iterate_phdr(seg_cb, &seg) || hi > seg.hi)
		return 0;
	uintptr_t xlo = lo, xhi = hi;
	for (const int32_t *p = r; end - p >= 2 && end - p - 2 >= SLEDS(p[1]); p += 2 + SLEDS(p[1]))
		for (int32_t k = 0; k < SLEDS(p[1]); k++) {
			uintptr_t x = exit_at(&p[2 + k]);
			if (x < seg.lo || x + SONDE_SLED > seg.hi)
				continue; /* not in the code: its function is left alone below */
			if (x < xlo) xlo = x;
			if (x + SONDE_SLED > xhi) xhi = x + SONDE_SLED;
		}
	int wider = xlo < lo || xhi > hi;
	if (wider && rt_text_writable(xlo, xhi, 1) != 0)
		return 0;
	uint32_t nf = 0;
	for (const int32_t *p = r; end - p >= 2; p += 2 + SLEDS(p[1])) {
		uintptr_t pad = exit_at(p);
		int32_t n = SLEDS(p[1]), nret = p[1] & 0xffff;
		if (end - p - 2 < n)
			break; /* not a record sonde-as wrote */
		if (pad < m->lo || pad - m->lo > m->span)
			continue;
		uint32_t num = *(const uint32_t *)pad;
		uint8_t *entry = (uint8_t *)(pad + SONDE_PAD);
		if (num >= m->nfuncs || m->entries[num] != pad || !sled_is_call(entry, m->tramp))
			continue; /* not numbered here, or kept dormant (filters) */
		int32_t k;
		for (k = 0; k < n; k++) {
			uintptr_t x = exit_at(&p[2 + k]);
			if (x < seg.lo || x + SONDE_SLED > seg.hi || memcmp((const void *)x, nop5, SONDE_SLED))
				break;
		}
		if (k < n)
			continue;
		for (k = 0; k < n; k++)
			write_sled((uint8_t *)exit_at(&p[2 + k]), k < nret ? m->exit_tramp : m->tail_tramp, 1);
		write_sled(entry, m->tramp_sled, 1);
		nf++;
	}
	if (wider)
		rt_text_writable(xlo, xhi, 0);
	return nf;
}

/* Returns how many functions stay dormant (skip), or -1. */
RT_HIDDEN int rt_patch_module(struct sonde_modhook *m, const uint8_t *skip)
{
	uint64_t t0 = clock_mono_ns();
	const uint64_t *e = m->entries;
	uint32_t n = m->nfuncs;
	uintptr_t lo = UINTPTR_MAX, hi = 0;
	for (uint32_t i = 0; i < n; i++) {
		if (e[i] < lo) lo = e[i];
		if (e[i] > hi) hi = e[i];
	}
	if (!n || rt_text_writable(lo, hi + SONDE_PAD + SONDE_SLED, 1) != 0)
		return -1;
	m->salt = (uint32_t)(t0 ^ ((uintptr_t)m >> 4) ^ ((uintptr_t)m >> 36));
	/* What the entry hook reads (number_of) is in place before a first sled
	 * calls it: a running program (the agent) enters at once. */
	m->lo = lo;
	m->span = hi - lo;
	__atomic_thread_fence(__ATOMIC_RELEASE);
	uint32_t bad = 0, dormant = 0;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t *pad = (uint32_t *)(uintptr_t)e[i];
		uint8_t *sled = (uint8_t *)(uintptr_t)(e[i] + SONDE_PAD);
		pad[0] = i;
		pad[1] = sonde_tag(i, m->salt);
		if (!sled_ok(sled)) {
			bad++; /* not a sled we know: left alone */
			continue;
		}
		if ((skip && (skip[i >> 2] >> ((i & 3) * 2)) & 2u) || write_sled(sled, m->tramp, 1))
			dormant++;
	}
	m->nsled_funcs = rt_patch_live ? 0 : patch_exits(m, lo, hi + SONDE_PAD + SONDE_SLED);
	rt_text_writable(lo, hi + SONDE_PAD + SONDE_SLED, 0);
	m->numbered = 1;
	m->patched = 1;
	m->numbering_ns = clock_mono_ns() - t0;
	if (bad)
		rt_log("some functions of a module have no entry sled sonde knows; they are not recorded");
	return (int)dormant;
}

/* Switch a registered module's sleds back to nops (the agent's end).  Only
 * sleds that call the module's trampoline are touched.  The padding keeps
 * its numbers: it is never executed. */
RT_HIDDEN int rt_unpatch_module(struct sonde_modhook *m)
{
	if (!m->patched || !m->nfuncs)
		return 0;
	uintptr_t lo = m->lo, hi = m->lo + m->span;
	if (rt_text_writable(lo, hi + SONDE_PAD + SONDE_SLED, 1) != 0)
		return -1;
	for (uint32_t i = 0; i < m->nfuncs; i++) {
		uint8_t *sled = (uint8_t *)(uintptr_t)(m->entries[i] + SONDE_PAD);
		if (sled_is_call(sled, m->tramp) || (m->tramp_sled && sled_is_call(sled, m->tramp_sled)))
			write_sled(sled, m->tramp, 0);
	}
	rt_text_writable(lo, hi + SONDE_PAD + SONDE_SLED, 0);
	m->patched = 0;
	return 0;
}
