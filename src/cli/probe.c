/* probe.c — `sonde probe`: insert dynamic probes into a launched or running
 * program (src/probe/), run until it exits, --duration, Ctrl-C or `quit`,
 * detach cleanly and print the summary table or JSON. */
#include "cli/cli.h"
#include "probe/agent_run.h"
#include "probe/bptab.h"
#include "probe/engine.h"
#include "probe/kind.h"
#include "probe/library.h"
#include "probe/manager.h"
#include "probe/modules.h"
#include "probe/output.h"
#include "probe/probe.h"
#include "probe/record.h"
#include "probe/remote_run.h"
#include "probe/run.h"
#include "probe/scratch.h"
#include "probe/spec.h"
#include "probe/target.h"
#include "sonde/probe.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void warn_probe(const struct probe *p, const char *msg)
{
	cli_warn("probe %d (%s): %s", p->id, p->spec, msg);
}

static void cleanup(struct engine *e)
{
	for (int i = 0; i < e->nprobes; i++) {
		struct probe *p = e->probes[i];
		if (p->ops->free)
			p->ops->free(p);
		spec_free(&p->sp);
		free(p->spec);
		free(p->where);
		free(p->error);
		free(p);
	}
	free(e->probes);
	bptab_free(&e->bps);
	for (int i = 0; i < e->sc.n; i++)
		free(e->sc.r[i].owner);
	modules_free(&e->mods);
	library_free(&e->lib);
	free(e->t.thr);
}

/* Fail before the program runs: kill what we launched, detach from the rest. */
static _Noreturn void fail(struct engine *e, int code, const char *msg)
{
	if (e->t.pid && !e->t.gone) {
		if (e->t.launched)
			kill(e->t.pid, SIGKILL);
		else
			engine_detach(e);
	}
	cleanup(e);
	cli_die(code, "%s", msg);
}

/* --target: a remote target through its GDB protocol stub (remote_run.h). */
static int probe_remote(struct cli_opts *o, int json)
{
	if (!o->exe)
		cli_die(EXIT_USAGE, "--target needs --exe PROGRAM (the program's ELF on this machine)");
	if (o->pid || o->argc)
		cli_die(EXIT_USAGE, "--target probes the stub's program: give no -p PID and no program to launch");
	if (o->interactive || o->plugin || o->record_probe || o->pending)
		cli_die(EXIT_USAGE, "--interactive, --pending, --plugin and --record are not available with --target");
	if (!o->nspecs)
		cli_die(EXIT_USAGE, "no probes (give -e SPEC)");
	static struct engine e;
	char err[700];
	e.warn = warn_probe;  /* notes of remote_count.c: a fallback, counts that may be short */
	if (o->library && library_load(&e.lib, o->library, err, sizeof err))
		cli_die(EXIT_USAGE, "%s", err);
	/* -e @NAME: the library's definition (the library outlives the run: e.lib). */
	const char **specs = calloc((size_t)o->nspecs, sizeof *specs);
	if (!specs)
		cli_die(EXIT_DATA, "out of memory");
	for (int i = 0; i < o->nspecs; i++) {
		struct spec sp;
		specs[i] = o->specs[i];
		if (specs[i][0] == '@' && !(specs[i] = library_find(&e.lib, o->specs[i] + 1)))
			cli_die(EXIT_USAGE, "no probe named '%s' in the library (%s)", o->specs[i] + 1,
			        o->library ? o->library : "no --library given");
		if (spec_parse(specs[i], &sp, err, sizeof err))
			cli_die(EXIT_USAGE, "bad probe '%s' (%s)", specs[i], err);
		spec_free(&sp);
	}
	struct remote_opts ro = {
		.target = o->target, .exe = o->exe, .specs = specs, .nspecs = o->nspecs,
		.duration = o->duration, .timeout_ms = o->timeout > 0 ? (int)(o->timeout * 1000) : 0,
		.hw_breakpoints = o->hw_breakpoints,
	};
	int code = 0;
	int failed = remote_probe_run(&e, &ro, err, sizeof err);
	free(specs);            /* the probes keep copies of their specs */
	if (failed) {
		cli_error("%s", err);
		code = EXIT_DATA;
		if (!e.start_ns) {
			remote_probe_close();
			cleanup(&e);
			return code;
		}
	}
	FILE *out = stdout;
	if (o->output && !(out = fopen(o->output, "w"))) {
		remote_probe_close();
		cleanup(&e);
		cli_die(EXIT_DATA, "cannot write %s (%m)", o->output);
	}
	if (json)
		output_json(&e, out);
	else
		output_table(&e, out);
	if (out != stdout && fclose(out)) {
		cli_error("writing %s failed", o->output);
		code = EXIT_DATA;
	}
	remote_probe_close();
	cleanup(&e);
	return cli_finish_stdout(code);
}

