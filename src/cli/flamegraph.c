/* flamegraph.c — `sonde flamegraph -o FILE.svg`: an interactive SVG flame
 * graph of a profile recording, or of a trace recording (built from its
 * timeline, where --time-range selects a window). */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "cli/load.h"
#include "export/flamegraph.h"

int cmd_flamegraph(struct cli_opts *o)
{
	if (o->argc)
		cli_die(EXIT_USAGE, "unexpected argument '%s' (see 'sonde flamegraph --help')", o->argv[0]);
	struct loaded l;
	struct profile p;
	if (o->has_time_range) {
		load_or_die(o, &l);
		load_trees_in_range(o, &l);
	} else {
		load_profile(o, &l, &p); /* checks --tid, builds the trees of a trace */
		profile_free(&p);
	}
	FILE *out = stdout;
	if (!o->output && isatty(STDOUT_FILENO))
		cli_die(EXIT_USAGE, "the flame graph is an SVG file: give -o FILE.svg (or redirect stdout, or -o - to force it)");
	if (o->output && strcmp(o->output, "-")) {
		out = cli_open_output(o->output, "w");
	}
	const char *prog = rd_meta(l.r, "command");
	char title[600];
	snprintf(title, sizeof title, "sonde flame graph: %s", prog ? prog : o->input);
	struct rd_select sel = load_select(o);
	int n = flame_svg_write(out, l.r, &l.ft, &sel, title);
	if (out != stdout && fclose(out) != 0)
		n = -1;
	load_free(&l);
	if (n < 0)
		cli_die(EXIT_DATA, "writing %s failed", o->output ? o->output : "stdout");
	if (out != stdout)
		fprintf(stderr, "sonde: flame graph with %d frames written to %s\n", n, o->output);
	return 0;
}
