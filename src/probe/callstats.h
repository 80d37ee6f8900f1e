/* callstats.h — what a function probe counts, on any backend (callstats.c):
 * calls, returns and their times (total, min, max), and the callers by
 * return address; the JSON fields and the table text of func probes.  The
 * local engine (kind_func.c) and the remote one (kind_remote.c) only find
 * the entries and returns; this adds them up and says them. */
#ifndef SONDE_PROBE_CALLSTATS_H
#define SONDE_PROBE_CALLSTATS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct json;

#define CALLSTATS_MAX_CALLERS 4096 /* distinct return addresses followed; more are counted in lost */

struct call_stats {
	uint64_t calls, returns, total, min, max; /* times in ns */
	struct callstats_site { uint64_t ret, n; } *cl;
	int ncl, capcl;
	uint64_t lost;                            /* calls from callers beyond the table */
	uint64_t untimed;                         /* of returns, those without a time (a backend that counts
	                                             them exactly apart from timing them: the kernel's);
	                                             not in avg_ns / min_ns */
};

/* Names a return address ("main", "module+0x1f"), into buf; returns it. */
typedef const char *(*callstats_namer)(void *arg, uint64_t ret, char *buf, size_t n);

void callstats_init(struct call_stats *c);
static inline void callstats_call(struct call_stats *c) { c->calls++; }
void callstats_return(struct call_stats *c, uint64_t ns);
void callstats_caller(struct call_stats *c, uint64_t ret);
/* k calls from ret (a backend that counted them itself: the agent). */
void callstats_caller_n(struct call_stats *c, uint64_t ret, uint64_t k);
/* "calls", "returns", "total_ns", "min_ns", "max_ns", "avg_ns", "callers": [{name, calls}]
 * (callers merged by name, most calls first); avg and min over the timed
 * returns (returns - untimed). */
void callstats_json(const struct call_stats *c, struct json *j, callstats_namer name, void *arg);
/* "calls N, total T, avg A, min M, max X; callers: f x3, g x1, ..." */
void callstats_table(const struct call_stats *c, FILE *f, callstats_namer name, void *arg);
void callstats_free(struct call_stats *c);

#endif
