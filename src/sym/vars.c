/* vars.c — program variables from a module's DWARF through libdw (the Dwarf
 * of its struct sym_module, so a separate debug file serves variables as it
 * serves symbols and lines; sym_vars): scope lookup at a
 * code address (locals, parameters, inlined instances, then globals),
 * access paths (p->f, s.f, a[i], *p), location expressions (registers,
 * memory, DW_OP_fbreg through the CFA from .eh_frame/.debug_frame, location
 * lists, stack and implicit values, pieces) and typed reads of the value. */
#include "sym/vars.h"

#include <ctype.h>
#include <dwarf.h>
#include <elf.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sym/sym_int.h"

/* A view of one module's DWARF: the Dwarf belongs to the struct sym_module;
 * only the .eh_frame reader is ours (.debug_frame's belongs to the Dwarf). */
struct got_slot { uint64_t value, slot; };

struct vars {
	Dwarf *dw;
	Elf *elf;               /* the loaded file's (its dynamic relocations) */
	Dwarf_CFI *cfi_eh, *cfi_dbg;
	int machine;            /* EM_*: names the registers in descriptions */
	int ptr_size;           /* bytes of a pointer and of DW_OP_deref: 4 on 32-bit targets (MIPS o32) */
	struct got_slot *got;   /* the object's own data symbols its code reaches through the GOT, by value */
	size_t ngot;
	int got_read;
};

struct expr_ops {
	struct vars_op *v;
	size_t n;
};

enum { ST_MEMBER, ST_DEREF, ST_INDEX };

struct step {
	int kind;
	int64_t off;            /* MEMBER */
	uint64_t esz;           /* INDEX: element size */
	int64_t idx;
	struct var_ref *idxref; /* INDEX by variable */
	int via_ptr;            /* INDEX on a pointer: deref first */
};

struct var_ref {
	struct expr_ops loc, fb, cfa;
	int has_const;
	int64_t cval;
	struct step *steps;
	int nsteps;
	const char *no_value;   /* optimized out at this address: why (static text) */
	int enc;                /* VAR_INT / VAR_UINT / VAR_FLOAT */
	int size;
	int ptr_size;           /* the program's (struct vars) */
	char desc[320];
};

struct vars *sym__vars_new(Dwarf *dw, Elf *elf, Dwarf_CFI *cfi_eh)
{
	struct vars *v = calloc(1, sizeof *v);
	if (!v)
		return NULL;
	v->dw = dw;
	v->elf = elf;
	GElf_Ehdr eh;
	v->machine = gelf_getehdr(elf, &eh) ? eh.e_machine : EM_X86_64;
	v->ptr_size = gelf_getclass(elf) == ELFCLASS32 ? 4 : 8;
	v->cfi_eh = cfi_eh;
	v->cfi_dbg = dwarf_getcfi(dw);
	return v;
}

void sym__vars_free(struct vars *v)
{
	if (!v)
		return;
	if (v->cfi_eh)
		dwarf_cfi_end(v->cfi_eh);
	free(v->got);
	free(v);
}

struct vars *sym_vars(struct sym_module *m, const char **err)
{
	const char *dummy;
	if (!err)
		err = &dummy;
	if (!m || !m->dw) {
		*err = "no DWARF debug information";
		return NULL;
	}
	if (m->vars)
		return m->vars;
	/* .eh_frame is in the file that is loaded, not in a separate debug file
	 * (where it is NOBITS); .debug_frame is wherever the DWARF is. */
	struct vars *v = sym__vars_new(m->dw, m->elf, dwarf_getcfi_elf(m->elf));
	if (!v) {
		*err = "out of memory";
		return NULL;
	}
	m->vars = v;
	return v;
}

void sym__free_vars(struct sym_module *m)
{
	sym__vars_free(m->vars);
	m->vars = NULL;
}

/* A DWARF 5 DW_OP_addrx / DW_OP_GNU_addr_index (clang's globals) becomes
 * the DW_OP_addr of the address it indexes in .debug_addr. */
static void resolve_addrx(Dwarf_Attribute *a, Dwarf_Op *ops, size_t n, struct expr_ops *o)
{
	for (size_t i = 0; i < n; i++) {
		Dwarf_Attribute r;
		Dwarf_Addr addr;
		if ((ops[i].atom == DW_OP_addrx || ops[i].atom == DW_OP_GNU_addr_index) &&
		    dwarf_getlocation_attr(a, &ops[i], &r) == 0 && dwarf_formaddr(&r, &addr) == 0) {
			o->v[i].atom = DW_OP_addr;
			o->v[i].n1 = addr;
		}
	}
}

static int copy_ops(struct expr_ops *o, const Dwarf_Op *ops, size_t n)
{
	o->v = calloc(n ? n : 1, sizeof *o->v);
	if (!o->v)
		return -1;
	for (size_t i = 0; i < n; i++) {
		o->v[i].atom = ops[i].atom;
		o->v[i].n1 = ops[i].number;
		o->v[i].n2 = ops[i].number2;
		if (ops[i].atom == DW_OP_implicit_value)
			o->v[i].block = (const uint8_t *)(uintptr_t)ops[i].number2;
	}
	o->n = n;
	return 0;
}

static const char *die_name(Dwarf_Die *d)
{
	Dwarf_Attribute a;
	if (!dwarf_attr_integrate(d, DW_AT_name, &a))
		return NULL;
	return dwarf_formstring(&a);
}

/* Strip typedefs and qualifiers. */
static int strip(Dwarf_Die *t)
{
	for (int guard = 0; guard < 64; guard++) {
		int tag = dwarf_tag(t);
		if (tag != DW_TAG_typedef && tag != DW_TAG_const_type && tag != DW_TAG_volatile_type &&
		    tag != DW_TAG_restrict_type && tag != DW_TAG_atomic_type)
			return 0;
		Dwarf_Attribute a;
		if (!dwarf_attr_integrate(t, DW_AT_type, &a) || !dwarf_formref_die(&a, t))
			return -1; /* void */
	}
	return -1;
}

