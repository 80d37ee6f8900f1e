/* outfile.c — the file of -o for export, flamegraph and probe: one message
 * when it cannot be written (the missing directory named). */
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

void cli_check_output_dir(const char *path)
{
	char why[4200];
	if (path_missing_parent(path, why, sizeof why))
		cli_die(EXIT_DATA, "cannot write %s (%s)", path, why);
}
