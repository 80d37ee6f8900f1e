/* export.c — `sonde export --format=FMT -o FILE`. */
#include <errno.h>
#include <string.h>

#include "cli/load.h"
#include "export/export.h"

int cmd_export(struct cli_opts *o)
{
	if (!o->format) {
		fprintf(stderr, "sonde: error: --format is required; formats:\n");
		for (int i = 0; export_formats[i]; i++)
			fprintf(stderr, "  %-10s %s\n", export_formats[i]->name, export_formats[i]->what);
		return EXIT_USAGE;
	}
	const struct export_ops *ops = export_find(o->format);
	if (!ops) {
		fprintf(stderr, "sonde: error: unknown export format '%s'; formats:\n", o->format);
		for (int i = 0; export_formats[i]; i++)
			fprintf(stderr, "  %-10s %s\n", export_formats[i]->name, export_formats[i]->what);
		return EXIT_USAGE;
	}
	if (o->argc)
		cli_die(EXIT_USAGE, "unexpected argument '%s' (see 'sonde export --help')", o->argv[0]);
	struct loaded l;
	load_or_die(o, &l);
	if (ops->needs_events && !l.r->has_events)
		cli_die(EXIT_DATA, "%s holds no timeline: the %s format needs a recording made with --trace", o->input,
		        ops->name);
	if (!ops->needs_events) { /* profile formats: of a --trace recording, its trees from the timeline */
		if (o->has_time_range)
			load_trees_in_range(o, &l);
		else
			load_trees(&l);
		if (!(l.r->mode & (REC_MODE_LOCKS | REC_MODE_LOCK_EVENTS)))
			load_require_profile(o, &l); /* a lock recording's formats carry the locks */
	}
	struct export_ctx x;
	memset(&x, 0, sizeof x);
	x.r = l.r;
	x.ft = &l.ft;
	x.sel = load_select(o);
	x.has_range = o->has_time_range;
	x.from_s = o->time_from;
	x.to_s = o->time_to;
	x.out = stdout;
	if (o->output && strcmp(o->output, "-")) {
		x.out = cli_open_output(o->output, "wb");
	}
	int rc = ops->write(&x);
	if (x.out != stdout && fclose(x.out) != 0 && !rc) {
		snprintf(x.err, sizeof x.err, "writing %s failed (%s)", o->output, strerror(errno));
		rc = -1;
	}
	load_free(&l);
	if (rc)
		cli_die(EXIT_DATA, "%s", x.err);
	return 0;
}
