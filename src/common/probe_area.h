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
#define PA_VERSION    11
#define PA_MAX_SITES  2048
#define PA_CODE_MAX   192   /* bytes of slot code per site */
#define PA_ORIG_MAX   16
#define PA_CALLERS    16    /* return addresses counted per func site; more go to callers_lost */
#define PA_SLOT_SIZE  256   /* a site's slot in the agent's code regions */
#define PA_TRAPPING   64    /* threads inside the agent's SIGTRAP handler that it can name at once */

/* Mailbox operations (sonde → agent). */
enum pa_op {
	PA_OP_NONE,
	PA_OP_SLOT,        /* give site a slot within ±2 GiB of its address: site.slot_addr */
	PA_OP_PLACE,       /* write the site's jump (or int3) and switch it on */
	PA_OP_REMOVE,      /* put the site's original bytes back */
	PA_OP_REMOVE_ALL,  /* every site (the end of the session) */
	PA_OP_PLUGIN,      /* load the ABI-2 plugin named in the plugin block (pa_plugins.path) */
};

/* What a hit does (in the agent, src/rt/probes.c). */
enum pa_kind {
	PA_KIND_COUNT = 1, /* count (line probes) */
	PA_KIND_CALL  = 2, /* count, the caller, and the time to the return (func probes) */
	PA_KIND_VAR   = 3, /* count, and the statistics of the value var.prog computes (var probes); any
	                    * site runs its var program (when var.nprog) and the chain of var.next first */
	PA_KIND_LOAD  = 4, /* the dynamic linker's r_brk (hdr.r_brk): at each RT_CONSISTENT the agent adds
	                    * one to hdr.loads and the thread waits, PA_LOAD_WAIT_MS at most, until sonde
	                    * has placed the probes pending on a library (hdr.loads_seen) */
	PA_KIND_TIME  = 5, /* a record of a time probe chained to a site already there (var.next): its time */
	PA_KIND_PLUGIN = 6,/* count, and call the plugin's handlers for plugin probe plugin1 - 1 (any site,
	                    * or chained like PA_KIND_TIME) */
	PA_KIND_STACK = 7, /* count, and copy the registers and the stack into the thread's stack ring (stack
	                    * probes; pa_site.stack_bytes; any site, or chained like PA_KIND_TIME) */
};
#define PA_LOAD_WAIT_MS 5000

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

/* --- var sites ---------------------------------------------------------------
 * A variable's DWARF location at a site, compiled by sonde (src/probe/
 * agent_var.c) into a straight-line program over a small stack of 64-bit
 * values that the agent (src/rt/probes.c, var_eval) runs at each hit: at
 * most PA_VAR_PROG_MAX instructions, PA_VAR_STACK values, PA_VAR_READ_MAX
 * bytes of memory read (through process_vm_readv: a bad address is a
 * counted error, never a fault).  The value is the top of the stack at the
 * end, cut to var.size bytes and extended by var.type. */
#define PA_VAR_PROG_MAX 64
#define PA_VAR_STACK    16
#define PA_VAR_READ_MAX 64
#define PA_VAR_BUCKETS  130 /* the log2 histogram of kind_var.c (common/var_hist.h) */

