/* session.h — layout of the session memory shared by `sonde record` and the
 * profiled processes.
 *
 * The recorder creates one file on tmpfs (/dev/shm/sonde-session-UID-RANDOM,
 * else under $XDG_RUNTIME_DIR, else an anonymous memfd), sizes it (sparse:
 * only touched pages cost memory), maps it and hands the descriptor to the
 * program through the environment (SONDE_SESSION_FD).  Every process of the
 * recorded program tree (forks and execs included) maps the same memory.
 * Whatever a process wrote before it crashed or was SIGKILLed is still there
 * when the recorder writes sonde.data; and because the memory is a named
 * file (DIR/session.ref names it), what the program wrote also outlives a
 * recorder that was killed: the next reader recovers the recording from it
 * (record/recover.c, docs/FORMAT.md "Recovery").  Memory, not a file of the
 * recording directory: a disk file's page faults and writeback would be
 * charged to the program's functions.
 *
 * Rules (see docs/ARCHITECTURE.md, "Hot-path rules and the floor"):
 *  - The memory holds offsets from the session base, never pointers: each
 *    process maps it at its own address.
 *  - Space is handed out by one atomic bump allocator (sess_alloc) in regions
 *    that are never reused during the recording.  Memory is bounded: a
 *    thread's calling-context node pool starts in its region and grows on
 *    demand into larger pools (rt/cct_grow.c), the old one's pages given
 *    back (a hole punched: mem_freed), while the session's memory in use
 *    stays within mem_cap; past it the loss is counted, never silent.
 *  - Writers are the profiled threads, each to its own thread region.  The
 *    recorder reads thread regions after the processes have ended (profile
 *    data) or drains ring chunks while they run (events, see ring.h).
 */
#ifndef SONDE_COMMON_SESSION_H
#define SONDE_COMMON_SESSION_H

#include <assert.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "common/func_id.h" /* SONDE_FUNC(): module slot and number */

#define SONDE_SESSION_MAGIC   0x534f4e4445534553ull /* "SESEDNOS" */
#define SONDE_SESSION_VERSION 11u
#define SONDE_ENV_FD          "SONDE_SESSION_FD"

#define SONDE_MAX_PROCS    1024u
#define SONDE_MAX_THREADS  4096u   /* thread slots over the whole recording */
#define SONDE_MAX_MODULES  1024u   /* module loads over the whole recording */
#define SONDE_PATH_MAX     512u
#define SONDE_REC_DIR_MAX  1024u
#define SONDE_COMM_MAX     16u
#define SONDE_STACK_MAX    2048u   /* shadow-stack frames per thread */
#define SONDE_MAX_MODS_PER_THREAD 256u
#define SONDE_NODES_MAX    0xfffffff0u /* nodes of one thread's pool (uint32_t indices, RT_NO_NODE kept out) */

/* Session modes (hdr.mode bits). */
enum {
	SONDE_MODE_PROFILE = 1u << 0, /* calling-context tree in thread regions */
	SONDE_MODE_TRACE   = 1u << 1, /* call events into thread rings          */
	SONDE_MODE_LOCKS   = 1u << 2, /* lock wrappers active (aggregates)      */
	SONDE_MODE_LOCK_EVENTS = 1u << 3, /* lock events into thread rings      */
	SONDE_MODE_LOSSY   = 1u << 4, /* full ring: drop and count, never wait   */
	SONDE_MODE_SYSCALLS = 1u << 5, /* system-call wrappers active (rt/syscalls.c) */
	SONDE_MODE_NO_CPU  = 1u << 6, /* no off-CPU split (record --timing=none: nothing is timed) */
};

