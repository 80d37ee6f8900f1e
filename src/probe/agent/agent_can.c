/* agent_can.c — whether the agent engine runs a session's probes
 * (agent_kinds.h): the kinds it has, and for var and assert probes whether
 * the expression compiles to the agent's bytecode at every address of its
 * location, found in the program's files before the session. */
#include "probe/agent/agent_kinds.h"

#include "sonde/probe.h"
#include "probe/engine.h"
#include "probe/expr.h"
#include "probe/probe_engine.h"
#include "probe/resolve.h"
#include "probe/spec.h"
#include "sym/cache.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The program file of a launch: argv0 as execvp finds it. */
static char *exe_path(const char *argv0)
{
	if (strchr(argv0, '/'))
		return realpath(argv0, NULL);
	const char *path = getenv("PATH");
	for (const char *d = path ? path : "/usr/bin:/bin"; *d;) {
		size_t l = strcspn(d, ":");
		char buf[4096];
		snprintf(buf, sizeof buf, "%.*s/%s", (int)l, l ? d : ".", argv0);
		if (access(buf, X_OK) == 0)
			return realpath(buf, NULL);
		d += l;
		if (*d)
			d++;
	}
	return NULL;
}

/* Whether var spec sp compiles for the agent at every address of its
 * location, found in the program's files before the session (the running
 * process's modules, or the program file of a launch); why if not.  An
 * expression that is wrong on any engine (no such variable) is the
 * agent's to report; a location not found there goes to ptrace. */
static int var_compiles(const struct spec *sp, pid_t pid, const char *argv0, char *why, size_t n)
{
	struct engine *e = calloc(1, sizeof *e);
	int ok = 0;
	if (!e || !sp->args) {
		free(e);
		return 1;
	}
	if (pid > 0) {
		if (modules_load(&e->mods, pid)) {
			snprintf(why, n, "cannot read the memory map of process %d", (int)pid);
			goto out;
		}
	} else {
		char *path = argv0 ? exe_path(argv0) : NULL;
		e->mods.m = calloc(1, sizeof *e->mods.m);
		e->mods.syms = sym_cache_new();
		if (!path || !e->mods.m || !e->mods.syms) {
			free(path);
			snprintf(why, n, "cannot find the program '%s'", argv0 ? argv0 : "");
			goto out;
		}
		e->mods.m[0] = (struct module){ .path = path, .lo = 0, .hi = UINT64_MAX, .is_main = 1,
		                                .syms = e->mods.syms };
		e->mods.n = 1;
	}
	struct loc_addr *v = NULL;
	int nv = 0;
	char err[300];
	if (sp->loc == LOC_FUNC) {
		struct loc_addr la;
		if (resolve_function_offset(e, sp, &la, err, sizeof err) == 0 && (v = malloc(sizeof *v))) {
			v[0] = la;
			nv = 1;
		}
	} else if (sp->loc == LOC_LINE) {
		for (int i = 0; i < e->mods.n && !nv; i++) {
			struct sym_module *s = module_sym(&e->mods.m[i]);
			uint64_t addrs[256];
			int k = s ? sym_line_addrs(s, sp->file, sp->line, addrs, 256) : -1;
			if (k > 256)
				k = 256;
			if (k > 0 && (v = calloc((size_t)k, sizeof *v)))
				for (int j = 0; j < k; j++)
					v[nv++] = (struct loc_addr){ .addr = addrs[j] + e->mods.m[i].bias, .mod = &e->mods.m[i] };
		}
		snprintf(err, sizeof err, "the location is not in the program's files");
	} else {
		snprintf(err, sizeof err, "an address location");
	}
	if (!nv)
		snprintf(why, n, "%s", err);
	ok = nv > 0;
	for (int i = 0; i < nv && ok; i++) {
		struct expr *x;
		struct pa_var prog;
		const char *nvw = NULL;
		ok = agent_var_compile_at(sp, &v[i], &x, &prog, &nvw, why, n) != -2;
		expr_free(x);
	}
	free(v);
out:
	modules_free(&e->mods);
	free(e);
	return ok;
}

int agent_runs_all(const char *const *specs, int nspecs, pid_t pid, const char *argv0, char *why, size_t wn)
{
	why[0] = 0;
	for (int i = 0; i < nspecs; i++) {
		struct spec sp;
		char err[200];
		if (specs[i][0] == '@' || spec_parse(specs[i], &sp, err, sizeof err))
			return 0;
		int ok = agent_kind(sp.kind) != NULL;
		if (ok && (!strcmp(sp.kind, "var") || !strcmp(sp.kind, "assert"))) {
			char w[300];
			ok = var_compiles(&sp, pid, argv0, w, sizeof w);
			if (!ok)
				snprintf(why, wn, "probe '%s' cannot run on the agent (%s)", specs[i], w);
		}
		spec_free(&sp);
		if (!ok)
			return 0;
	}
	return 1;
}

/* ABI-1 plugins (handlers in sonde) and expressions the agent's bytecode
 * does not have stay on ptrace; the others run here. */
int agent_can_run(struct engine *e, const struct probe_opts *o, char *why, size_t wn)
{
	why[0] = 0;
	if (o->plugin_abi && o->plugin_abi != SONDE_PROBE_ABI2)
		return 0;
	const char *spec_of[64];
	int ns = o->nspecs < 64 ? o->nspecs : 64;
	for (int i = 0; i < ns; i++)
		spec_of[i] = o->specs[i][0] == '@' ? library_find(&e->lib, o->specs[i] + 1) : o->specs[i];
	return agent_runs_all(spec_of, ns, o->pid, o->argv ? o->argv[0] : NULL, why, wn);
}

