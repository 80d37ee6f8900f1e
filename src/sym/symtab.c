/* symtab.c — ELF symbol tables of one module, through libelf: sym_open /
 * sym_close (including the search for separate debug info by build-id and
 * .gnu_debuglink), function symbols from .symtab and .dynsym sorted once for
 * binary-search lookup (sym_lookup), data objects for naming locks
 * (sym_data_name), and name search with exact-then-glob matching on
 * demangled and raw names (sym_find).  Addresses are link-time virtual
 * addresses.  Demangling and source positions are computed lazily, once per
 * symbol; every string handed out lives until sym_close.
 */
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <dwarf.h>
#include <elfutils/libdwelf.h>

#include "sym/sym_int.h"

/* ---- string arena: everything handed out lives until sym_close ---- */

struct sym_arena {
	struct sym_arena *next;
	size_t used, cap;
	char data[];
};

const char *sym__strdup(struct sym_module *m, const char *s)
{
	size_t n = strlen(s) + 1;
	struct sym_arena *a = m->arena;
	if (!a || a->cap - a->used < n) {
		size_t cap = n > 16384 ? n : 16384;
		a = malloc(sizeof(*a) + cap);
		if (!a)
			return NULL;
		a->next = m->arena;
		a->used = 0;
		a->cap = cap;
		m->arena = a;
	}
	char *p = a->data + a->used;
	memcpy(p, s, n);
	a->used += n;
	return p;
}

/* ---- loading symbols ---- */

struct symvec {
	struct sym_ent *v;
	size_t n, cap;
};

static int symvec_push(struct symvec *sv, const struct sym_ent *e)
{
	if (sv->n == sv->cap) {
		size_t cap = sv->cap ? sv->cap * 2 : 256;
		struct sym_ent *v = realloc(sv->v, cap * sizeof(*v));
		if (!v)
			return -1;
		sv->v = v;
		sv->cap = cap;
	}
	sv->v[sv->n++] = *e;
	return 0;
}

/* Preference among aliases at one address (lower wins): a symbol with a
 * size, then a name without the "__" of internal aliases (calloc over
 * __libc_calloc), then global over weak over local binding. */
static uint8_t sym_rank(const GElf_Sym *s, const char *name)
{
	uint8_t r = 0;
	if (s->st_size == 0)
		r += 8;
	if (name[0] == '_' && name[1] == '_')
		r += 4;
	switch (GELF_ST_BIND(s->st_info)) {
	case STB_GLOBAL: break;
	case STB_WEAK:   r += 1; break;
	default:         r += 2; break;
	}
	return r;
}

/* End address of section `ndx` of `elf`, or UINT64_MAX if unknown. */
static uint64_t section_end(Elf *elf, size_t ndx)
{
	if (ndx == SHN_UNDEF || ndx >= SHN_LORESERVE)
		return UINT64_MAX;
	Elf_Scn *scn = elf_getscn(elf, ndx);
	GElf_Shdr sh;
	if (!scn || !gelf_getshdr(scn, &sh) || !(sh.sh_flags & SHF_ALLOC))
		return UINT64_MAX;
	return sh.sh_addr + sh.sh_size;
}

/* Reads one SHT_SYMTAB / SHT_DYNSYM section into funcs / datas. */
static int load_symtab(Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh,
                       struct symvec *funcs, struct symvec *datas)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	if (!d || sh->sh_entsize == 0)
		return 0;
	size_t n = sh->sh_size / sh->sh_entsize;
	GElf_Ehdr eh;
	bool thumb = gelf_getehdr(elf, &eh) && eh.e_machine == EM_ARM;
	for (size_t i = 1; i < n; i++) {
		GElf_Sym s;
		if (!gelf_getsym(d, (int)i, &s))
			break;
		int type = GELF_ST_TYPE(s.st_info);
		bool func = type == STT_FUNC || type == STT_GNU_IFUNC;
		bool data = type == STT_OBJECT;
		if (!func && !data)
			continue;
		if (s.st_shndx == SHN_UNDEF || s.st_value == 0)
			continue;
		const char *name = elf_strptr(elf, sh->sh_link, s.st_name);
		if (!name || !*name)
			continue;
		struct sym_ent e = {0};
		e.addr = s.st_value;
		if (func && thumb)
			e.addr &= ~(uint64_t)1;     /* ARM: bit 0 says Thumb code, not part of the address */
		e.size = s.st_size;
		e.raw = name;
		e.rank = sym_rank(&s, name);
		e.sized = s.st_size != 0;
		if (func) {
			/* size-0 functions: end is fixed up after sorting; keep
			 * the section end here as the upper bound. */
			e.end = e.sized ? e.addr + e.size : section_end(elf, s.st_shndx);
			if (symvec_push(funcs, &e) < 0)
				return -1;
		} else {
			e.end = e.addr + (e.sized ? e.size : 1);
			if (symvec_push(datas, &e) < 0)
				return -1;
		}
	}
	return 0;
}