static int type_of(Dwarf_Die *d, Dwarf_Die *t)
{
	Dwarf_Attribute a;
	if (!dwarf_attr_integrate(d, DW_AT_type, &a) || !dwarf_formref_die(&a, t))
		return -1;
	return strip(t);
}

static int find_in(Dwarf_Die *scope, const char *name, Dwarf_Die *out, int want_loc)
{
	Dwarf_Die c;
	if (dwarf_child(scope, &c) != 0)
		return 0;
	do {
		int tag = dwarf_tag(&c);
		if (tag != DW_TAG_variable && tag != DW_TAG_formal_parameter)
			continue;
		const char *n = die_name(&c);
		if (!n || strcmp(n, name))
			continue;
		if (want_loc && !dwarf_hasattr(&c, DW_AT_location) && !dwarf_hasattr(&c, DW_AT_const_value))
			continue;
		*out = c;
		return 1;
	} while (dwarf_siblingof(&c, &c) == 0);
	return 0;
}

static int add_step(struct var_ref *r, struct step s)
{
	struct step *v = realloc(r->steps, (size_t)(r->nsteps + 1) * sizeof *v);
	if (!v)
		return -1;
	r->steps = v;
	v[r->nsteps++] = s;
	return 0;
}

static int find_member(Dwarf_Die *st, const char *name, Dwarf_Die *m, int64_t *off)
{
	Dwarf_Die c;
	if (dwarf_child(st, &c) != 0)
		return -1;
	do {
		if (dwarf_tag(&c) != DW_TAG_member)
			continue;
		const char *n = die_name(&c);
		Dwarf_Attribute a;
		Dwarf_Word w = 0;
		if (dwarf_attr(&c, DW_AT_data_member_location, &a))
			dwarf_formudata(&a, &w);
		if (n && !strcmp(n, name)) {
			*m = c;
			*off = (int64_t)w;
			return 0;
		}
		if (!n) { /* anonymous struct/union member */
			Dwarf_Die t, mm;
			int64_t o2;
			if (type_of(&c, &t) == 0 && find_member(&t, name, &mm, &o2) == 0) {
				*m = mm;
				*off = (int64_t)w + o2;
				return 0;
			}
		}
	} while (dwarf_siblingof(&c, &c) == 0);
	return -1;
}

static uint64_t die_size(Dwarf_Die *t, int ptr_size)
{
	Dwarf_Word s = 0;
	if (dwarf_aggregate_size(t, &s) != 0) {
		if (dwarf_tag(t) == DW_TAG_pointer_type)
			return (uint64_t)ptr_size;
		return 0;
	}
	return s;
}

/* DWARF register r of the machine, for descriptions ("register x19"). */
static const char *reg_name(int machine, int r)
{
	static const char *const n[] = { "rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp",
		"r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15", "rip" };
	static char buf[16];
	if (machine == EM_AARCH64) {
		if (r == 31)
			return "sp";
		snprintf(buf, sizeof buf, r >= 64 && r <= 95 ? "v%d" : "x%d", r >= 64 ? r - 64 : r);
		return buf;
	}
	if (machine == EM_MIPS) {
		snprintf(buf, sizeof buf, r >= 32 && r <= 63 ? "$f%d" : "$%d", r >= 32 ? r - 32 : r);
		return buf;
	}
	if (machine == EM_ARM) {
		static const char *const a[16] = { "r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7",
			"r8", "r9", "r10", "r11", "r12", "sp", "lr", "pc" };
		if (r >= 0 && r < 16)
			return a[r];
		snprintf(buf, sizeof buf, r >= 64 && r <= 95 ? "s%d" : r >= 256 && r <= 287 ? "d%d" : "r%d",
		         r >= 256 ? r - 256 : r >= 64 ? r - 64 : r);
		return buf;
	}
	if (machine == EM_RISCV) {
		snprintf(buf, sizeof buf, r >= 32 && r <= 63 ? "f%d" : "x%d", r >= 32 ? r - 32 : r);
		return buf;
	}
	if (r >= 0 && r <= 16)
		return n[r];
	if (r >= 17 && r <= 32) {
		snprintf(buf, sizeof buf, "xmm%d", r - 17);
		return buf;
	}
	snprintf(buf, sizeof buf, "r%d", r);
	return buf;
}

static void describe_loc(struct var_ref *r, int machine, char *buf, size_t n, int is_list)
{
	const struct expr_ops *l = &r->loc;
	if (r->no_value) {
		snprintf(buf, n, "%s", r->no_value);
		return;
	}
	if (r->has_const) {
		snprintf(buf, n, "constant");
		return;
	}
	if (l->n == 1 && l->v[0].atom >= DW_OP_reg0 && l->v[0].atom <= DW_OP_reg31)
		snprintf(buf, n, "register %s", reg_name(machine, l->v[0].atom - DW_OP_reg0));
	else if (l->n == 1 && l->v[0].atom == DW_OP_regx)
		snprintf(buf, n, "register %s", reg_name(machine, (int)l->v[0].n1));
	else if (l->n >= 1 && l->v[0].atom == DW_OP_fbreg)
		snprintf(buf, n, "stack (frame base %+lld)", (long long)l->v[0].n1);
	else if (l->n == 2 && l->v[0].atom == DW_OP_addr && l->v[1].atom == DW_OP_deref)
		snprintf(buf, n, "memory where GOT slot 0x%llx points", (unsigned long long)l->v[0].n1);
	else if (l->n >= 1 && l->v[0].atom == DW_OP_addr)
		snprintf(buf, n, "memory 0x%llx", (unsigned long long)l->v[0].n1);
	else if (l->n >= 1 && l->v[l->n - 1].atom == DW_OP_stack_value)
		snprintf(buf, n, "computed value");
	else
		snprintf(buf, n, "expression of %zu operations", l->n);
	if (is_list) {
		size_t k = strlen(buf);
		snprintf(buf + k, n - k, ", from a location list");
	}
}

/* The out-of-line function whose code holds pc: the DW_TAG_subprogram with
 * pc in its ranges, innermost first (nested functions), looked for under the
 * CU through namespaces, classes and blocks.  An inlined copy's variables are
 * located against this function's frame base (the copy has none of its own,
 * and dwarf_getscopes continues an inlined copy with its abstract origin's
 * scopes, which are not code). */
