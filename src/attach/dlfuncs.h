/* dlfuncs.h — where the target's dynamic loader functions are (dlfuncs.c):
 * dlopen and dlerror found in its C library (glibc >= 2.34, musl) or in
 * libdl (older glibc), by the dynamic symbols of the mapped object. */
#ifndef SONDE_ATTACH_DLFUNCS_H
#define SONDE_ATTACH_DLFUNCS_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct modules;

struct dl_funcs {
	uint64_t dlopen, dlerror;   /* run-time addresses in the target */
	char lib[PATH_MAX];         /* the object that defines them */
};

/* Finds dlopen and dlerror among the target's modules (proc/modules.h).
 * 0 found; -1 with err "no dlopen in process N (...why...)". */
int dl_funcs_find(pid_t pid, struct modules *ms, struct dl_funcs *f, char *err, size_t n);

/* The same, and when the process has its dynamic loader mapped but no C
 * library yet (it exec'd a moment ago: ld.so is loading its libraries),
 * ms is read again every DL_STARTUP_POLL_MS until the C library is there,
 * DL_STARTUP_WAIT_MS at most. */
#define DL_STARTUP_POLL_MS 5
#define DL_STARTUP_WAIT_MS 10000
int dl_funcs_find_wait(pid_t pid, struct modules *ms, struct dl_funcs *f, char *err, size_t n);

/* Whether path names the C library, the dynamic loader, libpthread or
 * libdl: code that may hold the locks dlopen takes. */
int dl_is_runtime_lib(const char *path);
/* Whether path names the dynamic loader (ld-linux*.so, ld-2.*): a thread in
 * it may be loading the program before its TLS exists. */
int dl_is_loader(const char *path);
/* Whether ms has the dynamic loader mapped and no C library yet: a program
 * that ld.so is still loading. */
int dl_loader_only(const struct modules *ms);

/* The run-time address of the dynamic loader's struct r_debug (glibc's
 * _r_debug: r_map at +8, r_state at +24, RT_CONSISTENT 0 once the loader
 * is done loading), or 0 when ms has no glibc loader that defines it. */
#define DL_R_MAP_OFF 8
#define DL_R_STATE_OFF 24
uint64_t dl_loader_debug(pid_t pid, const struct modules *ms);

/* Link-time values of names in the .dynsym of the target's object at path
 * (vals[i] 0 when not defined).  0, or -1 unreadable, -2 an IFUNC. */
int dl_file_syms(pid_t pid, const char *path, const char *const *names, uint64_t *vals, int nnames);

/* How many of the target's modules have a SHT_NOTE section of this name
 * (".note.sonde": built by sonde-cc, see src/rt/module.c). */
int dl_count_note_section(pid_t pid, struct modules *ms, const char *name);

#endif
