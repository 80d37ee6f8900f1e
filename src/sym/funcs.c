/* funcs.c — every function a module defines, for instrumenting it without a
 * rebuild (src/instr/plan.c): the function symbols of .symtab (else .dynsym,
 * and the separate debug file's .symtab when one is installed), and the
 * ranges of .eh_frame that no symbol starts (a stripped binary's static
 * functions), each checked against its call frame information: a function is
 * entered with the return address at the stack pointer (CFA = rsp + 8), which
 * a fragment jumped to from its function (GCC's "foo.cold") is not. */
#include <stdlib.h>
#include <string.h>

#include <dwarf.h>

#include "sym/sym_int.h"

static const uint8_t *sym_code_elf(Elf *elf, uint64_t vaddr, size_t *avail);

struct fnvec {
	struct sym_fn *v;
	size_t n, cap;
};

/* Room for one more element of size `size` in the array *v of *cap (doubled,
 * first `first`): 0, or -1 (the array unchanged). */
static int grow(void **v, size_t n, size_t *cap, size_t size, size_t first)
{
	if (n < *cap)
		return 0;
	size_t c = *cap ? *cap * 2 : first;
	void *w = realloc(*v, c * size);
	if (!w)
		return -1;
	*v = w;
	*cap = c;
	return 0;
}

static int push(struct fnvec *f, uint64_t addr, uint64_t size, const char *name)
{
	if (grow((void **)&f->v, f->n, &f->cap, sizeof *f->v, 1024))
		return -1;
	f->v[f->n++] = (struct sym_fn){ addr, size, name, 0 };
	return 0;
}

static int fn_cmp(const void *a, const void *b)
{
	const struct sym_fn *x = a, *y = b;
	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return (x->name == NULL) - (y->name == NULL); /* a named one first */
}

/* Is the CFA at addr the stack pointer + 8 (a function's entry)?  1 yes,
 * 0 no, -1 unknown (no CFI for addr). */
static int entry_cfa(Dwarf_CFI *cfi, uint64_t addr, uint64_t *end)
{
	Dwarf_Frame *fr = NULL;
	if (!cfi || dwarf_cfi_addrframe(cfi, addr, &fr) != 0 || !fr)
		return -1;
	Dwarf_Addr lo = 0, hi = 0;
	dwarf_frame_info(fr, &lo, &hi, NULL);
	if (end)
		*end = hi;
	Dwarf_Op *ops = NULL;
	size_t nops = 0;
	int ok = 0;
	if (dwarf_frame_cfa(fr, &ops, &nops) == 0 && nops == 1) {
		if (ops[0].atom == DW_OP_bregx)
			ok = ops[0].number == 7 && ops[0].number2 == 8;
		else if (ops[0].atom == DW_OP_breg7)
			ok = (int64_t)ops[0].number == 8;
	}
	free(fr);
	return ok;
}

static Elf_Scn *section_named(Elf *elf, const char *want, GElf_Shdr *sh)
{
	size_t shstrndx;
	if (elf_getshdrstrndx(elf, &shstrndx) != 0)
		return NULL;
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		if (!gelf_getshdr(scn, sh))
			continue;
		const char *name = elf_strptr(elf, shstrndx, sh->sh_name);
		if (name && !strcmp(name, want))
			return scn;
	}
	return NULL;
}

static int32_t rd32(const uint8_t *p)
{
	int32_t v;
	memcpy(&v, p, 4);
	return v;
}

/* Is vaddr in an executable section that holds functions (not a PLT,
 * whose stubs are jumped through, and whose first one is entered by a jmp
 * with the relocation's index on the stack)? */
static int in_code(Elf *elf, uint64_t vaddr)
{
	size_t shstrndx;
	if (elf_getshdrstrndx(elf, &shstrndx) != 0)
		return 0;
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS || !(sh.sh_flags & SHF_EXECINSTR) ||
		    vaddr < sh.sh_addr || vaddr >= sh.sh_addr + sh.sh_size)
			continue;
		const char *name = elf_strptr(elf, shstrndx, sh.sh_name);
		return name && strncmp(name, ".plt", 4) != 0;
	}
	return 0;
}