static int concrete_subprogram(Dwarf_Die *scope, uint64_t pc, Dwarf_Die *out, int depth)
{
	Dwarf_Die c;
	if (depth > 32 || dwarf_child(scope, &c) != 0)
		return 0;
	do {
		int tag = dwarf_tag(&c);
		if (tag == DW_TAG_subprogram) {
			if (dwarf_haspc(&c, pc) > 0) {
				*out = c;
				concrete_subprogram(&c, pc, out, depth + 1); /* a nested function inside */
				return 1;
			}
		} else if (tag == DW_TAG_namespace || tag == DW_TAG_class_type || tag == DW_TAG_structure_type ||
		           tag == DW_TAG_union_type || tag == DW_TAG_module ||
		           (tag == DW_TAG_lexical_block && dwarf_haspc(&c, pc) > 0)) {
			if (concrete_subprogram(&c, pc, out, depth + 1))
				return 1;
		}
	} while (dwarf_siblingof(&c, &c) == 0);
	return 0;
}

/* The compile unit whose code holds pc: through .debug_aranges, else (clang
 * emits none) through each unit's own ranges. */
static int cu_of(Dwarf *dw, uint64_t pc, Dwarf_Die *cu)
{
	if (dwarf_addrdie(dw, pc, cu))
		return 1;
	Dwarf_CU *it = NULL;
	uint8_t ut;
	while (dwarf_get_units(dw, it, &it, NULL, &ut, cu, NULL) == 0)
		if ((ut == DW_UT_compile || ut == DW_UT_skeleton) && dwarf_haspc(cu, pc) > 0)
			return 1;
	return 0;
}

/* The head of a variable expression: its leading '*'s and the variable's
 * name; *rest is what follows the name.  0, or -1 with err set. */
static int parse_head(const char *expr, int *stars, char *name, size_t nlen, const char **rest,
                      char *err, size_t en)
{
	const char *s = expr;
	while (isspace((unsigned char)*s))
		s++;
	*stars = 0;
	while (*s == '*') {
		++*stars;
		s++;
	}
	size_t k = 0;
	while ((isalnum((unsigned char)*s) || *s == '_') && k < nlen - 1)
		name[k++] = *s++;
	name[k] = 0;
	*rest = s;
	if (!k) {
		snprintf(err, en, "expected a variable name in '%s'", expr);
		return -1;
	}
	return 0;
}

/* The variable called name as seen from pc: the scopes around pc, innermost
 * first, then the globals of every compile unit (*found 0: none).  *have_fn:
 * the out-of-line function holding pc was found, in *fn.  0, or -1 with err
 * set when pc has no DWARF at all. */
static int lookup_variable(struct vars *v, uint64_t pc, const char *name, Dwarf_Die *var, int *found,
                           Dwarf_Die *fn, int *have_fn, char *err, size_t en)
{
	Dwarf_Die cu, *scopes = NULL;
	if (!cu_of(v->dw, pc, &cu)) {
		snprintf(err, en, "no DWARF information for address 0x%llx (built without -g?)", (unsigned long long)pc);
		return -1;
	}
	int ns = dwarf_getscopes(&cu, pc, &scopes);
	*found = 0;
	for (int i = 0; i < ns && !*found; i++)
		*found = find_in(&scopes[i], name, var, 0);
	free(scopes);
	*have_fn = concrete_subprogram(&cu, pc, fn, 0);
	Dwarf_Off off = 0, next;
	size_t hsz;
	while (!*found && dwarf_nextcu(v->dw, off, &next, &hsz, NULL, NULL, NULL) == 0) {
		Dwarf_Die c2;
		if (dwarf_offdie(v->dw, off + hsz, &c2))
			*found = find_in(&c2, name, var, 1);
		off = next;
	}
	return 0;
}

static int by_value(const void *a, const void *b)
{
	const struct got_slot *x = a, *y = b;
	return x->value < y->value ? -1 : x->value > y->value;
}

/* The GOT slots of the object's own data symbols (x86-64's GLOB_DAT and
 * 64 relocations of a defined STT_OBJECT dynamic symbol): read once. */
static void read_got(struct vars *v)
{
	v->got_read = 1;
	GElf_Ehdr eh;
	Elf_Scn *scn = NULL;
	size_t cap = 0;
	if (!v->elf || !gelf_getehdr(v->elf, &eh) || eh.e_machine != EM_X86_64)
		return;
	while ((scn = elf_nextscn(v->elf, scn))) {
		GElf_Shdr sh, ssh;
		Elf_Scn *syms;
		Elf_Data *d, *sd;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_RELA || !sh.sh_entsize ||
		    !(syms = elf_getscn(v->elf, sh.sh_link)) || !gelf_getshdr(syms, &ssh) || ssh.sh_type != SHT_DYNSYM ||
		    !(d = elf_getdata(scn, NULL)) || !(sd = elf_getdata(syms, NULL)))
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize && i < (1u << 24); i++) {
			GElf_Rela r;
			GElf_Sym sym;
			if (!gelf_getrela(d, (int)i, &r))
				continue;
			uint32_t t = (uint32_t)GELF_R_TYPE(r.r_info);
			if ((t != R_X86_64_GLOB_DAT && t != R_X86_64_64) || !GELF_R_SYM(r.r_info) || r.r_addend ||
			    !gelf_getsym(sd, (int)GELF_R_SYM(r.r_info), &sym) || sym.st_shndx == SHN_UNDEF ||
			    GELF_ST_TYPE(sym.st_info) != STT_OBJECT)
				continue;
			if (v->ngot == cap) {
				size_t nc = cap ? 2 * cap : 64;
				struct got_slot *g = realloc(v->got, nc * sizeof *g);
				if (!g)
					return;
				v->got = g;
				cap = nc;
			}
			v->got[v->ngot++] = (struct got_slot){ sym.st_value, r.r_offset };
		}
	}
	if (v->ngot)
		qsort(v->got, v->ngot, sizeof *v->got, by_value);
}

