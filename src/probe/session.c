/* session.c — the probe session every engine shares (struct engine,
 * engine.h), driven through the engine's table of operations
 * (probe_engine.h): the order of open, place, run and collect; what the
 * manager asks of the engine while probes come and go (remove, hold, let
 * go, the code under the probes); the end that frees it all. */
#include "probe/probe_engine.h"

#include "probe/engine.h"
#include "probe/kind.h"
#include "probe/library.h"
#include "proc/modules.h"
#include "probe/probe.h"
#include "probe/spec.h"
#include "proc/target.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int probe_session_run(struct engine *e, const struct probe_engine_ops *ops, const struct probe_opts *o,
                      char *err, size_t n)
{
	e->ops = ops;
	e->engine_name = ops->name;
	if (ops->open(e, o, err, n))
		return -1;
	if (ops->place(e, o, err, n)) {
		e->start_ns = 0;
		return -1;
	}
	int rc = ops->run(e, o, err, n);
	if (ops->collect)
		ops->collect(e);
	return rc;
}

struct probe *engine_new_probe(struct engine *e, const char *text, char *err, size_t n)
{
	struct spec sp;
	char why[400];
	if (spec_parse(text, &sp, why, sizeof why)) {
		snprintf(err, n, "bad probe '%s' (%s)", text, why);
		return NULL;
	}
	struct probe *p = calloc(1, sizeof *p);
	struct probe **v = realloc(e->probes, (size_t)(e->nprobes + 1) * sizeof *v);
	if (v)
		e->probes = v;
	if (!p || !v || !(p->spec = strdup(text))) {
		free(p);
		spec_free(&sp);
		snprintf(err, n, "out of memory");
		return NULL;
	}
	p->id = ++e->next_id;
	p->sp = sp;
	p->e = e;
	e->probes[e->nprobes++] = p;
	return p;
}

void probe_session_free(struct engine *e)
{
	if (e->ops && e->ops->close)
		e->ops->close(e);
	for (int i = 0; i < e->nprobes; i++) {
		struct probe *p = e->probes[i];
		if (p->ops->free)
			p->ops->free(p);
		spec_free(&p->sp);
		free(p->spec);
		free(p->where);
		free(p->error);
		free(p);
	}
	free(e->probes);
	modules_free(&e->mods);
	library_free(&e->lib);
	free(e->t.thr);
}

int engine_read_code(struct engine *e, uint64_t addr, void *buf, size_t n)
{
	if (!e->ops || !e->ops->read_code) /* no session yet (agent_can.c's var_compiles) */
		return target_read(&e->t, addr, buf, n);
	return e->ops->read_code(e, addr, buf, n);
}

void engine_remove_probe(struct engine *e, struct probe *p)
{
	if (!p->removed && e->ops && e->ops->remove)
		e->ops->remove(e, p);
	p->removed = 1;
}

void engine_probe_failed(struct engine *e, struct probe *p, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	if (!p->error)
		p->error = strdup(buf);
	if (e->warn)
		e->warn(p, buf);
	engine_remove_probe(e, p);
}

int engine_stop_all(struct engine *e)
{
	return e->ops->hold(e);
}

void engine_resume_all(struct engine *e)
{
	e->ops->let_go(e);
}
