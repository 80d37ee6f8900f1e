/* cache.c — objects opened once per path (cache.h): an open-addressing
 * table from path to the struct sym_module, or to the reason it could not
 * be opened.  Everything is freed together by sym_cache_free. */
#include "sym/cache.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct sym_cache_ent {
	char *path;               /* NULL: free slot */
	struct sym_module *mod;   /* NULL: could not be opened, see why */
	char *why;
};

struct sym_cache {
	struct sym_cache_ent *v;
	size_t n, cap;            /* cap a power of two, at most half full */
};

static const char oom[] = "out of memory";

static size_t path_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;   /* FNV-1a */
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return (size_t)(h ^ (h >> 32));
}

static struct sym_cache_ent *slot(struct sym_cache_ent *v, size_t cap, const char *path)
{
	size_t i = path_hash(path) & (cap - 1);
	while (v[i].path && strcmp(v[i].path, path) != 0)
		i = (i + 1) & (cap - 1);
	return &v[i];
}

static int grow(struct sym_cache *c)
{
	size_t cap = c->cap ? c->cap * 2 : 32;
	struct sym_cache_ent *v = calloc(cap, sizeof(*v));
	if (!v)
		return -1;
	for (size_t i = 0; i < c->cap; i++)
		if (c->v[i].path)
			*slot(v, cap, c->v[i].path) = c->v[i];
	free(c->v);
	c->v = v;
	c->cap = cap;
	return 0;
}

struct sym_cache *sym_cache_new(void)
{
	return calloc(1, sizeof(struct sym_cache));
}

void sym_cache_free(struct sym_cache *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->cap; i++) {
		sym_close(c->v[i].mod);
		free(c->v[i].path);
		free(c->v[i].why);
	}
	free(c->v);
	free(c);
}

struct sym_module *sym_cache_get(struct sym_cache *c, const char *path, const char **err)
{
	const char *dummy;
	if (!err)
		err = &dummy;
	if (!c || !path) {
		*err = !c ? oom : "no file name";
		return NULL;
	}
	if (c->cap) {
		struct sym_cache_ent *e = slot(c->v, c->cap, path);
		if (e->path) {
			if (!e->mod)
				*err = e->why ? e->why : oom;
			return e->mod;
		}
	}
	if ((c->n + 1) * 2 > c->cap && grow(c) < 0) {
		*err = oom;
		return NULL;
	}
	struct sym_cache_ent ne = { .path = strdup(path) };
	if (!ne.path) {
		*err = oom;
		return NULL;
	}
	const char *why = NULL;
	ne.mod = sym_open(path, &why);
	if (!ne.mod)
		ne.why = strdup(why ? why : "cannot be read");   /* NULL: out of memory */
	*slot(c->v, c->cap, path) = ne;
	c->n++;
	if (!ne.mod)
		*err = ne.why ? ne.why : oom;
	return ne.mod;
}