enum pa_vop {
	PA_V_PUSH = 1,     /* push k */
	PA_V_REG,          /* push register a (DWARF number: 0-15 the general registers, 7 the stack pointer, 16 rip,
	                    * 17-32 the low 64 bits of xmm0-15) */
	PA_V_ADD,          /* top += k */
	PA_V_PLUS, PA_V_MINUS, PA_V_MUL, PA_V_AND, PA_V_OR, PA_V_XOR, PA_V_SHL, PA_V_SHR, PA_V_SHRA,
	                   /* pop y, top = top OP y */
	PA_V_NEG, PA_V_NOT,
	PA_V_DUP, PA_V_DROP, PA_V_SWAP, PA_V_OVER,
	PA_V_DEREF,        /* top = the a & 15 bytes (1, 2, 4, 8) at top, zero extended (sign extended if a & 0x80);
	                    * a & 0x40: the address is inside the site's own module (sonde checked): read directly */
	PA_V_NOVALUE,      /* no value here (optimized out): the hit counts as unavailable */
	/* Assertions (var.is_assert; compiled by src/probe/agent/agent_expr.c from expr.c's tree): */
	PA_V_EXT,          /* top cut to a & 15 bytes, sign extended if a & 0x80 (a variable's value) */
	PA_V_SAVE,         /* saved[a] = top (a < PA_VAR_SAVE): the variables' values of a failure */
	PA_V_DIV, PA_V_MOD,/* pop y, top = top OP y, signed; y == 0: the hit is a division by zero */
	PA_V_EQ, PA_V_NE, PA_V_LT, PA_V_LE, PA_V_GT, PA_V_GE, /* pop y, top = (signed) top OP y: 0 or 1 */
	PA_V_LNOT,         /* top = top == 0 */
	PA_V_BOOL,         /* top = top != 0 */
	PA_V_JZ,           /* top == 0: skip k (> 0) instructions, keeping it; else pop (&&) */
	PA_V_JNZ,          /* top != 0: top = 1, skip k instructions; else pop (||) */
	/* Floating point (var.fprog: src/rt/probe_float.c runs the program; values carry their
	 * kind, and the operators above are expr.c's on them: a float operand makes the operation
	 * one of long doubles): */
	PA_V_FPUSH,        /* push an x87 long double: significand k, sign and exponent pad[0] | pad[1] << 8 */
	PA_V_FEXT,         /* top (the bits of a float, a = 4, or a double, a = 8) becomes that value */
};

enum pa_vtype { PA_VT_INT = 1, PA_VT_UINT = 2,
	PA_VT_FLOAT = 3 /* IEEE-754 bits: float (size 4) or double (8); statistics in fmin... (src/rt/probe_float.c) */ };

struct pa_vinsn {
	uint8_t op, a;
	uint8_t pad[6];
	int64_t k;
};

#define PA_VAR_SAVE     8   /* variables of an assertion whose values a failure keeps */
#define PA_FAIL_MAX     5   /* failures kept per assert site (kind_var.c keeps the first 5) */

/* One failure of an assertion: when (clock ticks), which thread, the values
 * of the variables evaluated (mask: which of saved[] were). */
struct pa_fail {
	uint64_t t;
	uint32_t tid, mask;
	int64_t vals[PA_VAR_SAVE];
	uint32_t ready, pad;             /* 1 once the rest is written */
};

struct pa_var {
	/* Written by sonde before PA_OP_PLACE. */
	struct pa_vinsn prog[PA_VAR_PROG_MAX];
	uint32_t nprog;
	uint8_t type, size;              /* enum pa_vtype; 1, 2, 4 or 8 bytes */
	uint8_t is_assert, fprog;        /* an assertion: the value is its truth (count evaluations, failures);
	                                  * fprog: its program has floating point (PA_V_FPUSH, PA_V_FEXT) */
	uint32_t next;                   /* another var probe at this address: the index + 1 of its record
	                                  * (never placed itself; 0: none) */
	uint32_t fsave;                  /* sonde's: saved values (bits) that are doubles' bits (a float variable's) */
	/* Written by the agent's handlers (min and max start at INT64_MAX and INT64_MIN: sonde's). */
	uint64_t count;                  /* values read */
	uint64_t unavailable;            /* no value here (PA_V_NOVALUE) */
	uint64_t read_errors;            /* memory that could not be read */
	uint64_t bad_prog;               /* a program the agent refused (stack, bounds) */
	uint64_t div_zero;               /* a division by zero (assertions) */
	uint64_t failures;               /* assertions: values 0 */
	uint32_t nfail, pad3;            /* failures claimed in fail[] (may exceed PA_FAIL_MAX) */
	struct pa_fail fail[PA_FAIL_MAX];
	int64_t min, max, last;
	uint64_t sum_lo;                 /* the sum as a 128-bit two's complement number */
	uint64_t sum_hi;
	uint64_t hist[PA_VAR_BUCKETS];
	/* PA_VT_FLOAT: the agent's, under flock (count and hist above too); fsum as kind_var.c sums */
	uint32_t flock, flost;           /* flost: values dropped, the lock held by what this thread interrupted */
	double fmin, fmax, flast;
	long double fsum;
};

