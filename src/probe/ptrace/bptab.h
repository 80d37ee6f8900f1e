/* bptab.h — the breakpoint table (bptab.c): one entry per probed address,
 * with the probes sharing it (sites), the displaced instruction and its
 * out-of-line slot; and the target's code as it was before our breakpoints. */
#ifndef SONDE_PROBE_BPTAB_H
#define SONDE_PROBE_BPTAB_H

#include <stddef.h>
#include <stdint.h>

#include "arch/arch.h"

struct probe;
struct target;

struct site {
	struct probe *p;
	int role;
};

struct bp {
	uint64_t addr;
	struct arch_insn insn;
	uint8_t orig[ARCH_BP_LEN];
	uint64_t slot;          /* out-of-line slot, 0 if emulated */
	int slot_post;          /* slot ends in a trap for post-handlers */
	int inserted;
	struct site *sites;
	int nsites;
	int want_post;
};

struct bptab {
	struct bp **h;          /* sorted by addr */
	int cap, n;
};

struct bp *bptab_find(struct bptab *t, uint64_t addr);
struct bp *bptab_add(struct bptab *t, uint64_t addr);
/* Frees the entry (and its sites): b is gone after this. */
void bptab_remove(struct bptab *t, uint64_t addr);
/* Iterate: returns next bp after index *it, NULL at end. */
struct bp *bptab_next(struct bptab *t, int *it);
void bptab_free(struct bptab *t);
/* Target memory with the inserted breakpoints shown as the original bytes. */
int bptab_read_code(struct bptab *t, struct target *tg, uint64_t addr, void *buf, size_t n);

#endif
