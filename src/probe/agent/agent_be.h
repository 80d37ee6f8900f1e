/* agent_be.h — sonde's side of the agent probe backend (agent_be.c; the
 * program's side is src/rt/probes.c, the shared memory
 * src/common/probe_area.h): start the agent in a launched program
 * (LD_PRELOAD) or in a running one (dlopen through ptrace), place and remove
 * sites through its mailbox, end the session.  What the sites count is read
 * straight from the shared memory (agent_kinds.c).  Errors are one clause for
 * "sonde: error: %s". */
#ifndef SONDE_PROBE_AGENT_BE_H
#define SONDE_PROBE_AGENT_BE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/probe_area.h"

/* A slot the agent was given code for: [lo, hi), going on at back (0:
 * never), reached by a jump (jmp) or from the SIGTRAP handler. */
struct agent_slot {
	uint64_t lo, hi, back;
	int jmp;
};

struct agent_be {
	pid_t pid;
	int launched;
	int memfd;              /* /proc/PID/mem, for reading code */
	int area_fd;
	struct pa_hdr *pa;
	uint64_t area_size;
	int alive_w;            /* our end of the pipe: closing it ends the agent's session */
	uint32_t nused;         /* site records used */
	int threads_stopped;    /* every thread but the agent's is stopped: a jump may cover several instructions */
	pid_t *stopped;         /* those threads */
	int nstopped;
	struct agent_slot *slots; /* every slot of the session */
	int nslots;
	int slots_lost;         /* one could not be kept (out of memory) */
	int may_hold;           /* a jump over several instructions may stop the threads now (agent_be_hold) */
	int status;             /* wait status of a launched program that ended */
	int gone;
	int reaped;
	uint16_t refs[PA_MAX_SITES]; /* probes using each site (a chained record's probe: the record and its host) */
	uint16_t host1[PA_MAX_SITES]; /* a chained record (var, assert, time at a site already in): its host + 1 */
	const struct pa_var *next_var; /* copied into the next new site of kind PA_KIND_VAR (agent_kinds.c) */
	const struct pa_time *next_time; /* the same for PA_KIND_TIME (a COUNT site with a time record) */
	int record;             /* --record: the area has rings (set before agent_be_launch / _attach) */
	int stacks;             /* the area has stack rings (stack probes; set before agent_be_launch / _attach) */
	uint32_t next_stack;    /* PA_KIND_STACK: the stack bytes of the next site (pa_site.stack_bytes) */
	int stack_walk;         /* stack sites walk the stack with the unwind table first (pa_site.stack_walk) */
	int pipe_ignored;       /* SIGPIPE was ignored when sonde started: a launched program inherits that */
	uint32_t next_plugin1;  /* PA_KIND_PLUGIN: the plugin probe of the next site (pa_site.plugin1) */
	int next_post;          /* ... whose slot calls the post handler (agent_plugin.c) */
	uint64_t hits_base;     /* agent_be_place: the site's hits before the probe was in (none lost, none
	                         * from before counted) */
};

/* A launched program: started with the agent preloaded, waiting before its
 * constructors until agent_be_go.  Refused (-1, err) for static programs. */
int agent_be_launch(struct agent_be *b, char **argv, const char *rt_path, char *err, size_t n);
/* A running process: the runtime dlopen'ed into it and the agent started. */
int agent_be_attach(struct agent_be *b, pid_t pid, const char *rt_path, char *err, size_t n);
/* Lets the launched program run. */
void agent_be_go(struct agent_be *b);

/* Stops every thread but the agent's (ptrace), so that sites placed now may
 * take a jump over several instructions; agent_be_let_go resumes them (and
 * ends may_hold).  With may_hold set instead, agent_be_place holds them only
 * for a site that needs it. */
int agent_be_hold(struct agent_be *b, char *err, size_t n);
void agent_be_let_go(struct agent_be *b);

/* Places a site at addr doing kind (PA_KIND_*): a jump where the code
 * allows and the threads do (fn: the enclosing function's run-time start and
 * size, 0 if unknown), else int3 (*why_int3 said, may be NULL).  A site
 * already at addr is shared (and becomes a CALL site if kind asks).
 * Returns the site's index, or -1 with err. */
int agent_be_place(struct agent_be *b, uint64_t addr, uint32_t kind, uint64_t fn, uint64_t fn_size,
                   char *why_int3, size_t wn, char *err, size_t n);
/* The plugin block of the shared area (probe_area.h, struct pa_plugins). */
struct pa_plugins *agent_be_plugins(struct agent_be *b);
/* Has the agent load the plugin named in the plugin block (PA_OP_PLUGIN).
 * 0, or -1 with err. */
int agent_be_plugin_load(struct agent_be *b, char *err, size_t n);
/* A probe no longer uses site idx: the last one removes it (a chained
 * record leaves its host's chain, and its host loses a user).  0, or -1
 * with err. */
int agent_be_unref(struct agent_be *b, int idx, char *err, size_t n);
/* Code of the target with our sites shown as the original bytes. */
int agent_be_read_code(struct agent_be *b, uint64_t addr, void *buf, size_t n);
/* The program exec'd and its agent waits in the new image: forget the old
 * image's sites, read the new one's memory.  0, or -1 with err. */
int agent_be_exec_reset(struct agent_be *b, char *err, size_t n);
/* Whether site idx, placed, still holds the agent's bytes (0: its code is
 * gone, e.g. its library unloaded). */
int agent_be_site_live(struct agent_be *b, int idx);
/* Ends the session: every site removed, the pipe closed; the agent stays
 * loaded, inert. */
void agent_be_end(struct agent_be *b);
/* Whether the target has ended (a launched one: its status in b->status). */
int agent_be_gone(struct agent_be *b);
/* Waits for a launched program to end (after the session), into b->status. */
void agent_be_reap(struct agent_be *b);
void agent_be_free(struct agent_be *b);

#endif
