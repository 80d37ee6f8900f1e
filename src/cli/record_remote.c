/* record_remote.c — `sonde record --target tcp:HOST:PORT|serial:DEV --exe
 * fw.elf`: an exact function profile of a remote target (a microcontroller's
 * firmware), run on the remote probe engine (src/probe/remote/remote_record.c)
 * and written as a recording that every reader takes (docs/REMOTE.md). */
#include "cli/cli.h"
#include "probe/engine.h"
#include "probe/probe.h"
#include "probe/probe_engine.h"
#include "probe/remote/remote_run.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void warn_probe(const struct probe *p, const char *msg)
{
	cli_warn("%s: %s", p->where ? p->where : p->spec, msg);
}

int cmd_record_remote(struct cli_opts *o)
{
	if (!o->exe)
		cli_die(EXIT_USAGE, "--target needs --exe PROGRAM (the program's ELF on this machine)");
	if (o->pid || o->argc)
		cli_die(EXIT_USAGE, "record --target records the stub's program: give no -p PID and no program to launch");
	if (o->locks || o->lock_events || o->keep_last || o->domain || o->depth || o->min_time_ns || o->nmodules ||
	    o->no_patch || o->lossy || o->buffer_size)
		cli_die(EXIT_USAGE, "record --target takes -o, -F, -N, --duration, --timeout, --hw-breakpoints, "
		        "--target-clock and --target-ram (not --locks, --keep-last, --domain, --depth, --min-time, --module, --no-patch, "
		        "--lossy, --buffer-size)");
	const char *dir = o->output ? o->output : "sonde.data";
	static struct engine e;
	e.warn = warn_probe;
	e.msg = stderr;
	struct probe_opts po = {
		.target = o->target, .exe = o->exe, .duration = o->duration,
		.timeout_ms = o->timeout > 0 ? (int)(o->timeout * 1000) : 0, .hw_breakpoints = o->hw_breakpoints,
		.in_fd = -1, .remote_record = dir, .filters = (const char *const *)o->filters, .nfilters = o->nfilters,
		.target_clock = o->target_clock, .target_ram = o->target_ram, .target_ram_len = o->target_ram_len,
	};
	/* the engine as `sonde probe` chooses it (engines.c): the target's form */
	char err[700], why[400];
	const struct probe_engine_ops *ops = probe_engine_choose(&e, &po, NULL, why, sizeof why, err, sizeof err);
	if (!ops)
		cli_die(EXIT_USAGE, "%s", err);
	int sim = !!(ops->modes & PE_SIM_TIMED);
	if (sim && (o->hw_breakpoints || o->target_clock || o->target_ram))
		cli_die(EXIT_USAGE, "record --target %s: takes no --hw-breakpoints, --target-clock or --target-ram (the "
		        "simulator's breakpoints and cycle counter time every call)", ops->name);
	if (o->target_clock && rrec_clock_valid(o->target_clock, err, sizeof err))
		cli_die(EXIT_USAGE, "%s", err);
	if (why[0])
		cli_warn("%s: the %s engine records it", why, ops->name);
	int code = 0;
	if (probe_session_run(&e, ops, &po, err, sizeof err)) {
		cli_error("%s", err);
		code = EXIT_DATA;
	}
	if (e.recorded.written) {
		uint64_t calls = e.recorded.calls, untimed = e.recorded.untimed;
		int nf = e.recorded.nfuncs, nin = e.recorded.in_target;
		if (sim)
			fprintf(stderr, "sonde: %d functions timed by the simulator's breakpoints (two stops a call) and its "
			        "cycle counter\n", nf);
		else
			fprintf(stderr, "sonde: %d functions timed in the target (no stop a call), %d by breakpoints (two "
			        "stops a call); which and why in %s/remote.json\n", nin, nf - nin, dir);
		fprintf(stderr, "sonde: %" PRIu64 " calls of %d functions recorded in %s/ (target time)%s", calls, nf, dir,
		        e.detached ? "; the target was left running\n" : "\n");
		if (e.t.gone && e.t.status == STATUS_GONE)   /* neither an exit nor a signal: the connection closed */
			cli_warn("%s: the %s went away before the program's end (the connection closed): the recording holds "
			         "the calls up to then", o->target, sim ? "simulator" : "stub");
		if (untimed && sim)
			cli_warn("%" PRIu64 " calls could not be timed (the stack unreadable or no breakpoint left for the "
			         "return): counted, each open until its caller returns", untimed);
		else if (untimed)
			cli_warn("%" PRIu64 " calls could not be timed (no return address to catch: an exception handler, "
			         "no hardware breakpoint left, or deeper than 4096 frames); they are not in the recording",
			         untimed);
	}
	probe_session_free(&e);
	for (int i = 0; i < o->nfilters; i++)
		free((char *)o->filters[i]); /* allocated by cli_parse */
	return cli_finish_stdout(code);
}
