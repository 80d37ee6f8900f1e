/* agent_record.c — `sonde probe -o DIR --record` on the agent engine:
 * sonde drains the agent's per-thread rings (common/probe_area.h, struct
 * pa_ring; written by src/rt/probe_record.c) every few milliseconds while
 * the program runs, and once more at the end, and hands each event to
 * probe/record.c (precorder_event) with its thread, its time and the probe
 * it belongs to: the recording is the one the ptrace engine writes (func
 * probes as slices, var values, assert pass / fail, time intervals), so
 * `sonde info` and `sonde export` read it unchanged.
 *
 * Nothing the program wrote is trusted: a ring's head more than a ring ahead
 * of what sonde read, a record index outside the area, a failure's payload
 * past the head are dropped and counted.  Events the agent dropped (a full
 * ring: the program never waits for sonde; no free ring) are counted as lost
 * in the recording (lost.ring_events_dropped) and said on stderr. */
#include "probe/agent/agent_record.h"

#include "common/trace_enc.h"
#include "probe/engine.h"
#include "probe/probe.h"
#include "probe/record.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct rtarget {
	struct probe *p;
	int role;
	enum arec_what what;
	int next;             /* the next target of the same record, -1 none */
};

static struct rtarget *tg;
static int ntg, captg;
static int first[PA_MAX_SITES];
static uint64_t seen_tail[PA_REC_RINGS];  /* sonde's own count of what it read of each ring */
static uint64_t seen_lost[PA_REC_RINGS];
static uint64_t seen_no_ring;
static uint64_t dropped;

/* Who takes the events of each record (probes may come and go between two
 * drains: built again each time). */
static void targets(struct engine *e)
{
	for (int i = 0; i < PA_MAX_SITES; i++)
		first[i] = -1;
	ntg = 0;
	for (int i = 0; i < e->nprobes; i++) {
		struct probe *p = e->probes[i];
		const int *sites;
		enum arec_what what = AREC_NONE;
		int n = p->removed ? 0 : agent_probe_recs(p, &sites, &what);
		for (int k = 0; k < n && what != AREC_NONE; k++) {
			if (sites[k] < 0 || sites[k] >= PA_MAX_SITES)
				continue;
			if (ntg == captg) {
				int cap = captg ? 2 * captg : 64;
				struct rtarget *v = realloc(tg, sizeof *v * (size_t)cap);
				if (!v)
					return;
				tg = v;
				captg = cap;
			}
			tg[ntg] = (struct rtarget){ p, k, what, first[sites[k]] };
			first[sites[k]] = ntg++;
		}
	}
}

/* Event ev (with its payload pl, npl events) of thread tid. */
static void deliver(struct engine *e, uint32_t tid, const struct pa_rev *ev, const struct pa_rev *pl, int npl)
{
	if (ev->rec >= PA_MAX_SITES)
		return;
	for (int i = first[ev->rec]; i >= 0; i = tg[i].next) {
		struct rtarget *t = &tg[i];
		struct probe *p = t->p;
		pid_t th = (pid_t)tid;
		switch (ev->type) {
		case PA_EV_SITE:
			if (t->what == AREC_SLICE)
				precorder_event(e, th, ev->t, p, TRP_BEGIN, TRV_NONE, 0, 0, NULL);
			else if (t->what == AREC_HIT)
				precorder_event(e, th, ev->t, p, TRP_HIT, TRV_NONE, 0, 0, NULL);
			else if (t->what == AREC_BRANCH)
				precorder_event(e, th, ev->t, p, TRP_HIT, TRV_STR, 0, 0, ev->v ? "taken" : "not_taken");
			break;
		case PA_EV_RET:
			if (t->what == AREC_SLICE)
				precorder_event(e, th, ev->t, p, TRP_END, TRV_NONE, 0, 0, NULL);
			break;
		case PA_EV_VAL:
			if (t->what == AREC_VAR)
				precorder_event(e, th, ev->t, p, TRP_HIT, TRV_INT, ev->v, 0, NULL);
			break;
		case PA_EV_FVAL:
			if (t->what == AREC_VAR) {
				union { uint64_t u; double d; } f = { .u = (uint64_t)ev->v };
				precorder_event(e, th, ev->t, p, TRP_HIT, TRV_FLOAT, 0, f.d, NULL);
			}
			break;
		case PA_EV_NOVAL:
			if (t->what == AREC_VAR || t->what == AREC_ASSERT)
				precorder_event(e, th, ev->t, p, TRP_HIT, TRV_STR, 0, 0, "unavailable");
			break;
		case PA_EV_PASS:
			if (t->what == AREC_ASSERT)
				precorder_event(e, th, ev->t, p, TRP_HIT, TRV_STR, 0, 0, "pass");
			break;
		case PA_EV_FAIL:
			if (t->what == AREC_ASSERT) {
				int64_t vals[PA_VAR_SAVE] = { 0 };
				for (int k = 0; k < npl && 2 * k + 1 < PA_VAR_SAVE; k++) {
					vals[2 * k] = (int64_t)pl[k].t;
					vals[2 * k + 1] = pl[k].v;
				}
				uint32_t mask = (uint32_t)ev->v & ((1u << PA_VAR_SAVE) - 1);
				if (npl < (PA_VAR_SAVE + 1) / 2)
					mask &= (1u << (2 * npl)) - 1; /* values the payload did not carry */
				char vs[400], buf[420];
				agent_assert_values(p, t->role, vals, mask, vs, sizeof vs);
				snprintf(buf, sizeof buf, "fail%s%s", vs[0] ? ": " : "", vs);
				precorder_event(e, th, ev->t, p, TRP_HIT, TRV_STR, 0, 0, buf);
			}
			break;
		case PA_EV_TIME:
			if (t->what == AREC_TIME) {
				if (ev->v >= 0)
					precorder_event(e, th, ev->t, p, TRP_HIT, TRV_INT, ev->v, 0, NULL);
				else
					precorder_event(e, th, ev->t, p, TRP_HIT, TRV_NONE, 0, 0, NULL);
			}
			break;
		default:
			break;
		}
	}
}

