/* agent_plugin.h — plugin probes of ABI 2 (include/sonde/probe.h) on the
 * agent backend, sonde's side (agent_plugin.c): the plugin loaded into the
 * program, a result block of the shared area per probe, and the context in
 * sonde (kind_plugin.c's) whose init, report and fini see that block. */
#ifndef SONDE_PROBE_AGENT_PLUGIN_H
#define SONDE_PROBE_AGENT_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

struct agent_be;
struct probe;

/* Probe p (at addr, its first address) gets a plugin probe number of the
 * agent (its result block zeroed, its id, spec and ARG written) and
 * kind_plugin's context in p->data, init run; the program loads the plugin
 * first if it has not yet.  The number, or -1 with err. */
int agent_plugin_start(struct probe *p, struct agent_be *b, uint64_t addr, char *err, size_t n);
/* The program exec'd: its new image loads the plugin again when asked. */
void agent_plugin_exec(struct agent_be *b);

#endif
