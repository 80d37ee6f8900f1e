/* ptrace_engine.c — the ptrace engine's session (probe_engine.h): launch
 * the program to its entry point or attach and stop every thread, place
 * the probes as breakpoints (kind_*.c through manager_add), run the event
 * loop (run.c) until the end, detach with every byte restored. */
#include "probe/probe_engine.h"

#include "probe/engine.h"
#include "probe/kind.h"
#include "probe/manager.h"
#include "probe/place.h"
#include "proc/modules.h"
#include "probe/probe.h"
#include "probe/ptrace/ptrace.h"
#include "probe/ptrace/run.h"
#include "probe/record.h"
#include "proc/target.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct ptrace_state state;

/* Kill what we launched, detach from the rest (a failure before the program runs). */
static void let_down(struct engine *e)
{
	if (e->t.pid && !e->t.gone) {
		if (e->t.launched)
			kill(e->t.pid, SIGKILL);
		else
			engine_detach(e);
	}
}

static int pt_open(struct engine *e, const struct probe_opts *o, char *err, size_t n)
{
	memset(&state, 0, sizeof state);
	e->priv = &state;
	if (o->argv) {
		if (target_launch(&e->t, o->argv, err, n))
			return -1;
		if (engine_run_to_entry(e)) {
			snprintf(err, n, "the program exited before reaching its entry point");
			let_down(e);
			return -1;
		}
	} else {
		if (target_attach(&e->t, o->pid, err, n))
			return -1;
		if (engine_stop_all(e)) {
			snprintf(err, n, "cannot stop the threads of the process");
			let_down(e);
			return -1;
		}
	}
	if (modules_load(&e->mods, e->t.pid)) {
		snprintf(err, n, "cannot read the memory map of the process");
		let_down(e);
		return -1;
	}
	return 0;
}

static int pt_place(struct engine *e, const struct probe_opts *o, char *err, size_t n)
{
	e->start_ns = now_ns();
	for (int i = 0; i < o->nspecs; i++)
		if (!manager_add(e, o->specs[i], err, n)) {
			let_down(e);
			return -1;
		}
	if (o->record_dir && precorder_open(e, o->record_dir, err, n)) {
		let_down(e);
		return -1;
	}
	engine_resume_all(e);
	return 0;
}

static int pt_run(struct engine *e, const struct probe_opts *o, char *err, size_t n)
{
	(void)err;
	(void)n;
	uint64_t deadline = o->duration > 0 ? e->start_ns + (uint64_t)(o->duration * 1e9) : 0;
	engine_run(e, deadline, o->in_fd);
	e->end_ns = now_ns();
	if (!e->t.gone)
		engine_detach(e);
	return 0;
}

static void pt_close(struct engine *e)
{
	struct ptrace_state *s = ptrace_state(e);
	if (!s)
		return;
	bptab_free(&s->bps);
	for (int i = 0; i < s->sc.n; i++)
		free(s->sc.r[i].owner);
	e->priv = NULL;
}

/* disable / enable: the breakpoints stay, the hits of a disabled probe are not counted (step.c). */
static int pt_enable(struct engine *e, struct probe *p, int on, char *err, size_t n)
{
	(void)e, (void)p, (void)on, (void)err, (void)n;
	return 0;
}

/* A func site: a breakpoint on the entry and one on every return and
 * tail-call jump out of the function, decoded from its code.  func:F+OFF
 * is a SITE_COUNT: its one breakpoint counts calls (the stack pointer there
 * is not the entry's, so neither returns nor the return address can be
 * matched: no times, no callers). */
static int func_site(struct engine *e, struct probe *p, const struct probe_site *s, char *err, size_t n)
{
	if (s->what != SITE_CALL)
		return engine_insert(e, p, s->la.addr, FUNC_ROLE_ENTRY, 0, err, n);
	uint64_t start = s->la.addr, size = s->la.fn.size ? s->la.fn.size : 1;
	uint8_t *code = malloc(size + 16);
	if (!code || engine_read_code(e, start, code, size)) {
		free(code);
		snprintf(err, n, "cannot read the code of %s", s->la.fn.name ? s->la.fn.name : "the function");
		return -1;
	}
	memset(code + size, 0, 16);
	int rc = engine_insert(e, p, start, FUNC_ROLE_ENTRY, 0, err, n);
	for (uint64_t off = 0; off < size && !rc;) {
		struct arch_insn in;
		if (arch_decode(code + off, (size_t)(size - off), start + off, &in))
			break; /* padding or data: stop */
		int exit = in.kind == AI_RET;
		if (in.kind == AI_JMP) {
			uint64_t t = arch_branch_target(&in);
			exit = t && (t < start || t >= start + size); /* a tail call */
		}
		if (exit && !(rc = engine_insert(e, p, start + off, FUNC_ROLE_EXIT, 0, err, n)))
			func_exit_placed(p);
		off += (uint64_t)in.len;
	}
	free(code);
	return rc;
}

/* Its sites (place.h): a breakpoint each, a func's on its entry and exits;
 * a branch's handler runs after the jump too. */
static int pt_place_site(struct engine *e, struct probe *p, struct probe_site *s, char *err, size_t n)
{
	if (!strcmp(p->sp.kind, "func"))
		return func_site(e, p, s, err, n);
	return engine_insert(e, p, s->la.addr, s->i, s->want_post || s->what == SITE_BRANCH, err, n);
}

static void pt_placed(struct engine *e, struct probe *p, char *w, size_t wn)
{
	(void)e;
	size_t l = strlen(w);
	if (!strcmp(p->sp.kind, "func") && !p->sp.off && l < wn)
		snprintf(w + l, wn - l, ", %d exit%s", func_exits(p), func_exits(p) == 1 ? "" : "s");
}

static const struct site_ops pt_sites = { .can = SITE_CAN_OFFSET, .place = pt_place_site, .placed = pt_placed };

const struct probe_engine_ops ptrace_engine = {
	.name = "ptrace",
	.kinds = "func line branch var assert time sys plugin stack",
	.runs = "every probe kind",
	.modes = PE_LAUNCH | PE_ATTACH | PE_INTERACTIVE | PE_RECORD | PE_PLUGIN | PE_HOLD_TO_REMOVE,
	.open = pt_open,
	.place = pt_place,
	.run = pt_run,
	.close = pt_close,
	.kind = kind_find,
	.remove = ptrace_remove,
	.enable = pt_enable,
	.hold = ptrace_hold,
	.let_go = ptrace_let_go,
	.read_code = ptrace_read_code,
	.sites = &pt_sites,
};
