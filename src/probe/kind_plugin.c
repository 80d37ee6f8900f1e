/* kind_plugin.c — custom probes (plugin:LOCATION[:ARG]) whose pre, post and
 * error handlers come from the --plugin shared object (include/sonde/probe.h),
 * run here on the ptrace engine (ABI 1 and 2; an ABI-2 plugin's result area
 * is then sonde's own memory).  The agent engine runs ABI-2 handlers in the
 * program (agent_kinds.c, src/rt/probe_plugin.c) and uses this kind's
 * context, report and fini (plugin_ctx_new). */
#include "probe/kind.h"
#include "probe/probe.h"

#include "common/json.h"
#include "common/trace_enc.h"
#include "probe/engine.h"
#include "probe/place.h"
#include "probe/ptrace/ptrace.h"
#include "probe/record.h"
#include "probe/resolve.h"
#include "proc/target.h"
#include "sonde/probe.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct pdata {
	struct sonde_probe_ctx c;
	void *own_result;       /* ABI 2 on ptrace: the result area, ours */
};

int plugin_load(struct engine *e, const char *path, char *err, size_t n)
{
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		snprintf(err, n, "cannot load plugin %s (%s)", path, dlerror());
		return -1;
	}
	const struct sonde_probe_plugin *pl = dlsym(h, "sonde_probe_plugin");
	const char *bad = !pl ? "no 'sonde_probe_plugin' symbol"
	                  : pl->abi != SONDE_PROBE_ABI && pl->abi != SONDE_PROBE_ABI2 ? "built for another SONDE_PROBE_ABI"
	                  : pl->abi == SONDE_PROBE_ABI2 && pl->result_size > SONDE_PROBE_RESULT_MAX
	                      ? "its result_size is over SONDE_PROBE_RESULT_MAX (4096)" : NULL;
	if (bad) {
		snprintf(err, n, "cannot use plugin %s (%s)", path, bad);
		dlclose(h);
		return -1;
	}
	e->plugin_handle = h;
	e->plugin = pl;
	return 0;
}

static int ctx_read(const struct sonde_probe_ctx *c, uint64_t addr, void *buf, size_t len)
{
	struct probe *p = c->sonde_private;
	return target_read(&p->e->t, addr, buf, len);
}

static void fill(struct pdata *d, struct hit *h, uint64_t hits)
{
	const arch_regs *r = h->regs;
	struct sonde_regs *s = &d->c.regs;
	s->rax = r->rax; s->rbx = r->rbx; s->rcx = r->rcx; s->rdx = r->rdx;
	s->rsi = r->rsi; s->rdi = r->rdi; s->rbp = r->rbp; s->rsp = r->rsp;
	s->r8 = r->r8; s->r9 = r->r9; s->r10 = r->r10; s->r11 = r->r11;
	s->r12 = r->r12; s->r13 = r->r13; s->r14 = r->r14; s->r15 = r->r15;
	s->rip = r->rip; s->eflags = r->eflags; s->fs_base = r->fs_base; s->gs_base = r->gs_base;
	d->c.tid = h->th->tid;
	d->c.addr = h->addr;
	d->c.time_ns = h->now_ns;
	d->c.hits = hits;
}

int plugin_ctx_new(struct probe *p, uint64_t addr, void *result,
                   int (*rd)(const struct sonde_probe_ctx *c, uint64_t addr, void *buf, size_t len),
                   char *err, size_t n)
{
	return plugin_ctx_alloc(p, addr, result, rd, err, n) || plugin_ctx_init(p, err, n) ? -1 : 0;
}

int plugin_ctx_alloc(struct probe *p, uint64_t addr, void *result,
                     int (*rd)(const struct sonde_probe_ctx *c, uint64_t addr, void *buf, size_t len),
                     char *err, size_t n)
{
	const struct sonde_probe_plugin *pl = p->e->plugin;
	if (!pl) {
		snprintf(err, n, "plugin probes need --plugin FILE.so");
		return -1;
	}
	struct pdata *d = calloc(1, sizeof *d);
	p->data = d;
	if (!d) {
		snprintf(err, n, "out of memory");
		return -1;
	}
	d->c.id = p->id;
	d->c.spec = p->spec;
	d->c.arg = p->sp.args ? p->sp.args : "";
	d->c.pid = p->e->t.pid;
	d->c.read = rd ? rd : ctx_read;
	d->c.sonde_private = p;
	d->c.addr = addr;
	if (pl->abi == SONDE_PROBE_ABI2) {
		d->c.result_size = pl->result_size;
		if (!result)
			result = d->own_result = calloc(1, pl->result_size ? pl->result_size : 1);
		if (!result) {
			snprintf(err, n, "out of memory");
			return -1;
		}
		d->c.result = result;
	}
	return 0;
}

int plugin_ctx_init(struct probe *p, char *err, size_t n)
{
	const struct sonde_probe_plugin *pl = p->e->plugin;
	struct pdata *d = p->data;
	if (pl->init && pl->init(&d->c)) {
		snprintf(err, n, "plugin %s refused the probe", pl->name ? pl->name : "?");
		return -1;
	}
	return 0;
}

struct sonde_probe_ctx *plugin_ctx(struct probe *p)
{
	struct pdata *d = p->data;
	return d ? &d->c : NULL;
}

static void pre(struct probe *p, struct hit *h, int role)
{
	(void)role;
	struct pdata *d = p->data;
	p->hits++;
	precorder_hit(h, p, TRP_HIT, TRV_NONE, 0, 0, NULL);
	fill(d, h, p->hits);
	if (p->e->plugin->pre)
		p->e->plugin->pre(&d->c);
}

static void post(struct probe *p, struct hit *h, int role)
{
	(void)role;
	struct pdata *d = p->data;
	fill(d, h, p->hits);
	if (p->e->plugin->post)
		p->e->plugin->post(&d->c);
}

static void error(struct probe *p, struct hit *h, int signo)
{
	struct pdata *d = p->data;
	fill(d, h, p->hits);
	if (p->e->plugin->error)
		p->e->plugin->error(&d->c, signo);
}

static void table(struct probe *p, FILE *f)
{
	struct pdata *d = p->data;
	if (d && p->e->plugin->report)
		p->e->plugin->report(&d->c, f);
}

/* The plugin's report line also goes into the JSON document, as "report". */
static void pjson(struct probe *p, struct json *j)
{
	struct pdata *d = p->data;
	if (!d || !p->e->plugin->report)
		return;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		return;
	p->e->plugin->report(&d->c, f);
	if (fclose(f) == 0 && buf) {
		while (len && (buf[len - 1] == '\n' || buf[len - 1] == '\r'))
			buf[--len] = 0;
		json_str(j, "report", buf);
	}
	free(buf);
}

static void fr(struct probe *p)
{
	struct pdata *d = p->data;
	if (d && p->e->plugin && p->e->plugin->fini)
		p->e->plugin->fini(&d->c);
	if (d)
		free(d->own_result);
	free(d);
}

const struct kind_ops kind_plugin = {
	.name = "plugin", .needs_location = 1, .setup = kind_place, .pre = pre, .post = post,
	.error = error, .table = table, .json = pjson, .free = fr,
};
