/* modules.c — the ELF modules mapped in the target (/proc/PID/maps), their
 * load bias (from the first PT_LOAD), and their symbols and variables,
 * from the object cache (sym/cache.h) on first use. */
#include "proc/modules.h"

#include "sym/cache.h"
#include "sym/peek.h"
#include "sym/vars.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int modules_load(struct modules *ms, pid_t pid)
{
	char path[64], exe[PATH_MAX];
	snprintf(path, sizeof path, "/proc/%d/exe", (int)pid);
	ssize_t el = readlink(path, exe, sizeof exe - 1);
	exe[el > 0 ? el : 0] = 0;
	snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
	if (!ms->syms && !(ms->syms = sym_cache_new()))
		return -1;
	FILE *f = fopen(path, "re");
	if (!f)
		return -1;
	char line[PATH_MAX + 128];
	while (fgets(line, sizeof line, f)) {
		unsigned long lo, hi, off;
		char perms[8];
		int pos = 0;
		if (sscanf(line, "%lx-%lx %7s %lx %*s %*s %n", &lo, &hi, perms, &off, &pos) < 4 || !pos)
			continue;
		char *p = line + pos;
		p[strcspn(p, "\n")] = 0;
		if (p[0] != '/')
			continue;
		struct module *m = NULL;
		for (int i = 0; i < ms->n; i++)
			if (!strcmp(ms->m[i].path, p))
				m = &ms->m[i];
		if (!m) {
			struct module *v = realloc(ms->m, (size_t)(ms->n + 1) * sizeof *v);
			if (!v)
				break;
			ms->m = v;
			m = &ms->m[ms->n++];
			memset(m, 0, sizeof *m);
			m->path = strdup(p);
			m->syms = ms->syms;
			m->lo = lo;
			m->hi = hi;
			m->is_main = !strcmp(p, exe);
			uint64_t va;
			if (sym_peek_load_vaddr(p, &va) == 0)
				m->bias = lo - off - va;
			else
				m->bias = lo - off;
		}
		if (lo < m->lo)
			m->lo = lo;
		if (hi > m->hi)
			m->hi = hi;
	}
	fclose(f);
	/* Main executable first. */
	for (int i = 1; i < ms->n; i++)
		if (ms->m[i].is_main) {
			struct module t = ms->m[0];
			ms->m[0] = ms->m[i];
			ms->m[i] = t;
		}
	return 0;
}

void modules_free(struct modules *ms)
{
	for (int i = 0; i < ms->n; i++)
		free(ms->m[i].path);
	free(ms->m);
	sym_cache_free(ms->syms);
	ms->m = NULL;
	ms->n = 0;
	ms->syms = NULL;
}

struct module *modules_at(struct modules *ms, uint64_t addr)
{
	for (int i = 0; i < ms->n; i++)
		if (addr >= ms->m[i].lo && addr < ms->m[i].hi)
			return &ms->m[i];
	return NULL;
}

struct sym_module *module_sym(struct module *m)
{
	return sym_cache_get(m->syms, m->path, NULL);
}

struct vars *module_vars(struct module *m)
{
	struct sym_module *s = module_sym(m);
	return s ? sym_vars(s, NULL) : NULL;
}