static int load_elf_syms(Elf *elf, bool want_symtab, bool want_dynsym,
                         struct symvec *funcs, struct symvec *datas, bool *had_symtab)
{
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_SYMTAB && want_symtab) {
			if (had_symtab)
				*had_symtab = true;
			if (load_symtab(elf, scn, &sh, funcs, datas) < 0)
				return -1;
		} else if (sh.sh_type == SHT_DYNSYM && want_dynsym) {
			if (load_symtab(elf, scn, &sh, funcs, datas) < 0)
				return -1;
		}
	}
	return 0;
}

static int ent_cmp(const void *a, const void *b)
{
	const struct sym_ent *x = a, *y = b;
	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return strcmp(x->raw, y->raw);
}

/* Sorts, drops duplicates (same address and name: .symtab + .dynsym). */
static size_t sort_dedupe(struct sym_ent *v, size_t n)
{
	if (n == 0)
		return 0;
	qsort(v, n, sizeof(*v), ent_cmp);
	size_t o = 1;
	for (size_t i = 1; i < n; i++) {
		if (v[i].addr == v[o - 1].addr && strcmp(v[i].raw, v[o - 1].raw) == 0) {
			if (!v[o - 1].sized && v[i].sized)
				v[o - 1] = v[i];
			continue;
		}
		v[o++] = v[i];
	}
	return o;
}

/* Functions without st_size extend to the next function start, bounded by
 * the end of their section. */
static void fix_unsized(struct sym_ent *v, size_t n)
{
	size_t i = 0;
	while (i < n) {
		size_t j = i;
		while (j < n && v[j].addr == v[i].addr)
			j++;
		uint64_t next = j < n ? v[j].addr : UINT64_MAX;
		for (size_t k = i; k < j; k++) {
			if (v[k].sized)
				continue;
			uint64_t end = v[k].end < next ? v[k].end : next;
			if (end == UINT64_MAX || end <= v[k].addr)
				end = v[k].addr + 1;
			v[k].end = end;
			v[k].size = end - v[k].addr;
		}
		i = j;
	}
}

/* Append [lo, hi) to m's executable ranges (*cap: their room). */
static int text_add(struct sym_module *m, size_t *cap, uint64_t lo, uint64_t hi)
{
	if (m->ntext == *cap) {
		size_t c = *cap ? *cap * 2 : 8;
		struct sym_range *t = realloc(m->text, c * sizeof(*t));
		if (!t)
			return -1;
		m->text = t;
		*cap = c;
	}
	m->text[m->ntext].lo = lo;
	m->text[m->ntext].hi = hi;
	m->ntext++;
	return 0;
}

/* Executable sections, for rejecting line rows of discarded code. */
static int load_text_ranges(struct sym_module *m)
{
	size_t cap = 0;
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(m->elf, scn)) != NULL) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh))
			continue;
		if ((sh.sh_flags & (SHF_ALLOC | SHF_EXECINSTR)) != (SHF_ALLOC | SHF_EXECINSTR) ||
		    sh.sh_size == 0)
			continue;
		if (text_add(m, &cap, sh.sh_addr, sh.sh_addr + sh.sh_size))
			return -1;
	}
	if (m->ntext)
		return 0;
	/* No section headers: executable PT_LOAD segments. */
	size_t nph = 0;
	if (elf_getphdrnum(m->elf, &nph) != 0)
		return 0;
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(m->elf, (int)i, &ph) || ph.p_type != PT_LOAD || !(ph.p_flags & PF_X))
			continue;
		if (text_add(m, &cap, ph.p_vaddr, ph.p_vaddr + ph.p_memsz))
			return -1;
	}
	return 0;
}

bool sym__in_text(const struct sym_module *m, uint64_t vaddr)
{
	if (m->ntext == 0)
		return vaddr != 0;
	for (size_t i = 0; i < m->ntext; i++)
		if (vaddr >= m->text[i].lo && vaddr < m->text[i].hi)
			return true;
	return false;
}

