/* library.c — the probe library (seed 004's EDPL): the library file holds
 * named definitions (`name = SPEC`, '#' comments) used as `-e @name`; the
 * manager's `lib` commands edit and save it. */
#include "probe/library.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *library_trim(char *s)
{
	while (isspace((unsigned char)*s))
		s++;
	size_t n = strlen(s);
	while (n && isspace((unsigned char)s[n - 1]))
		s[--n] = 0;
	return s;
}

int library_load(struct library *l, const char *path, char *err, size_t n)
{
	free(l->path);
	l->path = strdup(path);
	FILE *f = fopen(path, "re");
	if (!f) {
		if (errno == ENOENT)
			return 0; /* created on first save */
		snprintf(err, n, "cannot read library %s (%s)", path, strerror(errno));
		return -1;
	}
	char line[4096];
	int ln = 0;
	while (fgets(line, sizeof line, f)) {
		ln++;
		char *s = library_trim(line);
		if (!*s || *s == '#')
			continue;
		char *eq = strchr(s, '=');
		if (!eq) {
			snprintf(err, n, "%s:%d: expected 'name = SPEC'", path, ln);
			fclose(f);
			return -1;
		}
		*eq = 0;
		char *name = library_trim(s), *spec = library_trim(eq + 1);
		if (!*name || !*spec) {
			snprintf(err, n, "%s:%d: expected 'name = SPEC'", path, ln);
			fclose(f);
			return -1;
		}
		library_set(l, name, spec);
	}
	fclose(f);
	return 0;
}

int library_save(struct library *l, char *err, size_t n)
{
	if (!l->path) {
		snprintf(err, n, "no library file (use --library FILE)");
		return -1;
	}
	char tmp[4200];
	snprintf(tmp, sizeof tmp, "%s.tmp", l->path);
	FILE *f = fopen(tmp, "we");
	if (!f) {
		snprintf(err, n, "cannot write %s (%s)", tmp, strerror(errno));
		return -1;
	}
	fprintf(f, "# sonde probe library: name = KIND:LOCATION[:ARGS], used as -e @name\n");
	for (int i = 0; i < l->n; i++)
		fprintf(f, "%s = %s\n", l->names[i], l->specs[i]);
	if (fclose(f) || rename(tmp, l->path)) {
		snprintf(err, n, "cannot write %s (%s)", l->path, strerror(errno));
		return -1;
	}
	return 0;
}

const char *library_find(struct library *l, const char *name)
{
	for (int i = 0; i < l->n; i++)
		if (!strcmp(l->names[i], name))
			return l->specs[i];
	return NULL;
}

int library_set(struct library *l, const char *name, const char *spec)
{
	for (int i = 0; i < l->n; i++)
		if (!strcmp(l->names[i], name)) {
			free(l->specs[i]);
			l->specs[i] = strdup(spec);
			return 0;
		}
	char **a = realloc(l->names, (size_t)(l->n + 1) * sizeof *a);
	if (!a)
		return -1;
	l->names = a;
	char **b = realloc(l->specs, (size_t)(l->n + 1) * sizeof *b);
	if (!b)
		return -1;
	l->specs = b;
	l->names[l->n] = strdup(name);
	l->specs[l->n] = strdup(spec);
	l->n++;
	return 0;
}

int library_delete(struct library *l, const char *name)
{
	for (int i = 0; i < l->n; i++)
		if (!strcmp(l->names[i], name)) {
			free(l->names[i]);
			free(l->specs[i]);
			l->names[i] = l->names[l->n - 1];
			l->specs[i] = l->specs[l->n - 1];
			l->n--;
			return 0;
		}
	return -1;
}

void library_free(struct library *l)
{
	for (int i = 0; i < l->n; i++) {
		free(l->names[i]);
		free(l->specs[i]);
	}
	free(l->names);
	free(l->specs);
	free(l->path);
	memset(l, 0, sizeof *l);
}