/* Loss counters, by cause (hdr.lost[]).  Every one is shown by `sonde info`. */
enum sonde_loss {
	SONDE_LOST_THREAD_SLOTS,  /* threads that found no free thread slot      */
	SONDE_LOST_MODULE_SLOTS,  /* modules that found no module slot           */
	SONDE_LOST_SESSION_MEM,   /* allocations refused: session memory full    */
	SONDE_LOST_CCT_NODES,     /* calls charged to their caller: node pool full */
	SONDE_LOST_STACK_DEPTH,   /* calls deeper than SONDE_STACK_MAX            */
	SONDE_LOST_REENTRY,       /* hook re-entered (signal inside the hook)     */
	SONDE_LOST_UNNUMBERED,    /* calls of functions without sonde's padding   */
	SONDE_LOST_UNMATCHED_EXIT,/* exits that matched no open frame            */
	SONDE_LOST_RING_EVENTS,   /* events dropped on a full ring (--lossy)     */
	SONDE_LOST_MODS_PER_THREAD,/* module record arrays a thread could not get */
	SONDE_LOST_SESSION_DAMAGE, /* impossible values the program left in the session (record/audit.c) */
	SONDE_LOST_CAUSES_,        /* causes defined; each has the same index on disk (REC_LOST_*) */
	SONDE_LOST_COUNT_ = 16
};

/* One frame of a thread's shadow stack. */
struct sonde_frame {
	uint64_t start;     /* TSC at entry */
	uint64_t slot;      /* address of the stack slot of its return address: identifies the activation */
	uint32_t node;      /* CCT node index of this activation (profile mode) */
	uint32_t func;      /* SONDE_FUNC(module slot, number) */
	uint32_t trace_pos; /* trace mode: ring offset of the entry record, for roll-back */
	uint32_t flags;     /* SONDE_FRAME_* */
	uint64_t trace_prev;/* trace mode: time of the record before the entry record */
	uint64_t site;      /* its real return address (the slot holds the exit trampoline's, but with SONDE_FRAME_SLED) */
};
enum {
	SONDE_FRAME_TRACED   = 1u << 0, /* an entry record was written */
	SONDE_FRAME_FILTER   = 1u << 1, /* this frame matched -F: callees are traced */
	SONDE_FRAME_UNHOOKED = 1u << 2, /* real return address put back (an exception is unwinding) */
	SONDE_FRAME_FULLSAVE = 1u << 3, /* hooked with rt_exit_tramp_full (a function patched without a rebuild) */
	SONDE_FRAME_SLED     = 1u << 4, /* its return address kept: its exit sleds close it (sonde-as builds) */
	SONDE_FRAME_ENTRYLEN = 8,       /* bits 8..15: length of the entry record */
};

/* A calling-context-tree node.  Index 0 of every thread is the root (no
 * function).  Written to REC_CCT as struct rec_node (record/convert.c). */
struct sonde_node {
	uint32_t parent;
	uint32_t first_child;
	uint32_t next_sibling;
	uint32_t func;        /* SONDE_FUNC(module slot, number) */
	uint64_t calls;
	uint64_t ticks;       /* inclusive TSC ticks of the calls of this context */
	uint64_t off_ns;      /* exclusive: the nanoseconds the thread spent off-CPU with this context
	                       * on top of its stack (rt/cpu_time.c) */
	uint64_t run_ns;      /* the part of off_ns it was runnable (preempted), when the thread's
	                       * cpu_split has SONDE_CPU_RUNNABLE */
};

/* sonde_thread.cpu_flags */
enum { SONDE_CPU_RUNNABLE = 1 /* off-CPU time split into runnable and blocked (nodes' run_ns) */ };

enum sonde_thread_state { SONDE_T_FREE = 0, SONDE_T_LIVE = 1, SONDE_T_EXITED = 2 };

/* Per-thread region header.  The region holds, in order: this header, the
 * per-module record array pointers (offsets), and the CCT node pool. */