/* ---- opening files ---- */

/* Opens `path` only if it is a regular file: the paths come from recordings
 * and /proc/PID/maps, and opening a FIFO or a device could block forever or
 * have side effects.  The type is checked before the open, and again on the
 * descriptor (opened non-blocking) in case the file was replaced between.
 * Returns the descriptor, or -1 with *err set. */
static int open_regular(const char *path, const char **err)
{
	struct stat st;
	if (stat(path, &st) != 0) {
		*err = strerror(errno);
		return -1;
	}
	if (!S_ISREG(st.st_mode)) {
		*err = "not a regular file";
		return -1;
	}
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		*err = strerror(errno);
		return -1;
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		*err = "not a regular file";
		close(fd);
		return -1;
	}
	return fd;
}

/* ---- DWARF and separate debug info ---- */

static bool dwarf_has_units(Dwarf *dw)
{
	Dwarf_CU *cu = NULL;
	Dwarf_Die cudie;
	uint8_t ut;
	while (dwarf_get_units(dw, cu, &cu, NULL, &ut, &cudie, NULL) == 0) {
		if (ut == DW_UT_compile || ut == DW_UT_partial || ut == DW_UT_skeleton)
			return true;
	}
	return false;
}

/* Opens `path` as a debug file for m; requires a matching build-id when the
 * module has one.  Returns 0 and sets m->dbg_* / m->dw on success. */
static int try_debug_file(struct sym_module *m, const char *path,
                          const void *bid, ssize_t bidlen)
{
	const char *why;
	int fd = open_regular(path, &why);
	if (fd < 0)
		return -1;
	Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!e || elf_kind(e) != ELF_K_ELF)
		goto fail;
	if (bidlen > 0) {
		const void *b2 = NULL;
		ssize_t l2 = dwelf_elf_gnu_build_id(e, &b2);
		if (l2 != bidlen || memcmp(bid, b2, (size_t)bidlen) != 0)
			goto fail;
	}
	Dwarf *dw = dwarf_begin_elf(e, DWARF_C_READ, NULL);
	if (!dw)
		goto fail;
	if (!dwarf_has_units(dw)) {
		dwarf_end(dw);
		goto fail;
	}
	m->dbg_fd = fd;
	m->dbg_elf = e;
	m->dw = dw;
	return 0;
fail:
	if (e)
		elf_end(e);
	close(fd);
	return -1;
}

/* The debug file of build-id bid in the directories of a colon-separated
 * list: DIR/.build-id/xx/yyyy.debug, as gdb's debug-file-directory and
 * /usr/lib/debug (layout 0), or DIR/xxyyyy/debuginfo, as a debuginfod
 * client's cache (layout 1).  Local files only: nothing is fetched. */
static int try_build_id_dirs(struct sym_module *m, const char *dirs, int layout,
                             const unsigned char *b, ssize_t bidlen)
{
	char hex[2 * 64 + 1];
	if (bidlen > 64)
		return -1;
	for (ssize_t i = 0; i < bidlen; i++)
		snprintf(hex + 2 * i, 3, "%02x", b[i]);
	for (const char *d = dirs; d && *d;) {
		const char *end = strchr(d, ':');
		size_t len = end ? (size_t)(end - d) : strlen(d);
		char buf[PATH_MAX];
		int k = layout == 0 ? snprintf(buf, sizeof(buf), "%.*s/.build-id/%.2s/%s.debug", (int)len, d, hex, hex + 2)
		                    : snprintf(buf, sizeof(buf), "%.*s/%s/debuginfo", (int)len, d, hex);
		if (len && k > 0 && k < (int)sizeof(buf) && try_debug_file(m, buf, b, bidlen) == 0)
			return 0;
		d = end ? end + 1 : d + len;
	}
	return -1;
}

/* The directories of a debuginfod client's cache, as debuginfod-find uses
 * them: $DEBUGINFOD_CACHE_PATH, else $XDG_CACHE_HOME/debuginfod_client, else
 * ~/.cache/debuginfod_client. */
static const char *debuginfod_cache(char *buf, size_t n)
{
	const char *c = getenv("DEBUGINFOD_CACHE_PATH"), *x = getenv("XDG_CACHE_HOME"), *h = getenv("HOME");
	if (c && *c)
		return c;
	if (x && *x)
		snprintf(buf, n, "%s/debuginfod_client", x);
	else if (h && *h)
		snprintf(buf, n, "%s/.cache/debuginfod_client", h);
	else
		return NULL;
	return buf;
}