/* The general registers at a site as the trampoline saves them (lowest
 * address first) and the SIGTRAP handler copies them: pa_hit's third
 * argument. */
enum pa_reg {
	PA_R15, PA_R14, PA_R13, PA_R12, PA_RBP, PA_RBX, PA_R11, PA_R10, PA_R9, PA_R8,
	PA_RDI, PA_RSI, PA_RDX, PA_RCX, PA_RAX, PA_FLAGS, PA_NREGS
};

/* --- time sites ---------------------------------------------------------------
 * Time probe number slot1 - 1 (sonde numbers them, < PA_TIME_MAX, never
 * reused in a session) keeps its latest hit per thread (in the agent, beside
 * the thread's shadow stack); a hit adds the interval from the latest hit of
 * time probe prev1 - 1 in the same thread (when later than its own). */
#define PA_TIME_MAX 64

struct pa_time {
	/* Written by sonde. */
	uint32_t slot1, prev1;           /* 0: not a time site / no previous time probe */
	/* Written by the agent's handlers. */
	uint64_t first, last;            /* clock ticks (first: 0 until a hit) */
	uint64_t n, total_ns, min_ns, max_ns; /* intervals (min_ns starts at UINT64_MAX: sonde's) */
	uint64_t hist[64];               /* log2 of the interval in ns, kind_time.c's buckets */
	uint64_t lost;                   /* hits not timed (no per-thread memory) */
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
	uint64_t resume;                 /* the agent's: where its SIGTRAP handler sends a hit, slot_addr +
	                                  * displaced_off of the last placement (set once its code is in) */
	uint32_t rec;                    /* sonde's, --record (PA_REC_*; 0: not recording, the one test per hit) */
	uint32_t off;                    /* sonde's: the record's probe is disabled (`disable ID`): its var
	                                  * program, time stamp, stack copy and plugin handlers are not run (its hit
	                                  * count goes on; sonde keeps the count at the disable) */
	/* Written by the agent's handlers. */
	uint64_t hits, returns;
	uint64_t ticks_total, ticks_min, ticks_max; /* call to return, in clock ticks */
	struct pa_caller callers[PA_CALLERS];
	uint64_t callers_lost;
	uint64_t lost_returns;           /* returns that could not be followed (shadow stack full) */
	struct pa_var var;               /* PA_KIND_VAR: the program (sonde's) and the statistics (the agent's) */
	/* Branch probes (any kind of site at a conditional jump): its condition
	 * (sonde's: x86 condition code + 1, PA_CC_RCXZ/ECXZ + 1; 0: none), and
	 * how many times it was true at the hit (the agent's). */
	uint32_t branch_cc1, pad_branch;
	uint64_t taken;
	struct pa_time time;             /* time probes (time.slot1): any kind of site */
	uint32_t plugin1;                /* sonde's: plugin probe plugin1 - 1 runs here (0: none) */
	uint32_t post;                   /* sonde's: the slot calls the post handlers after the displaced
	                                  * instruction (pa_post_stub) */
	/* Stack probes: each hit copies the registers and at most stack_bytes of the stack (from the stack
	 * pointer up, never past the end of its mapping) into the thread's stack ring (struct pa_sring). */
	uint32_t stack_bytes;            /* sonde's (0: no stack here; the agent bounds it by PA_STK_COPY_MAX) */
	uint32_t stack_walk;             /* sonde's: 1: the agent walks the stack with the unwind table
	                                  * (struct pa_utab) first, and copies it only where that fails */
	uint64_t stack_taken;            /* the agent's: stacks copied and written */
	uint64_t stack_lost;             /* the agent's: stacks dropped (the ring full, no ring, a nested hit) */
	uint64_t stack_ticks;            /* the agent's: clock ticks spent copying the stacks written */
	uint64_t stack_walked;           /* the agent's: stacks walked in the program and written (no copy) */
	uint64_t stack_walk_ticks;       /* the agent's: clock ticks spent on those */
};

