/* probe_area.h — the memory that sonde and the probe agent share (the agent
 * backend of `sonde probe`, docs/PROBES.md "Engines"): a header with a
 * one-request mailbox, and one record per probe site with the code sonde
 * prepared for it and the counters the agent's handlers add to.  sonde
 * creates it (a memfd), the agent (src/rt/probes.c) maps it; nothing else
 * joins them but a pipe whose end of file tells the agent that sonde is gone.
 *
 * The agent trusts nothing sonde wrote but what it checks (indexes, lengths,
 * addresses inside a mapping it made); sonde trusts nothing the agent or the
 * program wrote (counters are only summed and printed). */
#ifndef SONDE_COMMON_PROBE_AREA_H
#define SONDE_COMMON_PROBE_AREA_H

#include <stdint.h>

#define PA_MAGIC      0x424f52504e4f53ull /* "SONPROB" */
#define PA_VERSION    1
#define PA_MAX_SITES  2048
#define PA_CODE_MAX   192   /* bytes of slot code per site */
#define PA_ORIG_MAX   16
#define PA_CALLERS    16    /* return addresses counted per func site; more go to callers_lost */
#define PA_SLOT_SIZE  256   /* a site's slot in the agent's code regions */

/* Mailbox operations (sonde → agent). */
enum pa_op {
	PA_OP_NONE,
	PA_OP_SLOT,        /* give site a slot within ±2 GiB of its address: site.slot_addr */
	PA_OP_PLACE,       /* write the site's jump (or int3) and switch it on */
	PA_OP_REMOVE,      /* put the site's original bytes back */
	PA_OP_REMOVE_ALL,  /* every site (the end of the session) */
};

/* What a hit does (in the agent, src/rt/probes.c). */
enum pa_kind {
	PA_KIND_COUNT = 1, /* count (line probes) */
	PA_KIND_CALL  = 2, /* count, the caller, and the time to the return (func probes) */
};

/* How the site reaches its handler. */
enum pa_mode {
	PA_MODE_JMP  = 1,  /* a 5-byte jmp to the slot's trampoline */
	PA_MODE_INT3 = 2,  /* int3; the agent's SIGTRAP handler runs the hit, then the slot's displaced code */
};

enum pa_state { PA_FREE, PA_PREPARED, PA_ACTIVE, PA_REMOVED };

struct pa_caller {
	uint64_t ret;      /* return address, claimed once (0 = free) */
	uint64_t n;
};

struct pa_site {
	/* Written by sonde before PA_OP_PLACE. */
	uint64_t addr;
	uint32_t kind, mode;
	uint32_t orig_len;               /* bytes the jump covers (mode JMP: >= 5, whole instructions) */
	uint32_t code_len;               /* bytes of code[] */
	uint32_t displaced_off;          /* code[displaced_off..]: the displaced instructions, then a jump back */
	uint32_t state;                  /* enum pa_state, written by the agent */
	uint8_t orig[PA_ORIG_MAX];       /* the original bytes (orig_len of them; 1 for int3) */
	uint8_t code[PA_CODE_MAX];       /* slot code, built for slot_addr */
	uint64_t slot_addr;              /* written by the agent on PA_OP_SLOT */
	/* Written by the agent's handlers. */
	uint64_t hits, returns;
	uint64_t ticks_total, ticks_min, ticks_max; /* call to return, in clock ticks */
	struct pa_caller callers[PA_CALLERS];
	uint64_t callers_lost;
	uint64_t lost_returns;           /* returns that could not be followed (shadow stack full) */
};

struct pa_hdr {
	uint64_t magic;
	uint32_t version, nsites;        /* nsites: records in sites[] */
	uint32_t size;                   /* bytes of the whole area */
	uint32_t go;                     /* launch: the program waits for 1 (a futex) */
	uint32_t ready;                  /* the agent is serving requests (1), and its thread's id */
	uint32_t agent_tid;
	/* mailbox: sonde writes op, site, then req = done + 1 and a byte into the
	 * pipe; the agent answers with err (0 or -errno), msg, then done = req. */
	uint32_t req, done;
	uint32_t op, site;
	int32_t err;
	char msg[160];
	/* Written by the agent. */
	uint64_t hit_fn;                 /* the agent's hit function, called by the trampolines */
	uint64_t stray_traps;            /* SIGTRAPs that were not ours, passed on */
	uint64_t lost_depth;             /* calls not followed: a thread's shadow stack was full */
	uint64_t shadow_fail;            /* calls not followed: no shadow stack could be mapped */
	struct pa_site sites[];
};

static inline uint64_t pa_area_size(uint32_t nsites)
{
	uint64_t b = sizeof(struct pa_hdr) + (uint64_t)nsites * sizeof(struct pa_site);
	return (b + 4095) & ~4095ull;
}

#endif
