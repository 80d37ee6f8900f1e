/* spec.c — the probe spec grammar KIND:LOCATION[:ARGS].  LOCATION is FUNC,
 * FUNC+OFF, FILE:LINE, addr:SYMBOL+OFF or 0xADDR; sys takes an INTERVAL
 * instead (sys:100ms).  A C++ FUNC keeps its "::" (func:ns::Class::method:ARGS). */
#include "probe/spec.h"

#include "probe/kind.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


static char *dupn(const char *s, size_t n)
{
	char *d = malloc(n + 1);
	if (d) {
		memcpy(d, s, n);
		d[n] = 0;
	}
	return d;
}

static int all_digits(const char *s, size_t n)
{
	if (!n)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!isdigit((unsigned char)s[i]))
			return 0;
	return 1;
}

/* The first ':' of s that separates (a C++ name's "::" does not). */
const char *spec_sep_colon(const char *s)
{
	for (; *s; s++) {
		if (s[0] == ':' && s[1] == ':') {
			s++;
			continue;
		}
		if (*s == ':')
			return s;
	}
	return NULL;
}

/* SYM[+OFF]; a run of '+' is part of the name (libstdc++.so.6, c++) */
static int parse_sym(struct spec *sp, const char *s, size_t n, char *err, size_t en)
{
	const char *plus = NULL;
	for (size_t i = 0; i < n && !plus; i++)
		if (s[i] == '+' && (i + 1 >= n || s[i + 1] != '+') && (!i || s[i - 1] != '+'))
			plus = s + i;
	size_t nl = plus ? (size_t)(plus - s) : n;
	if (!nl) {
		snprintf(err, en, "missing function name");
		return -1;
	}
	sp->func = dupn(s, nl);
	if (plus) {
		char *tmp = dupn(plus + 1, n - nl - 1), *end;
		sp->off = (int64_t)strtoull(tmp, &end, 0);
		int bad = end == tmp || *end;
		free(tmp);
		if (bad) {
			snprintf(err, en, "bad offset in '%.*s' (expected FUNC+N)", (int)n, s);
			return -1;
		}
	}
	sp->loc = LOC_FUNC;
	return 0;
}

/* "100ms", "50us", "2s", "100ns"; bare numbers are ns.  -1 on error. */
int64_t probe_parse_duration(const char *s)
{
	char *end;
	double v = strtod(s, &end);
	if (end == s || v < 0)
		return -1;
	double mul = 1;
	if (!*end || !strcmp(end, "ns"))
		mul = 1;
	else if (!strcmp(end, "us"))
		mul = 1e3;
	else if (!strcmp(end, "ms"))
		mul = 1e6;
	else if (!strcmp(end, "s"))
		mul = 1e9;
	else
		return -1;
	return (int64_t)(v * mul);
}

int spec_parse(const char *s, struct spec *sp, char *err, size_t en)
{
	memset(sp, 0, sizeof *sp);
	const char *c = strchr(s, ':');
	size_t kl = c ? (size_t)(c - s) : strlen(s);
	if (!kl || kl >= sizeof sp->kind) {
		snprintf(err, en, "expected KIND:LOCATION[:ARGS]");
		return -1;
	}
	memcpy(sp->kind, s, kl);
	if (!kind_find(sp->kind)) {
		snprintf(err, en, "unknown probe kind '%s' (func, line, branch, var, assert, time, sys, plugin, stack)",
		         sp->kind);
		return -1;
	}
	if (!c || !c[1]) {
		snprintf(err, en, "missing location after '%s:'", sp->kind);
		return -1;
	}
	const char *r = c + 1;
	if (!strcmp(sp->kind, "sys")) {
		int64_t ns = probe_parse_duration(r);
		if (ns <= 0) {
			snprintf(err, en, "bad interval '%s' (e.g. sys:100ms)", r);
			return -1;
		}
		sp->interval_ns = (uint64_t)ns;
		return 0;
	}
	const char *rest;
	if (!strncmp(r, "0x", 2) || !strncmp(r, "0X", 2)) {
		char *end;
		sp->addr = strtoull(r, &end, 16);
		if (end == r + 2 || (*end && *end != ':')) {
			snprintf(err, en, "bad address in '%s'", r);
			return -1;
		}
		sp->loc = LOC_ADDR;
		rest = *end ? end + 1 : NULL;
	} else {
		if (!strncmp(r, "addr:", 5))
			r += 5;
		const char *c2 = spec_sep_colon(r);
		size_t n1 = c2 ? (size_t)(c2 - r) : strlen(r);
		if (c2) {
			const char *c3 = spec_sep_colon(c2 + 1);
			size_t n2 = c3 ? (size_t)(c3 - c2 - 1) : strlen(c2 + 1);
			/* FILE:LINE needs a file name (with a '.' or a '/'): FUNC:123 is
			 * a function and ARGS, e.g. plugin:work:42. */
			if (all_digits(c2 + 1, n2) && (memchr(r, '.', n1) || memchr(r, '/', n1))) {
				sp->loc = LOC_LINE;
				sp->file = dupn(r, n1);
				sp->line = atoi(c2 + 1);
				rest = c3 ? c3 + 1 : NULL;
				goto args;
			}
		}
		if (parse_sym(sp, r, n1, err, en))
			return -1;
		rest = c2 ? c2 + 1 : NULL;
	}
args:
	if (rest && *rest)
		sp->args = strdup(rest);
	return 0;
}

void spec_free(struct spec *sp)
{
	free(sp->func);
	free(sp->file);
	free(sp->args);
	memset(sp, 0, sizeof *sp);
}
