/* load.h — open the recording named by -i and build its function table,
 * or exit with the reader's one-line error. */
#ifndef SONDE_CLI_LOAD_H
#define SONDE_CLI_LOAD_H

#include "analysis/functions.h"
#include "analysis/profile.h"
#include "cli/cli.h"
#include "data/reader.h"

struct loaded {
	struct recording *r;
	struct fn_table ft;
};

void load_or_die(struct cli_opts *o, struct loaded *l);
/* rd_open of dir, after recovering the recording of a killed recorder
 * (record/recover.c; a one-line notice on stderr when it does); dies with
 * exit 2 on error, or when the recording is still being written. */
struct recording *load_open_or_die(const char *dir);
/* For a --trace recording, build each thread's calling-context tree from the
 * timeline (a profile recording has them already). */
void load_trees(struct loaded *l);
/* --time-range of a --trace recording: its trees built from the events in
 * the range (a usage error on any other recording). */
void load_trees_in_range(struct cli_opts *o, struct loaded *l);
/* The threads the command line selects (--tid, --pid, --comm). */
struct rd_select load_select(const struct cli_opts *o);
/* Dies (with what to use instead) unless the selected threads (o->tid, 0 =
 * all) have calling-context trees: a probe or a --locks-only recording. */
void load_require_profile(struct cli_opts *o, struct loaded *l);
/* Profile of the selected threads (o->tid, 0 = all); dies if the recording has no profile. */
void load_profile(struct cli_opts *o, struct loaded *l, struct profile *p);
void load_free(struct loaded *l);
/* Resolve FUNC to one function index or die listing candidates. */
uint32_t load_function(struct loaded *l, const char *name);
struct json;
/* The JSON fields that tell functions of the same name apart: "module",
 * "file", "line", "address" (link-time, "0x..."; null for the root). */
void json_fn_identity(struct json *j, const struct fn_info *f);
/* A CPU time field (issue 38): ns, or null when the split is not known. */
void json_cpu_ns(struct json *j, const char *key, int known, double ns);
/* "file.c:12" into buf (or "" if unknown). */
const char *fn_where(const struct fn_info *f, char *buf, int len);

#endif
