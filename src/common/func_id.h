/* func_id.h — a function id: the u32 that names a function everywhere, in
 * the session memory (CCT nodes, shadow stacks), in trace events (ENTER) and
 * in the recording (rec_node.func; docs/FORMAT.md, "Function ids").  Shared
 * by the runtime and the readers: changing it is an incompatible format
 * change (SONDE_DATA_VERSION).
 *
 * func = module slot (12 bits) << 20 | number (20 bits); number 0xFFFFF is
 * the module's "unnumbered" bucket (calls of functions without sonde's
 * padding). */
#ifndef SONDE_COMMON_FUNC_ID_H
#define SONDE_COMMON_FUNC_ID_H

#include <stdint.h>

#define SONDE_FUNC(mod, num)   (((uint32_t)(mod) << 20) | (uint32_t)(num))
#define SONDE_FUNC_MOD(f)      ((f) >> 20)
#define SONDE_FUNC_NUM(f)      ((f) & 0xfffffu)
#define SONDE_MAX_FUNCS_PER_MODULE 0xfffffu  /* the last number is "unnumbered" */
#define SONDE_UNNUMBERED       0xfffffu

#endif