/* A global the object's code reaches through its GOT (an exported
 * variable: the loader may point the slot at another object's copy, an
 * executable's COPY relocation of it) is where the slot points, as the
 * object's own code reads it: DW_OP_addr A becomes DW_OP_addr SLOT,
 * DW_OP_deref.  0, or -1 out of memory. */
static int through_got(struct vars *v, struct var_ref *r)
{
	if (r->loc.n != 1 || r->loc.v[0].atom != DW_OP_addr)
		return 0;
	if (!v->got_read)
		read_got(v);
	uint64_t a = r->loc.v[0].n1;
	size_t lo = 0, hi = v->ngot;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (v->got[mid].value < a)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == v->ngot || v->got[lo].value != a)
		return 0;
	struct vars_op *o = realloc(r->loc.v, 2 * sizeof *o);
	if (!o)
		return -1;
	o[0] = (struct vars_op){ .atom = DW_OP_addr, .n1 = v->got[lo].slot };
	o[1] = (struct vars_op){ .atom = DW_OP_deref };
	r->loc.v = o;
	r->loc.n = 2;
	return 0;
}

/* Where var's value is at pc (r->loc), or its constant value, or why it has
 * none (r->no_value); *is_list: from a location list.  0, or -1 (with err
 * set, but for running out of memory). */
static int locate_variable(Dwarf_Die *var, uint64_t pc, const char *name, struct var_ref *r, int *is_list,
                           char *err, size_t en)
{
	Dwarf_Attribute a;
	if (dwarf_attr(var, DW_AT_location, &a)) {
		Dwarf_Op *ops;
		size_t nops;
		*is_list = a.form == DW_FORM_sec_offset || a.form == DW_FORM_loclistx;
		int nl = dwarf_getlocation_addr(&a, pc, &ops, &nops, 1);
		if (nl < 0) {
			snprintf(err, en, "variable '%s': unreadable location (%s)", name, dwarf_errmsg(-1));
			return -1;
		}
		if (nl == 0 || nops == 0)
			r->no_value = "optimized out here";
		else if (copy_ops(&r->loc, ops, nops))
			return -1;
		else
			resolve_addrx(&a, ops, nops, &r->loc);
	} else if (dwarf_attr_integrate(var, DW_AT_const_value, &a)) {
		Dwarf_Sword sv;
		if (dwarf_formsdata(&a, &sv) != 0) {
			snprintf(err, en, "variable '%s' has a constant value that cannot be read", name);
			return -1;
		}
		r->has_const = 1;
		r->cval = sv;
	} else {
		r->no_value = "optimized out";
	}
	return 0;
}

/* The frame base (of the out-of-line function fn, for an inlined copy's
 * variables too) and the CFA at pc, for locations that need them. */
static void frame_of(struct vars *v, uint64_t pc, Dwarf_Die *fn, int have_fn, struct var_ref *r)
{
	Dwarf_Attribute a;
	if (have_fn && dwarf_attr(fn, DW_AT_frame_base, &a)) {
		Dwarf_Op *ops;
		size_t nops;
		if (dwarf_getlocation_addr(&a, pc, &ops, &nops, 1) > 0)
			copy_ops(&r->fb, ops, nops);
	}
	Dwarf_CFI *cfis[2] = { v->cfi_eh, v->cfi_dbg };
	for (int i = 0; i < 2 && !r->cfa.v; i++) {
		Dwarf_Frame *fr;
		if (cfis[i] && dwarf_cfi_addrframe(cfis[i], pc, &fr) == 0) {
			Dwarf_Op *ops;
			size_t nops;
			if (dwarf_frame_cfa(fr, &ops, &nops) == 0)
				copy_ops(&r->cfa, ops, nops);
			free(fr);
		}
	}
}

/* The access path s (`->f`, `.f`, `[i]`, then the head's stars) walked
 * through the types from *t, the variable's: r gets a step each, *t the
 * type reached.  0, or -1 with err set. */
static int walk_path(struct vars *v, uint64_t pc, const char *s, int stars, const char *expr, struct var_ref *r,
                     Dwarf_Die *t, char *err, size_t en)
{
	while (*s) {
		while (isspace((unsigned char)*s))
			s++;
		if (!*s)
			break;
		if ((s[0] == '-' && s[1] == '>') || s[0] == '.') {
			int arrow = s[0] == '-';
			s += arrow ? 2 : 1;
			char f[256];
			size_t fk = 0;
			while ((isalnum((unsigned char)*s) || *s == '_') && fk < sizeof f - 1)
				f[fk++] = *s++;
			f[fk] = 0;
			if (arrow) {
				if (dwarf_tag(t) != DW_TAG_pointer_type) {
					snprintf(err, en, "'->%s' on something that is not a pointer in '%s'", f, expr);
					return -1;
				}
				if (type_of(t, t)) {
					snprintf(err, en, "'->%s' through a void pointer in '%s'", f, expr);
					return -1;
				}
				add_step(r, (struct step){ .kind = ST_DEREF });
			}
			int tag = dwarf_tag(t);
			if (tag != DW_TAG_structure_type && tag != DW_TAG_union_type && tag != DW_TAG_class_type) {
				snprintf(err, en, "'%s' is not a member of a struct in '%s'", f, expr);
				return -1;
			}
			Dwarf_Die m;
			int64_t off;
			if (find_member(t, f, &m, &off)) {
				snprintf(err, en, "no member '%s' in '%s'", f, expr);
				return -1;
			}
			add_step(r, (struct step){ .kind = ST_MEMBER, .off = off });
			if (type_of(&m, t)) {
				snprintf(err, en, "member '%s' has no type", f);
				return -1;
			}
		} else if (s[0] == '[') {
			const char *c = strchr(s, ']');
			if (!c) {
				snprintf(err, en, "missing ] in '%s'", expr);
				return -1;
			}
			char ix[256];
			snprintf(ix, sizeof ix, "%.*s", (int)(c - s - 1), s + 1);
			s = c + 1;
			struct step st = { .kind = ST_INDEX };
			int tag = dwarf_tag(t);
			if (tag == DW_TAG_pointer_type)
				st.via_ptr = 1;
			else if (tag != DW_TAG_array_type) {
				snprintf(err, en, "[%s] on something that is neither an array nor a pointer in '%s'", ix, expr);
				return -1;
			}
			if (type_of(t, t)) {
				snprintf(err, en, "indexing a void pointer in '%s'", expr);
				return -1;
			}
			st.esz = die_size(t, v->ptr_size);
			char *end;
			st.idx = strtoll(ix, &end, 0);
			if (end == ix || *end) { /* an index that is itself a variable expression */
				char e2[256];
				if (vars_compile(v, pc, ix, &st.idxref, e2, sizeof e2)) {
					snprintf(err, en, "%s", e2);
					return -1;
				}
			}
			if (add_step(r, st)) {
				vars_free(st.idxref);
				return -1;
			}
		} else {
			snprintf(err, en, "unexpected '%s' in variable expression '%s'", s, expr);
			return -1;
		}
	}
	for (int i = 0; i < stars; i++) {
		if (dwarf_tag(t) != DW_TAG_pointer_type || type_of(t, t)) {
			snprintf(err, en, "'*' on something that is not a pointer in '%s'", expr);
			return -1;
		}
		add_step(r, (struct step){ .kind = ST_DEREF });
	}
	return 0;
}