enum pa_rec {
	PA_REC_ON   = 1, /* the events of this record: var values, assert results, time intervals, returns */
	PA_REC_SITE = 2, /* and each hit of the site itself (PA_EV_SITE; func, line, branch probes use it) */
};

#define PA_CC_RCXZ 16 /* jrcxz: rcx == 0 */
#define PA_CC_ECXZ 17 /* jecxz: ecx == 0 */

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
	/* Threads between the agent's SIGTRAP handler and the end of its
	 * sigreturn may resume in any slot (that of a site already removed):
	 * sonde must not put a jump over the bytes such a slot returns into
	 * while one is there.  The handler names its thread in trapping[]
	 * (its id; 0 free; trapping_full counts those that found no room);
	 * after it, the thread is at the restorer (sigreturn's code, libc's). */
	uint64_t restorer;
	uint64_t r_brk;                  /* the dynamic linker's _r_debug.r_brk (0: unknown) */
	uint32_t loads;                  /* RT_CONSISTENT hits of a PA_KIND_LOAD site */
	uint32_t loads_seen;             /* sonde's: the loads it has placed pending probes for (a futex) */
	uint32_t execs;                  /* the program exec'd with the session kept (exec_follow.c): the new
	                                  * image's agent adds one and waits for exec_go to reach it */
	uint32_t exec_go;                /* sonde's: the probes are in the new image (a futex) */
	uint32_t exited;                 /* the program called exit (on_exit): its status in exit_code */
	int32_t exit_code;
	uint32_t trapping[PA_TRAPPING];
	uint32_t trapping_full;
	uint32_t nused;                  /* sonde's: sites[0, nused) have been written (raised before a
	                                  * site's first request); the agent looks no further */
	/* Written by sonde. */
	uint64_t time_gen;               /* the session (nonzero): a thread's latest times of another are stale */
	uint64_t time_mult;              /* ns per clock tick << 32, for the intervals of time sites */
	/* --record (struct pa_ring below): the rings follow the sites (rec_off,
	 * PA_REC_RINGS of them when rec_on); each site says what it records (pa_site.rec). */
	uint32_t rec_on, pad_rec;
	uint64_t rec_off;                /* sonde's: byte offset of ring 0 (pa_area_size(nsites)) */
	uint64_t rec_no_ring;            /* the agent's: events of threads that found no free ring */
	/* Stack probes (struct pa_sring below): PA_STK_RINGS rings at stk_off when stk_on. */
	uint32_t stk_on, pad_stk;
	uint64_t stk_off;                /* sonde's: byte offset of stack ring 0 */
	struct pa_site sites[];
};

/* --- plugin probes (ABI 2 of include/sonde/probe.h) -------------------------
 * One block after the sites: the plugin's path (sonde's), and per plugin
 * probe its id, spec, ARG (sonde's) and result area (the program's handlers
 * write it, sonde reads it).  src/rt/probe_plugin.c is the agent's side,
 * src/probe/agent/agent_plugin.c sonde's. */
#define PA_PLUGIN_MAX    64     /* plugin probes in a session */
#define PA_PLUGIN_PATH   512
#define PA_PLUGIN_STR    160
#define PA_RESULT_MAX    4096   /* SONDE_PROBE_RESULT_MAX */

struct pa_pprobe {
	uint8_t result[PA_RESULT_MAX] __attribute__((aligned(64))); /* the handlers' (and init's) */
	int32_t id;                      /* sonde's: the probe's id */
	uint32_t pad;
	char spec[PA_PLUGIN_STR], arg[PA_PLUGIN_STR];
	uint64_t hits;                   /* the agent's: pre calls (the context's hit numbers) */
	uint64_t done;                   /* the agent's: of them, those whose pre handler returned (or had none) */
};

struct pa_plugins {
	char path[PA_PLUGIN_PATH];       /* sonde's: absolute path of the .so */
	uint32_t result_size;            /* sonde's: the plugin's (<= PA_RESULT_MAX) */
	uint32_t loaded;                 /* the agent's: 1 once PA_OP_PLUGIN loaded it */
	uint64_t post_fn;                /* the agent's: pa_post_stub, called from the slots of post sites */
	uint64_t calls;                  /* the agent's: handler calls */
	struct pa_pprobe probes[PA_PLUGIN_MAX];
};

