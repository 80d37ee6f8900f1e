/* agent_plugin.c — plugin probes of ABI 2 on the agent backend, sonde's side
 * (agent_plugin.h; the program's side is src/rt/probe_plugin.c, the memory
 * both share src/common/probe_area.h, struct pa_plugins). */
#include "probe/agent/agent_plugin.h"

#include "probe/agent/agent_be.h"
#include "probe/engine.h"
#include "probe/kind.h"
#include "probe/probe.h"
#include "sonde/probe.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int nprobes;     /* plugin probe numbers given in this session (never reused) */
static int mem_fd = -1; /* the program's memory, for the context's read in sonde (init, report) */

static int sonde_read(const struct sonde_probe_ctx *c, uint64_t addr, void *buf, size_t len)
{
	(void)c;
	return mem_fd >= 0 && pread(mem_fd, buf, len, (off_t)addr) == (ssize_t)len ? 0 : -1;
}

static int load(struct agent_be *b, const struct sonde_probe_plugin *pl, char *err, size_t n)
{
	struct pa_plugins *k = agent_be_plugins(b);
	if (k->loaded)
		return 0;
	Dl_info di;
	char abs[PATH_MAX];
	if (!dladdr(pl, &di) || !di.dli_fname || !realpath(di.dli_fname, abs)) {
		snprintf(err, n, "cannot find the plugin's file");
		return -1;
	}
	if (strlen(abs) >= sizeof k->path) {
		snprintf(err, n, "the plugin's path is too long for the agent (%zu bytes at most)", sizeof k->path - 1);
		return -1;
	}
	memset(k->path, 0, sizeof k->path);
	memcpy(k->path, abs, strlen(abs));
	k->result_size = (uint32_t)pl->result_size;
	if (agent_be_plugin_load(b, err, n))
		return -1;
	k->loaded = 1;
	return 0;
}

int agent_plugin_start(struct probe *p, struct agent_be *b, uint64_t addr, char *err, size_t n)
{
	const struct sonde_probe_plugin *pl = p->e->plugin;
	if (!pl) {
		snprintf(err, n, "plugin probes need --plugin FILE.so");
		return -1;
	}
	if (pl->abi != SONDE_PROBE_ABI2) {
		snprintf(err, n, "a plugin of SONDE_PROBE_ABI 1 runs on --engine=ptrace only");
		return -1;
	}
	if (nprobes >= PA_PLUGIN_MAX) {
		snprintf(err, n, "too many plugin probes (at most %d in a session)", PA_PLUGIN_MAX);
		return -1;
	}
	if (load(b, pl, err, n))
		return -1;
	mem_fd = b->memfd;
	int k = nprobes++;
	struct pa_pprobe *pp = &agent_be_plugins(b)->probes[k];
	memset(pp->result, 0, sizeof pp->result);
	pp->id = p->id;
	snprintf(pp->spec, sizeof pp->spec, "%s", p->spec ? p->spec : "");
	snprintf(pp->arg, sizeof pp->arg, "%s", p->sp.args ? p->sp.args : "");
	__atomic_store_n(&pp->hits, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&pp->done, 0, __ATOMIC_RELEASE);
	return plugin_ctx_new(p, addr, pp->result, sonde_read, err, n) ? -1 : k;
}

void agent_plugin_exec(struct agent_be *b)
{
	agent_be_plugins(b)->loaded = 0;
}
