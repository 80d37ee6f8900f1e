/* resolve.c — probe locations to run-time addresses: FUNC[+OFF] through the
 * symbol tables, FILE:LINE through DWARF's line table (is_stmt addresses,
 * the lowest one in each function instance, inlined copies included), 0xADDR;
 * and the instruction-boundary check that decodes the function from its start. */
#include "probe/resolve.h"

#include "probe/engine.h"
#include "proc/modules.h"
#include "probe/probe.h"
#include "probe/spec.h"
#include "sym/sym.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct find_ctx {
	struct sym_info first;
	int n;
	int exact;
	const char *name;
};

static void find_cb(void *arg, const struct sym_info *info)
{
	struct find_ctx *c = arg;
	int exact = !strcmp(info->name, c->name) || (info->mangled && !strcmp(info->mangled, c->name));
	if (c->n && info->start == c->first.start)
		return; /* alias of the same code */
	if (!c->n || (exact && !c->exact)) {
		c->first = *info;
		c->exact = exact;
	}
	c->n++;
}

int resolve_function(struct engine *e, const struct spec *sp, struct loc_addr *out, char *err, size_t n)
{
	for (int i = 0; i < e->mods.n; i++) {
		struct module *m = &e->mods.m[i];
		struct sym_module *s = module_sym(m);
		if (!s)
			continue;
		struct find_ctx c = { .name = sp->func };
		sym_find(s, sp->func, find_cb, &c);
		if (!c.n)
			continue;
		if (c.n > 1 && !c.exact) {
			snprintf(err, n, "'%s' matches %d functions (name one)", sp->func, c.n);
			return -1;
		}
		if (!c.first.start) {
			snprintf(err, n, "function '%s' has no address", sp->func);
			return -1;
		}
		out->mod = m;
		out->fn = c.first;
		out->addr = c.first.start + m->bias;
		return 0;
	}
	snprintf(err, n, "no function named '%s' in the program or its libraries", sp->func);
	e->not_found = 1;
	return -1;
}

int resolve_function_offset(struct engine *e, const struct spec *sp, struct loc_addr *out, char *err,
                            size_t n)
{
	if (resolve_function(e, sp, out, err, n))
		return -1;
	if (!sp->off)
		return 0;
	if (sp->off < 0 || (out->fn.size && (uint64_t)sp->off >= out->fn.size)) {
		snprintf(err, n, "offset %lld is outside %s (%llu bytes)", (long long)sp->off,
		         out->fn.name, (unsigned long long)out->fn.size);
		return -1;
	}
	out->addr += (uint64_t)sp->off;
	return resolve_check_boundary(e, out, err, n);
}

int resolve_check_boundary(struct engine *e, const struct loc_addr *la, char *err, size_t n)
{
	if (e->foreign_code)
		return 0;
	if (!la->fn.start) {
		snprintf(err, n, "cannot check that 0x%llx is on an instruction boundary (no function symbol contains it)",
		         (unsigned long long)la->addr);
		return -1;
	}
	uint64_t start = la->fn.start + la->mod->bias;
	if (la->addr < start) {
		snprintf(err, n, "address 0x%llx is before its function", (unsigned long long)la->addr);
		return -1;
	}
	size_t len = (size_t)(la->addr - start) + 16;
	uint8_t *code = malloc(len);
	if (!code) {
		snprintf(err, n, "out of memory");
		return -1;
	}
	while (len > (size_t)(la->addr - start) && engine_read_code(e, start, code, len))
		len--;
	/* Where the instructions begin is the file's: a recording of the
	 * process may hold the function's first bytes (a jump into its stub,
	 * src/rt/instr.c), which leave the rest of the bytes they displaced
	 * undecodable in place. */
	struct sym_module *sm = la->mod ? module_sym(la->mod) : NULL;
	size_t avail = 0;
	const uint8_t *fc = sm ? sym_code(sm, la->fn.start, &avail) : NULL;
	if (fc && avail >= len)
		memcpy(code, fc, len);
	uint64_t a = start;
	int rc = -1;
	struct arch_insn in;
	while (a < la->addr) {
		size_t off = (size_t)(a - start);
		if (arch_decode(code + off, len - off, a, &in)) {
			snprintf(err, n, "cannot decode %s+0x%llx while looking for an instruction boundary",
			         la->fn.name, (unsigned long long)(a - start));
			goto out;
		}
		if (a + (uint64_t)in.len > la->addr) {
			snprintf(err, n, "0x%llx (%s+0x%llx) is not on an instruction boundary: it is inside "
			         "'%s' at %s+0x%llx (%d bytes); probe refused",
			         (unsigned long long)la->addr, la->fn.name, (unsigned long long)(la->addr - start),
			         in.text, la->fn.name, (unsigned long long)(a - start), in.len);
			goto out;
		}
		a += (uint64_t)in.len;
	}
	rc = 0;
out:
	free(code);
	return rc;
}

static int add_addr(struct loc_addr **v, int *nv, struct loc_addr *la)
{
	struct loc_addr *w = realloc(*v, (size_t)(*nv + 1) * sizeof *w);
	if (!w)
		return -1;
	*v = w;
	w[(*nv)++] = *la;
	return 0;
}