struct sonde_thread {
	_Atomic uint32_t state;
	uint32_t proc;            /* process slot */
	int32_t  tid;
	uint32_t depth;           /* frames in use in stack[] */
	char     comm[SONDE_COMM_MAX];
	uint64_t start_tsc, end_tsc, last_tsc; /* last_tsc: its last hook's time; in a trace, its last
	                                        * record's (rt.h, rt_ring_last) */
	uint64_t region_off, region_size;  /* this region in the session */
	uint64_t nodes_off;       /* node pool: session offset (in the region, or a pool grown since:
	                           * rt/cct_grow.c; nodes_cap nodes there, always the pool's whole size) */
	uint32_t nodes_used, nodes_cap;
	uint32_t cur_node;        /* CCT node on top of the stack (0 = root) */
	uint32_t filter_depth;    /* trace mode: open frames that matched -F */
	uint64_t ring_off;        /* session offset of this thread's ring (0: none) */
	uint64_t lock_off;        /* session offset of this thread's lock statistics (0: none) */
	uint64_t wait_ticks;      /* time spent waiting for the collector (lossless rings) */
	uint64_t off_ns;          /* off-CPU nanoseconds since the thread began, as of its last context
	                           * switch seen (rt/cpu_time.c; 0 and cpu_split 0: not known) */
	int32_t  cpu_split;       /* 1: off-CPU time measured; else 0 or -errno of the source refused */
	uint32_t cpu_flags;       /* SONDE_CPU_*: what else the split tells */
	/* -- timeline tracing (issue 3) -- */
	uint64_t trace_filtered;  /* calls the trace filters (--depth, -F/-N, --domain) kept out of the ring */
	/* -- end timeline tracing -- */
	uint64_t lost[SONDE_LOST_COUNT_];
	/* Per module slot: session offset of this thread's record array for that
	 * module (uint32_t last_node[nfuncs+1]), 0 until the first call. */
	uint64_t recs_off[SONDE_MAX_MODS_PER_THREAD];
	struct sonde_frame stack[SONDE_STACK_MAX];
	/* Per module slot: session offset of this thread's calls of the module's
	 * functions counted, not timed (record --timing; uint64_t calls[nfuncs+1]
	 * by number), 0 until the first such call.  (After the stack, whose
	 * offset rt_exit_tramp's unwind information holds.) */
	uint64_t cnt_off[SONDE_MAX_MODS_PER_THREAD];
};

enum sonde_proc_state { SONDE_P_FREE = 0, SONDE_P_LIVE = 1, SONDE_P_EXITED = 2 };
enum { SONDE_PLAIN_STATIC = 1, SONDE_PLAIN_SETID = 2 };

struct sonde_proc {
	_Atomic uint32_t state;
	int32_t  pid, ppid;
	int32_t  exit_status;     /* as passed to exit(), when known; -1 otherwise */
	uint32_t exec_seq;        /* 0 for the first image of a pid, +1 per exec */
	uint32_t plain;           /* an image that did not load the runtime (rt/exec_env.c noted its exec):
	                           * SONDE_PLAIN_STATIC, SONDE_PLAIN_SETID; 0 for one that runs it */
	uint64_t start_tsc, end_tsc;  /* end_tsc: 0 if the process did not end through exit() */
	char     exe[SONDE_PATH_MAX];
	char     cmdline[SONDE_PATH_MAX]; /* NUL-separated, truncated */
	uint32_t cmdline_len;
	uint32_t pad2;
};

enum sonde_module_state { SONDE_M_FREE = 0, SONDE_M_LOADED = 1, SONDE_M_UNLOADED = 2 };

/* A loaded instrumented module.  funcs_off points at nfuncs uint64_t link-time
 * addresses (runtime address minus load bias) of the functions, by number. */
struct sonde_module {
	_Atomic uint32_t state;
	uint32_t proc;
	uint32_t nfuncs;
	uint32_t dormant;         /* functions whose sleds the trace filters left as nops */
	uint64_t load_bias;       /* dl_iterate_phdr's dlpi_addr */
	uint64_t funcs_off;
	uint64_t numbering_ns;    /* time the constructor spent numbering */
	char     path[SONDE_PATH_MAX];
	uint8_t  build_id[20];
	uint32_t build_id_len;
	/* Filters (trace mode): session offset of a bitmap of nfuncs bits, 1 = traced.
	 * 0 = every function traced.  Written by the runtime at registration. */
	uint64_t filter_off;
	uint32_t how;             /* SONDE_MOD_SLEDS (built with sonde-cc) or SONDE_MOD_PATCHED (no rebuild) */
	uint32_t instr_req;       /* SONDE_MOD_PATCHED: its request in the instr table */
};
enum { SONDE_MOD_SLEDS = 0, SONDE_MOD_PATCHED = 1 };