static void find_debug_file(struct sym_module *m, const char *path)
{
	const void *bid = NULL;
	ssize_t bidlen = dwelf_elf_gnu_build_id(m->elf, &bid);
	char buf[PATH_MAX];
	if (bidlen > 1) {
		if (try_build_id_dirs(m, getenv("SONDE_DEBUG_DIRS"), 0, bid, bidlen) == 0 ||
		    try_build_id_dirs(m, "/usr/lib/debug", 0, bid, bidlen) == 0 ||
		    try_build_id_dirs(m, debuginfod_cache(buf, sizeof buf), 1, bid, bidlen) == 0)
			return;
	}
	GElf_Word crc;
	const char *link = dwelf_elf_gnu_debuglink(m->elf, &crc);
	if (!link || !*link || strchr(link, '/'))
		return;
	char *real = realpath(path, NULL);
	if (!real)
		return;
	char *slash = strrchr(real, '/');
	const char *dir = real;
	if (slash == real)
		dir = "";
	if (slash)
		*slash = 0;
	const char *fmts[] = { "%s/%s", "%s/.debug/%s", "/usr/lib/debug%s/%s" };
	for (size_t i = 0; i < sizeof(fmts) / sizeof(fmts[0]); i++) {
		int n = snprintf(buf, sizeof(buf), fmts[i], dir, link);
		if (n <= 0 || n >= (int)sizeof(buf))
			continue;
		if (i == 0 && slash && strcmp(slash + 1, link) == 0)
			continue; /* the module itself */
		if (try_debug_file(m, buf, bid, bidlen) == 0)
			break;
	}
	free(real);
}

/* ---- open / close ---- */

struct sym_module *sym_open(const char *path, const char **err)
{
	const char *dummy;
	if (!err)
		err = &dummy;
	if (!path) {
		*err = "no file name";
		return NULL;
	}
	if (elf_version(EV_CURRENT) == EV_NONE) {
		*err = "libelf is out of date";
		return NULL;
	}
	struct sym_module *m = calloc(1, sizeof(*m));
	if (!m) {
		*err = "out of memory";
		return NULL;
	}
	m->fd = m->dbg_fd = -1;
	m->fd = open_regular(path, err);
	if (m->fd < 0) {
		free(m);
		return NULL;
	}
	m->elf = elf_begin(m->fd, ELF_C_READ_MMAP, NULL);
	if (!m->elf || elf_kind(m->elf) != ELF_K_ELF) {
		if (m->elf)
			elf_end(m->elf);
		m->elf = NULL;
		/* 8051 firmware: the functions of the SDCC .cdb beside it */
		if (!sym__cdb_load(m, path))
			return m;
		*err = "not an ELF file";
		goto fail;
	}
	GElf_Ehdr eh;
	if (!gelf_getehdr(m->elf, &eh)) {
		*err = "damaged ELF header";
		goto fail;
	}
	if (load_text_ranges(m) < 0) {
		*err = "out of memory";
		goto fail;
	}

	m->dw = dwarf_begin_elf(m->elf, DWARF_C_READ, NULL);
	if (m->dw && !dwarf_has_units(m->dw)) {
		dwarf_end(m->dw);
		m->dw = NULL;
	}
	if (!m->dw)
		find_debug_file(m, path);

	struct symvec funcs = {0}, datas = {0};
	bool had_symtab = false;
	if (load_elf_syms(m->elf, true, true, &funcs, &datas, &had_symtab) < 0)
		goto oom;
	if (!had_symtab && m->dbg_elf &&
	    load_elf_syms(m->dbg_elf, true, false, &funcs, &datas, &had_symtab) < 0)
		goto oom;
	m->full_symtab = had_symtab;
	m->nfuncs = sort_dedupe(funcs.v, funcs.n);
	m->funcs = funcs.v;
	fix_unsized(m->funcs, m->nfuncs);
	m->ndatas = sort_dedupe(datas.v, datas.n);
	m->datas = datas.v;
	return m;
oom:
	free(funcs.v);
	free(datas.v);
	*err = "out of memory";
fail:
	sym_close(m);
	return NULL;
}

static void free_ents(struct sym_ent *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i].dem);
	free(v);
}