/* The events taken. */
static uint64_t drain_ring(struct engine *e, struct pa_ring *r, int i)
{
	uint32_t state = __atomic_load_n(&r->state, __ATOMIC_ACQUIRE);
	if (state == 0)
		return 0;
	/* head first: the thread wrote its id and name before its first event */
	uint64_t head = __atomic_load_n(&r->head, __ATOMIC_ACQUIRE), tail = seen_tail[i];
	uint32_t tid = __atomic_load_n(&r->tid, __ATOMIC_ACQUIRE);
	char comm[sizeof r->comm];
	memcpy(comm, r->comm, sizeof comm);
	comm[sizeof comm - 1] = 0;
	if (head - tail > PA_REC_EVENTS) { /* not the agent's doing: what is there cannot be trusted */
		dropped += head > tail ? head - tail : 1;
		tail = head;
	}
	while (tail < head) {
		struct pa_rev ev = r->ev[tail & (PA_REC_EVENTS - 1)];
		struct pa_rev pl[(PA_VAR_SAVE + 1) / 2];
		int npl = ev.type == PA_EV_FAIL ? ev.n : 0;
		if (npl > (int)(sizeof pl / sizeof pl[0]) || head - tail - 1 < (uint64_t)npl) {
			dropped += head - tail;
			tail = head;
			break;
		}
		for (int k = 0; k < npl; k++)
			pl[k] = r->ev[(tail + 1 + (uint64_t)k) & (PA_REC_EVENTS - 1)];
		deliver(e, tid, &ev, pl, npl);
		tail += 1 + (uint64_t)npl;
	}
	precorder_thread_comm(e, (pid_t)tid, comm); /* a thread gone before sonde read its name */
	uint64_t taken = tail - seen_tail[i];
	seen_tail[i] = tail;
	__atomic_store_n(&r->tail, tail, __ATOMIC_RELEASE); /* the agent may write over them now */
	uint64_t lost = __atomic_load_n(&r->lost, __ATOMIC_RELAXED);
	if (lost > seen_lost[i]) {
		dropped += lost - seen_lost[i];
		seen_lost[i] = lost;
	}
	if (state == 2) { /* its thread ended: the ring is free again */
		precorder_thread_end(e, (pid_t)tid);
		r->head = r->tail = r->lost = 0;
		r->tid = 0;
		seen_tail[i] = seen_lost[i] = 0;
		__atomic_store_n(&r->state, 0, __ATOMIC_RELEASE);
	}
	return taken;
}

uint64_t agent_record_drain(struct engine *e, struct pa_hdr *pa, uint64_t rec_off)
{
	if (!e->rec || !pa)
		return 0;
	targets(e);
	struct pa_ring *rings = (struct pa_ring *)((char *)pa + rec_off);
	uint64_t most = 0;
	for (int i = 0; i < PA_REC_RINGS; i++) {
		uint64_t k = drain_ring(e, &rings[i], i);
		most = k > most ? k : most;
	}
	uint64_t nr = __atomic_load_n(&pa->rec_no_ring, __ATOMIC_RELAXED);
	if (nr > seen_no_ring) {
		dropped += nr - seen_no_ring;
		seen_no_ring = nr;
	}
	static uint64_t told;
	if (dropped > told) {
		precorder_dropped(e, dropped - told);
		told = dropped;
	}
	return most;
}

uint64_t agent_record_dropped(void)
{
	return dropped;
}
