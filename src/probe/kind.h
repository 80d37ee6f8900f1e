/* kind.h — the interface of a probe kind: the handlers each kind_*.c fills
 * in and the engine, the manager and the outputs call through, and the table
 * of every kind (kind.c).  A kind uses the engine (engine.h); the engine
 * knows the kinds only through this table. */
#ifndef SONDE_PROBE_KIND_H
#define SONDE_PROBE_KIND_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct engine;
struct hit;
struct json;
struct probe;

struct kind_ops {
	const char *name;
	int needs_location;
	int (*setup)(struct probe *p, char *err, size_t n);
	void (*pre)(struct probe *p, struct hit *h, int role);
	void (*post)(struct probe *p, struct hit *h, int role);
	void (*error)(struct probe *p, struct hit *h, int signo);
	void (*tick)(struct probe *p, uint64_t now_ns);       /* timers (sys) */
	void (*json)(struct probe *p, struct json *j);
	void (*table)(struct probe *p, FILE *f);              /* summary details */
	void (*free)(struct probe *p);
};

/* Kinds (kind_*.c). */
extern const struct kind_ops kind_func, kind_line, kind_branch, kind_var, kind_assert,
	kind_time, kind_sys, kind_plugin;
/* The kind named name, NULL if none (kind.c). */
const struct kind_ops *kind_find(const char *name);

/* kind_plugin.c: load the --plugin shared object whose handlers plugin probes run. */
int plugin_load(struct engine *e, const char *path, char *err, size_t n);

#endif
