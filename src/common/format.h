/* format.h — the files of a recording directory (sonde.data/), written by the
 * collector (src/record/) and read only through src/data/.  Documented for
 * users in docs/FORMAT.md; keep both in step and bump SONDE_DATA_VERSION on
 * any incompatible change.
 *
 * Every data file is: a 16-byte file header, then records.  A record is
 *   struct sonde_rec_hdr (type, length of payload, CRC-32 of payload), payload.
 * Records are self-delimiting, so a reader detects truncation (a record that
 * runs past the end of the file) and damage (CRC mismatch) and can say where.
 * All integers are little-endian (the recording machine's order; x86-64 and
 * aarch64 both).
 *
 * The records are declared here, and only here, apart from the runtime's
 * structs (common/session.h, common/ring.h, src/rt/): fixed-width fields,
 * explicit padding, their own constants, every size pinned.  The collector
 * converts the runtime's structs to them field by field (record/convert.c,
 * where static_asserts tie the runtime's limits to these), so a change of
 * the runtime's memory layout cannot change the file format.  The lock
 * records are in common/format_locks.h.
 */
#ifndef SONDE_COMMON_FORMAT_H
#define SONDE_COMMON_FORMAT_H

#include <assert.h>
#include <stdint.h>

#include "common/func_id.h" /* rec_node.func, trace ENTER: SONDE_FUNC(module slot, number) */

#define SONDE_DATA_MAGIC   "SONDEDAT"
#define SONDE_DATA_VERSION 2u

/* File names inside the recording directory. */
#define SONDE_FILE_PROFILE "profile.sonde"  /* meta, processes, threads, modules, CCTs, locks */
#define SONDE_FILE_EVENTS  "events.sonde"   /* ring chunks (trace / lock events), streamed */
#define SONDE_FILE_DOMAIN  "domain.txt"     /* --domain auto: functions that left records */
#define SONDE_FILE_REMOTE  "remote.json"    /* record --target: how each function was timed (in the target or by breakpoints) */
#define SONDE_FILE_SESSION_REF "session.ref" /* while recording: the path of the session file (tmpfs); left only by a killed recorder */

/* sonde_file_hdr.kind */
enum { SONDE_KIND_PROFILE = 1, SONDE_KIND_EVENTS = 2 };

struct sonde_file_hdr {
	char     magic[8];
	uint32_t version;
	uint32_t kind;       /* SONDE_KIND_* */
};
static_assert(sizeof(struct sonde_file_hdr) == 16, "format");

struct sonde_rec_hdr {
	uint32_t type;
	uint32_t crc;        /* CRC-32 (IEEE) of the payload */
	uint64_t len;        /* payload bytes */
};
static_assert(sizeof(struct sonde_rec_hdr) == 16, "format");

enum sonde_rec_type {
	REC_META    = 1,  /* text: "key=value\n" lines */
	REC_PROCESS = 2,  /* struct rec_process */
	REC_THREAD  = 3,  /* struct rec_thread */
	REC_MODULE  = 4,  /* struct rec_module, then nfuncs uint64_t link-time addresses */
	REC_CCT     = 5,  /* struct rec_cct, then count struct rec_node */
	REC_LOCKS   = 6,  /* lock statistics: struct lkrec_hdr, then items (common/format_locks.h) */
	REC_CHUNK   = 7,  /* struct rec_chunk, then `used` bytes of encoded events (common/trace_enc.h) */
	REC_CHUNK_ZSTD = 8, /* struct rec_chunk, then one zstd frame that decompresses to its `used` bytes */
	REC_SYSCALLS = 9,  /* struct rec_sys_hdr, then count struct rec_sys (system calls per function) */
	REC_CCT_CPU = 10, /* struct rec_cct_cpu, then count uint64_t: off-CPU time of a REC_CCT's nodes */
	REC_COUNTED = 11, /* struct rec_counted, then count struct rec_count: a trace's counted functions */
	REC_END     = 99, /* empty: the file was completed */
};

/* Limits of what a recording holds: slot indices are below these, and no
 * calling context is deeper than REC_STACK_MAX (deeper calls are counted as
 * lost).  The runtime's limits are at most these (record/convert.c). */
#define REC_MAX_PROCS   1024u
#define REC_MAX_THREADS 4096u
#define REC_MAX_MODULES 1024u
#define REC_STACK_MAX   2048u
#define REC_PATH_MAX    512u   /* rec_process.exe, .cmdline; rec_module.path */
#define REC_COMM_MAX    16u    /* rec_thread.comm */

