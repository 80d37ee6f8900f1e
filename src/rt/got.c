/* got.c — redirecting imported functions through the GOT of the loaded
 * objects: how the agent of `sonde record --locks -p` reaches the lock calls
 * of a program that was not started under sonde (docs/ATTACH.md).
 *
 * A call from object X to pthread_mutex_lock in libc goes through X's PLT,
 * which jumps through a GOT entry (a JUMP_SLOT relocation), or straight
 * through a GOT entry (GLOB_DAT, -fno-plt code and address-taken functions).
 * Writing the wrapper's address into those entries redirects the calls; the
 * wrapper calls the real function (found with dlsym(RTLD_NEXT) from here).
 * Each object's dynamic section gives its relocations (DT_JMPREL, DT_RELA)
 * and their symbol names (DT_SYMTAB, DT_STRTAB).  Only entries of symbols the
 * object imports (undefined there) and that hold an address are changed: a
 * weak reference left at 0 stays 0, and libc's own calls never go through its
 * GOT.  Not touched: the runtime itself, the dynamic loader, the vDSO.
 *
 * RELRO: with -z relro (and -z now) the GOT is read-only after loading; the
 * pages are made writable around the writes and read-only again.  Every write
 * is one aligned 8-byte store: a thread calling through the entry sees the
 * old or the new address.
 *
 * Objects loaded later: dlopen and dlmopen are redirected too.  dlopen looks
 * at its return address to know its caller (the caller's namespace and
 * DT_RPATH decide where a library is searched), so the trampoline must not
 * call it from here: it enters dlopen with a return address inside the
 * caller's own object, a `ret` byte found in its code (the object's
 * "gadget"), which returns to got_after_tramp, which patches the new objects
 * and returns to the real caller.  An object found in the middle of another
 * thread's dlopen may not be relocated yet: before it is patched,
 * dlopen(RTLD_NOLOAD) waits for the loader's lock and says whether the object
 * is complete (and keeps it loaded while it is patched).  No lock of ours is
 * held while waiting for the loader's (a constructor that calls dlopen holds
 * the loader's lock and may come here).
 *
 * A child forked while redirecting is not recorded: it puts its copies of
 * the entries back at once (got_fork_child), but those of the unwinder: its
 * copy of the forking thread's stack may hold hooked frames.
 *
 * Restore: every changed entry of an object still loaded (seen under the
 * loader's lock, dl_iterate_phdr) that still holds our address gets its old
 * value back (a lazy binding stub is fine: it resolves again).  Entries
 * another writer changed meanwhile are left alone.
 *
 * Not on any hot path; never instrumented or sanitized (src/rt/).
 */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "rt/got.h"
#include "rt/rt.h"

#if defined(__x86_64__)
#define GOT_R_JUMP_SLOT R_X86_64_JUMP_SLOT
#define GOT_R_GLOB_DAT R_X86_64_GLOB_DAT
#elif defined(__aarch64__)
#define GOT_R_JUMP_SLOT R_AARCH64_JUMP_SLOT
#define GOT_R_GLOB_DAT R_AARCH64_GLOB_DAT
#else
#error "got.c: unknown architecture"
#endif

#define GOT_MAX_OBJS 1024
#define GOT_MAX_SLOTS 16384
#define GOT_NAME_MAX 512

struct got_obj {
	uintptr_t base;          /* load bias */
	const void *phdr;        /* with base: which object (a reload elsewhere is another) */
	uintptr_t lo, hi;        /* its PT_LOAD range */
	uintptr_t gadget;        /* a `ret` byte in its code, 0 if none was needed */
	uintptr_t relro_lo, relro_hi;
	uint32_t first, nslots;  /* its entries in got_slots */
};

struct got_slot {
	uintptr_t *at;
	uintptr_t orig, to;
	int group; /* enum rt_got_group, GOT_DL (dlopen, dlmopen) or GOT_DONE (put back) */
};
#define GOT_DL RT_GOT_NGROUPS
#define GOT_DONE (-1)

