/* main.c — the sonde command: dispatch to one file per subcommand. */
#include "cli/cli.h"

#include <stdlib.h>
#include <string.h>

int cmd_record(struct cli_opts *o);
int cmd_report(struct cli_opts *o);
int cmd_callers(struct cli_opts *o);
int cmd_tree(struct cli_opts *o);
int cmd_info(struct cli_opts *o);
int cmd_export(struct cli_opts *o);
int cmd_replay(struct cli_opts *o);
int cmd_flamegraph(struct cli_opts *o);
int cmd_locks(struct cli_opts *o);
int cmd_probe(struct cli_opts *o);

static const struct cli_command commands[] = {
	{ "record", CMD_RECORD, cmd_record, "[options] -- PROGRAM [ARGS...]",
	  "Run PROGRAM and record its profile (and with --trace a timeline, with --locks its locks)." },
	{ "report", CMD_REPORT, cmd_report, "[options]",
	  "Flat profile: calls, exclusive and inclusive time per function." },
	{ "callers-callees", CMD_CALLERS, cmd_callers, "[options] FUNC",
	  "FUNC with its callers and callees and the time attributed to each." },
	{ "tree", CMD_TREE, cmd_tree, "[options]", "The calling-context tree, indented." },
	{ "info", CMD_INFO, cmd_info, "[options]", "What a recording holds: program, threads, losses." },
	{ "export", CMD_EXPORT, cmd_export, "--format=FMT -o FILE [options]",
	  "Write the recording as callgrind, folded stacks, Chrome trace JSON or Perfetto protobuf." },
	{ "replay", CMD_REPLAY, cmd_replay, "[options]",
	  "The timeline of a --trace recording as indented text, with durations." },
	{ "flamegraph", CMD_FLAME, cmd_flamegraph, "-o FILE.svg [options]",
	  "Interactive SVG flame graph (hover, click to zoom) of a profile or a trace." },
	{ "locks", CMD_LOCKS, cmd_locks, "[options]", "Lock profile of a --locks recording." },
	{ "probe", CMD_PROBE, cmd_probe, "[options] (-p PID | -- PROGRAM [ARGS...])",
	  "Insert dynamic probes into a running or launched program." },
};
#define NCOMMANDS (int)(sizeof(commands) / sizeof(commands[0]))

static void usage(FILE *f)
{
	fprintf(f, "usage: sonde <command> [options]\n\ncommands:\n");
	for (int i = 0; i < NCOMMANDS; i++)
		fprintf(f, "  %-16s %s\n", commands[i].name, commands[i].summary);
	fprintf(f, "\n'sonde <command> --help' shows the options of a command.\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("sonde 0.1\n");
		return 0;
	}
	for (int i = 0; i < NCOMMANDS; i++) {
		if (strcmp(argv[1], commands[i].name))
			continue;
		struct cli_opts o;
		cli_parse(&commands[i], argc - 1, argv + 1, &o);
		int rc = commands[i].run(&o);
		return cli_finish_stdout(rc);
	}
	cli_error("unknown command '%s' (see 'sonde --help')", argv[1]);
	return EXIT_USAGE;
}
