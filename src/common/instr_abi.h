/* instr_abi.h — functions patched without a rebuild: what sonde and the
 * runtime share in the session memory (docs/INSTRUMENTATION.md, "Programs
 * never built for sonde").
 *
 * sonde plans each module before the program runs (src/instr/plan.c): the
 * functions it found (.symtab, else .dynsym and .eh_frame), and for each one
 * whose entry can take a 5-byte jmp, the bytes that jmp covers.  The runtime
 * (src/rt/instr.c) finds a planned module among the objects of its process
 * (same device and inode), maps a code region within ±2 GiB of it, and asks
 * sonde for that region's code (one request per process image and module):
 * sonde builds it for those very addresses (src/instr/stubs.c) and answers;
 * the runtime copies it into the region and writes the jmps.
 *
 * Without the round trip, in most cases: the code of a region depends only on
 * where the region lies relative to the module (every stub reaches the
 * module's code and the common entry by rel32; the entry hook's address is
 * read from a slot of the region, SONDE_INSTR_HOOK_SLOT).  So sonde also
 * builds each module's region before the program runs for one place, pre_rel
 * bytes from the module's load bias (just below its first page); the
 * runtime maps the region there if it is free (MAP_FIXED_NOREPLACE), copies
 * that code, writes the hook slot, and asks sonde nothing.  When the place
 * is taken it maps the region elsewhere within reach and moves the code:
 * sonde lists every rel32 of it that reaches the module (pre_fix_off).
 *
 * Trust: the runtime checks every offset and length sonde wrote against the
 * session and the region, and each function's bytes against the plan before
 * writing a jmp over them; sonde checks every field the program wrote in a
 * request (the region must be near the module, sizes bounded) and never
 * follows a pointer of the program's. */
#ifndef SONDE_COMMON_INSTR_ABI_H
#define SONDE_COMMON_INSTR_ABI_H

#include <stdatomic.h>
#include <stdint.h>

#define SONDE_INSTR_MAX_MODS 64u    /* planned modules */
#define SONDE_INSTR_MAX_REQS 2048u  /* requests over the recording (process images x modules) */
#define SONDE_INSTR_MAX_SKIP 64u    /* executables sonde will not plan (sonde-cc builds, refused) */
#define SONDE_INSTR_ORIG     15u    /* bytes a jmp may displace (whole instructions, >= 5) */
#define SONDE_INSTR_NOSTUB   0xffffffffu
#define SONDE_INSTR_COUNT    0x80000000u /* in a stub's number: the function is counted, not timed */
#define SONDE_INSTR_WAIT_MS  10000  /* the runtime waits this long for sonde's answer */
#define SONDE_INSTR_MAX_BUSY 256u   /* threads whose pc at an attach sonde passes on */
#define SONDE_INSTR_HOOK_SLOT 56u   /* region offset of the 8-byte address of the module's struct
                                     * sonde_modhook (the common entry reads it) */
/* The common entry at region + 0 (src/instr/stubs.c): the byte after its
 * call of the entry hook and its end.  The runtime's unwind information
 * for it (src/rt/observe.c) describes it instruction by instruction. */
#define SONDE_INSTR_COMMON_CALLED 31u
#define SONDE_INSTR_COMMON_LEN 47u
/* A counted function's stub (record --timing) counts its call itself when
 * it can, in the calling thread's array of counts for the module, one
 * uint64_t per number (seed 000's records, flat): two more slots of the
 * region, written by the runtime before it writes any jump,
 *   TLS slot: the offset from the thread pointer (%fs) of the runtime's
 *             thread word, an 8-byte word that is SONDE_INSTR_TLS_ON when the
 *             thread records and is inside no section of the runtime (its
 *             state and busy count), followed at SONDE_INSTR_TLS_TABLE by a
 *             pointer to the thread's private tables;
 *   CNT slot: the offset in those tables of the pointer to this thread's
 *             counts for the module (NULL until its first counted call).
 * The stub (src/instr/stubs.c) takes the hook's way (number |
 * SONDE_INSTR_COUNT) whenever the word is not SONDE_INSTR_TLS_ON or the
 * array is not there yet; the hook then makes it. */
#define SONDE_INSTR_TLS_SLOT  64u
#define SONDE_INSTR_CNT_SLOT  72u
/* record --timing=auto: a function sonde may switch while the program runs
 * (sonde_instr_fn.sw) has a stub that reads, at each call, its byte in the
 * module's switch array (struct sonde_instr_mod's timed_off, in the session:
 * one array for every process of the tree, written by sonde alone): nonzero,
 * its call is timed; zero, counted.  The FLG slot: the array's address in
 * this process (the runtime's). */