static void placed_later(const struct probe *p, const char *why)
{
	fprintf(stderr, "sonde: probe %d (%s) placed at %s: %s\n", p->id, p->spec, p->where ? p->where : "?", why);
}

static void agent_placed(struct engine *e)
{
	if (!e->t.launched)
		fprintf(stderr, "sonde: probes in process %d (%d); Ctrl-C or --duration ends, the process runs on\n",
		        (int)e->t.pid, e->nprobes);
}

/* --record: the recording's end (either engine); code, or EXIT_DATA. */
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

/* The agent backend (agent_run.h): the program runs the probes itself.
 * e has the library loaded; the specs' syntax is checked. */
static int probe_agent(struct cli_opts *o, int json, struct engine *e, FILE *own)
{
	char err[700];
	char *rt = cli_lib_path("libsonde-rt.so");
	if (!rt)
		cli_die(EXIT_DATA, "cannot find the runtime libsonde-rt.so next to the sonde binary (is the build complete?)");
	struct agent_opts ao = {
		.argv = o->argc ? o->argv : NULL, .pid = o->pid, .specs = (const char *const *)o->specs,
		.nspecs = o->nspecs, .duration = o->duration, .rt_path = rt, .placed = agent_placed,
		.in_fd = o->interactive ? STDIN_FILENO : -1, .pending = o->pending,
		.record_dir = o->record_probe ? o->output : NULL, .stack_copy = (uint32_t)o->stack_copy,
	};
	int code = 0;
	if (agent_probe_run(e, &ao, err, sizeof err)) {
		cli_error("%s", err);
		code = EXIT_DATA;
		if (!e->start_ns) {
			agent_probe_close(e);
			cleanup(e);
			free(rt);
			return code;
		}
	}
	free(rt);
	if (o->record_probe && e->rec)
		code = probe_record_close(o, e, code);
	FILE *out = own;
	if (o->output && !o->record_probe && !(out = fopen(o->output, "w"))) {
		cli_error("cannot write %s (%s)", o->output, strerror(errno));
		out = own;
		code = EXIT_DATA;
	}
	if (json)
		output_json(e, out);
	else
		output_table(e, out);
	if (out != own && fclose(out)) {
		cli_error("writing %s failed", o->output);
		code = EXIT_DATA;
	}
	agent_probe_close(e);
	cleanup(e);
	return cli_finish_stdout(code);
}