/* `sonde record -p`: the calls found
 * running at the attach by unwinding every stopped thread (attach/frames.c).
 * Each thread's frames are together, outermost first.  A thread takes its
 * own at its first event (rt/agent.c), checking each against its stack. */
struct sonde_attach_frame {
	uint64_t fn;        /* entry address of the function (its symbol's start) */
	uint64_t slot;      /* address of the stack slot of its return address */
	uint64_t ra;        /* the return address that slot held */
	int32_t  tid;
	uint32_t pad;
	uint64_t off_ns;    /* its thread's off-CPU nanoseconds at the attach (0: not known; rt/cpu_time.c) */
};
struct sonde_attach {
	uint64_t tsc;       /* when the threads were stopped: the resumed frames' start */
	uint32_t nframes;
	uint32_t pad;
	struct sonde_attach_frame f[];
};

struct sonde_session_hdr {
	uint64_t magic;
	uint32_t version;
	uint32_t mode;
	uint64_t size;               /* bytes mapped */
	_Atomic uint64_t alloc;      /* bump allocator: next free offset */
	uint64_t thread_region_size; /* bytes per thread region */
	uint64_t ring_size;          /* bytes per thread ring (trace / lock events) */

	/* Trace filters (issue: timeline tracing). */
	uint32_t trace_max_depth;    /* 0 = unlimited */
	uint32_t filter_has_only;    /* 1 if some -F pattern was given */
	uint64_t trace_min_ticks;    /* 0 = keep all */
	uint64_t filter_spec_off;    /* session offset of NUL-separated "+glob" / "-glob" patterns */
	uint64_t filter_spec_len;

	_Atomic uint32_t nprocs, nthreads, nmodules;
	uint32_t pad1;
	_Atomic uint64_t lost[SONDE_LOST_COUNT_];
	_Atomic uint32_t stop;       /* set by the recorder when it gives up waiting, or by a
	                              * writer that found the recorder gone */
	int32_t collector_pid;       /* the recorder draining the rings: a writer waiting on a
	                              * full ring checks it is still there */

	/* What a reader needs to finish the recording of a recorder that was
	 * killed (record/recover.c).  Written by the recorder before the program
	 * starts; the program's side never writes it (a reader checks it all). */
	struct sonde_recorder_note {
		uint64_t start_time;     /* collector_pid's start time (/proc/PID/stat field 22): pid reuse */
		uint64_t c0_ticks, c0_mono_ns; /* the recording's start (recorder.c c0) */
		uint64_t min_time_ns;    /* --min-time */
		uint32_t events;         /* 1: events.sonde.PID.tmp is being written */
		uint32_t attached;       /* 1: sonde record -p */
		char rec_dir[SONDE_REC_DIR_MAX]; /* the recording directory (absolute, NUL-ended):
		                                  * the orphan sweep (record/sweep.c) and the
		                                  * recovery check it names this session */
	} recorder;

	/* ---- locks (issue 4; owned by src/rt/locks.c, layout in src/common/lock_session.h) ---- */
	_Atomic uint64_t locks_off;  /* session offset of struct lk_session, 0 until a first lock */
	/* ---- end locks ---- */
	/* ---- system calls (issue 38; owned by src/rt/syscalls.c, layout in src/common/sys_session.h) ---- */
	_Atomic uint64_t syscalls_off; /* session offset of struct sys_session, 0 until a first call */
	uint32_t futex_tp;           /* --syscalls: the kernel's syscalls:sys_exit_futex tracepoint id (written by
	                              * the recorder from tracefs; 0: futex calls not counted) */
	uint32_t futex_ret_off;      /* the offset of its 8-byte `ret` in the event's raw record */
	/* ---- attach (written by sonde, src/attach/frames.c; read by src/rt/agent.c) ---- */
	uint64_t attach_off;         /* session offset of struct sonde_attach, 0: none */
	/* ---- end attach ---- */
	/* ---- functions patched without a rebuild (common/instr_abi.h; written by
	 * sonde, src/instr/serve.c; requests by src/rt/instr.c) ---- */
	uint64_t instr_off;          /* session offset of struct sonde_instr, 0: none */