static struct got_obj got_objs[GOT_MAX_OBJS];
static int got_nobjs;    /* published with release: got_gadget reads without the lock */
static struct got_slot got_slots[GOT_MAX_SLOTS];
static uint32_t got_nslots;
static uint64_t got_lost; /* entries or objects left out: tables full, or RELRO not writable */
static const struct rt_got_sym *got_syms[RT_GOT_NGROUPS];
static int got_nsyms[RT_GOT_NGROUPS];
static int got_live[RT_GOT_NGROUPS]; /* added and not restored */
static int got_on;       /* 1 between rt_got_redirect and the restore of the last group */
static pthread_mutex_t got_lock = PTHREAD_MUTEX_INITIALIZER;

/* Used by the trampolines below. */
RT_HIDDEN uintptr_t got_real_dlopen, got_real_dlmopen;
RT_HIDDEN uintptr_t got_gadget(uintptr_t ret, uintptr_t *slot);
RT_HIDDEN void got_after_dlopen(void *handle);
RT_HIDDEN void got_dlopen_tramp(void);
RT_HIDDEN void got_dlmopen_tramp(void);
static void got_fork_child(void);

#if defined(__x86_64__)
/* Entered from the caller's PLT with [rsp] = R, its return address (rsp = 8
 * mod 16).  With a gadget G of R's object (R an exit trampoline, a recorded
 * function's tail call: of the real caller's, dlcall.c's rt_dl_gadget): dlopen is entered with [rsp] = G,
 * [rsp+8] = got_after_tramp, [rsp+16] = R (still 8 mod 16); it returns to G,
 * whose `ret` goes to got_after_tramp with [rsp] = R.  Without one, a plain
 * tail call (the new objects are then redirected at a later dlopen). */
#define GOT_TRAMP(name, real)                                   \
	"	.text\n"                                          \
	"	.p2align 4\n"                                     \
	"	.globl " name "\n"                                \
	"	.hidden " name "\n"                               \
	"	.type " name ",@function\n"                       \
	name ":\n"                                                \
	"	push %rdi\n"                                      \
	"	push %rsi\n"                                      \
	"	push %rdx\n"                                      \
	"	mov 24(%rsp), %rdi\n"                             \
	"	lea 24(%rsp), %rsi\n"                             \
	"	call got_gadget\n"                                \
	"	pop %rdx\n"                                       \
	"	pop %rsi\n"                                       \
	"	pop %rdi\n"                                       \
	"	test %rax, %rax\n"                                \
	"	jz 1f\n"                                          \
	"	lea got_after_tramp(%rip), %r11\n"                \
	"	push %r11\n"                                      \
	"	push %rax\n"                                      \
	"1:	jmp *" real "(%rip)\n"                            \
	"	.size " name ", .-" name "\n"
__asm__(GOT_TRAMP("got_dlopen_tramp", "got_real_dlopen")
        GOT_TRAMP("got_dlmopen_tramp", "got_real_dlmopen")
	"	.p2align 4\n"
	"	.type got_after_tramp,@function\n"
	"got_after_tramp:\n"
	"	push %rax\n"              /* the handle; rsp is 16-aligned for the call */
	"	mov %rax, %rdi\n"
	"	call got_after_dlopen\n"
	"	pop %rax\n"
	"	ret\n"                    /* to R */
	"	.size got_after_tramp, .-got_after_tramp\n");
#define GOT_HAVE_TRAMPS 1
#else
#define GOT_HAVE_TRAMPS 0
void got_dlopen_tramp(void) {}
void got_dlmopen_tramp(void) {}
#endif

/* The gadget of the object R lies in, if it was redirected (newest first: a
 * range reused after a dlclose belongs to the later object). */
static int got_no_gadget; /* a shadow stack would refuse the gadget's return */

