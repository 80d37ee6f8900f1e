/* libpath.c — where sonde's runtime pieces are: beside the binary, found
 * relative to it (build/bin/sonde -> build/lib/sonde/NAME; an installed
 * PREFIX/bin/sonde -> PREFIX/lib/sonde/NAME). */
#include "cli/cli.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

char *cli_lib_path(const char *name)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	if (n <= 0)
		return NULL;
	self[n] = 0;
	char *slash = strrchr(self, '/');
	if (!slash)
		return NULL;
	*slash = 0;
	char *out = malloc(PATH_MAX + 64);
	if (!out)
		return NULL;
	snprintf(out, PATH_MAX + 64, "%s/../lib/sonde/%s", self, name);
	char *real = realpath(out, NULL);
	free(out);
	return real;
}