#define SONDE_INSTR_FLG_SLOT  80u
#define SONDE_INSTR_STUBS_AT  96u   /* the first stub */
#define SONDE_INSTR_TLS_ON    1u    /* state RT_T_ON, busy 0 (src/rt/rt.h) */
#define SONDE_INSTR_TLS_TABLE 56u

/* Whether [lo, hi] and a region [at, at + size) are within reach of each
 * other's rel32 jumps (±2 GiB, with a margin): what sonde checks of a
 * region the program mapped, and what the runtime checks of a place. */
static inline int sonde_instr_near(uint64_t at, uint64_t size, uint64_t lo, uint64_t hi)
{
	uint64_t e = at + size, lim = 0x7fff0000ull;
	return e >= at && (at > lo ? at - lo : lo - at) < lim && (e > lo ? e - lo : lo - e) < lim &&
	       (at > hi ? at - hi : hi - at) < lim && (e > hi ? e - hi : hi - e) < lim;
}

/* One function the runtime patches: number i is the i-th of the module's
 * table (sorted by address). */
struct sonde_instr_fn {
	uint64_t vaddr;                 /* link-time address of its entry */
	uint8_t  len;                   /* bytes the jmp displaces (5..SONDE_INSTR_ORIG); int3: its first
	                                 * instruction's length */
	uint8_t  int3;                  /* 1: reached by an int3 (its entry cannot take a jump): the runtime's
	                                 * SIGTRAP handler calls the entry hook, then its stub runs the first
	                                 * instruction relocated and jumps back */
	uint8_t  orig[SONDE_INSTR_ORIG];/* those bytes as the file holds them */
	uint8_t  retarget;              /* 1: branches of the module land inside those bytes (a loop back to
	                                 * just after the entry): at the start, they are re-targeted to the
	                                 * relocated copy in the stub (struct sonde_instr_rt); in a running
	                                 * program (record -p) the function takes an int3 instead */
	uint8_t  count;                 /* 1: counted, not timed (record --timing): its stub hands the entry
	                                 * hook number | SONDE_INSTR_COUNT (no clock read, no exit hook) */
	uint8_t  sw;                    /* 1: switched while the program runs (--timing=auto): its stub asks
	                                 * the module's switch array at each call; count is where it starts */
	uint8_t  pad[2];
};

/* A branch into a patched function's displaced bytes, re-targeted at the
 * start of the program (a jmp or jcc with a rel32). */
struct sonde_instr_rt {
	uint64_t at;                    /* link-time address of the branch */
	uint32_t fn;                    /* the number of the function it lands in */
	uint8_t  len, disp, into;       /* its length, the offset of its rel32, its target's offset in fn */
	uint8_t  pad;
	uint8_t  orig[16];              /* its bytes as the file holds them */
};

struct sonde_instr_mod {
	char     path[512];             /* the file sonde planned (as given, NUL-ended) */
	uint64_t dev, ino;              /* its identity (stat): how the runtime recognises it */
	uint32_t nfuncs;                /* patchable functions: fns[0..nfuncs) */
	uint32_t nfound;                /* functions found, patchable or not (sonde's; info only) */
	uint64_t fns_off;               /* session offset of struct sonde_instr_fn[nfuncs] */
	uint64_t region_size;           /* bytes of code a region of this module needs (page multiple) */
	uint64_t rts_off;               /* session offset of struct sonde_instr_rt[nrts] (sorted by fn) */
	uint32_t nrts;
	uint32_t pad;
	/* the region built before the program runs, for load bias + pre_rel (0: none) */
	int64_t  pre_rel;               /* the region's address minus the module's load bias */
	uint64_t pre_code_off;          /* session offsets, as sonde's answer to a request: the code */
	uint64_t pre_stubs_off;         /* uint32_t[nfuncs] */
	uint64_t pre_rels_off;          /* int32_t[nrts] (0 when nrts is 0) */
	uint32_t pre_built;             /* stubs built */
	uint32_t pre_live;              /* built for a running program (record -p) */
	uint64_t pre_fix_off;           /* uint32_t[pre_nfix]: the region offsets of every rel32 in the
	                                 * code that reaches the module: the runtime may map the region
	                                 * elsewhere and subtract the move from each (and add it to each
	                                 * re-targeted branch's rel32) */
	uint32_t pre_nfix;              /* SONDE_INSTR_NOFIX: not listed, the code cannot move */
	uint32_t pad2;
	uint64_t timed_off;             /* session offset of uint8_t[nfuncs], the switch array (FLG slot):
	                                 * 1 timed, 0 counted; sonde's to write; 0: no function switches */
};
#define SONDE_INSTR_NOFIX 0xffffffffu

