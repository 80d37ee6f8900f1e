/* probe.h — a probe and a hit, the two objects every part of src/probe
 * shares: the engine places and removes probes, a hit is what their kind's
 * handlers (kind.h) get on each stop, the outputs report them. */
#ifndef SONDE_PROBE_PROBE_H
#define SONDE_PROBE_PROBE_H

#include <stdint.h>

#include "arch/arch.h"
#include "probe/spec.h"

struct bp;
struct engine;
struct kind_ops;
struct thr;

struct hit {
	struct engine *e;
	struct thr *th;
	arch_regs *regs;
	uint64_t addr;      /* probed address */
	uint64_t now_ns;
	uint64_t ticks;     /* tick counter at the stop (the recording clock, common/clock.h) */
	struct bp *bp;
	arch_fpregs fp;     /* read on first use: hit_fpregs (step.h) */
	int have_fp;
};

struct probe {
	int id;
	char *spec;
	struct spec sp;
	const struct kind_ops *ops;
	struct engine *e;
	uint64_t hits;
	int removed;
	int disabled;       /* `disable ID`: placed, its hits not counted until `enable ID` */
	char *error;        /* why it was removed, or NULL */
	char *where;        /* resolved location, for list / output */
	void *data;         /* kind state */
	void *edata;        /* the engine's own state of the probe (the kernel engine's events), or NULL */
	int wants_post;
	int pending;        /* not placed yet: waits for a library that has its location (--pending) */
	const char *ended;  /* it ended by itself, counted until then (agent engine): "exec" (its image
	                     * was left by exec) or "unloaded" (its library was, dlclose); else NULL */
	int image;          /* 0: in the program's image; k: in the one it left by exec, e->old_mods[k - 1] */
	int in_target;      /* remote: sites counted inside the target (remote_count.c), no stop per hit */
	int in_target_incomplete; /* ... and the target ended with hits that no read of the counters saw */
};

#endif