void sym_close(struct sym_module *m)
{
	if (!m)
		return;
	sym__free_vars(m);
	sym__free_lines(m);
	free_ents(m->funcs, m->nfuncs);
	free_ents(m->datas, m->ndatas);
	free_ents(m->dfuncs, m->ndfuncs);
	free(m->hex);
	free(m->text);
	while (m->arena) {
		struct sym_arena *n = m->arena->next;
		free(m->arena);
		m->arena = n;
	}
	if (m->dw)
		dwarf_end(m->dw);
	if (m->dbg_elf)
		elf_end(m->dbg_elf);
	if (m->dbg_fd >= 0)
		close(m->dbg_fd);
	if (m->elf)
		elf_end(m->elf);
	if (m->fd >= 0)
		close(m->fd);
	free(m);
}

/* ---- lookup ---- */

static const char *ent_name(struct sym_ent *e)
{
	if (!e->have_dem) {
		e->dem = sym_demangle(e->raw);
		e->have_dem = 1;
	}
	return e->dem ? e->dem : e->raw;
}

static void ent_line(struct sym_module *m, struct sym_ent *e)
{
	if (e->have_line)
		return;
	e->have_line = 1;
	e->file = NULL;
	e->line = 0;
	sym__func_line(m, e->addr, &e->file, &e->line);
}

static void ent_info(struct sym_module *m, struct sym_ent *e, struct sym_info *out)
{
	out->name = ent_name(e);
	out->mangled = e->raw;
	ent_line(m, e);
	out->file = e->file;
	out->line = e->line;
	out->start = e->addr;
	out->size = e->size;
}

/* Index of the last entry with addr <= vaddr, or -1. */
static ptrdiff_t last_le(const struct sym_ent *v, size_t n, uint64_t vaddr)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (v[mid].addr <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (ptrdiff_t)lo - 1;
}

/* Best entry containing vaddr: the preferred alias of the closest start;
 * a few earlier starts are checked for symbols that enclose others. */
static struct sym_ent *find_containing(struct sym_ent *v, size_t n, uint64_t vaddr)
{
	ptrdiff_t i = last_le(v, n, vaddr);
	int groups = 0;
	while (i >= 0 && groups < 8) {
		ptrdiff_t first = i;
		while (first > 0 && v[first - 1].addr == v[i].addr)
			first--;
		for (ptrdiff_t k = first; k <= i; k++)
			if (vaddr < v[k].end)
				return &v[k];
		i = first - 1;
		groups++;
	}
	return NULL;
}

static const char *hex_name(struct sym_module *m, uint64_t vaddr)
{
	if (m->nhex * 2 >= m->hexcap) {
		size_t cap = m->hexcap ? m->hexcap * 2 : 256;
		struct sym_hex *h = calloc(cap, sizeof(*h));
		if (!h)
			return "??";
		for (size_t i = 0; i < m->hexcap; i++) {
			if (!m->hex[i].s)
				continue;
			size_t j = (size_t)(m->hex[i].addr * 0x9E3779B97F4A7C15ull) & (cap - 1);
			while (h[j].s)
				j = (j + 1) & (cap - 1);
			h[j] = m->hex[i];
		}
		free(m->hex);
		m->hex = h;
		m->hexcap = cap;
	}
	size_t j = (size_t)(vaddr * 0x9E3779B97F4A7C15ull) & (m->hexcap - 1);
	while (m->hex[j].s) {
		if (m->hex[j].addr == vaddr)
			return m->hex[j].s;
		j = (j + 1) & (m->hexcap - 1);
	}
	char buf[32];
	snprintf(buf, sizeof(buf), "0x%" PRIx64, vaddr);
	const char *s = sym__strdup(m, buf);
	if (!s)
		return "??";
	m->hex[j].addr = vaddr;
	m->hex[j].s = s;
	m->nhex++;
	return s;
}

/* Functions found through DWARF only, cached so each is resolved once. */
static struct sym_ent *dwarf_func(struct sym_module *m, uint64_t vaddr)
{
	struct sym_ent *e = find_containing(m->dfuncs, m->ndfuncs, vaddr);
	if (e)
		return e;
	/* With a full .symtab every function DWARF knows has a symbol: an
	 * address no symbol covers is padding or PLT, not worth a DIE walk. */
	if (!m->dw || m->full_symtab)
		return NULL;
	struct sym_ent ne = {0};
	if (sym__dwarf_func(m, vaddr, &ne) < 0)
		return NULL;
	if (m->ndfuncs == m->dfcap) {
		size_t cap = m->dfcap ? m->dfcap * 2 : 64;
		struct sym_ent *v = realloc(m->dfuncs, cap * sizeof(*v));
		if (!v) {
			free(ne.dem);
			return NULL;
		}
		m->dfuncs = v;
		m->dfcap = cap;
	}
	size_t pos = (size_t)(last_le(m->dfuncs, m->ndfuncs, ne.addr) + 1);
	memmove(m->dfuncs + pos + 1, m->dfuncs + pos, (m->ndfuncs - pos) * sizeof(*m->dfuncs));
	m->dfuncs[pos] = ne;
	m->ndfuncs++;
	return &m->dfuncs[pos];
}

