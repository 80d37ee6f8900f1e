/* record_patch.h — `sonde record` on programs never built for sonde: which
 * modules get their functions patched, their plans published in the
 * session, and the program's requests served while it runs
 * (record_patch.c; the work itself is src/instr/). */
#ifndef SONDE_CLI_RECORD_PATCH_H
#define SONDE_CLI_RECORD_PATCH_H

#include <stddef.h>

#include "instr/instr.h"

struct cli_opts;
struct session;
struct launched;

struct record_patch {
	struct session *s;
	struct instr_set set;
	char **meta;          /* record_patch_meta's */
	size_t nmeta;
	struct instr_policy *policy; /* --timing=auto: the switches while the program runs */
};

/* Plan the executable at prog_path (unless it was built with sonde-cc, or
 * --no-patch) and publish the plans: 0, or -1 with err. */
int record_patch_plan(const struct cli_opts *o, const char *prog_path, struct session *s, struct record_patch *p,
                      char *err, size_t n);
/* Make collect serve the program's requests (nothing when nothing is planned). */
void record_patch_serve_in(struct record_patch *p, struct launched *l);
/* Serve the program's requests now (arg: a struct record_patch), and take
 * --timing=auto's decisions when a window has passed: how many requests. */
int record_patch_serve(void *arg);
/* The META lines that say what was patched (NULL-terminated key, value
 * pairs, owned by p): "patched.K.*" per planned module (its functions found,
 * patched, left out and why), "module.SLOT.how" per module of the session,
 * and --timing=auto's switches ("timing.*"). */
const char *const *record_patch_meta(struct record_patch *p);
void record_patch_end(struct record_patch *p);

#endif