/* REC_META "mode": the recording's mode bits. */
enum {
	REC_MODE_PROFILE     = 1u << 0, /* calling-context trees (REC_CCT) */
	REC_MODE_TRACE       = 1u << 1, /* call events in events.sonde */
	REC_MODE_LOCKS       = 1u << 2, /* lock statistics (REC_LOCKS) */
	REC_MODE_LOCK_EVENTS = 1u << 3, /* lock events in events.sonde */
	REC_MODE_LOSSY       = 1u << 4, /* full rings dropped events (counted) */
	REC_MODE_SYSCALLS    = 1u << 5, /* system calls per function (REC_SYSCALLS) */
	REC_MODE_PROBES      = 1u << 8, /* sonde probe --record: TRX_PROBE events, no profile */
};

/* Loss causes: the index of rec_thread.lost[] and of META "lost.N".  Fixed
 * indices (docs/FORMAT.md); a new cause takes the next free one. */
enum rec_lost {
	REC_LOST_THREAD_SLOTS      = 0,  /* threads that found no free thread slot */
	REC_LOST_MODULE_SLOTS      = 1,  /* modules that found no module slot */
	REC_LOST_SESSION_MEM       = 2,  /* allocations refused: session memory full */
	REC_LOST_CCT_NODES         = 3,  /* calls charged to their caller: node pool full */
	REC_LOST_STACK_DEPTH       = 4,  /* calls deeper than the shadow stack */
	REC_LOST_REENTRY           = 5,  /* hook re-entered (signal inside the hook) */
	REC_LOST_UNNUMBERED        = 6,  /* calls of functions without sonde's padding */
	REC_LOST_UNMATCHED_EXIT    = 7,  /* exits that matched no open frame */
	REC_LOST_RING_EVENTS       = 8,  /* events dropped on a full ring (--lossy) */
	REC_LOST_MODS_PER_THREAD   = 9,  /* module record arrays a thread could not get */
	REC_LOST_SESSION_DAMAGE    = 10, /* impossible values the program left in the session */
	REC_LOST_CAUSES            = 11, /* causes defined */
	REC_LOST_COUNT             = 16, /* entries of rec_thread.lost[]; 11..15 reserved (0) */
};

struct rec_process {
	uint32_t index;          /* process slot */
	int32_t  pid, ppid;
	int32_t  exit_status;    /* exit code, or -signal, or INT32_MIN if unknown */
	uint32_t exec_seq;
	uint32_t flags;          /* REC_PROC_* */
	uint64_t start_tsc, end_tsc;
	char     exe[REC_PATH_MAX];
	char     cmdline[REC_PATH_MAX]; /* NUL-separated */
	uint32_t cmdline_len;
	uint32_t pad;
};
static_assert(sizeof(struct rec_process) == 1072, "format");
/* NO_RUNTIME_*: an image exec'd in the tree that could not load the runtime
 * (statically linked; set-uid or set-gid: the loader ignores LD_PRELOAD):
 * a process without functions. */
enum { REC_PROC_ENDED_BY_EXIT = 1, REC_PROC_KILLED = 2, REC_PROC_NO_RUNTIME_STATIC = 4, REC_PROC_NO_RUNTIME_SETID = 8,
       REC_PROC_EXECED = 16 /* the image was replaced by an exec: it ended at the next image's start */ };

struct rec_thread {
	uint32_t index;          /* thread slot */
	uint32_t proc;           /* process slot */
	int32_t  tid;
	uint32_t flags;          /* REC_THREAD_* */
	char     comm[REC_COMM_MAX];
	uint64_t start_tsc, end_tsc;
	uint64_t nodes;          /* CCT nodes used */
	uint64_t wait_ticks;     /* time waiting for the collector */
	uint64_t lost[REC_LOST_COUNT]; /* by cause, enum rec_lost */
	uint32_t open_frames;    /* frames still open at the end (closed at end_tsc) */
	int32_t  cpu_split;      /* its on-CPU / off-CPU split (issue 38): 1 measured, as REC_CCT_CPU's
	                          * split; 0 in recordings before it (the field was padding) */
};
static_assert(sizeof(struct rec_thread) == 200, "format");
enum { REC_THREAD_EXITED = 1,
       REC_THREAD_RUNNABLE = 2 /* its off-CPU time told runnable from blocked (issue 38: REC_CCT_CPU's
                                * REC_CPU_RUNNABLE, a trace's TRX_OFFCPU run field) */ };

struct rec_module {
	uint32_t index;          /* module slot (the high bits of a function id) */
	uint32_t proc;
	uint32_t nfuncs;
	uint32_t build_id_len;
	uint64_t load_bias;
	uint64_t numbering_ns;
	uint8_t  build_id[20];
	uint32_t unloaded;
	char     path[REC_PATH_MAX];
};
static_assert(sizeof(struct rec_module) == 568, "format");