	/* ---- growth of the node pools (rt/cct_grow.c; docs/FORMAT.md "Session memory") ---- */
	uint64_t mem_cap;            /* written by the recorder: a pool grows only while
	                              * alloc - mem_freed + its new size <= mem_cap (0: no cap) */
	_Atomic uint64_t mem_freed;  /* bytes of old pools given back (holes punched) */
	_Atomic uint64_t grow_steps; /* pools grown, over all threads */
	_Atomic uint64_t grow_refused; /* growths refused: the cap (or the session) reached */
	/* ---- end growth ---- */

	struct sonde_proc   procs[SONDE_MAX_PROCS];
	uint64_t            threads_off[SONDE_MAX_THREADS]; /* thread region offsets */
	struct sonde_module modules[SONDE_MAX_MODULES];
};

/* Is [off, off + len) inside a mapping of `size` bytes?  (No overflow: the
 * recorder checks every offset the program's side wrote with it.) */
static inline int sess_inside(uint64_t size, uint64_t off, uint64_t len)
{
	return off <= size && len <= size - off;
}

/* Is [off, off + len) inside, and off a multiple of align (a power of two)?
 * For a struct the program's side points to: a misaligned atomic is
 * undefined behaviour, and a scribbled offset may be anything. */
static inline int sess_fits(uint64_t size, uint64_t off, uint64_t len, uint64_t align)
{
	return (off & (align - 1)) == 0 && sess_inside(size, off, len);
}

/* Address of session offset `off` in this process's mapping. */
static inline void *sess_ptr(struct sonde_session_hdr *s, uint64_t off)
{
	return (char *)s + off;
}

/* Bump allocation of `size` bytes (rounded to 64) from the session.  Returns
 * the offset, or 0 when the session is full (the caller counts the loss).
 * Lock-free; used off the hot path only (thread start, module load). */
static inline uint64_t sess_alloc(struct sonde_session_hdr *s, uint64_t size)
{
	size = (size + 63) & ~(uint64_t)63;
	uint64_t off = atomic_fetch_add_explicit(&s->alloc, size, memory_order_relaxed);
	if (off + size > s->size || off + size < off)
		return 0;
	return off;
}

/* How many slots of the process, thread and module tables are used: the
 * count the program's side keeps, at most the table's size (a count past it,
 * scribbled or raced, is read as full). */
static inline uint32_t sess_nprocs(struct sonde_session_hdr *s)
{
	uint32_t n = atomic_load(&s->nprocs);
	return n < SONDE_MAX_PROCS ? n : SONDE_MAX_PROCS;
}
static inline uint32_t sess_nthreads(struct sonde_session_hdr *s)
{
	uint32_t n = atomic_load(&s->nthreads);
	return n < SONDE_MAX_THREADS ? n : SONDE_MAX_THREADS;
}
static inline uint32_t sess_nmodules(struct sonde_session_hdr *s)
{
	uint32_t n = atomic_load(&s->nmodules);
	return n < SONDE_MAX_MODULES ? n : SONDE_MAX_MODULES;
}

static inline struct sonde_thread *sess_thread(struct sonde_session_hdr *s, uint32_t slot)
{
	uint64_t off = s->threads_off[slot];
	return off ? (struct sonde_thread *)sess_ptr(s, off) : NULL;
}

static inline struct sonde_node *thread_nodes(struct sonde_session_hdr *s, struct sonde_thread *t)
{
	return (struct sonde_node *)sess_ptr(s, t->nodes_off);
}

#endif
