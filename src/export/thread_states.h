/* thread_states.h — a trace's thread-state slices (issue 38) for the
 * timeline exports: each recorded thread's waits off the CPU (TRX_SWITCH,
 * the kernel's switch records) as "runnable" and "blocked" slices, and the
 * time between two of them as "running" with the CPU it ran on.  The
 * exports (perfetto.c, chrome.c) draw them on a track beside the thread's
 * calls.  Times are the recording's ticks (rd_mono_ticks); a thread's
 * slices never overlap and go forward (a damaged or out-of-order wait is
 * cut to what is after the last one). */
#ifndef SONDE_EXPORT_THREAD_STATES_H
#define SONDE_EXPORT_THREAD_STATES_H

#include <stdint.h>

#include "data/reader.h"

enum ts_kind { TS_RUNNING = 0, TS_RUNNABLE = 1, TS_BLOCKED = 2 };

struct ts_slice {
	uint32_t thread;     /* thread index */
	uint64_t start, end; /* ticks */
	enum ts_kind kind;
	int32_t cpu;         /* running: the CPU it ran on; else the one it ran on after; -1 not known */
};

struct ts_ops {
	/* thread's first slice comes next: its track is to be declared */
	void (*track)(void *arg, uint32_t thread);
	void (*slice)(void *arg, const struct ts_slice *s);
};

struct tstates;
/* NULL when out of memory or r has no threads. */
struct tstates *ts_open(const struct recording *r, const struct ts_ops *ops, void *arg);
/* A decoded TRX_SWITCH (events.h's sw) of thread `thread`. */
void ts_switch(struct tstates *t, uint32_t thread, uint64_t out, uint64_t len, int runnable, int32_t cpu);
/* The name of a kind, as the exports show it. */
const char *ts_kind_name(enum ts_kind k);
void ts_close(struct tstates *t);

#endif
