/* fnrows.h — functions matched across recordings (fnrows.c): a row per
 * function key, with its calls and times in one or two columns.  `sonde
 * diff` puts BASE in column 0 and NEW in column 1; `sonde report -i A -i B`
 * puts every recording in column 0 and adds them up.
 *
 * A function is matched across recordings by its name and source file (the
 * file of its definition, or its module's file name when there is no debug
 * information), so two builds of the same program match, and two static
 * functions of the same name in different files stay apart. */
#ifndef SONDE_CLI_FNROWS_H
#define SONDE_CLI_FNROWS_H

#include <stddef.h>
#include <stdint.h>

#include "cli/load.h"

struct fn_row {
	char *key;                /* "name\tfile", or a call path of such keys joined by '\n' */
	const struct fn_info *fn; /* the function (a path's last one), from the first recording that has it */
	uint64_t calls[2];
	uint64_t timed_calls[2];  /* of them, timed (record --timing=auto: a switched function's part) */
	double excl[2], incl[2];  /* ns */
	double excl_cpu[2], incl_cpu[2]; /* ns on a CPU (issue 38; whole when the column's profiles are, profile_cpu_known) */
};

struct fn_rows {
	struct fn_row *v;
	size_t n, cap;
};

/* One recording, its profile (of o->tid's thread or all) and its functions' keys. */
struct fn_input {
	struct cli_opts o;
	struct loaded l;
	struct profile p;
	char **keys;              /* per function index */
};

void fnrows_load(const struct cli_opts *o, const char *dir, struct fn_input *in);
void fnrows_free_input(struct fn_input *in);

/* A new row (key is taken over) with zero values. */
struct fn_row *fnrows_add(struct fn_rows *s, char *key, const struct fn_info *fn);
/* A row per function of `in` that ran, its values in column k. */
void fnrows_functions(const struct fn_input *in, int k, struct fn_rows *s);
/* Sort by key and add up the rows of equal keys (the same function in
 * several modules or recordings, the same path in several threads). */
void fnrows_fold(struct fn_rows *s);
void fnrows_free(struct fn_rows *s);

#endif
