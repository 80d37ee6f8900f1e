/* probe.c — `sonde probe`: insert dynamic probes into a launched or running
 * program, or a remote target (src/probe/), run until it exits, --duration,
 * Ctrl-C or `quit`, leave it cleanly and print the summary table or JSON.
 * The options are checked here; the engine that runs the probes is chosen
 * from the table of engines (probe_engine.h) and driven through it. */
#include "cli/cli.h"
#include "probe/engine.h"
#include "probe/kind.h"
#include "probe/library.h"
#include "probe/output.h"
#include "probe/probe.h"
#include "probe/probe_engine.h"
#include "probe/record.h"
#include "probe/spec.h"
#include "sonde/probe.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void warn_probe(const struct probe *p, const char *msg)
{
	cli_warn("probe %d (%s): %s", p->id, p->spec, msg);
}

static void placed_later(const struct probe *p, const char *why)
{
	fprintf(stderr, "sonde: probe %d (%s) placed at %s: %s\n", p->id, p->spec, p->where ? p->where : "?", why);
}

static void agent_placed(struct engine *e)
{
	if (e->scope)
		fprintf(stderr, "sonde: probes in %s (%d)%s\n", e->scope, e->nprobes,
		        e->t.launched ? "" : "; Ctrl-C or --duration ends");
	else if (!e->t.launched)
		fprintf(stderr, "sonde: probes in process %d (%d); Ctrl-C or --duration ends, the process runs on\n",
		        (int)e->t.pid, e->nprobes);
}

/* --record: the recording's end; code, or EXIT_DATA. */
static int probe_record_close(struct cli_opts *o, struct engine *e, int code)
{
	char err[700];
	if (precorder_close(e, err, sizeof err)) {
		cli_error("%s", err);
		return EXIT_DATA;
	}
	if (isatty(STDERR_FILENO))
		fprintf(stderr, "sonde: probe hits recorded in %s ('sonde export -i %s --format=perfetto')\n",
		        o->output, o->output);
	return code;
}

/* The library and the plugin loaded into e, every spec's syntax checked
 * and -e @NAME replaced by the library's definition (e->lib outlives the
 * run): for the engines that take the specs as text (remote, kernel). */
static void check_specs(struct cli_opts *o, struct engine *e)
{
	char err[700];
	if (o->library && library_load(&e->lib, o->library, err, sizeof err))
		cli_die(EXIT_USAGE, "%s", err);
	/* The handlers run in sonde, both ABIs (kind_remote.c). */
	if (o->plugin && plugin_load(e, o->plugin, err, sizeof err))
		cli_die(EXIT_USAGE, "%s", err);
	for (int i = 0; i < o->nspecs; i++) {
		struct spec sp;
		/* -e @NAME: the library's definition (e->lib outlives the run) */
		if (o->specs[i][0] == '@') {
			const char *def = library_find(&e->lib, o->specs[i] + 1);
			if (!def)
				cli_die(EXIT_USAGE, "no probe named '%s' in the library (%s)", o->specs[i] + 1,
				        o->library ? o->library : "no --library given");
			o->specs[i] = def;
		}
		if (spec_parse(o->specs[i], &sp, err, sizeof err))
			cli_die(EXIT_USAGE, "bad probe '%s' (%s)", o->specs[i], err);
		int plugin_less = !strcmp(sp.kind, "plugin") && !o->plugin;
		spec_free(&sp);
		if (plugin_less)
			cli_die(EXIT_USAGE, "probe '%s': plugin probes need --plugin FILE.so", o->specs[i]);
	}
}

/* The options of a remote target (--target): the stub's program, no local process. */
static void check_remote(struct cli_opts *o, struct engine *e)
{
	if (!o->exe)
		cli_die(EXIT_USAGE, "--target needs --exe PROGRAM (the program's ELF on this machine)");
	if (o->pid || o->argc)
		cli_die(EXIT_USAGE, "--target probes the stub's program: give no -p PID and no program to launch");
	if (o->interactive || o->record_probe || o->pending)
		cli_die(EXIT_USAGE, "--interactive, --pending and --record are not available with --target");
	if (!o->nspecs)
		cli_die(EXIT_USAGE, "no probes (give -e SPEC)");
	check_specs(o, e);
}

/* The options of --kernel (the running kernel's functions) and --system
 * (an object's code in every process): counted until --duration, Ctrl-C
 * or the end of a program given to run meanwhile. */
static void check_kernel(struct cli_opts *o, struct engine *e)
{
	const char *opt = o->kernel ? "--kernel" : "--system";
	if (o->kernel && o->system)
		cli_die(EXIT_USAGE, "give --kernel or --system, not both");
	if (o->pid || o->target || o->exe || o->engine)
		cli_die(EXIT_USAGE, "%s probes %s: give no -p, --target, --exe or --engine", opt,
		        o->kernel ? "the running kernel" : "every process");
	if (o->interactive || o->record_probe || o->pending || o->plugin)
		cli_die(EXIT_USAGE, "--interactive, --pending, --record and --plugin are not available with %s yet", opt);
	if (!o->nspecs)
		cli_die(EXIT_USAGE, "no probes (give -e SPEC)");
	check_specs(o, e);
}

/* The options of a local process: launched or attached; the library and
 * the plugin loaded into e, every spec's syntax checked before any process
 * is touched. */
