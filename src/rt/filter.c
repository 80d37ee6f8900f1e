/* filter.c — compiles the trace filters (-F GLOB, -N GLOB, --domain) into a
 * per-module bitmap, once, when the module registers; the hooks then test
 * two bits indexed by the function number (trace.h), O(1) per call.
 *
 * Bits of function n: bit 2n   = matches -F (its calls and what they call
 *                                 are traced),
 *                     bit 2n+1 = off (matches -N, or outside the --domain).
 * The patterns come from the recorder in the session (filter_spec_off):
 * NUL-separated "+glob" (-F), "-glob" (-N), "=name" (domain member).
 *
 * The runtime has no libelf: the module's ELF file is mapped and its .symtab
 * (else .dynsym) read directly.  A function symbol's link-time address is
 * matched against the module's numbered functions (sorted copy, binary
 * search); aliases of one address combine.  A glob matches the name as the
 * symbol table spells it or, for a C++ name, as demangled ("ns::S::operator()(int)
 * const"), through the program's own __cxa_demangle (libstdc++), found with
 * dlsym: a program without it matches mangled names only.  Demangling
 * mallocs, once per numbered function of the module, at registration only.
 * Any failure leaves the module unfiltered and says so once. */
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <stdlib.h>
#include <fnmatch.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rt/rt.h"

struct addr_num {
	uint64_t addr;
	uint32_t num;
};

static void *scratch(size_t n)
{
	void *p = mmap(NULL, n ? n : 1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

/* In-place heap sort by address (no libc qsort callbacks into user code). */
static void sift(struct addr_num *a, size_t i, size_t n)
{
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= n)
			return;
		if (c + 1 < n && a[c + 1].addr > a[c].addr)
			c++;
		if (a[i].addr >= a[c].addr)
			return;
		struct addr_num t = a[i];
		a[i] = a[c];
		a[c] = t;
		i = c;
	}
}

static void sort_addrs(struct addr_num *a, size_t n)
{
	for (size_t i = n / 2; i-- > 0;)
		sift(a, i, n);
	for (size_t k = n; k-- > 1;) {
		struct addr_num t = a[0];
		a[0] = a[k];
		a[k] = t;
		sift(a, 0, k);
	}
}

typedef char *(*demangle_fn)(const char *mangled, char *buf, size_t *len, int *status);

/* name, or its demangled form dm (NULL for none), matches glob. */
static int glob_match(const char *glob, const char *name, const char *dm)
{
	return fnmatch(glob, name, 0) == 0 || (dm && fnmatch(glob, dm, 0) == 0);
}

static uint32_t spec_bits(const char *spec, uint64_t len, const char *name, const char *dm, int *in_domain)
{
	uint32_t bits = 0;
	for (const char *p = spec; p < spec + len; p += strlen(p) + 1) {
		if (p[0] == '+' && glob_match(p + 1, name, dm))
			bits |= 1u;
		else if (p[0] == '-' && glob_match(p + 1, name, dm))
			bits |= 2u;
		else if (p[0] == '=' && !strcmp(p + 1, name))
			*in_domain = 1;
	}
	return bits;
}

