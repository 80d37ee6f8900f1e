/* dlfuncs.c — finds dlopen and dlerror in the target.  Since glibc 2.34
 * they live in libc.so.6 (dlopen@@GLIBC_2.34, plus the compat version
 * GLIBC_2.2.5 at the same address); before, only libdl.so.2 has them and
 * libc keeps a private __libc_dlopen_mode without dlerror, which sonde does
 * not use: such a target must have libdl loaded.  musl has them in its
 * loader, ld-musl-*.so.1.  The object's .dynsym is read with libelf; the
 * default version of a symbol wins over a compat one. */
#include "attach/dlfuncs.h"
#include "common/clock.h"

#include "proc/modules.h"
#include "proc/target.h"
#include "sym/peek.h"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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

int dl_is_loader(const char *path)
{
	const char *b = base(path);
	return !strncmp(b, "ld-linux", 8) || !strncmp(b, "ld-2.", 5);
}

int dl_is_runtime_lib(const char *path)
{
	const char *b = base(path);
	return is_libc(b) || is_libdl(b) || dl_is_loader(path) || !strncmp(b, "libpthread", 10);
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
			int rc = sym_peek_dynsym(fd, names, v, 2);
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

/* Whether the dynamic loader is mapped and no C library yet: a process in
 * its first milliseconds (an attach right after its exec), not a static
 * binary. */
int dl_loader_only(const struct modules *ms)
{
	int loader = 0;
	for (int i = 0; i < ms->n; i++) {
		if (is_libc(base(ms->m[i].path)))
			return 0;
		loader |= dl_is_loader(ms->m[i].path);
	}
	return loader;
}

uint64_t dl_loader_debug(pid_t pid, const struct modules *ms)
{
	for (int i = 0; i < ms->n; i++) {
		if (!dl_is_loader(ms->m[i].path))
			continue;
		static const char *const names[] = { "_r_debug" };
		uint64_t v = 0;
		if (dl_file_syms(pid, ms->m[i].path, names, &v, 1) == 0 && v)
			return v + ms->m[i].bias;
		return 0;
	}
	return 0;
}

/* Whether the main executable of ms names a dynamic loader (PT_INTERP). */
static int main_has_interp(pid_t pid, const struct modules *ms)
{
	int found = 0;
	for (int i = 0; i < ms->n && !found; i++) {
		if (!ms->m[i].is_main)
			continue;
		int fd = open_in_target(pid, ms->m[i].path);
		Elf *e = fd >= 0 ? elf_begin(fd, ELF_C_READ, NULL) : NULL;
		size_t np = 0;
		if (e && elf_getphdrnum(e, &np) == 0)
			for (size_t k = 0; k < np && !found; k++) {
				GElf_Phdr ph;
				found = gelf_getphdr(e, (int)k, &ph) && ph.p_type == PT_INTERP;
			}
		if (e)
			elf_end(e);
		if (fd >= 0)
			close(fd);
		break;
	}
	return found;
}

/* A process caught in the middle of its exec: its new maps may hold the
 * executable alone for a moment, before the kernel maps its loader, or no
 * executable yet (/proc/PID/exe not the file mapped). */
static int starting(pid_t pid, const struct modules *ms)
{
	int main = 0;
	for (int i = 0; i < ms->n; i++) {
		if (is_libc(base(ms->m[i].path)))
			return 0;
		main |= ms->m[i].is_main;
	}
	return !main || dl_loader_only(ms) || main_has_interp(pid, ms);
}

int dl_funcs_find_wait(pid_t pid, struct modules *ms, struct dl_funcs *f, char *err, size_t n)
{
	uint64_t end = clock_mono_ms() + DL_STARTUP_WAIT_MS; /* wall time: a loaded machine slows the loader */
	elf_version(EV_CURRENT);
	for (;;) {
		int rc = dl_funcs_find(pid, ms, f, err, n);
		if (!rc || clock_mono_ms() >= end || !starting(pid, ms))
			return rc;
		struct timespec ts = { 0, DL_STARTUP_POLL_MS * 1000000L };
		nanosleep(&ts, NULL);
		modules_free(ms);
		memset(ms, 0, sizeof *ms);
		if (modules_load(ms, pid) != 0)
			return rc; /* gone, or maps unreadable: the caller's attach says why */
		/* No maps at all: between two images of an exec, or ended. */
		char st = ms->n ? 'R' : target_thread_state(pid, pid);
		if (!st || st == 'Z' || st == 'X')
			return rc;
	}
}

int dl_file_syms(pid_t pid, const char *path, const char *const *names, uint64_t *vals, int nnames)
{
	elf_version(EV_CURRENT);
	for (int i = 0; i < nnames; i++)
		vals[i] = 0;
	int fd = open_in_target(pid, path);
	if (fd < 0)
		return -1;
	int rc = sym_peek_dynsym(fd, names, vals, nnames);
	close(fd);
	return rc;
}

int dl_count_note_section(pid_t pid, struct modules *ms, const char *name)
{
	elf_version(EV_CURRENT);
	int n = 0;
	for (int i = 0; i < ms->n; i++) {
		int fd = open_in_target(pid, ms->m[i].path);
		if (fd < 0)
			continue;
		n += sym_peek_has_note(fd, name);
		close(fd);
	}
	return n;
}
