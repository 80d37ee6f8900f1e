/* dlfuncs.c — finds dlopen and dlerror in the target.  Since glibc 2.34
 * they live in libc.so.6 (dlopen@@GLIBC_2.34, plus the compat version
 * GLIBC_2.2.5 at the same address); before, only libdl.so.2 has them and
 * libc keeps a private __libc_dlopen_mode without dlerror, which sonde does
 * not use: such a target must have libdl loaded.  musl has them in its
 * loader, ld-musl-*.so.1.  The object's .dynsym is read with libelf; the
 * default version of a symbol wins over a compat one. */
#include "attach/dlfuncs.h"

#include "probe/modules.h"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define VERSYM_HIDDEN 0x8000

static const char *base(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

static int is_libc(const char *b)
{
	return !strncmp(b, "libc.so", 7) || !strncmp(b, "libc-", 5) || !strncmp(b, "ld-musl-", 8);
}

static int is_libdl(const char *b)
{
	return !strncmp(b, "libdl.so", 8) || !strncmp(b, "libdl-", 6);
}

int dl_is_runtime_lib(const char *path)
{
	const char *b = base(path);
	return is_libc(b) || is_libdl(b) || !strncmp(b, "ld-linux", 8) || !strncmp(b, "ld-2.", 5) ||
	       !strncmp(b, "libpthread", 10);
}

/* Link-time values of the named functions in the .dynsym of the ELF file at
 * fd: vals[i] stays 0 when names[i] is not defined there.  -1 when the
 * file is not readable ELF, -2 when a name is an IFUNC (its value is a
 * resolver, not the function). */
static int dynsym_lookup(int fd, const char *const *names, uint64_t *vals, int nnames)
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

static int open_in_target(pid_t pid, const char *path)
{
	/* The target may live in another mount namespace: its root first. */
	char p[PATH_MAX + 32];
	snprintf(p, sizeof p, "/proc/%d/root%s", (int)pid, path);
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	return fd >= 0 ? fd : open(path, O_RDONLY | O_CLOEXEC);
}

int dl_funcs_find(pid_t pid, struct modules *ms, struct dl_funcs *f, char *err, size_t n)
{
	static const char *const names[] = { "dlopen", "dlerror" };
	const char *libc = NULL;
	elf_version(EV_CURRENT);
	memset(f, 0, sizeof *f);
	/* The C library first, libdl second: with glibc >= 2.34 libdl.so.2 is
	 * an empty compatibility stub. */
	for (int pass = 0; pass < 2; pass++)
		for (int i = 0; i < ms->n; i++) {
			struct module *m = &ms->m[i];
			const char *b = base(m->path);
			if (pass == 0 ? !is_libc(b) : !is_libdl(b))
				continue;
			if (pass == 0)
				libc = m->path;
			int fd = open_in_target(pid, m->path);
			if (fd < 0)
				continue;
			uint64_t v[2] = { 0, 0 };
			int rc = dynsym_lookup(fd, names, v, 2);
			close(fd);
			if (rc == -2) {
				snprintf(err, n, "cannot call dlopen in process %d (it is an IFUNC in %s)", (int)pid,
				         m->path);
				return -1;
			}
			if (rc == 0 && v[0] && v[1]) {
				f->dlopen = v[0] + m->bias;
				f->dlerror = v[1] + m->bias;
				snprintf(f->lib, sizeof f->lib, "%s", m->path);
				return 0;
			}
		}
	if (!libc)
		snprintf(err, n, "no dlopen in process %d (no dynamic C library is mapped: a static binary "
		         "cannot load a library)", (int)pid);
	else
		snprintf(err, n, "no dlopen in process %d (%s does not define it, as glibc before 2.34, and "
		         "libdl.so.2 is not loaded)", (int)pid, libc);
	return -1;
}

int dl_file_syms(pid_t pid, const char *path, const char *const *names, uint64_t *vals, int nnames)
{
	elf_version(EV_CURRENT);
	for (int i = 0; i < nnames; i++)
		vals[i] = 0;
	int fd = open_in_target(pid, path);
	if (fd < 0)
		return -1;
	int rc = dynsym_lookup(fd, names, vals, nnames);
	close(fd);
	return rc;
}

/* Whether the ELF file at fd has a section of type SHT_NOTE named name. */
static int has_note_section(int fd, const char *name)
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

int dl_count_note_section(pid_t pid, struct modules *ms, const char *name)
{
	elf_version(EV_CURRENT);
	int n = 0;
	for (int i = 0; i < ms->n; i++) {
		int fd = open_in_target(pid, ms->m[i].path);
		if (fd < 0)
			continue;
		n += has_note_section(fd, name);
		close(fd);
	}
	return n;
}
