/* modabi.h — the interface between the module object (module.c, linked into
 * every instrumented executable and shared library) and the runtime
 * (libsonde-rt.so, preloaded by `sonde record`).
 *
 * The module object is frozen into users' binaries, so this interface is
 * versioned: the runtime refuses (and reports) a module of another version.
 *
 * Each instrumented function carries, from -fpatchable-function-entry=13,8:
 *     fn - 8 .. fn - 1   padding, never executed: [uint32 number][uint32 tag]
 *                        written by the runtime when the module registers
 *     fn .. fn + 4       the entry sled: nops (dormant) or, while recording,
 *                        `call` to the module's trampoline (module.c)
 * The trampoline hands (module, fn, address of the return-address slot) to
 * the runtime's entry hook, which replaces the return address by the
 * runtime's exit trampoline (hooks.c). See docs/INSTRUMENTATION.md.
 *
 * Exit sleds (version 4; GCC builds through sonde-as): a function listed in
 * __sonde_exit_sleds has a five-byte nop before each of its `ret`s and tail
 * calls.  While recording, each before a `ret` becomes a `call` to the
 * module's exit trampoline, which calls exit_sled(slot); each before a tail
 * call a `call` to its tail trampoline, which calls tail_sled(slot); and the
 * function's entry sled calls tramp_sled, which calls enter_sled: the return
 * address is kept (until a tail call).
 */
#ifndef SONDE_RT_MODABI_H
#define SONDE_RT_MODABI_H

#include <stdint.h>

#define SONDE_MODABI_VERSION 4u

#define SONDE_PAD  8  /* bytes of padding before each entry: number + tag */
#define SONDE_SLED 5  /* bytes of the entry sled: nops, or call rel32     */

static inline uint32_t sonde_tag(uint32_t number, uint32_t salt)
{
	return (number * 0x9e3779b1u) ^ salt ^ 0x5a4f4e44u;
}

struct sonde_modhook;
/* Entry hook: fn is the function's entry address, slot the stack slot that
 * holds its return address. */
typedef void (*sonde_enter_fn)(struct sonde_modhook *m, uintptr_t fn, uintptr_t *slot);
/* Exit-sled hook: slot is the stack slot of the returning function's return
 * address (the one its entry hook was given). */
typedef void (*sonde_exit_sled_fn)(uintptr_t *slot);

/* One per module, in the module object (hidden). */
struct sonde_modhook {
	sonde_enter_fn enter;   /* FIRST: the trampoline calls *(m + 0) */
	uint32_t version;
	uint32_t slot;          /* session module slot, set by the runtime */
	uint32_t nfuncs;
	uint32_t salt;
	uintptr_t lo, span;     /* padding addresses: [lo, lo + span] */
	const uint64_t *entries; /* __patchable_function_entries: padding addresses, by number */
	const void *tramp;      /* the module's entry trampoline: what the sleds call */
	const void *anchor;     /* an address inside the module (for dladdr) */
	uint64_t numbering_ns;  /* time spent numbering and patching */
	uint32_t numbered;      /* 1 if the padding holds numbers */
	uint32_t patched;       /* sleds switched on */
	/* version 4: exit sleds (offsets fixed: module.c's trampolines read them) */
	sonde_enter_fn enter_sled;       /* +80: entry of a function with exit sleds */
	sonde_exit_sled_fn exit_sled;    /* +88: what its exit sleds reach */
	const int32_t *exits, *exits_end; /* __sonde_exit_sleds: per function {padding, nret | ntail << 16,
	                                   * ret sleds, tail sleds}, each address an offset from its
	                                   * own field (sonde-as.c) */
	const void *tramp_sled;          /* the entry trampoline calling enter_sled */
	const void *exit_tramp;          /* what the exit sleds call */
	uint32_t nsled_funcs;            /* functions whose exit sleds are switched on */
	uint32_t pad4;
	sonde_exit_sled_fn tail_sled;    /* +136: what a tail call's sled reaches */
	const void *tail_tramp;          /* what the tail calls' sleds call */
};

/* The ELF note each module carries, so that an agent loaded into a running
 * process finds every module (module.c): name "sonde", this type, and a
 * descriptor of 16 bytes: u32 version, u32 0, i64 offset from the i64's own
 * address to the module's struct sonde_modhook. */
#define SONDE_NOTE_NAME "sonde"
#define SONDE_NOTE_TYPE 0x534d4f44 /* "DOMS" */
#define SONDE_NOTE_DESCSZ 16

/* Exported by the runtime (looked up with dlsym by the module constructor). */
typedef int (*sonde_register_fn)(struct sonde_modhook *m);
typedef void (*sonde_unregister_fn)(struct sonde_modhook *m);
#define SONDE_REGISTER_SYM   "sonde_rt_register_module"
#define SONDE_UNREGISTER_SYM "sonde_rt_unregister_module"

#endif
