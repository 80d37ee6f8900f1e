/* resolve.h — probe locations to run-time addresses (resolve.c). */
#ifndef SONDE_PROBE_RESOLVE_H
#define SONDE_PROBE_RESOLVE_H

#include <stddef.h>
#include <stdint.h>

#include "proc/modules.h"

struct engine;
struct spec;

/* Resolve p->sp's location; *out is malloc'd.  Every address is checked to
 * be on an instruction boundary (decoded from the function start). */
int resolve_location(struct engine *e, const struct spec *sp, struct loc_addr **out, int *n,
                     char *err, size_t errlen);
/* The function named by sp (func kind); fills one loc_addr for its start. */
int resolve_function(struct engine *e, const struct spec *sp, struct loc_addr *out,
                     char *err, size_t errlen);
/* The same, plus sp->off: out->addr = start + OFF, refused (-1, err) when OFF
 * is beyond the function's size or not on an instruction boundary. */
int resolve_function_offset(struct engine *e, const struct spec *sp, struct loc_addr *out,
                            char *err, size_t errlen);
int resolve_check_boundary(struct engine *e, const struct loc_addr *la, char *err, size_t n);
/* Name a run-time address: its function, else "module+0xOFF" (a stripped
 * module: OFF is the link-time address), else "0xADDR". */
void resolve_name(struct engine *e, uint64_t addr, char *buf, size_t n);
/* The same among the modules mods (an image the program left by exec). */
struct modules;
void resolve_name_in(struct modules *mods, uint64_t addr, char *buf, size_t n);
/* The source line of a run-time address: *file its base name (the symbol
 * cache's, valid while the engine's modules are).  0, or -1 when unknown. */
int resolve_line(struct engine *e, uint64_t addr, const char **file, int *line);
/* The same among the modules mods. */
int resolve_line_in(struct modules *mods, uint64_t addr, const char **file, int *line);
/* Describe a run-time address: "func+0x12 (file.c:34)", else
 * "module+0xOFF" as resolve_name. */
void resolve_describe(struct engine *e, uint64_t addr, char *buf, size_t n);

#endif