/* The function starts .eh_frame_hdr's search table lists (the usual
 * encodings only: the table as datarel sdata4). */
static int eh_starts(Elf *elf, Dwarf_CFI *cfi, struct fnvec *out, const struct sym_fn *named, size_t nnamed)
{
	GElf_Shdr sh;
	Elf_Scn *scn = section_named(elf, ".eh_frame_hdr", &sh);
	Elf_Data *d = scn ? elf_getdata(scn, NULL) : NULL;
	if (!d || !d->d_buf || d->d_size < 12)
		return 0;
	const uint8_t *b = d->d_buf;
	size_t len = d->d_size;
	if (b[0] != 1 || b[3] != 0x3b || (b[2] & 0x0f) != 0x03 || (b[1] & 0x0f) != 0x0b)
		return 0; /* another encoding: the symbols are all there is */
	uint64_t count = (uint32_t)rd32(b + 8);
	if (count > (len - 12) / 8)
		count = (len - 12) / 8;
	for (uint64_t i = 0; i < count; i++) {
		uint64_t start = sh.sh_addr + (uint64_t)(int64_t)rd32(b + 12 + 8 * i);
		/* symbols cover it (a binary search over the named ones) */
		size_t lo = 0, hi = nnamed;
		while (lo < hi) {
			size_t mid = (lo + hi) / 2;
			if (named[mid].addr + (named[mid].size ? named[mid].size : 1) <= start)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo < nnamed && named[lo].addr <= start)
			continue;
		/* its extent: to the next start of the table (sorted), or the end of its section */
		uint64_t end = i + 1 < count ? sh.sh_addr + (uint64_t)(int64_t)rd32(b + 12 + 8 * (i + 1)) : 0;
		size_t avail = 0;
		if (!in_code(elf, start) || entry_cfa(cfi, start, NULL) != 1 || !sym_code_elf(elf, start, &avail))
			continue;
		if (end <= start || end - start > avail)
			end = start + avail;
		if (push(out, start, end - start, NULL))
			return -1;
	}
	return 0;
}

ssize_t sym_functions(struct sym_module *m, struct sym_fn **out)
{
	struct fnvec f = { 0 };
	*out = NULL;
	if (!m->elf) { /* a firmware's .cdb (cdb_module.c): its functions as they are */
		for (size_t i = 0; i < m->nfuncs; i++)
			if (push(&f, m->funcs[i].addr, m->funcs[i].size, m->funcs[i].raw)) {
				free(f.v);
				return -1;
			}
		*out = f.v;
		return (ssize_t)f.n;
	}
	Dwarf_CFI *cfi = dwarf_getcfi_elf(m->elf);
	for (size_t i = 0; i < m->nfuncs; i++) {
		struct sym_ent *e = &m->funcs[i];
		if (i && e->addr == m->funcs[i - 1].addr)
			continue; /* an alias: the first (best ranked) names it */
		if (!sym__in_text(m, e->addr) || !in_code(m->elf, e->addr))
			continue;
		const char *cold = strstr(e->raw, ".cold");
		if (cold && (cold[5] == 0 || cold[5] == '.'))
			continue; /* a fragment its function jumps to, never called */
		if (push(&f, e->addr, e->size, e->raw))
			goto oom;
		if (cfi && entry_cfa(cfi, e->addr, NULL) == 0)
			f.v[f.n - 1].not_entry = 1;
	}
	/* .eh_frame's ranges that no symbol starts or covers: every function
	 * symbol counts here, the left-out ones too (a ".cold" fragment has its
	 * own range in .eh_frame, and must not come back as a function). */
	struct fnvec all = { 0 };
	for (size_t i = 0; i < m->nfuncs; i++)
		if (push(&all, m->funcs[i].addr, m->funcs[i].size, m->funcs[i].raw))
			goto oom;
	int rc = eh_starts(m->elf, cfi, &f, all.v, all.n);
	free(all.v);
	if (rc)
		goto oom;
	/* The ELF entry point (_start) is jumped to by the loader with argc
	 * where a return address would be. */
	GElf_Ehdr eh;
	if (gelf_getehdr(m->elf, &eh))
		for (size_t i = 0; i < f.n; i++)
			if (f.v[i].addr == eh.e_entry)
				f.v[i].not_entry = 2;
	if (f.n)
		qsort(f.v, f.n, sizeof *f.v, fn_cmp);
	if (cfi)
		dwarf_cfi_end(cfi);
	*out = f.v;
	return (ssize_t)f.n;
oom:
	if (cfi)
		dwarf_cfi_end(cfi);
	free(f.v);
	return -1;
}