int cmd_probe(struct cli_opts *o)
{
	int json = cli_want_json(o, "table json");
	if (o->engine && o->target)
		cli_die(EXIT_USAGE, "--engine does not go with --target (the remote target is its own engine)");
	if (o->target)
		return probe_remote(o, json);
	if (o->exe || o->timeout || o->hw_breakpoints)
		cli_die(EXIT_USAGE, "--exe, --timeout and --hw-breakpoints go with --target");

	if (o->record_probe && !o->output)
		cli_die(EXIT_USAGE, "--record needs -o DIR (the recording directory to write the hits into)");
	if (!o->pid && !o->argc)
		cli_die(EXIT_USAGE, "nothing to probe (give -p PID or -- PROGRAM [ARGS...])");
	if (o->pid && o->argc)
		cli_die(EXIT_USAGE, "give either -p PID or a program to launch, not both");
	if (!o->nspecs && !o->interactive)
		cli_die(EXIT_USAGE, "no probes (give -e SPEC, or --interactive)");

	static struct engine e;
	char err[700];
	/* A launched program shares sonde's stdout (`prog | gzip`): sonde's own
	 * words (interactive replies, the summary without -o) go to stderr then. */
	FILE *own = o->argc ? stderr : stdout;
	e.msg = own;
	e.warn = warn_probe;
	if (o->library && library_load(&e.lib, o->library, err, sizeof err))
		cli_die(EXIT_USAGE, "%s", err);
	if (o->plugin && plugin_load(&e, o->plugin, err, sizeof err))
		cli_die(EXIT_USAGE, "%s", err);
	/* Check every spec's syntax before touching a process. */
	for (int i = 0; i < o->nspecs; i++) {
		const char *s = o->specs[i];
		struct spec sp;
		if (s[0] == '@') {
			if (!(s = library_find(&e.lib, s + 1)))
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

	/* A summary file that could not be written is found before any process
	 * is touched (the file itself is written at the end). */
	if (o->output && !o->record_probe)
		cli_check_output_dir(o->output);

	/* The agent runs func, line, branch, var, assert, time, sys, stack and
	 * plugin probes of an ABI-2 plugin (docs/PROBES.md "Engines"), with or
	 * without --record; ABI-1 plugins and expressions its bytecode does not
	 * have stay on ptrace. */
	const char *spec_of[64];
	int ns = o->nspecs < 64 ? o->nspecs : 64;
	for (int i = 0; i < ns; i++)
		spec_of[i] = o->specs[i][0] == '@' ? library_find(&e.lib, o->specs[i] + 1) : o->specs[i];
	char why[400] = "";
	int abi1_plugin = o->plugin && e.plugin && e.plugin->abi != SONDE_PROBE_ABI2;
	int agent_can = !abi1_plugin && !(o->engine && !strcmp(o->engine, "ptrace")) &&
	                agent_runs_all(spec_of, ns, o->pid, o->argc ? o->argv[0] : NULL, why, sizeof why);
	if (o->engine && !strcmp(o->engine, "agent") && !agent_can)
		cli_die(EXIT_USAGE, "--engine=agent runs func, line, branch, var, assert, time, sys, stack and plugin probes "
		        "(SONDE_PROBE_ABI2 plugins) (use --engine=ptrace)%s%s", why[0] ? ": " : "", why);
	if (o->pending && !agent_can)
		cli_die(EXIT_USAGE, "--pending follows libraries on the agent engine only%s%s", why[0] ? ": " : "", why);
	if (why[0] && !agent_can)
		cli_warn("%s: every probe runs on the ptrace engine", why);
	if (agent_can) {
		e.placed_later = placed_later;
		return probe_agent(o, json, &e, own);
	}

	if (o->argc) {
		if (target_launch(&e.t, o->argv, err, sizeof err))
			cli_die(EXIT_DATA, "%s", err);
		if (engine_run_to_entry(&e))
			fail(&e, EXIT_DATA, "the program exited before reaching its entry point");
	} else {
		if (target_attach(&e.t, o->pid, err, sizeof err))
			cli_die(EXIT_DATA, "%s", err);
		if (engine_stop_all(&e))
			fail(&e, EXIT_DATA, "cannot stop the threads of the process");
	}
	if (modules_load(&e.mods, e.t.pid))
		fail(&e, EXIT_DATA, "cannot read the memory map of the process");
	e.start_ns = now_ns();
	for (int i = 0; i < o->nspecs; i++)
		if (!manager_add(&e, o->specs[i], err, sizeof err))
			fail(&e, EXIT_DATA, err);
	if (o->record_probe && precorder_open(&e, o->output, err, sizeof err))
		fail(&e, EXIT_DATA, err);
	engine_resume_all(&e);

	uint64_t deadline = o->duration > 0 ? e.start_ns + (uint64_t)(o->duration * 1e9) : 0;
	engine_run(&e, deadline, o->interactive ? STDIN_FILENO : -1);
	e.end_ns = now_ns();
	if (!e.t.gone)
		engine_detach(&e);
	int code = 0;
	if (o->record_probe)
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
	cleanup(&e);
	return cli_finish_stdout(code);
}
