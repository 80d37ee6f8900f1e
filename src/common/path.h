/* path.h — why a file or directory cannot be created at a path (path.c). */
#ifndef SONDE_COMMON_PATH_H
#define SONDE_COMMON_PATH_H

#include <stddef.h>

/* When the directory that would hold path does not exist: 1, and buf says
 * "directory D does not exist".  0 otherwise (buf untouched).  sonde does not
 * create missing parents: a typo in -o is better reported than built. */
int path_missing_parent(const char *path, char *buf, size_t n);

#endif