RT_HIDDEN uintptr_t got_gadget(uintptr_t ret, uintptr_t *slot)
{
	if (rt_is_exit_tramp(ret)) /* a recorded function's tail call: its caller's object (dlcall.c) */
		return rt_dl_gadget(slot);
	if (!__atomic_load_n(&got_on, __ATOMIC_ACQUIRE) || got_no_gadget)
		return 0;
	for (int i = __atomic_load_n(&got_nobjs, __ATOMIC_ACQUIRE) - 1; i >= 0; i--)
		if (ret >= got_objs[i].lo && ret < got_objs[i].hi)
			return got_objs[i].gadget;
	return 0;
}

/* ---- one object ---- */

struct got_cand {
	uintptr_t base, lo, hi;
	const ElfW(Phdr) *phdr;
	int phnum;
	char name[GOT_NAME_MAX]; /* "" the main program */
};

static int got_known(uintptr_t base, const void *phdr)
{
	for (int i = 0; i < got_nobjs; i++)
		if (got_objs[i].base == base && got_objs[i].phdr == phdr)
			return 1;
	return 0;
}

/* d_ptr values: glibc relocates them in place on most targets, not all. */
static uintptr_t dyn_ptr(uintptr_t v, uintptr_t base)
{
	return v < base ? v + base : v;
}

/* A `ret` (0xc3) in an executable segment of the object. */
static uintptr_t find_gadget(const struct got_cand *c)
{
#if defined(__x86_64__)
	for (int i = 0; i < c->phnum; i++) {
		const ElfW(Phdr) *ph = &c->phdr[i];
		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X) || !(ph->p_flags & PF_R))
			continue;
		const uint8_t *p = (const uint8_t *)(c->base + ph->p_vaddr);
		const void *r = memchr(p, 0xc3, ph->p_filesz);
		if (r)
			return (uintptr_t)r;
	}
#endif
	(void)c;
	return 0;
}

static const struct rt_got_sym got_dl[2] = {
	{ "dlopen", (void *)got_dlopen_tramp },
	{ "dlmopen", (void *)got_dlmopen_tramp },
};

static const struct rt_got_sym *got_match(const char *name, int *group)
{
	for (int g = 0; g < RT_GOT_NGROUPS; g++)
		for (int i = 0; got_live[g] && i < got_nsyms[g]; i++)
			if (!strcmp(name, got_syms[g][i].name)) {
				*group = g;
				return &got_syms[g][i];
			}
	*group = GOT_DL;
	if (GOT_HAVE_TRAMPS && got_real_dlopen && !strcmp(name, "dlopen"))
		return &got_dl[0];
	if (GOT_HAVE_TRAMPS && got_real_dlmopen && !strcmp(name, "dlmopen"))
		return &got_dl[1];
	return NULL;
}

/* Collects the entries of c to redirect into got_slots (not written yet). */
static void got_scan_rela(const struct got_cand *c, const ElfW(Rela) *r, size_t size, const ElfW(Sym) *symtab,
                          const char *strtab, size_t strsz, int *dl)
{
	for (size_t i = 0; i < size / sizeof *r; i++) {
		uint32_t type = (uint32_t)ELF64_R_TYPE(r[i].r_info), si = (uint32_t)ELF64_R_SYM(r[i].r_info);
		if ((type != GOT_R_JUMP_SLOT && type != GOT_R_GLOB_DAT) || !si)
			continue;
		const ElfW(Sym) *s = &symtab[si];
		if (s->st_name >= strsz)
			continue;
		int group;
		const struct rt_got_sym *m = got_match(strtab + s->st_name, &group);
		if (!m || (s->st_shndx != SHN_UNDEF && strcmp(m->name, "_Unwind_Find_FDE")))
			continue; /* libgcc_s calls its own FDE lookup through its PLT (observe.c) */
		uintptr_t *at = (uintptr_t *)(c->base + r[i].r_offset);
		if (((uintptr_t)at & 7) || at < (uintptr_t *)c->lo || at >= (uintptr_t *)c->hi)
			continue;
		uintptr_t orig = __atomic_load_n(at, __ATOMIC_ACQUIRE);
		if (!orig || orig == (uintptr_t)m->to)
			continue; /* an unresolved weak reference stays so */
		if (got_nslots >= GOT_MAX_SLOTS) {
			got_lost++;
			continue;
		}
		got_slots[got_nslots++] = (struct got_slot){ at, orig, (uintptr_t)m->to, group };
		if (m == &got_dl[0] || m == &got_dl[1])
			*dl = 1;
	}
}

