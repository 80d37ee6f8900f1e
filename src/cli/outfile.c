/* outfile.c — opening the file of -o for export, flamegraph and probe, with
 * one message when it cannot be (the missing directory named). */
#include "cli/cli.h"

#include "common/path.h"

#include <errno.h>
#include <string.h>

FILE *cli_open_output(const char *path, const char *mode)
{
	FILE *f = fopen(path, mode);
	if (f)
		return f;
	char why[4200];
	if (errno != ENOENT || !path_missing_parent(path, why, sizeof why))
		snprintf(why, sizeof why, "%s", strerror(errno));
	cli_die(EXIT_DATA, "cannot write %s (%s)", path, why);
}
