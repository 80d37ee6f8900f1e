/* scratch.h — out-of-line slots (scratch.c): executable pages mapped inside
 * the target by an injected mmap, within reach of the probed code, one slot
 * per displaced instruction.  Mapping and unmapping need every thread stopped. */
#ifndef SONDE_PROBE_SCRATCH_H
#define SONDE_PROBE_SCRATCH_H

#include <stddef.h>
#include <stdint.h>

struct bp;
struct bptab;
struct target;

struct scratch_region {
	uint64_t base, size;
	struct bp **owner;      /* one per slot */
	int nslots, used;
};
struct scratch {
	struct scratch_region r[32];
	int n;
};

/* A slot for b within reach of near, mapping a new region in t if needed
 * (bps: the breakpoints to keep while a system call is injected). */
int scratch_slot(struct scratch *s, struct target *t, struct bptab *bps, struct bp *b, uint64_t near,
                 uint64_t *slot, char *err, size_t n);
void scratch_release(struct scratch *s, uint64_t slot);
/* The breakpoint whose slot holds pc (*slot: that slot's start), or NULL. */
struct bp *scratch_owner(struct scratch *s, uint64_t pc, uint64_t *slot);
void scratch_unmap_all(struct scratch *s, struct target *t, struct bptab *bps);

#endif