/* Makes [lo, hi) writable (w) or read-only again. */
static int got_protect(uintptr_t lo, uintptr_t hi, int w)
{
	if (lo >= hi)
		return 0;
	return mprotect((void *)lo, hi - lo, PROT_READ | (w ? PROT_WRITE : 0));
}

static int in_relro(const struct got_obj *o, const uintptr_t *at)
{
	return (uintptr_t)at >= o->relro_lo && (uintptr_t)at < o->relro_hi;
}

/* Redirects one complete object (got_lock held) and remembers it, also when
 * it has nothing to redirect (it is not read again at the next dlopen).
 * Returns the entries written. */
static int got_patch_object(const struct got_cand *c)
{
	if (got_known(c->base, c->phdr))
		return 0;
	if (got_nobjs >= GOT_MAX_OBJS) {
		got_lost++;
		return 0;
	}
	const ElfW(Dyn) *dyn = NULL;
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	struct got_obj o = { .base = c->base, .phdr = c->phdr, .lo = c->lo, .hi = c->hi, .first = got_nslots };
	for (int i = 0; i < c->phnum; i++) {
		const ElfW(Phdr) *ph = &c->phdr[i];
		if (ph->p_type == PT_DYNAMIC)
			dyn = (const ElfW(Dyn) *)(c->base + ph->p_vaddr);
		else if (ph->p_type == PT_GNU_RELRO) { /* as the loader rounds it */
			o.relro_lo = (c->base + ph->p_vaddr) & ~(page - 1);
			o.relro_hi = (c->base + ph->p_vaddr + ph->p_memsz) & ~(page - 1);
		}
	}
	if (!dyn)
		goto remember;
	uintptr_t symtab = 0, strtab = 0, strsz = 0, jmprel = 0, pltrelsz = 0, pltrel = 0, rela = 0, relasz = 0;
	for (const ElfW(Dyn) *d = dyn; d->d_tag != DT_NULL; d++) {
		switch (d->d_tag) {
		case DT_SYMTAB: symtab = dyn_ptr(d->d_un.d_ptr, c->base); break;
		case DT_STRTAB: strtab = dyn_ptr(d->d_un.d_ptr, c->base); break;
		case DT_STRSZ: strsz = d->d_un.d_val; break;
		case DT_JMPREL: jmprel = dyn_ptr(d->d_un.d_ptr, c->base); break;
		case DT_PLTRELSZ: pltrelsz = d->d_un.d_val; break;
		case DT_PLTREL: pltrel = d->d_un.d_val; break;
		case DT_RELA: rela = dyn_ptr(d->d_un.d_ptr, c->base); break;
		case DT_RELASZ: relasz = d->d_un.d_val; break;
		}
	}
	if (!symtab || !strtab)
		goto remember;
	int dl = 0;
	if (jmprel && pltrel == DT_RELA)
		got_scan_rela(c, (const ElfW(Rela) *)jmprel, pltrelsz, (const ElfW(Sym) *)symtab, (const char *)strtab,
		              strsz, &dl);
	if (rela)
		got_scan_rela(c, (const ElfW(Rela) *)rela, relasz, (const ElfW(Sym) *)symtab, (const char *)strtab,
		              strsz, &dl);
	o.nslots = got_nslots - o.first;
	if (!o.nslots)
		goto remember;
	if (dl)
		o.gadget = find_gadget(c);
	int relro = 0;
	for (uint32_t i = o.first; i < got_nslots; i++)
		relro |= in_relro(&o, got_slots[i].at);
	if (relro && got_protect(o.relro_lo, o.relro_hi, 1) != 0) {
		got_nslots = o.first; /* cannot write: leave the object as it is */
		o.nslots = 0;
		got_lost++;
		goto remember;
	}
	for (uint32_t i = o.first; i < got_nslots; i++)
		__atomic_compare_exchange_n(got_slots[i].at, &got_slots[i].orig, got_slots[i].to, 0, __ATOMIC_RELEASE,
		                            __ATOMIC_RELAXED);
	if (relro)
		got_protect(o.relro_lo, o.relro_hi, 0);
remember:
	got_objs[got_nobjs] = o;
	__atomic_store_n(&got_nobjs, got_nobjs + 1, __ATOMIC_RELEASE);
	return (int)o.nslots;
}

