/* kmod.c — source lines of a kernel module's .ko (an ET_REL object: its
 * DWARF is relocated by libdwfl's offline reporting, which lays its
 * sections out), as FUNCTION+OFFSET: what the kprobe PMU takes (probe
 * --kernel -e line:MODULE.ko:FILE:LINE). */
#include "sym/sym_int.h"

#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <unistd.h>
#include <stdio.h>
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

int sym_kmod_lines(const char *ko, const char *file, int line, struct sym_kloc *out, int max, char *err, size_t n)
{
	Dwfl *dwfl = dwfl_begin(&offline);
	if (!dwfl) {
		snprintf(err, n, "libdwfl: %s", dwfl_errmsg(-1));
		return -1;
	}
	int rc = -1;
	Dwfl_Module *mod = dwfl_report_offline(dwfl, "kmod", ko, -1);
	Dwarf_Addr bias = 0;
	Dwarf *dw = NULL;
	GElf_Ehdr eh;
	Elf *e = mod ? dwfl_module_getelf(mod, &bias) : NULL;
	if (!mod || dwfl_report_end(dwfl, NULL, NULL) || !e) {
		snprintf(err, n, "%.200s: not an ELF object (%s)", ko, dwfl_errmsg(-1));
		goto out;
	}
	if (!gelf_getehdr(e, &eh) || eh.e_type != ET_REL) {
		snprintf(err, n, "%.200s is not a kernel module (.ko, a relocatable object)", ko);
		goto out;
	}
	if (!(dw = dwfl_module_getdwarf(mod, &bias))) {
		snprintf(err, n, "%.200s has no DWARF (built without -g?)", ko);
		goto out;
	}
	uint64_t addr[64];
	int k = sym__line_addrs_dw(dw, ko_text, mod, file, line, addr, 64);
	if (k < 0) {
		snprintf(err, n, "no file %.100s in the line table of %.200s", file, ko);
		goto out;
	}
	if (k == 0) {
		snprintf(err, n, "no code at %.100s:%d in %.200s", file, line, ko);
		goto out;
	}
	if (k > max || k > 64) {
		snprintf(err, n, "%.100s:%d is at %d addresses in %.200s (inlined copies): at most %d", file, line, k, ko, max);
		goto out;
	}
	for (int i = 0; i < k; i++) {
		GElf_Sym sym;
		GElf_Off off = 0;
		const char *name = dwfl_module_addrinfo(mod, addr[i] + bias, &off, &sym, NULL, NULL, NULL);
		if (!name || GELF_ST_TYPE(sym.st_info) != STT_FUNC) {
			snprintf(err, n, "%.100s:%d: address 0x%llx of %.200s is in no function", file, line,
			         (unsigned long long)addr[i], ko);
			goto out;
		}
		snprintf(out[i].func, sizeof out[i].func, "%s", name);
		out[i].off = off;
	}
	rc = k;
out:
	dwfl_end(dwfl);
	return rc;
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