int resolve_location(struct engine *e, const struct spec *sp, struct loc_addr **out, int *nout,
                     char *err, size_t n)
{
	struct loc_addr *v = NULL, la;
	int nv = 0;
	memset(&la, 0, sizeof la);
	*out = NULL;
	*nout = 0;
	if (sp->loc == LOC_FUNC) {
		if (resolve_function_offset(e, sp, &la, err, n))
			return -1;
		add_addr(&v, &nv, &la);
	} else if (sp->loc == LOC_ADDR) {
		la.addr = sp->addr;
		la.mod = modules_at(&e->mods, sp->addr);
		if (!la.mod) {
			snprintf(err, n, "address 0x%llx is not in a mapped ELF module", (unsigned long long)sp->addr);
			return -1;
		}
		struct sym_module *s = module_sym(la.mod);
		if (!s || sym_lookup(s, sp->addr - la.mod->bias, &la.fn))
			memset(&la.fn, 0, sizeof la.fn);
		add_addr(&v, &nv, &la);
	} else if (sp->loc == LOC_LINE) {
		int known = 0;
		for (int i = 0; i < e->mods.n && !nv; i++) {
			struct module *m = &e->mods.m[i];
			struct sym_module *s = module_sym(m);
			if (!s)
				continue;
			uint64_t addrs[256];
			int k = sym_line_addrs(s, sp->file, sp->line, addrs, 256);
			if (k < 0)
				continue;
			known = 1;
			if (k > 256)
				k = 256;
			for (int j = 0; j < k; j++) {
				struct loc_addr c = { .addr = addrs[j] + m->bias, .mod = m };
				if (sym_lookup(s, addrs[j], &c.fn))
					memset(&c.fn, 0, sizeof c.fn);
				/* one address per function instance, inlined copies
				 * included (sym_line_addrs chose the lowest of each) */
				add_addr(&v, &nv, &c);
			}
		}
		if (!nv) {
			if (!known) {
				snprintf(err, n, "no source file '%s' with line information (built without -g?)", sp->file);
				e->not_found = 1;
			} else
				snprintf(err, n, "no code for line %d of %s (optimized away, or not a statement line)",
				         sp->line, sp->file);
			return -1;
		}
	} else {
		snprintf(err, n, "this probe kind needs a location");
		return -1;
	}
	for (int i = 0; i < nv && sp->loc != LOC_FUNC; i++)
		if (resolve_check_boundary(e, &v[i], err, n)) {
			free(v);
			return -1;
		}
	*out = v;
	*nout = nv;
	return 0;
}

/* "module+0xOFF" (OFF: the link-time address, what addr2line -e module and
 * objdump show) for an address no symbol covers; "0xADDR" outside any module. */
static void module_offset(struct module *m, uint64_t addr, char *buf, size_t n)
{
	if (!m) {
		snprintf(buf, n, "0x%llx", (unsigned long long)addr);
		return;
	}
	const char *b = strrchr(m->path, '/');
	snprintf(buf, n, "%s+0x%llx", b ? b + 1 : m->path, (unsigned long long)(addr - m->bias));
}

void resolve_name(struct engine *e, uint64_t addr, char *buf, size_t n)
{
	resolve_name_in(&e->mods, addr, buf, n);
}

void resolve_name_in(struct modules *mods, uint64_t addr, char *buf, size_t n)
{
	struct module *m = modules_at(mods, addr);
	struct sym_module *s = m ? module_sym(m) : NULL;
	struct sym_info si;
	if (s && sym_lookup(s, addr - m->bias, &si) == 0 && si.start)
		snprintf(buf, n, "%s", si.name);
	else
		module_offset(m, addr, buf, n);
}

int resolve_line(struct engine *e, uint64_t addr, const char **file, int *line)
{
	return resolve_line_in(&e->mods, addr, file, line);
}

int resolve_line_in(struct modules *mods, uint64_t addr, const char **file, int *line)
{
	struct module *m = modules_at(mods, addr);
	struct sym_module *s = m ? module_sym(m) : NULL;
	const char *f = NULL;
	if (!s || sym_addr_line(s, addr - m->bias, &f, line) != 0 || !f)
		return -1;
	const char *b = strrchr(f, '/');
	*file = b ? b + 1 : f;
	return 0;
}

void resolve_describe(struct engine *e, uint64_t addr, char *buf, size_t n)
{
	struct module *m = modules_at(&e->mods, addr);
	struct sym_module *s = m ? module_sym(m) : NULL;
	struct sym_info si;
	const char *file = NULL;
	int line = 0;
	char fl[300] = "";
	if (resolve_line(e, addr, &file, &line) == 0)
		snprintf(fl, sizeof fl, " (%s:%d)", file, line);
	if (!s || sym_lookup(s, addr - m->bias, &si) || !si.start) {
		char mo[300];
		module_offset(m, addr, mo, sizeof mo);
		snprintf(buf, n, "%s%s", mo, fl);
		return;
	}
	uint64_t off = addr - m->bias - si.start;
	if (off)
		snprintf(buf, n, "%s+0x%llx%s", si.name, (unsigned long long)off, fl);
	else
		snprintf(buf, n, "%s%s", si.name, fl);
}
