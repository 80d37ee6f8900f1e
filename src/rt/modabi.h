/* modabi.h — the interface between the module object (module.c, linked into
 * every instrumented executable and shared library) and the runtime
 * (libsonde-rt.so, preloaded by `sonde record`).
 *
 * The module object is frozen into users' binaries, so this interface is
 * versioned: the runtime refuses (and reports) a module of another version.
 */
#ifndef SONDE_RT_MODABI_H
#define SONDE_RT_MODABI_H

#include <stdint.h>

#define SONDE_MODABI_VERSION 2u

/* Bytes of padding before each function entry (-fpatchable-function-entry=8,8):
 * [uint32 number][uint32 tag], tag = sonde_tag(number, salt). */
#define SONDE_PAD 8

static inline uint32_t sonde_tag(uint32_t number, uint32_t salt)
{
	return (number * 0x9e3779b1u) ^ salt ^ 0x5a4f4e44u;
}

struct sonde_modhook;
typedef void (*sonde_hook_fn)(struct sonde_modhook *m, uint32_t number, uintptr_t cfa, uintptr_t site);

/* One per module, in the module object (hidden).  The hooks read `active`
 * first: 0 means dormant (no sonde), the whole hook is a load and a branch. */
struct sonde_modhook {
	volatile uint32_t active;
	uint32_t version;
	uint32_t slot;          /* session module slot, set by the runtime */
	uint32_t nfuncs;
	uintptr_t lo, span;     /* padding addresses: [lo, lo + span] */
	uint32_t salt;
	uint32_t numbered;      /* 1 if the padding holds numbers */
	sonde_hook_fn enter, exit;
	const uint64_t *entries; /* __patchable_function_entries: padding addresses */
	uint64_t numbering_ns;
	const void *anchor;     /* an address inside the module (for dladdr) */
};

/* Exported by the runtime (looked up with dlsym by the module constructor). */
typedef int (*sonde_register_fn)(struct sonde_modhook *m);
typedef void (*sonde_unregister_fn)(struct sonde_modhook *m);
#define SONDE_REGISTER_SYM   "sonde_rt_register_module"
#define SONDE_UNREGISTER_SYM "sonde_rt_unregister_module"

#endif