/* ---- every object ---- */

struct got_walk {
	struct got_cand *c;
	int n, max;
	uintptr_t self, ldso, vdso;
};

int rt_object_span(const struct dl_phdr_info *info, uintptr_t *lo, uintptr_t *hi)
{
	*lo = UINTPTR_MAX;
	*hi = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		uintptr_t a = info->dlpi_addr + ph->p_vaddr;
		if (a < *lo)
			*lo = a;
		if (a + ph->p_memsz > *hi)
			*hi = a + ph->p_memsz;
	}
	return *lo < *hi;
}

static int got_collect_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	struct got_walk *w = arg;
	uintptr_t lo, hi;
	if (!rt_object_span(info, &lo, &hi))
		return 0;
	uintptr_t skip[3] = { w->self, w->ldso, w->vdso };
	for (int i = 0; i < 3; i++)
		if (skip[i] >= lo && skip[i] < hi)
			return 0;
	if (got_known(info->dlpi_addr, info->dlpi_phdr) || w->n >= w->max)
		return 0;
	const char *name = info->dlpi_name ? info->dlpi_name : "";
	if (strlen(name) >= GOT_NAME_MAX)
		return 0;
	struct got_cand *c = &w->c[w->n++];
	c->base = info->dlpi_addr;
	c->lo = lo;
	c->hi = hi;
	c->phdr = info->dlpi_phdr;
	c->phnum = info->dlpi_phnum;
	strcpy(c->name, name);
	return 0;
}

/* Whether the object is complete (relocated): the loader's lock is free or
 * ours when dlopen(RTLD_NOLOAD) returns.  *hold keeps it loaded. */
static int got_complete(const struct got_cand *c, void **hold)
{
	*hold = NULL;
	if (!c->name[0])
		return 1; /* the main program: relocated before anything ran */
	void *h = dlopen(c->name, RTLD_LAZY | RTLD_NOLOAD);
	if (!h)
		return 0;
	struct link_map *lm = NULL;
	if (dlinfo(h, RTLD_DI_LINKMAP, &lm) != 0 || !lm || lm->l_addr != c->base) {
		dlclose(h); /* another namespace's copy, or another object of that name */
		return 0;
	}
	*hold = h;
	return 1;
}

