/* kmod.c — a kernel module's .ko (an ET_REL object: its DWARF is
 * relocated by libdwfl's offline reporting, which lays its sections out):
 * its source lines and functions as FUNCTION+OFFSET, what the kprobe PMU
 * and kprobe_events take (probe --kernel -e line:MODULE.ko:FILE:LINE), its
 * variables (vars.c on the relocated DWARF: var:MODULE.ko:...), and which
 * section a data address is in (the loaded module's
 * /sys/module/NAME/sections/ give the section's address). */
#include "sym/sym_int.h"

#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const Dwfl_Callbacks offline = {
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.section_address = dwfl_offline_section_address,
};

/* Whether a is in an executable section of the laid-out module. */
static int ko_text(const void *ctx, uint64_t a)
{
	Dwfl_Module *mod = (Dwfl_Module *)(uintptr_t)ctx;
	Dwarf_Addr at = a;
	Elf_Scn *scn = dwfl_module_address_section(mod, &at, &(Dwarf_Addr){ 0 });
	GElf_Shdr sh;
	return scn && gelf_getshdr(scn, &sh) && (sh.sh_flags & SHF_EXECINSTR);
}

struct sym_kmod {
	Dwfl *dwfl;
	Dwfl_Module *mod;
	Dwarf *dw;
	Dwarf_Addr bias;         /* laid-out address minus DWARF address */
	Elf *elf;
	struct vars *vars;       /* sym_kmod_vars, built on first use */
	char ko[256];            /* the path, for messages */
};

struct sym_kmod *sym_kmod_open(const char *ko, char *err, size_t n)
{
	struct sym_kmod *k = calloc(1, sizeof *k);
	if (!k || !(k->dwfl = dwfl_begin(&offline))) {
		snprintf(err, n, k ? "libdwfl: %s" : "out of memory", dwfl_errmsg(-1));
		free(k);
		return NULL;
	}
	snprintf(k->ko, sizeof k->ko, "%s", ko);
	k->mod = dwfl_report_offline(k->dwfl, "kmod", ko, -1);
	Dwarf_Addr bias = 0;
	GElf_Ehdr eh;
	k->elf = k->mod ? dwfl_module_getelf(k->mod, &bias) : NULL;
	if (!k->mod || dwfl_report_end(k->dwfl, NULL, NULL) || !k->elf) {
		snprintf(err, n, "%.200s: not an ELF object (%s)", ko, dwfl_errmsg(-1));
		sym_kmod_close(k);
		return NULL;
	}
	if (!gelf_getehdr(k->elf, &eh) || eh.e_type != ET_REL) {
		snprintf(err, n, "%.200s is not a kernel module (.ko, a relocatable object)", ko);
		sym_kmod_close(k);
		return NULL;
	}
	if (!(k->dw = dwfl_module_getdwarf(k->mod, &k->bias))) {
		snprintf(err, n, "%.200s has no DWARF (built without -g?)", ko);
		sym_kmod_close(k);
		return NULL;
	}
	return k;
}

void sym_kmod_close(struct sym_kmod *k)
{
	if (!k)
		return;
	sym__vars_free(k->vars);
	dwfl_end(k->dwfl);
	free(k);
}

/* The function holding DWARF address a and a's offset in it: 0, or -1. */
static int func_at(struct sym_kmod *k, uint64_t a, struct sym_kloc *out)
{
	GElf_Sym sym;
	GElf_Off off = 0;
	const char *name = dwfl_module_addrinfo(k->mod, a + k->bias, &off, &sym, NULL, NULL, NULL);
	if (!name || GELF_ST_TYPE(sym.st_info) != STT_FUNC)
		return -1;
	snprintf(out->func, sizeof out->func, "%s", name);
	out->off = off;
	out->pc = a;
	return 0;
}

int sym_kmod_lines(struct sym_kmod *k, const char *file, int line, struct sym_kloc *out, int max, char *err,
                   size_t n)
{
	uint64_t addr[64];
	int c = sym__line_addrs_dw(k->dw, ko_text, k->mod, file, line, addr, 64);
	if (c < 0) {
		snprintf(err, n, "no file %.100s in the line table of %.200s", file, k->ko);
		return -1;
	}
	if (c == 0) {
		snprintf(err, n, "no code at %.100s:%d in %.200s", file, line, k->ko);
		return -1;
	}
	if (c > max || c > 64) {
		snprintf(err, n, "%.100s:%d is at %d addresses in %.200s (inlined copies): at most %d", file, line, c, k->ko,
		         max);
		return -1;
	}
	for (int i = 0; i < c; i++)
		if (func_at(k, addr[i], &out[i])) {
			snprintf(err, n, "%.100s:%d: address 0x%llx of %.200s is in no function", file, line,
			         (unsigned long long)addr[i], k->ko);
			return -1;
		}
	return c;
}

int sym_kmod_func(struct sym_kmod *k, const char *func, struct sym_kloc *out, char *err, size_t n)
{
	int ns = dwfl_module_getsymtab(k->mod);
	for (int i = 1; i < ns; i++) {
		GElf_Sym sym;
		GElf_Addr a;
		const char *name = dwfl_module_getsym_info(k->mod, i, &sym, &a, NULL, NULL, NULL);
		if (name && GELF_ST_TYPE(sym.st_info) == STT_FUNC && sym.st_shndx != SHN_UNDEF && !strcmp(name, func) &&
		    ko_text(k->mod, a - k->bias) && !func_at(k, a - k->bias, out) && !out->off)
			return 0;
	}
	snprintf(err, n, "no function %.120s in %.200s", func, k->ko);
	return -1;
}

struct vars *sym_kmod_vars(struct sym_kmod *k, char *err, size_t n)
{
	if (!k->vars && !(k->vars = sym__vars_new(k->dw, k->elf, NULL)))
		snprintf(err, n, "out of memory");
	return k->vars;
}

int sym_kmod_data(struct sym_kmod *k, uint64_t addr, char *sec, size_t sn, uint64_t *off)
{
	Dwarf_Addr at = addr + k->bias, sbias = 0;
	Elf_Scn *scn = dwfl_module_address_section(k->mod, &at, &sbias);
	GElf_Shdr sh;
	size_t shstr;
	const char *name;
	if (!scn || !gelf_getshdr(scn, &sh) || !(sh.sh_flags & SHF_ALLOC) || elf_getshdrstrndx(k->elf, &shstr) ||
	    !(name = elf_strptr(k->elf, shstr, sh.sh_name)) || !name[0] || strlen(name) >= sn)
		return -1;
	strcpy(sec, name);
	*off = at;
	return 0;
}

int sym_kmod_build_id(const char *ko, uint8_t *id, size_t max)
{
	int fd = open(ko, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	Elf *e = elf_begin(fd, ELF_C_READ, NULL);
	const void *bits = NULL;
	ssize_t k = e ? dwelf_elf_gnu_build_id(e, &bits) : -1;
	int rc = k > 0 && (size_t)k <= max ? (int)k : -1;
	if (rc > 0)
		memcpy(id, bits, (size_t)k);
	if (e)
		elf_end(e);
	close(fd);
	return rc;
}