static inline uint64_t pa_plugins_off(uint32_t nsites)
{
	uint64_t b = sizeof(struct pa_hdr) + (uint64_t)nsites * sizeof(struct pa_site);
	return (b + 4095) & ~4095ull;
}

static inline uint64_t pa_area_size(uint32_t nsites)
{
	uint64_t b = pa_plugins_off(nsites) + sizeof(struct pa_plugins);
	return (b + 4095) & ~4095ull;
}

/* --- recording (`sonde probe --record`, src/rt/probe_record.c writes,
 * src/probe/agent/agent_record.c drains) -------------------------------------------
 * Each recording thread claims a ring (state 0 -> 1 by compare-and-swap; at
 * its exit 1 -> 2, and sonde, having drained it, frees it: 2 -> 0).  One
 * writer (the thread) moves head, one reader (sonde) moves tail; a full ring
 * drops the event and counts it in lost: the program never waits.  An event
 * is one struct pa_rev; PA_EV_FAIL is followed by n more whose t and v hold
 * the failure's saved values two by two. */
#define PA_REC_RINGS  64
#define PA_REC_EVENTS 65536u           /* per ring, a power of two */

enum pa_ev {
	PA_EV_SITE = 1,  /* a hit of site rec (v: 1 if its branch condition was true, else 0) */
	PA_EV_RET,       /* the return of a call of func site rec */
	PA_EV_VAL,       /* var record rec: its value v */
	PA_EV_FVAL,      /* var record rec: its floating-point value, v the bits of a double */
	PA_EV_NOVAL,     /* var or assert record rec: no value (unavailable, unreadable, bounds, / 0) */
	PA_EV_PASS,      /* assert record rec: true */
	PA_EV_FAIL,      /* assert record rec: false; v the mask of saved values, n events of them follow */
	PA_EV_TIME,      /* time record rec: v the interval in ns from the previous time probe, -1 none */
};

struct pa_rev {
	uint64_t t;                      /* clock ticks */
	uint32_t rec;                    /* site record */
	uint8_t type, n;                 /* enum pa_ev; events that follow as its payload */
	uint16_t pad;
	int64_t v;
};

struct pa_ring {
	uint32_t state;                  /* 0 free, 1 a thread's, 2 its thread ended */
	uint32_t tid;
	uint64_t head;                   /* the agent's: events written */
	uint64_t tail;                   /* sonde's: events read */
	uint64_t lost;                   /* the agent's: events dropped, the ring full */
	char comm[16];                   /* the agent's: the thread's name when it claimed the ring */
	struct pa_rev ev[PA_REC_EVENTS];
};

static inline uint64_t pa_rec_size(void)
{
	return (uint64_t)PA_REC_RINGS * sizeof(struct pa_ring);
}

/* --- stack probes (src/rt/probe_stack.c writes, src/probe/agent/agent_stack.c
 * drains and unwinds) ---------------------------------------------------------
 * As struct pa_ring, one per thread that took a stack (claimed 0 -> 1, 1 -> 2
 * at its exit, freed by sonde), but of bytes: each record is a struct pa_srec
 * and its stack bytes, len bytes in all (a multiple of 8), never split by the
 * end of the ring (a record of site PA_SREC_PAD fills the rest, and the next
 * one starts at 0).  head and tail count bytes.  A full ring drops the stack
 * and counts it (pa_site.stack_lost): the program never waits. */
#define PA_STK_RINGS     64
#define PA_STK_RING      (4u << 20)    /* bytes per ring, a power of two */
#define PA_STK_COPY_MAX  (64u << 10)   /* bytes of stack a record can hold */
#define PA_STK_COPY_DEF  8192u         /* the default copy (stack probes) */
#define PA_SREC_PAD      0xffffffffu

