/* frames.h — the calls running in a process at the attach (frames.c): every
 * thread stopped, its stack unwound with libdwfl (DWARF CFI: sonde-cc does
 * not keep frame pointers), then let go.  docs/ATTACH.md. */
#ifndef SONDE_ATTACH_FRAMES_H
#define SONDE_ATTACH_FRAMES_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/session.h"

struct attach_frame {
	pid_t tid;
	uint64_t fn;        /* the function's entry (its symbol's start) */
	uint64_t slot;      /* where its return address is on the stack */
	uint64_t ra;        /* that return address */
	char *name;         /* its symbol (malloc'ed), or NULL */
	uint64_t off_ns;    /* its thread's off-CPU nanoseconds when stopped (CLOCK_MONOTONIC less the
	                     * time it ran, /proc/TID/schedstat), 0: not known */
};

/* Each thread's frames together, outermost first. */
struct attach_frames {
	struct attach_frame *f;
	int n, cap;
	int nthreads;       /* threads stopped and unwound */
	uint64_t tsc;       /* when they were all stopped */
	uint64_t mono;      /* the same, CLOCK_MONOTONIC */
	int any_module;     /* in: frames of every module, not only sonde-cc ones (functions patched
	                     * without a rebuild: the agent keeps those it patched) */
	uint64_t pcs[256];  /* out: where each stopped thread was (its pc) */
	int npcs;
};

/* Stops every thread of pid (ptrace), unwinds each, lets them all go;
 * held, if not 0, is a thread the caller has stopped with ptrace already
 * (inject.c, its registers as they were): unwound too, left stopped.
 * Only frames of modules built by sonde-cc whose return address was found
 * where the unwinder says it is are kept.  0; -1 with err (nothing is kept then; the process was put back
 * as it was). */
/* With keep, on success, the threads stay stopped until frames_let_go(). */
int frames_take(pid_t pid, pid_t held, int keep, struct attach_frames *out, char *err, size_t n);
/* The threads' pcs (fr->pcs) into the session's table of functions to patch
 * (common/instr_abi.h, busy): a function with a thread stopped inside the
 * bytes its jump would take is not patched. */
void frames_busy_to_session(const struct attach_frames *fr, struct sonde_session_hdr *h, uint64_t size);
void frames_let_go(void);
/* Copies them into the session (sess_alloc) and points attach_off there. */
void frames_to_session(const struct attach_frames *fr, struct sonde_session_hdr *h);
/* Appends f (its name is then fr's to free).  0, or -1 out of memory. */
int frames_add(struct attach_frames *fr, const struct attach_frame *f);
void frames_free(struct attach_frames *fr);
/* Whether fn is the entry of a function of a module registered in the
 * session h (size bytes mapped; the program's side wrote the tables). */
int frames_is_instrumented(struct sonde_session_hdr *h, uint64_t size, uint64_t fn);

#endif
