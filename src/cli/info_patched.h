/* info_patched.h — `sonde info` on functions patched without a rebuild
 * (info_patched.c). */
#ifndef SONDE_CLI_INFO_PATCHED_H
#define SONDE_CLI_INFO_PATCHED_H

#include <stdint.h>

#include "data/reader.h"

struct json;
/* "patched": [...] (the planned modules: found, patchable, left out and why). */
void info_patched_json(const struct recording *r, struct json *j);
void info_patched_table(const struct recording *r);
/* How module slot was instrumented: "sleds" (sonde-cc) or "patched". */
/* --timing=auto's switches (META "timing.*", cli/record_patch.c): how many
 * windows, probes and switches; each switch kept, its function named. */
struct fn_table;
void info_timing_json(const struct recording *r, const struct fn_table *ft, struct json *j);
void info_timing_table(const struct recording *r, const struct fn_table *ft);
const char *info_module_how(const struct recording *r, uint32_t slot);
/* How its stubs came: "prebuilt" (built by sonde before the program ran, for
 * the place just below the module), "moved" (the same, moved by the program
 * to another place), "asked" (built when the program asked, for the region
 * it mapped), or NULL (not patched, or a recording before this). */
const char *info_module_stubs(const struct recording *r, uint32_t slot);

#endif