RT_HIDDEN void rt_filter_module(struct sonde_module *M)
{
	struct sonde_session_hdr *S = rt_sess;
	if (!(S->mode & SONDE_MODE_TRACE) || !S->filter_spec_off || !S->filter_spec_len || !M->nfuncs)
		return;
	const char *spec = sess_ptr(S, S->filter_spec_off);
	uint64_t slen = S->filter_spec_len;
	int has_domain = 0, has_globs = 0;
	for (const char *p = spec; p < spec + slen; p += strlen(p) + 1) {
		if (p[0] == '=')
			has_domain = 1;
		else
			has_globs = 1;
	}
	demangle_fn demangle = has_globs ? (demangle_fn)dlsym(RTLD_DEFAULT, "__cxa_demangle") : NULL;

	uint32_t nf = M->nfuncs;
	size_t bm_len = (nf + 1 + 3) / 4;
	uint64_t bm_off = sess_alloc(S, bm_len);
	if (!bm_off) {
		atomic_fetch_add_explicit(&S->lost[SONDE_LOST_SESSION_MEM], 1, memory_order_relaxed);
		return;
	}
	uint8_t *bm = sess_ptr(S, bm_off);
	memset(bm, 0, bm_len);
	/* in the domain: one byte per function (scratch) */
	size_t an_len = sizeof(struct addr_num) * nf + nf;
	struct addr_num *an = scratch(an_len);
	if (!an)
		return;
	uint8_t *dom = (uint8_t *)(an + nf);
	const uint64_t *funcs = sess_ptr(S, M->funcs_off);
	for (uint32_t i = 0; i < nf; i++)
		an[i] = (struct addr_num){ funcs[i], i };
	sort_addrs(an, nf);

	int fd = open(M->path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	void *map = MAP_FAILED;
	if (fd >= 0 && fstat(fd, &st) == 0 && (size_t)st.st_size >= sizeof(Elf64_Ehdr))
		map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (fd >= 0)
		close(fd);
	if (map == MAP_FAILED) {
		rt_log("trace filters: cannot read a module's symbols; it is traced unfiltered");
		munmap(an, an_len);
		return;
	}
	size_t fsize = (size_t)st.st_size;
	const uint8_t *base = map;
	const Elf64_Ehdr *eh = map;
	int matched_any = 0;
	if (memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh->e_shoff > fsize || eh->e_shentsize != sizeof(Elf64_Shdr) ||
	    (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr) > fsize - eh->e_shoff)
		goto done;
	const Elf64_Shdr *sh = (const Elf64_Shdr *)(base + eh->e_shoff);
	/* .symtab when present (all functions), else .dynsym (exported ones). */
	int want = SHT_SYMTAB;
	for (int pass = 0; pass < 2 && !matched_any; pass++, want = SHT_DYNSYM) {
		for (unsigned s = 0; s < eh->e_shnum; s++) {
			if (sh[s].sh_type != (unsigned)want || sh[s].sh_link >= eh->e_shnum ||
			    sh[s].sh_entsize != sizeof(Elf64_Sym))
				continue;
			const Elf64_Shdr *strs = &sh[sh[s].sh_link];
			if (sh[s].sh_offset > fsize || sh[s].sh_size > fsize - sh[s].sh_offset || strs->sh_offset > fsize ||
			    strs->sh_size > fsize - strs->sh_offset)
				continue;
			const Elf64_Sym *sym = (const Elf64_Sym *)(base + sh[s].sh_offset);
			const char *str = (const char *)(base + strs->sh_offset);
			size_t nsym = sh[s].sh_size / sizeof(Elf64_Sym);
			for (size_t k = 0; k < nsym; k++) {
				unsigned type = ELF64_ST_TYPE(sym[k].st_info);
				if ((type != STT_FUNC && type != STT_GNU_IFUNC) || sym[k].st_shndx == SHN_UNDEF ||
				    sym[k].st_name >= strs->sh_size)
					continue;
				const char *name = str + sym[k].st_name;
				if (!memchr(name, 0, strs->sh_size - sym[k].st_name))
					continue;
				/* binary search of the function with this address */
				size_t lo = 0, hi = nf;
				while (lo < hi) {
					size_t mid = (lo + hi) / 2;
					if (an[mid].addr < sym[k].st_value)
						lo = mid + 1;
					else
						hi = mid;
				}
				char *dm = NULL;
				if (demangle && lo < nf && an[lo].addr == sym[k].st_value && name[0] == '_' && name[1] == 'Z') {
					int status = -1;
					dm = demangle(name, NULL, NULL, &status);
					if (status != 0) {
						free(dm);
						dm = NULL;
					}
				}
				for (; lo < nf && an[lo].addr == sym[k].st_value; lo++) {
					int in_dom = 0;
					uint32_t b = spec_bits(spec, slen, name, dm, &in_dom);
					uint32_t n = an[lo].num;
					bm[n >> 2] |= (uint8_t)(b << ((n & 3) * 2));
					if (in_dom)
						dom[n] = 1;
					matched_any = 1;
				}
				free(dm);
			}
		}
	}
	if (has_domain)
		for (uint32_t n = 0; n < nf; n++)
			if (!dom[n])
				bm[n >> 2] |= (uint8_t)(2u << ((n & 3) * 2));
done:
	if (!matched_any)
		rt_log("trace filters: a module has no readable symbol table; its functions match no pattern");
	munmap(map, fsize);
	munmap(an, an_len);
	atomic_signal_fence(memory_order_release);
	M->filter_off = bm_off;
}
