/* probe_plugin.h — plugin probes in the agent (probe_plugin.c): the ABI-2
 * handlers of include/sonde/probe.h, called from probes.c's hit function
 * (pre) and from the slots of post sites (pa_post_stub). */
#ifndef SONDE_RT_PROBE_PLUGIN_H
#define SONDE_RT_PROBE_PLUGIN_H

#include "common/probe_area.h"
#include "rt/rt.h"

#include <stddef.h>
#include <stdint.h>

/* PA_OP_PLUGIN: loads the plugin named in h's plugin block (never
 * unloaded).  0, or -errno with msg said. */
RT_HIDDEN int pa_plugin_load(struct pa_hdr *h, uint32_t nsites, char *msg, size_t n);
/* Site s was hit (pre; regs as the trampoline saved them, sp and pc the
 * thread's at the site): its plugin probe's pre handler. */
RT_HIDDEN void pa_plugin_pre(const struct pa_site *s, uint32_t plugin1, uint64_t sp, const uint64_t *regs);
/* sonde is gone: no handler is called any more. */
RT_HIDDEN void pa_plugin_end(void);

#endif