/* The value's size and encoding (r->size, r->enc) from the type reached,
 * *tname its name for the description.  0, or -1 with err set when it is
 * not a number sonde reads. */
static int value_type(struct vars *v, Dwarf_Die *t, const char *expr, struct var_ref *r, const char **tname,
                      char *err, size_t en)
{
	int tag = dwarf_tag(t);
	Dwarf_Word sz = 0, encw = DW_ATE_signed;
	Dwarf_Attribute ba;
	*tname = die_name(t);
	if (tag == DW_TAG_pointer_type) {
		sz = (Dwarf_Word)v->ptr_size;
		encw = DW_ATE_unsigned;
		*tname = "pointer";
	} else if (tag == DW_TAG_base_type || tag == DW_TAG_enumeration_type) {
		if (dwarf_attr(t, DW_AT_byte_size, &ba))
			dwarf_formudata(&ba, &sz);
		if (tag == DW_TAG_base_type && dwarf_attr(t, DW_AT_encoding, &ba))
			dwarf_formudata(&ba, &encw);
		if (tag == DW_TAG_enumeration_type) {
			Dwarf_Die ut;
			encw = DW_ATE_signed;
			if (type_of(t, &ut) == 0 && dwarf_attr(&ut, DW_AT_encoding, &ba))
				dwarf_formudata(&ba, &encw);
		}
	} else {
		snprintf(err, en, "'%s' is not a number (a %s); use a member, an element or a pointer",
		         expr, tag == DW_TAG_structure_type ? "struct" : tag == DW_TAG_array_type ? "array" : "non-scalar");
		return -1;
	}
	switch (encw) {
	case DW_ATE_float: r->enc = VAR_FLOAT; break;
	case DW_ATE_unsigned: case DW_ATE_unsigned_char: case DW_ATE_boolean: case DW_ATE_UTF: r->enc = VAR_UINT; break;
	default: r->enc = VAR_INT; break;
	}
	r->size = (int)sz;
	if (r->size <= 0 || r->size > 16 || (r->enc == VAR_FLOAT && r->size != 4 && r->size != 8 &&
	                                     r->size != 10 && r->size != 16)) {
		snprintf(err, en, "'%s' has an unsupported size (%d bytes)", expr, r->size);
		return -1;
	}
	return 0;
}

/* Parse, look the variable up, locate it, walk its access path, check the
 * type reached: each step above. */
int vars_compile(struct vars *v, uint64_t pc, const char *expr, struct var_ref **out, char *err, size_t en)
{
	*out = NULL;
	char name[256];
	const char *rest;
	int stars, found, have_fn;
	Dwarf_Die var, fn;
	if (parse_head(expr, &stars, name, sizeof name, &rest, err, en) ||
	    lookup_variable(v, pc, name, &var, &found, &fn, &have_fn, err, en))
		return -1;
	struct var_ref *r = calloc(1, sizeof *r);
	if (!r) {
		snprintf(err, en, "out of memory");
		return -1;
	}
	r->ptr_size = v->ptr_size;
	int is_list = 0;
	Dwarf_Die t;
	const char *tname;
	if (!found) {
		snprintf(err, en, "no variable '%s' in scope at this location", name);
		goto fail;
	}
	if (locate_variable(&var, pc, name, r, &is_list, err, en))
		goto fail;
	if (through_got(v, r)) {
		snprintf(err, en, "out of memory");
		goto fail;
	}
	frame_of(v, pc, &fn, have_fn, r);
	if (type_of(&var, &t)) {
		snprintf(err, en, "variable '%s' has no type", name);
		goto fail;
	}
	if (walk_path(v, pc, rest, stars, expr, r, &t, err, en) || value_type(v, &t, expr, r, &tname, err, en))
		goto fail;
	char where[160];
	describe_loc(r, v->machine, where, sizeof where, is_list);
	snprintf(r->desc, sizeof r->desc, "%.60s %.60s: %.120s%s", tname ? tname : "?", name, where,
	         r->nsteps ? " (then followed)" : "");
	*out = r;
	return 0;
fail:
	vars_free(r);
	return -1;
}

/* ---- evaluation ---- */
enum { L_MEM, L_REG, L_VAL };

struct lval {
	int kind;
	uint64_t addr;
	int reg;
	uint8_t bytes[32];
	int n;
};

static int eval_ops(const struct var_ref *r, const struct expr_ops *ops, const struct var_env *env,
                    struct lval *out, int depth, char *err, size_t en);

static int read_reg_bytes(const struct var_env *env, int reg, uint8_t buf[16])
{
	memset(buf, 0, 16);
	if (reg >= 17 && reg <= 40)
		return env->fpreg(env->ctx, reg, buf);
	uint64_t v;
	if (env->reg(env->ctx, reg, &v))
		return -1;
	memcpy(buf, &v, 8);
	return 0;
}