int sym_lookup(struct sym_module *m, uint64_t vaddr, struct sym_info *out)
{
	memset(out, 0, sizeof(*out));
	if (!m) {
		out->name = "??";
		return -1;
	}
	struct sym_ent *e = find_containing(m->funcs, m->nfuncs, vaddr);
	if (!e)
		e = dwarf_func(m, vaddr);
	if (!e) {
		out->name = hex_name(m, vaddr);
		return -1;
	}
	ent_info(m, e, out);
	return 0;
}

int sym_data_name(struct sym_module *m, uint64_t vaddr, char *buf, size_t len)
{
	if (!m || !buf || len == 0)
		return -1;
	struct sym_ent *e = find_containing(m->datas, m->ndatas, vaddr);
	if (!e) {
		buf[0] = 0;
		return -1;
	}
	const char *name = ent_name(e);
	if (vaddr == e->addr)
		snprintf(buf, len, "%s", name);
	else
		snprintf(buf, len, "%s+%" PRIu64, name, vaddr - e->addr);
	return 0;
}

/* ---- find by name ---- */

/* The demangled name without its parameter list, cv/ref qualifiers and
 * clone suffixes: "ns::K::f(int) const [clone .cold]" -> "ns::K::f".
 * Writes into *buf (grown as needed); returns NULL when there is no
 * parameter list.  *clone is set when a "[clone" suffix was present. */
static const char *base_name(const char *dem, char **buf, size_t *cap, bool *clone)
{
	*clone = false;
	size_t n = strlen(dem);
	const char *c = strstr(dem, " [clone ");
	if (c) {
		*clone = true;
		n = (size_t)(c - dem);
	}
	/* strip trailing qualifiers after the closing ')' */
	while (n > 0 && dem[n - 1] != ')') {
		char ch = dem[n - 1];
		if (ch == ' ' || ch == '&' || (ch >= 'a' && ch <= 'z'))
			n--;
		else
			return NULL;
	}
	if (n == 0)
		return NULL;
	int depth = 0;
	size_t i = n;
	while (i > 0) {
		i--;
		if (dem[i] == ')')
			depth++;
		else if (dem[i] == '(' && --depth == 0)
			break;
	}
	if (depth != 0 || i == 0)
		return NULL;
	if (*cap < i + 1) {
		char *nb = realloc(*buf, i + 1);
		if (!nb)
			return NULL;
		*buf = nb;
		*cap = i + 1;
	}
	memcpy(*buf, dem, i);
	(*buf)[i] = 0;
	return *buf;
}

int sym_find(struct sym_module *m, const char *pattern,
             void (*cb)(void *arg, const struct sym_info *info), void *arg)
{
	if (!m || !pattern)
		return 0;
	char *bbuf = NULL;
	size_t bcap = 0;
	int count = 0;
	for (int pass = 0; pass < 2 && count == 0; pass++) {
		bool have_last = false;
		uint64_t last = 0;
		for (size_t i = 0; i < m->nfuncs; i++) {
			struct sym_ent *e = &m->funcs[i];
			if (have_last && e->addr == last)
				continue; /* one report per address */
			const char *dem = ent_name(e) == e->raw ? NULL : e->dem;
			bool clone = false;
			const char *base = dem ? base_name(dem, &bbuf, &bcap, &clone) : NULL;
			bool hit;
			if (pass == 0)
				hit = strcmp(pattern, e->raw) == 0 ||
				      (dem && strcmp(pattern, dem) == 0) ||
				      (base && !clone && strcmp(pattern, base) == 0);
			else
				hit = fnmatch(pattern, e->raw, 0) == 0 ||
				      (dem && fnmatch(pattern, dem, 0) == 0) ||
				      (base && fnmatch(pattern, base, 0) == 0);
			if (!hit)
				continue;
			have_last = true;
			last = e->addr;
			count++;
			if (cb) {
				struct sym_info info;
				ent_info(m, e, &info);
				cb(arg, &info);
			}
		}
	}
	free(bbuf);
	return count;
}