/* Redirects every loaded object not redirected yet; returns the entries. */
static int got_patch_new(void)
{
	size_t bytes = GOT_MAX_OBJS * sizeof(struct got_cand);
	struct got_cand *cands = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (cands == MAP_FAILED)
		return 0;
	void **holds = (void **)mmap(NULL, GOT_MAX_OBJS * sizeof(void *), PROT_READ | PROT_WRITE,
	                             MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (holds == MAP_FAILED) {
		munmap(cands, bytes);
		return 0;
	}
	struct got_walk w = { cands, 0, GOT_MAX_OBJS, (uintptr_t)got_patch_new, getauxval(AT_BASE),
	                      getauxval(AT_SYSINFO_EHDR) };
	pthread_mutex_lock(&got_lock);
	int on = got_on;
	if (on)
		dl_iterate_phdr(got_collect_cb, &w);
	pthread_mutex_unlock(&got_lock);
	/* Without our lock: dlopen(RTLD_NOLOAD) may wait for the loader's. */
	for (int i = 0; i < w.n; i++)
		if (!got_complete(&cands[i], &holds[i]))
			cands[i].phnum = -1;
	int total = 0;
	pthread_mutex_lock(&got_lock);
	for (int i = 0; got_on && i < w.n; i++)
		if (cands[i].phnum >= 0)
			total += got_patch_object(&cands[i]);
	pthread_mutex_unlock(&got_lock);
	for (int i = 0; i < w.n; i++)
		if (holds[i])
			dlclose(holds[i]);
	dlerror(); /* a failed RTLD_NOLOAD look-up leaves no error for the program to find */
	munmap(holds, GOT_MAX_OBJS * sizeof(void *));
	munmap(cands, bytes);
	return total;
}

static void (*_Atomic got_dlopen_fn)(void);

void rt_got_on_dlopen(void (*fn)(void))
{
	atomic_store_explicit(&got_dlopen_fn, fn, memory_order_release);
}

/* After a dlopen of the program returned (got_after_tramp): the new objects. */
RT_HIDDEN void got_after_dlopen(void *handle)
{
	if (!handle || !__atomic_load_n(&got_on, __ATOMIC_ACQUIRE))
		return;
	int saved = errno;
	got_patch_new();
	void (*fn)(void) = atomic_load_explicit(&got_dlopen_fn, memory_order_acquire);
	if (fn)
		fn();
	errno = saved;
}

void rt_got_add(enum rt_got_group g, const struct rt_got_sym *syms, int n)
{
	pthread_mutex_lock(&got_lock);
	if (!got_on && !got_nobjs && (int)g >= 0 && g < RT_GOT_NGROUPS) {
		got_syms[g] = syms;
		got_nsyms[g] = n;
		got_live[g] = 1;
	}
	pthread_mutex_unlock(&got_lock);
}

int rt_got_redirect(void)
{
	pthread_mutex_lock(&got_lock);
	if (got_on || got_nobjs) { /* once per process */
		pthread_mutex_unlock(&got_lock);
		return 0;
	}
#if defined(__x86_64__)
	/* CET shadow stack on (glibc enables it for the whole process): the
	 * gadget's `ret` would not match it.  dlopen is then a plain tail call,
	 * and the objects it loads are not redirected. */
	unsigned long feat = 0;
	if (syscall(SYS_arch_prctl, 0x5005 /* ARCH_SHSTK_STATUS */, &feat) == 0 && (feat & 1))
		got_no_gadget = 1;
#endif
	got_real_dlopen = (uintptr_t)dlsym(RTLD_NEXT, "dlopen");
	got_real_dlmopen = (uintptr_t)dlsym(RTLD_NEXT, "dlmopen");
	__atomic_store_n(&got_on, 1, __ATOMIC_RELEASE);
	static int atfork;
	if (!atfork++)
		pthread_atfork(NULL, NULL, got_fork_child);
	pthread_mutex_unlock(&got_lock);
	int k = got_patch_new();
	dlerror();
	return k;
}

/* Whether slot k is one rt_got_restore(g) puts back: of group g, and the
 * dlopen ones with the last group (all = 1). */
static int got_restoring(uint32_t k, int g, int all)
{
	return got_slots[k].group == g || (all && got_slots[k].group == GOT_DL);
}

struct got_restore_arg {
	int g, all;
};

/* Under the loader's lock: the objects listed are mapped. */
static int got_restore_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	const struct got_restore_arg *ra = arg;
	for (int i = 0; i < got_nobjs; i++) {
		struct got_obj *o = &got_objs[i];
		if (o->base != info->dlpi_addr || o->phdr != (const void *)info->dlpi_phdr || !o->nslots)
			continue;
		int relro = 0, any = 0;
		for (uint32_t k = o->first; k < o->first + o->nslots; k++)
			if (got_restoring(k, ra->g, ra->all)) {
				any = 1;
				relro |= in_relro(o, got_slots[k].at);
			}
		if (!any || (relro && got_protect(o->relro_lo, o->relro_hi, 1) != 0))
			continue;
		for (uint32_t k = o->first; k < o->first + o->nslots; k++) {
			if (!got_restoring(k, ra->g, ra->all))
				continue;
			uintptr_t to = got_slots[k].to;
			__atomic_compare_exchange_n(got_slots[k].at, &to, got_slots[k].orig, 0, __ATOMIC_RELEASE,
			                            __ATOMIC_RELAXED);
			got_slots[k].group = GOT_DONE;
		}
		if (relro)
			got_protect(o->relro_lo, o->relro_hi, 0);
	}
	return 0;
}

