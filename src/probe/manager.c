/* manager.c — the probe manager (seed 004's EDPM): probes get ids and are
 * added, listed and deleted at run time; interactive commands (add / list /
 * del / show / lib / quit).  The library of named probes is library.c. */
#include "probe/manager.h"

#include "probe/engine.h"
#include "probe/kind.h"
#include "probe/library.h"
#include "probe/output.h"
#include "probe/probe.h"
#include "probe/probe_engine.h"
#include "probe/spec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct probe *manager_add(struct engine *e, const char *text, char *err, size_t n)
{
	const char *spec = text;
	if (text[0] == '@') {
		spec = library_find(&e->lib, text + 1);
		if (!spec) {
			snprintf(err, n, "no probe named '%s' in the library%s%s", text + 1,
			         e->lib.path ? " " : " (no --library given)", e->lib.path ? e->lib.path : "");
			return NULL;
		}
	}
	struct probe *p = calloc(1, sizeof *p);
	if (!p) {
		snprintf(err, n, "out of memory");
		return NULL;
	}
	char perr[400];
	if (spec_parse(spec, &p->sp, perr, sizeof perr)) {
		snprintf(err, n, "bad probe '%.120s%s' (%s)", spec, strlen(spec) > 120 ? "..." : "", perr);
		free(p);
		return NULL;
	}
	p->spec = strdup(spec);
	p->ops = e->ops && e->ops->kind ? e->ops->kind(p->sp.kind) : kind_find(p->sp.kind);
	if (!p->ops) {
		snprintf(err, n, "probe '%s': the %s engine does not run %s probes (use --engine=ptrace)", spec, e->ops->name,
		         p->sp.kind);
		goto fail;
	}
	p->e = e;
	p->id = e->next_id + 1;
	if (p->ops->needs_location && p->sp.loc == LOC_NONE) {
		snprintf(err, n, "probe '%s' needs a location", spec);
		goto fail;
	}
	if (e->nprobes == e->cap) {
		int cap = e->cap ? e->cap * 2 : 16;
		struct probe **v = realloc(e->probes, (size_t)cap * sizeof *v);
		if (!v)
			goto fail;
		e->probes = v;
		e->cap = cap;
	}
	e->probes[e->nprobes++] = p;
	e->not_found = 0;
	int rc = p->ops->setup(p, perr, sizeof perr);
	if (rc && e->pending_ok && e->not_found) {
		/* --pending: it waits for a library that has its location */
		if (p->ops->free)
			p->ops->free(p);
		p->data = NULL;
		p->pending = 1;
		free(p->where);
		char w[460];
		snprintf(w, sizeof w, "pending: %s", perr);
		p->where = strdup(w);
		e->next_id++;
		return p;
	}
	if (rc) {
		snprintf(err, n, "cannot place probe '%.120s%s' (%s)", spec, strlen(spec) > 120 ? "..." : "", perr);
		engine_remove_probe(e, p);
		e->nprobes--;
		goto fail;
	}
	e->next_id++;
	return p;
fail:
	if (p->ops && p->ops->free)
		p->ops->free(p);
	p->ops = NULL;
	spec_free(&p->sp);
	free(p->spec);
	free(p->where);
	free(p);
	return NULL;
}

int manager_retry_pending(struct engine *e)
{
	int placed = 0;
	for (int i = 0; i < e->nprobes; i++) {
		struct probe *p = e->probes[i];
		if (!p->pending || p->removed)
			continue;
		char perr[400];
		e->not_found = 0;
		char *was = p->where;
		p->where = NULL;
		if (p->ops->setup(p, perr, sizeof perr) == 0) {
			free(was);
			p->pending = 0;
			placed++;
			if (e->placed_later)
				e->placed_later(p, "a library that has it was loaded");
			continue;
		}
		if (p->ops->free)
			p->ops->free(p);
		p->data = NULL;
		free(p->where);
		p->where = was;
		if (!e->not_found) { /* found, but it cannot be placed: said, as a failure */
			p->pending = 0;
			engine_probe_failed(e, p, "%s", perr);
		}
	}
	return placed;
}

int manager_pending(const struct engine *e)
{
	int n = 0;
	for (int i = 0; i < e->nprobes; i++)
		n += e->probes[i]->pending && !e->probes[i]->removed;
	return n;
}

int manager_del(struct engine *e, int id, char *err, size_t n)
{
	for (int i = 0; i < e->nprobes; i++)
		if (e->probes[i]->id == id) {
			if (e->probes[i]->removed) {
				snprintf(err, n, "probe %d is already removed", id);
				return -1;
			}
			engine_remove_probe(e, e->probes[i]);
			return 0;
		}
	snprintf(err, n, "no probe with id %d", id);
	return -1;
}

int manager_enable(struct engine *e, int id, int on, char *err, size_t n)
{
	for (int i = 0; i < e->nprobes; i++) {
		struct probe *p = e->probes[i];
		if (p->id != id)
			continue;
		const char *why = p->removed ? "removed" : p->pending ? "pending (not placed yet)" : p->ended ? "ended" : NULL;
		if (why) {
			snprintf(err, n, "probe %d is %s", id, why);
			return -1;
		}
		if (p->disabled == !on) {
			snprintf(err, n, "probe %d is already %s", id, on ? "enabled" : "disabled");
			return -1;
		}
		if (!e->ops || !e->ops->enable || e->ops->enable(e, p, on, err, n)) {
			if (!e->ops || !e->ops->enable)
				snprintf(err, n, "this engine cannot disable probes");
			return -1;
		}
		p->disabled = !on;
		return 0;
	}
	snprintf(err, n, "no probe with id %d", id);
	return -1;
}

