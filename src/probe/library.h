/* library.h — the probe library (library.c): named probe definitions kept in
 * a file (`name = SPEC`, '#' comments), used as `-e @name`. */
#ifndef SONDE_PROBE_LIBRARY_H
#define SONDE_PROBE_LIBRARY_H

#include <stddef.h>

struct library {
	char **names, **specs;
	int n;
	char *path;
};

/* A missing file is an empty library (created on first save). */
int library_load(struct library *l, const char *path, char *err, size_t n);
int library_save(struct library *l, char *err, size_t n);
const char *library_find(struct library *l, const char *name);
int library_set(struct library *l, const char *name, const char *spec);
int library_delete(struct library *l, const char *name);
void library_free(struct library *l);
/* s without its leading and trailing white space, cut in place: the
 * library's lines, and the manager's commands (manager.c). */
char *library_trim(char *s);

#endif