static void check_local(struct cli_opts *o, struct engine *e)
{
	if (o->exe || o->timeout)
		cli_die(EXIT_USAGE, "--exe and --timeout go with --target");
	if (o->record_probe && !o->output)
		cli_die(EXIT_USAGE, "--record needs -o DIR (the recording directory to write the hits into)");
	if (!o->pid && !o->argc)
		cli_die(EXIT_USAGE, "nothing to probe (give -p PID or -- PROGRAM [ARGS...])");
	if (o->pid && o->argc)
		cli_die(EXIT_USAGE, "give either -p PID or a program to launch, not both");
	if (!o->nspecs && !o->interactive)
		cli_die(EXIT_USAGE, "no probes (give -e SPEC, or --interactive)");
	char err[700];
	if (o->library && library_load(&e->lib, o->library, err, sizeof err))
		cli_die(EXIT_USAGE, "%s", err);
	if (o->plugin && plugin_load(e, o->plugin, err, sizeof err))
		cli_die(EXIT_USAGE, "%s", err);
	for (int i = 0; i < o->nspecs; i++) {
		const char *s = o->specs[i];
		struct spec sp;
		if (s[0] == '@') {
			if (!(s = library_find(&e->lib, s + 1)))
				cli_die(EXIT_USAGE, "no probe named '%s' in the library (%s)", o->specs[i] + 1,
				        o->library ? o->library : "no --library given");
		}
		if (spec_parse(s, &sp, err, sizeof err))
			cli_die(EXIT_USAGE, "bad probe '%s' (%s)", s, err);
		int plugin_less = !strcmp(sp.kind, "plugin") && !o->plugin;
		spec_free(&sp);
		if (plugin_less)
			cli_die(EXIT_USAGE, "probe '%s': plugin probes need --plugin FILE.so", s);
	}
}

int cmd_probe(struct cli_opts *o)
{
	int json = cli_want_json(o, "table json");
	if (o->engine && o->target)
		cli_die(EXIT_USAGE, "--engine does not go with --target (the remote target is its own engine)");
	static struct engine e;
	char err[700];
	e.warn = warn_probe;
	e.placed_later = placed_later;
	if (o->kernel || o->system)
		check_kernel(o, &e);
	else if (o->target)
		check_remote(o, &e);
	else
		check_local(o, &e);
	/* A launched program shares sonde's stdout (`prog | gzip`): sonde's own
	 * words (interactive replies, the summary without -o) go to stderr then. */
	FILE *own = o->argc ? stderr : stdout;
	e.msg = own;
	/* A summary file that could not be written is found before any process
	 * is touched (the file itself is written at the end). */
	if (o->output && !o->record_probe)
		cli_check_output_dir(o->output);

	struct probe_opts po = {
		.argv = o->argc ? o->argv : NULL, .pid = o->pid, .target = o->target, .exe = o->exe,
		.specs = (const char *const *)o->specs, .nspecs = o->nspecs, .duration = o->duration,
		.timeout_ms = o->timeout > 0 ? (int)(o->timeout * 1000) : 0,
		.hw_breakpoints = o->hw_breakpoints,
		.target_ram = o->target_ram,
		.target_ram_len = o->target_ram_len,
		.in_fd = o->interactive ? STDIN_FILENO : -1, .pending = o->pending, .kernel = o->kernel, .system = o->system,
		.record_dir = o->record_probe ? o->output : NULL, .stack_copy = (uint32_t)o->stack_copy,
		.stack_copy_only = o->stack_copy_only,
		.plugin_abi = o->plugin && e.plugin ? (int)e.plugin->abi : 0, .placed = agent_placed,
	};
	/* The agent runs what it can (docs/PROBES.md "Engines"), ptrace the rest. */
	char why[400];
	const struct probe_engine_ops *ops = probe_engine_choose(&e, &po, o->engine, why, sizeof why, err, sizeof err);
	if (!ops)
		cli_die(EXIT_USAGE, "%s", err);
	if (o->pending && !(ops->modes & PE_PENDING))
		cli_die(EXIT_USAGE, "--pending follows libraries on the agent engine only%s%s", why[0] ? ": " : "", why);
	if (why[0])
		cli_warn("%s: every probe runs on the %s engine", why, ops->name);
	char *rt = NULL;
	if (ops == &agent_engine && !(rt = cli_lib_path("libsonde-rt.so")))
		cli_die(EXIT_DATA, "cannot find the runtime libsonde-rt.so next to the sonde binary (is the build complete?)");
	po.rt_path = rt;

	int code = 0;
	if (probe_session_run(&e, ops, &po, err, sizeof err)) {
		cli_error("%s", err);
		code = EXIT_DATA;
	}
	free(rt);
	if (!e.start_ns) { /* nothing ran: no summary */
		probe_session_free(&e);
		return code;
	}
	if (o->record_probe && e.rec)
		code = probe_record_close(o, &e, code);
	FILE *out = own;
	if (o->output && !o->record_probe && !(out = fopen(o->output, "w"))) {
		cli_error("cannot write %s (%s)", o->output, strerror(errno));
		out = own; /* the summary is not lost */
		code = EXIT_DATA;
	}
	if (json)
		output_json(&e, out);
	else
		output_table(&e, out);
	if (out != own && fclose(out)) {
		cli_error("writing %s failed", o->output);
		code = EXIT_DATA;
	}
	probe_session_free(&e);
	return cli_finish_stdout(code);
}
