/* engines.c — the table of probe engines (probe_engine.h) and the choice
 * of one for a session (`sonde probe`, and `sonde record --target`'s
 * function profile): a remote target's, the one --engine names, else the
 * first that runs every probe.  A new engine is one folder and one line
 * here (docs/ARCHITECTURE.md, "Probe engines"). */
#include "probe/probe_engine.h"

#include <stdio.h>
#include <string.h>

/* Local engines in the order of preference: the agent runs in the program
 * (no stop per hit), ptrace runs everything; remote targets: ucsim's
 * console (ucsim:HOST:PORT, it runs nothing else), else the GDB protocol;
 * --kernel: the kernel's own kprobes, and --system its uprobes. */
static const struct probe_engine_ops *const engines[] = { &agent_engine, &ptrace_engine, &ucsim_engine,
                                                          &remote_engine, &kernel_engine };
#define NENGINES (int)(sizeof engines / sizeof engines[0])

const struct probe_engine_ops *probe_engine_find(const char *name)
{
	for (int i = 0; i < NENGINES; i++)
		if (!strcmp(engines[i]->name, name))
			return engines[i];
	return NULL;
}

const struct probe_engine_ops *probe_engine_choose(struct engine *e, const struct probe_opts *o, const char *name,
                                                   char *why, size_t wn, char *err, size_t n)
{
	why[0] = 0;
	unsigned want = o->kernel ? PE_KERNEL : o->system ? PE_SYSTEM : o->target ? PE_REMOTE : o->argv ? PE_LAUNCH : PE_ATTACH;
	for (int i = 0; i < NENGINES; i++) {
		const struct probe_engine_ops *ops = engines[i];
		if (!(ops->modes & want) || (name && strcmp(ops->name, name)) ||
		    (o->remote_record && !(ops->modes & PE_PROFILE)))
			continue;
		if (!ops->can_run || ops->can_run(e, o, why, wn))
			return ops;
		if (name) {
			snprintf(err, n, "--engine=%s runs %s%s%s", name, ops->runs, why[0] ? ": " : "", why);
			return NULL;
		}
	}
	snprintf(err, n, "%s%s%s", o->remote_record ? "no probe engine records a function profile of this target"
	                                            : "no probe engine runs these probes", why[0] ? ": " : "", why);
	return NULL;
}
