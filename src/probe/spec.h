/* spec.h — the probe spec grammar KIND:LOCATION[:ARGS] (spec.c). */
#ifndef SONDE_PROBE_SPEC_H
#define SONDE_PROBE_SPEC_H

#include <stddef.h>
#include <stdint.h>

enum loc_type { LOC_NONE, LOC_FUNC, LOC_LINE, LOC_ADDR };

struct spec {
	char kind[16];
	int loc;            /* enum loc_type */
	char *func;         /* LOC_FUNC: symbol (addr:SYM+OFF too) */
	int64_t off;        /* +OFF */
	char *file;         /* LOC_LINE */
	int line;
	uint64_t addr;      /* LOC_ADDR */
	char *args;         /* NULL if none */
	uint64_t interval_ns; /* sys:INTERVAL */
};

int spec_parse(const char *s, struct spec *sp, char *err, size_t n);
void spec_free(struct spec *sp);
/* The first ':' of s that separates fields (a C++ name's "::" does not), or NULL. */
const char *spec_sep_colon(const char *s);
/* "100ms", "50us", "2s", "100ns"; bare numbers are ns.  -1 on error. */
int64_t probe_parse_duration(const char *s);

#endif