static int cfa_value(const struct var_ref *r, const struct var_env *env, uint64_t *out, int depth,
                     char *err, size_t en)
{
	struct lval l;
	if (!r->cfa.n) {
		snprintf(err, en, "no call frame information at this address");
		return -1;
	}
	if (eval_ops(r, &r->cfa, env, &l, depth + 1, err, en))
		return -1;
	if (l.kind != L_MEM) {
		snprintf(err, en, "unsupported CFA rule");
		return -1;
	}
	*out = l.addr;
	return 0;
}

static int eval_ops(const struct var_ref *r, const struct expr_ops *ops, const struct var_env *env,
                    struct lval *out, int depth, char *err, size_t en)
{
	uint64_t st[64];
	int sp = 0;
	int reg = -1, is_value = 0;
	struct lval pieces = { .kind = L_VAL };
	int have_pieces = 0;
	const uint8_t *implicit = NULL;
	size_t implicit_n = 0;
#define PUSH(x) do { uint64_t pv_ = (x); if (sp == 64) goto overflow; st[sp] = pv_; sp++; } while (0)
#define NEED(k) do { if (sp < (k)) goto underflow; } while (0)
	if (depth > 4) {
		snprintf(err, en, "location expression too deep");
		return -1;
	}
	for (size_t i = 0; i < ops->n; i++) {
		const struct vars_op *o = &ops->v[i];
		uint8_t a = o->atom;
		uint64_t x, y;
		if (a >= DW_OP_lit0 && a <= DW_OP_lit31) {
			PUSH((uint64_t)(a - DW_OP_lit0));
		} else if (a >= DW_OP_reg0 && a <= DW_OP_reg31) {
			reg = a - DW_OP_reg0;
		} else if (a >= DW_OP_breg0 && a <= DW_OP_breg31) {
			if (env->reg(env->ctx, a - DW_OP_breg0, &x))
				goto noreg;
			PUSH(x + o->n1);
		} else {
			switch (a) {
			case DW_OP_addr: PUSH(o->n1 + env->bias); break;
			case DW_OP_regx: reg = (int)o->n1; break;
			case DW_OP_bregx:
				if (env->reg(env->ctx, (int)o->n1, &x))
					goto noreg;
				PUSH(x + o->n2);
				break;
			case DW_OP_const1u: case DW_OP_const2u: case DW_OP_const4u: case DW_OP_const8u:
			case DW_OP_const1s: case DW_OP_const2s: case DW_OP_const4s: case DW_OP_const8s:
			case DW_OP_constu: case DW_OP_consts:
				PUSH(o->n1);
				break;
			case DW_OP_fbreg: {
				struct lval fb;
				if (!r->fb.n) {
					snprintf(err, en, "no frame base");
					return -1;
				}
				if (eval_ops(r, &r->fb, env, &fb, depth + 1, err, en))
					return -1;
				if (fb.kind == L_REG) {
					if (env->reg(env->ctx, fb.reg, &x))
						goto noreg;
				} else if (fb.kind == L_MEM) {
					x = fb.addr;
				} else {
					snprintf(err, en, "unsupported frame base");
					return -1;
				}
				PUSH(x + o->n1);
				break;
			}
			case DW_OP_call_frame_cfa:
				if (cfa_value(r, env, &x, depth, err, en))
					return -1;
				PUSH(x);
				break;
			case DW_OP_dup: NEED(1); PUSH(st[sp - 1]); break;
			case DW_OP_drop: NEED(1); sp--; break;
			case DW_OP_over: NEED(2); PUSH(st[sp - 2]); break;
			case DW_OP_pick: NEED((int)o->n1 + 1); PUSH(st[sp - 1 - (int)o->n1]); break;
			case DW_OP_swap: NEED(2); x = st[sp - 1]; st[sp - 1] = st[sp - 2]; st[sp - 2] = x; break;
			case DW_OP_deref: case DW_OP_deref_size: {
				NEED(1);
				size_t n = a == DW_OP_deref ? (size_t)r->ptr_size : (size_t)o->n1;
				uint64_t val = 0;
				if (n > 8 || env->mem(env->ctx, st[sp - 1], &val, n)) {
					snprintf(err, en, "cannot read memory at 0x%llx", (unsigned long long)st[sp - 1]);
					return -1;
				}
				st[sp - 1] = val;
				break;
			}
			case DW_OP_plus_uconst: NEED(1); st[sp - 1] += o->n1; break;
			case DW_OP_neg: NEED(1); st[sp - 1] = 0 - st[sp - 1]; break;
			case DW_OP_not: NEED(1); st[sp - 1] = ~st[sp - 1]; break;
			case DW_OP_abs: NEED(1); if ((int64_t)st[sp - 1] < 0) st[sp - 1] = 0 - st[sp - 1]; break;
			case DW_OP_plus: case DW_OP_minus: case DW_OP_mul: case DW_OP_and: case DW_OP_or:
			case DW_OP_xor: case DW_OP_shl: case DW_OP_shr: case DW_OP_shra: case DW_OP_div:
			case DW_OP_mod: case DW_OP_eq: case DW_OP_ne: case DW_OP_lt: case DW_OP_gt:
			case DW_OP_le: case DW_OP_ge:
				NEED(2);
				y = st[--sp];
				x = st[sp - 1];
				switch (a) {
				case DW_OP_plus: x += y; break;
				case DW_OP_minus: x -= y; break;
				case DW_OP_mul: x *= y; break;
				case DW_OP_and: x &= y; break;
				case DW_OP_or: x |= y; break;
				case DW_OP_xor: x ^= y; break;
				case DW_OP_shl: x = y < 64 ? x << y : 0; break;
				case DW_OP_shr: x = y < 64 ? x >> y : 0; break;
				case DW_OP_shra: x = (uint64_t)((int64_t)x >> (y < 63 ? y : 63)); break;
				case DW_OP_div: if (!y) goto bad; x = (uint64_t)((int64_t)x / (int64_t)y); break;
				case DW_OP_mod: if (!y) goto bad; x %= y; break;
				case DW_OP_eq: x = x == y; break;
				case DW_OP_ne: x = x != y; break;
				case DW_OP_lt: x = (int64_t)x < (int64_t)y; break;
				case DW_OP_gt: x = (int64_t)x > (int64_t)y; break;
				case DW_OP_le: x = (int64_t)x <= (int64_t)y; break;
				case DW_OP_ge: x = (int64_t)x >= (int64_t)y; break;
				}
				st[sp - 1] = x;
				break;
			case DW_OP_stack_value: is_value = 1; break;
			case DW_OP_implicit_value: implicit = o->block; implicit_n = (size_t)o->n1; break;
			case DW_OP_nop: break;
			case DW_OP_piece: {
				size_t n = (size_t)o->n1;
				uint8_t buf[32] = { 0 };
				if (n > sizeof buf || pieces.n + (int)n > (int)sizeof pieces.bytes)
					goto bad;
				if (reg >= 0) {
					uint8_t rb[16];
					if (read_reg_bytes(env, reg, rb))
						goto noreg;
					memcpy(buf, rb, n < 16 ? n : 16);
				} else if (implicit) {
					memcpy(buf, implicit, n < implicit_n ? n : implicit_n);
				} else if (is_value && sp) {
					memcpy(buf, &st[sp - 1], n < 8 ? n : 8);
				} else if (sp) {
					if (env->mem(env->ctx, st[sp - 1], buf, n)) {
						snprintf(err, en, "cannot read memory at 0x%llx", (unsigned long long)st[sp - 1]);
						return -1;
					}
				} else {
					snprintf(err, en, "part of the value is optimized out");
					return -1;
				}
				memcpy(pieces.bytes + pieces.n, buf, n);
				pieces.n += (int)n;
				have_pieces = 1;
				reg = -1;
				is_value = 0;
				implicit = NULL;
				sp = 0;
				break;
			}
			case DW_OP_entry_value: case DW_OP_GNU_entry_value:
				snprintf(err, en, "value not available here (only its value at function entry is described)");
				return -1;
			default:
				snprintf(err, en, "unsupported DWARF operation 0x%x", a);
				return -1;
			}
		}
	}
	memset(out, 0, sizeof *out);
	if (have_pieces) {
		*out = pieces;
	} else if (reg >= 0) {
		out->kind = L_REG;
		out->reg = reg;
	} else if (implicit) {
		out->kind = L_VAL;
		out->n = (int)(implicit_n < sizeof out->bytes ? implicit_n : sizeof out->bytes);
		memcpy(out->bytes, implicit, (size_t)out->n);
	} else if (sp) {
		if (is_value) {
			out->kind = L_VAL;
			out->n = 8;
			memcpy(out->bytes, &st[sp - 1], 8);
		} else {
			out->kind = L_MEM;
			out->addr = st[sp - 1];
		}
	} else {
		snprintf(err, en, "empty location (optimized out)");
		return -1;
	}
	return 0;
overflow:
underflow:
bad:
	snprintf(err, en, "bad DWARF location expression");
	return -1;
noreg:
	snprintf(err, en, "register not available");
	return -1;
#undef PUSH
#undef NEED
}