const uint8_t *sym_code(struct sym_module *m, uint64_t vaddr, size_t *avail)
{
	if (!m->elf)
		return NULL;
	return sym_code_elf(m->elf, vaddr, avail);
}

static const uint8_t *sym_code_elf(Elf *elf, uint64_t vaddr, size_t *avail)
{
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS || !(sh.sh_flags & SHF_EXECINSTR) ||
		    vaddr < sh.sh_addr || vaddr >= sh.sh_addr + sh.sh_size)
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		if (!d || !d->d_buf || d->d_size != sh.sh_size)
			return NULL;
		*avail = (size_t)(sh.sh_addr + sh.sh_size - vaddr);
		return (const uint8_t *)d->d_buf + (vaddr - sh.sh_addr);
	}
	return NULL;
}

int sym_has_section(struct sym_module *m, const char *name)
{
	GElf_Shdr sh;
	return m->elf && section_named(m->elf, name, &sh) != NULL;
}

/* --- sym_cfa_rows: .eh_frame's rules as rows (sym.h) ------------------------ */

struct cfavec {
	struct sym_cfa_row *v;
	size_t n, cap;
};

/* Row r at its address: it replaces a row at the same address, and a rule
 * the same as the previous row's is not repeated. */
/* Whether two rows give the same rule (the previous row then covers both). */
static int same_rule(const struct sym_cfa_row *a, const struct sym_cfa_row *b)
{
	return a->cfa == b->cfa && a->cfa_off == b->cfa_off && a->rbp_off == b->rbp_off && a->rbp_saved == b->rbp_saved;
}

static int cfa_push(struct cfavec *c, struct sym_cfa_row r)
{
	if (c->n && c->v[c->n - 1].addr == r.addr)
		c->n--; /* a later rule for the same address replaces the earlier one */
	if (c->n && same_rule(&c->v[c->n - 1], &r))
		return 0;
	if (grow((void **)&c->v, c->n, &c->cap, sizeof *c->v, 4096))
		return -1;
	c->v[c->n++] = r;
	return 0;
}

/* Where register reg is saved: 1 at CFA + *off, 0 unchanged, 2 undefined
 * (also a register .eh_frame says nothing of), -1 another rule. */
static int cfa_reg_rule(Dwarf_Frame *fr, int reg, int64_t *off)
{
	Dwarf_Op mem[3], *ops = NULL;
	size_t n = 0;
	if (dwarf_frame_register(fr, reg, mem, &ops, &n) != 0)
		return -1;
	if (n == 0) /* libdw: ops NULL for "same value", else undefined */
		return ops ? 2 : 0;
	if (ops[0].atom != DW_OP_call_frame_cfa)
		return -1;
	if (n == 1) {
		*off = 0;
		return 1;
	}
	if (n == 2 && ops[1].atom == DW_OP_plus_uconst) {
		*off = (int64_t)ops[1].number;
		return 1;
	}
	return -1;
}

