/* peek.h — single facts read from an ELF file without loading it as an
 * object of the cache (sym/cache.h): for attaching to a process. */
#ifndef SONDE_SYM_PEEK_H
#define SONDE_SYM_PEEK_H

#include <stdint.h>

/* Link-time values of the named functions (at most 8) in the .dynsym of
 * the ELF file at fd; the default version of a symbol wins over a compat
 * one.  vals[i] stays 0 when names[i] is not defined there.  0, -1 when the
 * file is not readable ELF, -2 when a name is an IFUNC (its value is a
 * resolver, not the function). */
int sym_peek_dynsym(int fd, const char *const *names, uint64_t *vals, int nnames);

/* The link-time address of the page of the first PT_LOAD segment of the ELF
 * file at path (run-time base minus this is the load bias).  0, or -1. */
int sym_peek_load_vaddr(const char *path, uint64_t *vaddr);

/* The file offset of link-time address vaddr of the ELF file at path,
 * inside an executable PT_LOAD segment's file bytes (what the kernel's
 * uprobes take: an inode and an offset).  0, or -1 (not ELF, or vaddr in
 * no executable segment). */
int sym_peek_file_offset(const char *path, uint64_t vaddr, uint64_t *off);


/* Whether the ELF file at fd has a section of type SHT_NOTE named name
 * (the module note of a sonde build: .note.sonde). */
int sym_peek_has_note(int fd, const char *name);

#endif