/* n bytes of the object an lval designates, starting at off. */
static int lval_read(const struct var_env *env, const struct lval *l, int64_t off, void *buf, size_t n,
                     char *err, size_t en)
{
	if (l->kind == L_MEM) {
		if (env->mem(env->ctx, l->addr + (uint64_t)off, buf, n)) {
			snprintf(err, en, "cannot read memory at 0x%llx", (unsigned long long)(l->addr + (uint64_t)off));
			return -1;
		}
		return 0;
	}
	uint8_t b[32] = { 0 };
	int have = 0;
	if (l->kind == L_REG) {
		if (read_reg_bytes(env, l->reg, b)) {
			snprintf(err, en, "register not available");
			return -1;
		}
		have = 16;
	} else {
		memcpy(b, l->bytes, sizeof b);
		have = l->n;
	}
	if (off < 0 || (size_t)off + n > (size_t)have) {
		if (off >= 0 && (size_t)off < sizeof b && l->kind != L_MEM && (size_t)off + n <= sizeof b) {
			/* value narrower than asked (e.g. stack value): zero-extended */
		} else {
			snprintf(err, en, "value not in memory");
			return -1;
		}
	}
	memcpy(buf, b + off, n);
	return 0;
}

int vars_eval(const struct var_ref *r, const struct var_env *env, struct var_value *out, char *err, size_t en)
{
	memset(out, 0, sizeof *out);
	struct lval l;
	int64_t off = 0;
	if (r->no_value) {
		snprintf(err, en, "%s", r->no_value);
		return -1;
	}
	if (r->has_const) {
		l.kind = L_VAL;
		l.n = 8;
		memcpy(l.bytes, &r->cval, 8);
	} else if (eval_ops(r, &r->loc, env, &l, 0, err, en)) {
		return -1;
	}
	for (int i = 0; i < r->nsteps; i++) {
		const struct step *s = &r->steps[i];
		if (s->kind == ST_MEMBER) {
			off += s->off;
			continue;
		}
		int64_t idx = s->idx;
		if (s->kind == ST_INDEX && s->idxref) {
			struct var_value iv;
			if (vars_eval(s->idxref, env, &iv, err, en))
				return -1;
			idx = iv.type == VAR_FLOAT ? (int64_t)iv.f : iv.type == VAR_INT ? iv.i : (int64_t)iv.u;
		}
		if (s->kind == ST_DEREF || s->via_ptr) {
			uint64_t p = 0;   /* a 4-byte pointer fills the low half (host order) */
			if (lval_read(env, &l, off, &p, (size_t)r->ptr_size, err, en))
				return -1;
			l.kind = L_MEM;
			l.addr = p;
			off = 0;
		}
		if (s->kind == ST_INDEX) {
			if (l.kind != L_MEM && l.kind != L_VAL) {
				snprintf(err, en, "cannot index a value held in a register");
				return -1;
			}
			off += idx * (int64_t)s->esz;
		}
	}
	uint8_t b[16] = { 0 };
	if (lval_read(env, &l, off, b, (size_t)r->size, err, en))
		return -1;
	out->type = r->enc;
	if (r->enc == VAR_FLOAT) {
		if (r->size == 4) { float f; memcpy(&f, b, 4); out->f = f; }
		else if (r->size == 8) { double d; memcpy(&d, b, 8); out->f = d; }
		else { long double ld = 0; memcpy(&ld, b, 10); out->f = ld; }
		return 0;
	}
	uint64_t u = 0;
	memcpy(&u, b, (size_t)(r->size > 8 ? 8 : r->size));
	if (r->enc == VAR_INT) {
		if (r->size < 8) {
			int sh = 64 - 8 * r->size;
			out->i = (int64_t)(u << sh) >> sh;
		} else {
			out->i = (int64_t)u;
		}
		out->u = (uint64_t)out->i;
	} else {
		out->u = u;
		out->i = (int64_t)u;
	}
	return 0;
}

