/* agent.h — sonde's side of the agent (agent.c; the program's side is
 * src/rt/agent.c): load libsonde-rt.so into a running sonde build, hand it
 * the session, and end its recording.  docs/ATTACH.md.  Errors are one
 * clause for "sonde: error: %s"; the CLI prints them. */
#ifndef SONDE_ATTACH_AGENT_H
#define SONDE_ATTACH_AGENT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "attach/frames.h"
#include "common/session.h"

struct agent {
	pid_t pid;
	int alive_w;          /* write end of the pipe the agent's watcher reads: closed by our end */
	uint64_t stop_fn;     /* sonde_agent_stop in the target */
	char rt[4096];        /* the runtime's real path: the stop call is made only where stop_fn is in it */
	int nmods;            /* modules recording */
	int nobjs;            /* --locks: objects whose lock calls were redirected */
	uint64_t start_ns;    /* CLOCK_MONOTONIC when the sleds were on */
	struct attach_frames frames; /* the calls running at the attach (frames.c) */
	char frames_err[256]; /* why there are none, if finding them failed ("" otherwise) */
	uint64_t rt_lo, rt_hi; /* the runtime's mappings, when it was loaded before this attach (else 0, 0) */
};

/* Not a sonde build: the CLI suggests --locks or probe. */
enum { AGENT_NOT_SONDE = 2 };

/* Loads rt_path into process pid, finds the calls running in its threads
 * (frames.c, into a->frames and the session h), makes it map session_fd (a
 * memfd of ours, opened by the target through /proc/<our pid>/fd: h's) and
 * switch its modules on; with locks (a --locks session), also redirect its
 * lock functions, and then the process need not be a sonde build.  0; -1
 * with err; AGENT_NOT_SONDE with err when, without locks, no mapped object
 * of the process was built by sonde-cc (the process is then not touched). */
int agent_start(pid_t pid, const char *rt_path, int session_fd, struct sonde_session_hdr *h, int locks,
                struct agent *a, char *err, size_t n);

/* While agent_start waits for the agent's start in the program, call fn(arg)
 * every millisecond or so (record -p serves the program's requests for the
 * stubs of functions patched without a rebuild, src/instr/).  NULL: none. */
void agent_serve_with(int (*fn)(void *), void *arg);

/* The agent's sleds back to nops (an injected call); the pipe closed.  0, or
 * -1 with err (the process ended: nothing left to switch off). */
int agent_stop(struct agent *a, char *err, size_t n);
/* Frees what agent_start kept (a->frames). */
void agent_free(struct agent *a);

/* Run-time address of sym (a dynamic symbol) in process pid's copy of the
 * object at path (as mapped: a real path), or 0. */
uint64_t agent_target_sym(pid_t pid, const char *path, const char *sym);

/* Whether the process still runs (not a zombie). */
int agent_target_alive(pid_t pid);
/* Whether pid is past the point of its exit where its memory is gone
 * (/proc/PID/exe unreadable), its exit not yet told. */
int agent_target_exiting(pid_t pid);
/* A runtime other than rt is loaded in pid: rt's own file as it was before
 * it was replaced (maps say "(deleted)": sonde rebuilt or upgraded since
 * the program loaded it), or one of another path.  Its entry points are
 * not where rt's file says: -1 with err (the attach is refused before the
 * process is touched), else 0. */
int agent_runtime_other(pid_t pid, const char *rt, char *err, size_t n);

#endif