void manager_list(struct engine *e, FILE *f)
{
	for (int i = 0; i < e->nprobes; i++) {
		struct probe *p = e->probes[i];
		fprintf(f, "%d\t%s\t%s\thits=%llu\t%s\n", p->id,
		        p->removed ? "removed" : p->pending ? "pending" : p->disabled ? "disabled" : "active", p->spec,
		        (unsigned long long)p->hits, p->where ? p->where : "");
	}
}

/* ---- interactive commands ---- */
static void help(FILE *f)
{
	fprintf(f, "commands:\n"
	           "  add SPEC|@NAME      insert a probe (KIND:LOCATION[:ARGS])\n"
	           "  list                probes with id, state, spec, hits\n"
	           "  del ID              remove a probe\n"
	           "  disable ID          stop counting a probe's hits (its numbers stay)\n"
	           "  enable ID           count them again, from where they stopped\n"
	           "  show                the summary table so far\n"
	           "  lib list            named probes of the library\n"
	           "  lib add NAME SPEC   define (and save) a named probe\n"
	           "  lib del NAME        delete (and save) a named probe\n"
	           "  quit                detach and print the summary\n");
}

int manager_command(struct engine *e, const char *line)
{
	FILE *o = e->msg ? e->msg : stdout;
	char *buf = strdup(line), *s = library_trim(buf), err[600];
	int quit = 0;
	char *arg = s + strcspn(s, " \t");
	if (*arg)
		*arg++ = 0;
	arg = library_trim(arg);
	if (!*s || *s == '#') {
		/* nothing */
	} else if (!strcmp(s, "add")) {
		int need = !e->stopped_all;
		if (need)
			engine_stop_all(e);
		struct probe *p = manager_add(e, arg, err, sizeof err);
		if (need)
			engine_resume_all(e);
		if (p)
			fprintf(o, "added %d %s at %s\n", p->id, p->spec, p->where ? p->where : "");
		else
			fprintf(o, "error: %s\n", err);
	} else if (!strcmp(s, "list")) {
		manager_list(e, o);
	} else if (!strcmp(s, "del") || !strcmp(s, "delete")) {
		/* The agent takes a probe out without holding the threads: its
		 * original bytes go back int3 first, and a thread in its slot
		 * finishes there (docs/PROBES.md "Engines"). */
		int need = !e->stopped_all && (e->ops->modes & PE_HOLD_TO_REMOVE);
		if (need)
			engine_stop_all(e);
		int rc = manager_del(e, atoi(arg), err, sizeof err);
		if (need)
			engine_resume_all(e);
		if (rc)
			fprintf(o, "error: %s\n", err);
		else
			fprintf(o, "deleted %d\n", atoi(arg));
	} else if (!strcmp(s, "disable") || !strcmp(s, "enable")) {
		int on = !strcmp(s, "enable");
		char *end;
		long id = strtol(arg, &end, 10);
		if (!*arg || *end || id <= 0 || id > 1000000)
			fprintf(o, "error: usage: %s ID\n", s);
		else if (manager_enable(e, (int)id, on, err, sizeof err))
			fprintf(o, "error: %s\n", err);
		else
			fprintf(o, "%s %ld\n", on ? "enabled" : "disabled", id);
	} else if (!strcmp(s, "show")) {
		output_table(e, o);
	} else if (!strcmp(s, "lib")) {
		char *sub = arg, *rest = arg + strcspn(arg, " \t");
		if (*rest)
			*rest++ = 0;
		rest = library_trim(rest);
		if (!strcmp(sub, "list")) {
			for (int i = 0; i < e->lib.n; i++)
				fprintf(o, "%s = %s\n", e->lib.names[i], e->lib.specs[i]);
		} else if (!strcmp(sub, "add")) {
			char *name = rest, *spec = rest + strcspn(rest, " \t");
			if (*spec)
				*spec++ = 0;
			spec = library_trim(spec);
			struct spec sp;
			if (!*name || !*spec) {
				fprintf(o, "error: usage: lib add NAME SPEC\n");
			} else if (spec_parse(spec, &sp, err, sizeof err)) {
				fprintf(o, "error: bad probe '%s' (%s)\n", spec, err);
			} else {
				spec_free(&sp);
				library_set(&e->lib, name, spec);
				if (library_save(&e->lib, err, sizeof err))
					fprintf(o, "error: %s\n", err);
				else
					fprintf(o, "saved %s = %s\n", name, spec);
			}
		} else if (!strcmp(sub, "del")) {
			if (library_delete(&e->lib, rest))
				fprintf(o, "error: no probe named '%s' in the library\n", rest);
			else if (library_save(&e->lib, err, sizeof err))
				fprintf(o, "error: %s\n", err);
			else
				fprintf(o, "deleted %s\n", rest);
		} else {
			fprintf(o, "error: usage: lib list | lib add NAME SPEC | lib del NAME\n");
		}
	} else if (!strcmp(s, "quit") || !strcmp(s, "exit") || !strcmp(s, "detach")) {
		quit = 1;
	} else if (!strcmp(s, "help")) {
		help(o);
	} else {
		fprintf(o, "error: unknown command '%s' (try help)\n", s);
	}
	fflush(o);
	free(buf);
	return quit;
}
