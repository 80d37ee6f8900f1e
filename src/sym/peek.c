/* peek.c — single facts read from an ELF file without loading it as an
 * object of the cache (sym_open loads its whole symbol table and DWARF:
 * about 0.2 s for a C library): see peek.h. */
#include "sym/peek.h"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define VERSYM_HIDDEN 0x8000

int sym_peek_dynsym(int fd, const char *const *names, uint64_t *vals, int nnames)
{
	Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf)
		return -1;
	int rc = -1;
	int defaulted[8] = { 0 };
	Elf_Scn *scn = NULL, *dynsym = NULL, *versym = NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_DYNSYM)
			dynsym = scn;
		else if (sh.sh_type == SHT_GNU_versym)
			versym = scn;
	}
	GElf_Shdr sh;
	Elf_Data *d = dynsym ? elf_getdata(dynsym, NULL) : NULL;
	Elf_Data *vd = versym ? elf_getdata(versym, NULL) : NULL;
	if (!d || !gelf_getshdr(dynsym, &sh) || !sh.sh_entsize)
		goto out;
	rc = 0;
	size_t count = sh.sh_size / sh.sh_entsize;
	for (size_t i = 0; i < count && rc == 0; i++) {
		GElf_Sym s;
		if (!gelf_getsym(d, (int)i, &s) || s.st_shndx == SHN_UNDEF || !s.st_value)
			continue;
		int type = GELF_ST_TYPE(s.st_info);
		if (type != STT_FUNC && type != STT_GNU_IFUNC)
			continue;
		const char *nm = elf_strptr(elf, sh.sh_link, s.st_name);
		if (!nm)
			continue;
		GElf_Versym v = 0;
		int dflt = !vd || !gelf_getversym(vd, (int)i, &v) || !(v & VERSYM_HIDDEN);
		for (int k = 0; k < nnames && k < 8; k++) {
			if (strcmp(nm, names[k]) || (vals[k] && (defaulted[k] || !dflt)))
				continue;
			if (type == STT_GNU_IFUNC)
				rc = -2;
			vals[k] = s.st_value;
			defaulted[k] = dflt;
		}
	}
out:
	elf_end(elf);
	return rc;
}

/* The first PT_LOAD segment of path (want_x 0), or the executable one
 * holding vaddr (want_x 1), into *ph: 0, or -1. */
static int load_segment(const char *path, int want_x, uint64_t vaddr, GElf_Phdr *out)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	struct stat st;
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) { /* never a FIFO or a device */
		close(fd);
		return -1;
	}
	elf_version(EV_CURRENT);
	Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
	int rc = -1;
	size_t n;
	if (elf && elf_kind(elf) == ELF_K_ELF && elf_getphdrnum(elf, &n) == 0) {
		for (size_t i = 0; i < n && rc; i++) {
			GElf_Phdr ph;
			if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
				continue;
			if (want_x && (!(ph.p_flags & PF_X) || vaddr < ph.p_vaddr || vaddr - ph.p_vaddr >= ph.p_filesz))
				continue;
			*out = ph;
			rc = 0;
		}
	}
	if (elf)
		elf_end(elf);
	close(fd);
	return rc;
}

int sym_peek_load_vaddr(const char *path, uint64_t *vaddr)
{
	GElf_Phdr ph;
	if (load_segment(path, 0, 0, &ph))
		return -1;
	*vaddr = (ph.p_vaddr - ph.p_offset) & ~(uint64_t)0xfff;
	return 0;
}

int sym_peek_file_offset(const char *path, uint64_t vaddr, uint64_t *off)
{
	GElf_Phdr ph;
	if (load_segment(path, 1, vaddr, &ph))
		return -1;
	*off = vaddr - ph.p_vaddr + ph.p_offset;
	return 0;
}

/* Whether the ELF file at fd has a section of type SHT_NOTE named name. */
int sym_peek_has_note(int fd, const char *name)
{
	Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
	size_t shstr;
	int found = 0;
	if (elf && elf_getshdrstrndx(elf, &shstr) == 0) {
		Elf_Scn *scn = NULL;
		while (!found && (scn = elf_nextscn(elf, scn))) {
			GElf_Shdr sh;
			const char *nm;
			if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_NOTE &&
			    (nm = elf_strptr(elf, shstr, sh.sh_name)) && !strcmp(nm, name))
				found = 1;
		}
	}
	if (elf)
		elf_end(elf);
	return found;
}