/* A child forked while redirecting: nobody records it (the agent's watcher
 * and sonde follow the parent only), so it gets libc's functions back at
 * once.  Not the unwinder's: the forking thread's hooked frames are in the
 * child too (its wrappers pass through once the recording ended), and the
 * dlopen trampolines stay as plain tail calls (got_on is 0).
 * Single-threaded here, and the locks other threads held at the fork (ours,
 * the loader's) may stay held forever in the child: neither is taken.  An
 * object dlclose'd before the fork may be unmapped: mincore says which pages
 * still are. */
static void got_fork_child(void)
{
	if (!got_on)
		return;
	got_on = 0;
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	unsigned char vec;
	for (int i = 0; i < got_nobjs; i++) {
		struct got_obj *o = &got_objs[i];
		int relro = o->relro_lo < o->relro_hi && mincore((void *)o->relro_lo, page, &vec) == 0 &&
		            got_protect(o->relro_lo, o->relro_hi, 1) == 0;
		for (uint32_t k = o->first; k < o->first + o->nslots; k++) {
			uintptr_t *at = got_slots[k].at;
			if (got_slots[k].group != RT_GOT_LOCKS)
				continue;
			if (mincore((void *)((uintptr_t)at & ~(page - 1)), page, &vec) != 0)
				continue;
			if (in_relro(o, at) && !relro)
				continue;
			if (*at == got_slots[k].to)
				*at = got_slots[k].orig;
			got_slots[k].group = GOT_DONE;
		}
		if (relro)
			got_protect(o->relro_lo, o->relro_hi, 0);
	}
	if (got_live[RT_GOT_LOCKS]) {
		got_live[RT_GOT_LOCKS] = 0;
		rt_locks_end();
	}
}

void rt_got_restore(enum rt_got_group g)
{
	pthread_mutex_lock(&got_lock);
	if (got_on && (int)g >= 0 && g < RT_GOT_NGROUPS && got_live[g]) {
		got_live[g] = 0;
		int left = 0;
		for (int i = 0; i < RT_GOT_NGROUPS; i++)
			left |= got_live[i];
		if (!left)
			__atomic_store_n(&got_on, 0, __ATOMIC_RELEASE);
		struct got_restore_arg ra = { g, !left };
		dl_iterate_phdr(got_restore_cb, &ra);
	}
	pthread_mutex_unlock(&got_lock);
}

int rt_got_reset(void)
{
	rt_got_restore(RT_GOT_UNWIND);
	rt_got_restore(RT_GOT_LOCKS);
	pthread_mutex_lock(&got_lock);
	int rc = got_on ? -1 : 0;
	if (!rc) { /* every entry is back: the objects are read afresh at the next redirect */
		__atomic_store_n(&got_nobjs, 0, __ATOMIC_RELEASE);
		got_nslots = 0;
		got_lost = 0;
	}
	pthread_mutex_unlock(&got_lock);
	return rc;
}

int rt_got_objects(enum rt_got_group g)
{
	pthread_mutex_lock(&got_lock);
	int n = 0;
	for (int i = 0; i < got_nobjs; i++) {
		const struct got_obj *o = &got_objs[i];
		int has = 0;
		for (uint32_t k = o->first; k < o->first + o->nslots && !has; k++)
			has = got_slots[k].group == (int)g;
		n += has;
	}
	pthread_mutex_unlock(&got_lock);
	return n;
}
