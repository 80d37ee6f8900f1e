/* path.c — why a file or directory cannot be created at a path: names the
 * missing directory it would go in (see path.h). */
#include "common/path.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

int path_missing_parent(const char *path, char *buf, size_t n)
{
	char dir[4096];
	size_t len = strlen(path);
	while (len > 1 && path[len - 1] == '/') /* "a/b/" names b */
		len--;
	while (len && path[len - 1] != '/')
		len--;
	while (len > 1 && path[len - 1] == '/')
		len--;
	if (!len || len >= sizeof dir)
		return 0; /* in the working directory, or absurdly long */
	memcpy(dir, path, len);
	dir[len] = 0;
	struct stat st;
	if (stat(dir, &st) == 0)
		return 0;
	snprintf(buf, n, "directory %s does not exist", dir);
	return 1;
}