/* REC_CCT: this header, then count nodes; node 0 is the root. */
struct rec_cct {
	uint32_t thread;         /* thread slot (a REC_THREAD before it) */
	uint32_t count;          /* nodes, > 0 */
};
static_assert(sizeof(struct rec_cct) == 8, "format");

struct rec_node {
	uint32_t parent;
	uint32_t first_child;    /* 0: none */
	uint32_t next_sibling;   /* 0: none */
	uint32_t func;           /* SONDE_FUNC(module slot, number) */
	uint64_t calls;
	uint64_t ticks;          /* inclusive TSC ticks of the calls of this context */
};
static_assert(sizeof(struct rec_node) == 32, "format");

/* REC_CCT_CPU (issue 38), after the thread's REC_CCT: how the thread's
 * time split into on-CPU and off-CPU.  split 1: count equals the REC_CCT's
 * and off_ns[i] is the part of node i's inclusive time its thread was off
 * the CPU (preempted or blocked), in nanoseconds; otherwise count is 0 and
 * the split is unknown: -errno of the source the runtime was refused
 * (perf_event_open), or REC_CPU_SECCOMP for a thread under a seccomp
 * filter, where it is not tried, or REC_CPU_UNTIMED when the recording
 * did not ask for it.  No such record (recordings before it, trace mode): not
 * known. */
struct rec_cct_cpu {
	uint32_t thread;         /* thread slot, as in its REC_CCT */
	uint32_t count;
	int32_t  split;
	uint32_t flags;          /* REC_CPU_RUNNABLE: count more uint64_t follow the off_ns, run_ns[i]
	                          * the part of off_ns[i] node i's thread was runnable (preempted),
	                          * the rest blocked; 0 (recordings before it): not known */
};
enum { REC_CPU_RUNNABLE = 1 };
static_assert(sizeof(struct rec_cct_cpu) == 16, "format");
#define REC_CPU_SECCOMP (-1000) /* split: a seccomp filter on the thread, the source not tried */
#define REC_CPU_UNTIMED (-1001) /* split: not asked (record --timing=none times nothing) */

/* REC_COUNTED (issue 39), in a --trace recording, after the thread's
 * REC_THREAD, at most one per thread: the calls of the functions it called
 * that were counted, not timed (record --timing), which wrote no event.
 * A profile keeps them as nodes under its REC_CCT's root instead. */
struct rec_counted {
	uint32_t thread;         /* thread slot (a REC_THREAD before it) */
	uint32_t count;          /* entries, > 0 */
};
static_assert(sizeof(struct rec_counted) == 8, "format");
struct rec_count {
	uint32_t func;           /* SONDE_FUNC(module slot, number), as rec_node's */
	uint32_t pad;            /* 0 */
	uint64_t calls;          /* > 0 */
};
static_assert(sizeof(struct rec_count) == 16, "format");

/* REC_SYSCALLS (issue 38, `record --syscalls`): this header, then `count`
 * struct rec_sys, one per (process, system call, calling function). */
struct rec_sys_hdr {
	uint32_t count;
	uint32_t ncalls;         /* calls in sonde's list (common/sys_session.h) when written */
	uint64_t lost;           /* calls not counted (the runtime's table was full) */
};
static_assert(sizeof(struct rec_sys_hdr) == 16, "format");
struct rec_sys {
	uint32_t proc;           /* process slot */
	uint32_t call;           /* index in sonde's list of calls (SYS_CALLS) */
	uint32_t func;           /* SONDE_FUNC of the calling function; 0xffffffff: none recorded */
	uint32_t pad;
	uint64_t count, ticks, bytes, errors;
};
static_assert(sizeof(struct rec_sys) == 48, "format");

/* REC_CHUNK: this header, then `used` bytes of events of one thread. */
struct rec_chunk {
	uint32_t state;          /* REC_CHUNK_FULL, or _FILLING: the thread's last, copied after its end */
	uint32_t used;           /* event bytes after the header */
	uint64_t seq;            /* per-thread chunk sequence number, from 0 */
	uint64_t base_tsc;       /* time base of the first record */
	uint32_t thread;         /* thread slot */
	uint32_t lost;           /* events dropped just before this chunk (--lossy) */
};
static_assert(sizeof(struct rec_chunk) == 32, "format");
enum { REC_CHUNK_FILLING = 1, REC_CHUNK_FULL = 2 };
/* The largest `used` a reader accepts for a compressed chunk (the writers'
 * chunks are 64 KiB for rings, 16 KiB for probe hits). */
#define REC_CHUNK_MAX_USED (16u << 20)

uint32_t crc32_ieee(uint32_t crc, const void *buf, uint64_t len);

#endif