enum sonde_instr_state {
	SONDE_IR_FREE = 0,
	SONDE_IR_ASKED = 1,             /* the runtime wrote the request and waits */
	SONDE_IR_BUILT = 2,             /* sonde wrote the code */
	SONDE_IR_FAILED = 3,            /* sonde could not (msg) */
	SONDE_IR_GAVE_UP = 4,           /* the runtime stopped waiting: sonde must not answer */
	SONDE_IR_PLAN = 5,              /* record --module: the runtime asks sonde to plan the object at path */
	SONDE_IR_PLANNED = 6,           /* sonde planned it: mod is its index (then the runtime asks as above) */
	SONDE_IR_PLAN_EXEC = 7,         /* as PLAN, for the executable of an image exec'd in the tree */
};

struct sonde_instr_req {
	_Atomic uint32_t state;         /* enum sonde_instr_state; also the futex both wait on */
	uint32_t mod;                   /* planned module index */
	int32_t  pid;
	uint32_t module_slot;           /* the session module slot the runtime took */
	uint64_t bias;                  /* the module's load bias */
	uint64_t region, region_size;   /* the region the runtime mapped (not yet executable) */
	uint64_t hook;                  /* address of the module's struct sonde_modhook (the stubs pass it) */
	/* sonde's answer */
	uint64_t code_off;              /* session offset of region_size bytes of code */
	uint64_t stubs_off;             /* session offset of uint32_t[nfuncs]: each function's stub in the
	                                 * region, SONDE_INSTR_NOSTUB when it has none */
	uint32_t live;                  /* the runtime's: the program runs (record -p): no re-targeting */
	uint32_t prebuilt;              /* the runtime's: 1 when it took the region built before the program
	                                 * ran (struct sonde_instr_mod's pre_*), without asking; 2 when it
	                                 * moved that code to another place (pre_fix_off) */
	uint64_t rels_off;              /* sonde's: session offset of int32_t[nrts], each re-targeted
	                                 * branch's new rel32 (INT32_MIN: leave that function unpatched) */
	uint32_t built;                 /* stubs built */
	uint32_t changed;               /* the runtime's: functions left alone, their code not the file's (another
	                                 * tool's probe, `sonde probe`, self-modifying code) */
	char     msg[160];              /* why sonde failed */
	/* SONDE_IR_PLAN: the object the runtime found (its path matched a glob) */
	char     path[512];
	uint64_t dev, ino;
};

struct sonde_instr {
	uint32_t nmods;
	_Atomic uint32_t nreqs;
	_Atomic uint32_t asked;         /* bumped by the runtime at each request (sonde may wait on it) */
	uint32_t nglobs;
	uint32_t nbusy;                 /* record -p: where the stopped threads were (sonde's), so that no */
	uint32_t pad2;                  /* function is patched over a thread inside its first bytes */
	uint64_t busy[SONDE_INSTR_MAX_BUSY];
	char globs[2048];               /* record --module: NUL-separated globs of the objects to plan on demand */
	struct sonde_instr_mod mods[SONDE_INSTR_MAX_MODS];
	struct sonde_instr_req reqs[SONDE_INSTR_MAX_REQS];
	/* Programs exec'd in the recorded tree (launched record): the runtime of
	 * a new image whose executable is neither planned nor in skip[] asks
	 * sonde to plan it (SONDE_IR_PLAN_EXEC); sonde plans each object once per
	 * recording (by device and inode) and adds the ones it will not plan
	 * (sonde-cc builds, not ELF) to skip[], so that the next image of the
	 * same program asks nothing. */
	uint32_t exec_follow;           /* 1: exec'd images' executables are planned on demand */
	uint32_t nexec_globs;           /* record --exec: only executables whose path or file name matches */
	_Atomic uint32_t nskip;         /* skip[0..nskip) (sonde writes an entry, then nskip, release) */
	uint32_t pad3;
	struct { uint64_t dev, ino; } skip[SONDE_INSTR_MAX_SKIP];
	char exec_globs[1024];          /* NUL-separated */
};

#endif