void vars_shape(const struct var_ref *r, struct vars_shape *out)
{
	*out = (struct vars_shape){
		.no_value = r->no_value, .has_const = r->has_const, .cval = r->cval, .enc = r->enc, .size = r->size,
		.nsteps = r->nsteps, .loc = r->loc.v, .nloc = r->loc.n, .fb = r->fb.v, .nfb = r->fb.n,
		.cfa = r->cfa.v, .ncfa = r->cfa.n,
	};
}

void vars_step(const struct var_ref *r, int i, struct vars_step *out)
{
	const struct step *s = &r->steps[i];
	*out = (struct vars_step){
		.kind = s->kind == ST_MEMBER ? VARS_MEMBER : s->kind == ST_DEREF ? VARS_DEREF : VARS_INDEX,
		.off = s->off, .esz = s->esz, .idx = s->idx, .idx_is_var = s->idxref != NULL, .via_ptr = s->via_ptr,
	};
}

const char *vars_describe(const struct var_ref *r)
{
	return r ? r->desc : "";
}

void vars_free(struct var_ref *r)
{
	if (!r)
		return;
	for (int i = 0; i < r->nsteps; i++)
		vars_free(r->steps[i].idxref);
	free(r->steps);
	free(r->loc.v);
	free(r->fb.v);
	free(r->cfa.v);
	free(r);
}

/* A type's name as declared ("int", "ssize_t", "struct file *",
 * "const char *"), into buf; depth bounds the walk. */
static void decl_name(Dwarf_Die *t, char *buf, size_t n, int depth)
{
	Dwarf_Die u;
	Dwarf_Attribute a;
	int has = dwarf_attr_integrate(t, DW_AT_type, &a) && dwarf_formref_die(&a, &u);
	const char *nm = die_name(t);
	char in[96] = "void";
	switch (dwarf_tag(t)) {
	case DW_TAG_pointer_type:
		if (has && depth < 8)
			decl_name(&u, in, sizeof in, depth + 1);
		snprintf(buf, n, "%s *", in);
		return;
	case DW_TAG_const_type: case DW_TAG_volatile_type:
		if (has && depth < 8)
			decl_name(&u, in, sizeof in, depth + 1);
		snprintf(buf, n, "%s %s", dwarf_tag(t) == DW_TAG_const_type ? "const" : "volatile", in);
		return;
	case DW_TAG_structure_type: snprintf(buf, n, "struct %s", nm ? nm : "?"); return;
	case DW_TAG_union_type: snprintf(buf, n, "union %s", nm ? nm : "?"); return;
	case DW_TAG_enumeration_type: snprintf(buf, n, "enum %s", nm ? nm : "?"); return;
	default: snprintf(buf, n, "%s", nm ? nm : "?");
	}
}

int sym_func_ret(struct sym_module *m, uint64_t vaddr, struct sym_ret *r)
{
	memset(r, 0, sizeof *r);
	Dwarf_Die cu, fn, t;
	if (!m || !m->dw || !cu_of(m->dw, vaddr, &cu) || !concrete_subprogram(&cu, vaddr, &fn, 0))
		return -1;
	Dwarf_Attribute a;
	if (!dwarf_attr_integrate(&fn, DW_AT_type, &a) || !dwarf_formref_die(&a, &t)) {
		r->is_void = 1;
		snprintf(r->name, sizeof r->name, "void");
		return 0;
	}
	decl_name(&t, r->name, sizeof r->name, 0);
	if (strip(&t)) { /* a qualified or typedef'd void */
		r->is_void = 1;
		return 0;
	}
	Dwarf_Word sz = 0, enc = 0;
	int tag = dwarf_tag(&t);
	if (tag == DW_TAG_pointer_type || tag == DW_TAG_reference_type || tag == DW_TAG_rvalue_reference_type) {
		r->is_ptr = 1;
		r->size = 8;
		return 0;
	}
	if ((dwarf_attr_integrate(&t, DW_AT_byte_size, &a) == NULL || dwarf_formudata(&a, &sz)) ||
	    (sz != 1 && sz != 2 && sz != 4 && sz != 8))
		return -1;
	r->size = (unsigned)sz;
	if (tag == DW_TAG_enumeration_type) {
		r->is_enum = 1;
		Dwarf_Die u; /* its underlying type says the sign (DWARF 3+); else C's int */
		r->is_signed = 1;
		if (dwarf_attr_integrate(&t, DW_AT_type, &a) && dwarf_formref_die(&a, &u) && !strip(&u) &&
		    dwarf_attr_integrate(&u, DW_AT_encoding, &a) && !dwarf_formudata(&a, &enc))
			r->is_signed = enc == DW_ATE_signed || enc == DW_ATE_signed_char;
		return 0;
	}
	if (tag != DW_TAG_base_type || !dwarf_attr_integrate(&t, DW_AT_encoding, &a) || dwarf_formudata(&a, &enc))
		return -1;
	switch (enc) {
	case DW_ATE_boolean: r->is_bool = 1; return 0;
	case DW_ATE_signed: case DW_ATE_signed_char: r->is_signed = 1; return 0;
	case DW_ATE_unsigned: case DW_ATE_unsigned_char: return 0;
	default: return -1; /* float, complex...: not in AX */
	}
}
