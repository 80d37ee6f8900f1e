/* thread_states.c — a trace's thread-state slices (thread_states.h). */
#include "export/thread_states.h"

#include <stdlib.h>

struct ts_thread {
	uint64_t last;   /* the end of its last slice (ticks), 0: none yet */
	int32_t cpu;     /* the CPU after its last switch-in */
	int declared;
};

struct tstates {
	const struct recording *r;
	const struct ts_ops *ops;
	void *arg;
	struct ts_thread *th;
	uint32_t n;
};

struct tstates *ts_open(const struct recording *r, const struct ts_ops *ops, void *arg)
{
	if (r->nthreads <= 0)
		return NULL;
	struct tstates *t = calloc(1, sizeof *t);
	if (!t)
		return NULL;
	t->th = calloc((size_t)r->nthreads, sizeof *t->th);
	if (!t->th) {
		free(t);
		return NULL;
	}
	*t = (struct tstates){ r, ops, arg, t->th, (uint32_t)r->nthreads };
	return t;
}

static void put(struct tstates *t, uint32_t thread, uint64_t a, uint64_t b, enum ts_kind k, int32_t cpu)
{
	struct ts_thread *s = &t->th[thread];
	if (a < s->last)
		a = s->last;
	if (b <= a)
		return;
	if (!s->declared) {
		s->declared = 1;
		t->ops->track(t->arg, thread);
	}
	struct ts_slice sl = { thread, a, b, k, cpu };
	t->ops->slice(t->arg, &sl);
	s->last = b;
}

void ts_switch(struct tstates *t, uint32_t thread, uint64_t out, uint64_t len, int runnable, int32_t cpu)
{
	if (!t || thread >= t->n)
		return;
	struct ts_thread *s = &t->th[thread];
	uint64_t a = rd_mono_ticks(t->r, out), b = rd_mono_ticks(t->r, out + len < out ? UINT64_MAX : out + len);
	if (!a || a == UINT64_MAX || b == UINT64_MAX)
		return; /* before the recording's start, or no clock to place it */
	if (s->last)
		put(t, thread, s->last, a, TS_RUNNING, s->cpu);
	put(t, thread, a, b, runnable ? TS_RUNNABLE : TS_BLOCKED, cpu);
	s->cpu = cpu;
}

const char *ts_kind_name(enum ts_kind k)
{
	return k == TS_RUNNING ? "running" : k == TS_RUNNABLE ? "runnable" : "blocked";
}

void ts_close(struct tstates *t)
{
	if (!t)
		return;
	free(t->th);
	free(t);
}