struct pa_srec {
	uint32_t len;                    /* bytes of the record, its stack included */
	uint32_t site;                   /* the site record whose hit this is (PA_SREC_PAD: padding) */
	uint64_t t;                      /* clock ticks */
	uint64_t pc, sp;                 /* the site's address, the stack pointer there */
	uint64_t regs[PA_NREGS];         /* enum pa_reg */
	uint32_t nstack, pad;            /* stack bytes copied from sp, after this header */
};

/* A stack the agent walked (the unwind table below): site has PA_SREC_WALK
 * set, and nframes frames follow, the pc then each caller's return address
 * (at most PA_UT_FRAMES). */
#define PA_SREC_WALK 0x40000000u
struct pa_swalk {
	uint32_t len;                    /* bytes of the record, its frames included */
	uint32_t site;                   /* the site record | PA_SREC_WALK */
	uint64_t t;                      /* clock ticks */
	uint32_t nframes, pad;
};

struct pa_sring {
	uint32_t state;                  /* 0 free, 1 a thread's, 2 its thread ended */
	uint32_t tid;
	uint64_t head;                   /* the agent's: bytes written */
	uint64_t tail;                   /* sonde's: bytes read */
	uint8_t pad[40];
	uint8_t b[PA_STK_RING];
};

static inline uint64_t pa_stk_size(void)
{
	return (uint64_t)PA_STK_RINGS * sizeof(struct pa_sring);
}

/* --- the unwind table of stack probes (sonde writes it, agent_stack.c from
 * the modules' .eh_frame; src/rt/probe_stack.c walks the stack with it) ------
 * After the stack rings when stk_on.  Rows sorted by address, each one the
 * rule from its address to the next row's: the canonical frame address
 * (CFA) is rsp or rbp + cfa_off, the return address is at CFA - 8, rbp is
 * saved at CFA + rbp_off (PA_UR_RBP_SAVED) or unchanged.  A range whose rule
 * is none of those (a DWARF expression, a signal frame, no CFI) is a row of
 * PA_UR_NONE, as is the end of every module's code: there the agent copies
 * the stack for sonde to unwind.  sonde writes the rows with seq odd, then
 * n and seq even (a seqlock): a walk that saw seq change is not used. */
#define PA_UT_ROWS   (1u << 20)
#define PA_UT_FRAMES 64u               /* frames the agent walks at most */

enum pa_ur_cfa {
	PA_UR_NONE = 0,                  /* no rule the agent can follow: copy the stack */
	PA_UR_RSP,                       /* CFA = rsp + cfa_off */
	PA_UR_RBP,                       /* CFA = rbp + cfa_off */
	PA_UR_END,                       /* the outermost frame (its return address undefined) */
};
#define PA_UR_RBP_SAVED 1            /* flags: rbp's caller value is at CFA + rbp_off */

struct pa_urow {
	uint64_t addr;                   /* run-time address where the rule starts */
	int32_t cfa_off;
	int16_t rbp_off;
	uint8_t cfa;                     /* enum pa_ur_cfa */
	uint8_t flags;
};

struct pa_utab {
	uint32_t seq;                    /* sonde's: odd while the rows are written */
	uint32_t n;                      /* sonde's: rows */
	uint64_t modules;                /* sonde's: modules whose .eh_frame is in (information) */
	uint8_t pad[48];
	struct pa_urow rows[PA_UT_ROWS];
};

/* The size of an area of nsites sites, with the recording rings (rec) and
 * the stack rings and unwind table (stk): they follow the plugin block in that order. */
static inline uint64_t pa_total_size(uint32_t nsites, int rec, int stk)
{
	return pa_area_size(nsites) + (rec ? pa_rec_size() : 0) + (stk ? pa_stk_size() + sizeof(struct pa_utab) : 0);
}

/* Whether header h describes that layout (the agent checks before mapping). */
static inline int pa_layout_ok(const struct pa_hdr *h)
{
	uint64_t base = pa_area_size(h->nsites);
	if (h->rec_on && h->rec_off != base)
		return 0;
	if (h->stk_on && h->stk_off != base + (h->rec_on ? pa_rec_size() : 0))
		return 0;
	return h->size == pa_total_size(h->nsites, h->rec_on != 0, h->stk_on != 0);
}

#endif