/* The row of frame fr (its address not set). */
static struct sym_cfa_row cfa_row_of(Dwarf_Frame *fr)
{
	struct sym_cfa_row r = { 0 };
	bool signal = false;
	Dwarf_Addr lo, hi;
	if (dwarf_frame_info(fr, &lo, &hi, &signal) < 0 || signal)
		return r;
	int64_t ra_off = 0, rbp_off = 0;
	int ra = cfa_reg_rule(fr, 16, &ra_off);
	if (ra == 2) {
		r.cfa = SYM_CFA_END;
		return r;
	}
	if (ra != 1 || ra_off != -8)
		return r;
	Dwarf_Op *ops = NULL;
	size_t nops = 0;
	if (dwarf_frame_cfa(fr, &ops, &nops) != 0 || nops != 1)
		return r;
	uint64_t reg;
	int64_t off;
	if (ops[0].atom == DW_OP_bregx) {
		reg = ops[0].number;
		off = (int64_t)ops[0].number2;
	} else if (ops[0].atom >= DW_OP_breg0 && ops[0].atom <= DW_OP_breg31) {
		reg = ops[0].atom - DW_OP_breg0;
		off = (int64_t)ops[0].number;
	} else
		return r;
	if ((reg != 7 && reg != 6) || off < INT32_MIN || off > INT32_MAX)
		return r;
	int rb = cfa_reg_rule(fr, 6, &rbp_off);
	if (rb == 1 && rbp_off >= INT16_MIN && rbp_off <= INT16_MAX) {
		r.rbp_saved = 1;
		r.rbp_off = (int16_t)rbp_off;
	} else if (rb != 0 && rb != 2)
		return r; /* (no rule for rbp, a callee-saved register: unchanged) */
	r.cfa = reg == 7 ? SYM_CFA_RSP : SYM_CFA_RBP;
	r.cfa_off = (int32_t)off;
	return r;
}

ssize_t sym_cfa_rows(struct sym_module *m, struct sym_cfa_row **out)
{
	struct cfavec c = { 0 };
	*out = NULL;
	GElf_Shdr sh;
	Elf_Scn *scn = section_named(m->elf, ".eh_frame_hdr", &sh);
	Elf_Data *d = scn ? elf_getdata(scn, NULL) : NULL;
	if (!d || !d->d_buf || d->d_size < 12)
		return 0;
	const uint8_t *b = d->d_buf;
	size_t len = d->d_size;
	if (b[0] != 1 || b[3] != 0x3b || (b[2] & 0x0f) != 0x03 || (b[1] & 0x0f) != 0x0b)
		return 0; /* another encoding: no rows (the stacks are copied) */
	Dwarf_CFI *cfi = dwarf_getcfi_elf(m->elf);
	if (!cfi)
		return 0;
	uint64_t count = (uint32_t)rd32(b + 8);
	if (count > (len - 12) / 8)
		count = (len - 12) / 8;
	for (uint64_t i = 0; i < count; i++) {
		uint64_t start = sh.sh_addr + (uint64_t)(int64_t)rd32(b + 12 + 8 * i);
		uint64_t next = i + 1 < count ? sh.sh_addr + (uint64_t)(int64_t)rd32(b + 12 + 8 * (i + 1)) : UINT64_MAX;
		uint64_t a = start;
		/* each row of the FDE (dwarf_frame_info's range), bounded */
		for (int k = 0; k < 100000 && a < next; k++) {
			Dwarf_Frame *fr = NULL;
			if (dwarf_cfi_addrframe(cfi, a, &fr) != 0 || !fr)
				break;
			Dwarf_Addr lo = 0, hi = 0;
			dwarf_frame_info(fr, &lo, &hi, NULL);
			struct sym_cfa_row r = cfa_row_of(fr);
			free(fr);
			r.addr = a;
			if (hi <= a)
				break;
			if (hi > next)
				hi = next; /* overlapping FDEs: the rows stay sorted */
			if (cfa_push(&c, r))
				goto oom;
			a = hi;
		}
		if (a < next) { /* past the FDE (or none there): no rule until the next one */
			struct sym_cfa_row r = { .addr = a };
			if (cfa_push(&c, r))
				goto oom;
		}
	}
	dwarf_cfi_end(cfi);
	*out = c.v;
	return (ssize_t)c.n;
oom:
	dwarf_cfi_end(cfi);
	free(c.v);
	return -1;
}
