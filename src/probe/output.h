/* output.h — the results of a probe session (output.c): the summary table
 * and the JSON document. */
#ifndef SONDE_PROBE_OUTPUT_H
#define SONDE_PROBE_OUTPUT_H

#include <stdint.h>
#include <stdio.h>

struct engine;

void output_table(struct engine *e, FILE *f);
void output_json(struct engine *e, FILE *f);
/* "1.23 ms" */
const char *fmt_time(uint64_t ns, char *buf, int len);

#endif
