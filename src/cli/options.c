/* options.c — the one option table of sonde: every option, the commands it
 * applies to, and its help line.  Every command's --help comes from here. */
#include "cli/cli.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

enum {
	O_FORMAT = 256, O_SORT, O_LIMIT, O_THREADS, O_PER_LOCK, O_TID, O_SEL_PID, O_COMM, O_PROCESSES, O_TIME_RANGE, O_DEPTH, O_MIN_PERCENT,
	O_TRACE, O_LOCKS, O_SYSCALLS, O_LOSSY, O_MIN_TIME, O_TIMING, O_TIMED, O_DOMAIN, O_BUFFER, O_MAX_MEMORY, O_KEEP_LAST, O_COMPRESS, O_NO_FOLLOW, O_DURATION,
	O_INTERACTIVE, O_PENDING, O_KERNEL, O_SYSTEM, O_LIBRARY, O_PLUGIN, O_RECORD, O_TARGET, O_EXE, O_TIMEOUT, O_HW_BREAKPOINTS, O_TARGET_RAM, O_TARGET_CLOCK, O_ENGINE, O_STACK_COPY, O_STACK_UNWIND, O_MODULE, O_EXEC, O_NO_PATCH, O_EVERY, O_COUNT, O_HELP,
};

static const struct cli_option options[] = {
	{ "input", 'i', required_argument, CMD_READERS, "DIR", "recording to read (default sonde.data); report: repeat to add up several runs of one program" },
	{ "output", 'o', required_argument, CMD_RECORD | CMD_EXPORT | CMD_FLAME | CMD_PROBE, "PATH",
	  "recording directory (record) or output file" },
	{ "format", O_FORMAT, required_argument, (CMD_READERS & ~CMD_FLAME) | CMD_PROBE | CMD_DIFF | CMD_RECORD, "FMT",
	  "output format: table (default) or json; export: callgrind, folded, pprof, chrome, perfetto; "
	  "record --every: pprof (a profile file per window)" },
	{ "sort", O_SORT, required_argument, CMD_REPORT | CMD_LOCKS, "KEY",
	  "report: excl (default), incl, calls, name, excl-cpu, incl-cpu (time on a CPU); locks: wait (default), hold, acquisitions, contended, name" },
	{ "limit", O_LIMIT, required_argument, CMD_REPORT | CMD_LOCKS | CMD_CALLERS | CMD_DIFF, "N",
	  "show at most N rows" },
	{ "per-lock", O_PER_LOCK, no_argument, CMD_LOCKS, NULL,
	  "one row per lock (default: locks made at one site are grouped)" },
	{ "threads", O_THREADS, no_argument, CMD_REPORT | CMD_LOCKS | CMD_INFO, NULL,
	  "one section per thread" },
	{ "tid", O_TID, required_argument, CMD_REPORT | CMD_TREE | CMD_EXPORT | CMD_REPLAY | CMD_FLAME | CMD_CALLERS | CMD_LOCKS,
	  "TID", "only this thread" },
	{ "pid", O_SEL_PID, required_argument, CMD_REPORT | CMD_TREE | CMD_EXPORT | CMD_FLAME | CMD_CALLERS | CMD_DIFF,
	  "PID", "only the processes of this pid (its image before and after each exec; see 'sonde info')" },
	{ "comm", O_COMM, required_argument, CMD_REPORT | CMD_TREE | CMD_EXPORT | CMD_FLAME | CMD_CALLERS | CMD_DIFF,
	  "NAME", "only the processes running this program (a glob against the executable's file name or path)" },
	{ "processes", O_PROCESSES, no_argument, CMD_REPORT, NULL,
	  "one section per process (each image of a pid, before and after an exec, its own)" },
	{ "time-range", O_TIME_RANGE, required_argument, CMD_EXPORT | CMD_REPLAY | CMD_FLAME, "A,B",
	  "only events between A and B seconds from the start" },
	{ "depth", O_DEPTH, required_argument, CMD_TREE | CMD_RECORD, "N",
	  "tree: show N levels; record --trace: trace calls at depth <= N only" },
	{ "min-percent", O_MIN_PERCENT, required_argument, CMD_TREE, "P",
	  "hide tree nodes below P% of the total" },
	{ "trace", O_TRACE, no_argument, CMD_RECORD, NULL, "record a timeline of every call" },
	{ "locks", O_LOCKS, optional_argument, CMD_RECORD, "events",
	  "profile pthread/C11/semaphore locks (=events also streams each lock event)" },
	{ "syscalls", O_SYSCALLS, no_argument, CMD_RECORD | CMD_REPORT, NULL,
	  "record: count and time system calls per calling function (libc wrappers; launched, or attached with -p); "
	  "report: the system-call table" },
	{ "lossy", O_LOSSY, no_argument, CMD_RECORD, NULL,
	  "drop and count events when a ring is full instead of waiting" },
	{ "min-time", O_MIN_TIME, required_argument, CMD_RECORD, "DUR",
	  "trace: drop calls shorter than DUR (ns, us, ms, s) with no recorded child" },
	{ "timing", O_TIMING, required_argument, CMD_RECORD, "all|none|auto",
	  "which patched functions are timed (all), or only counted: none timed, or auto (small leaves, then the short frequent ones learned while it runs)" },
	{ "timed", O_TIMED, required_argument, CMD_RECORD, "GLOB",
	  "time the functions matching GLOB (name or demangled name) whatever --timing says (repeatable)" },
	{ "filter", 'F', required_argument, CMD_RECORD, "GLOB",
	  "trace only these functions (repeatable; C++ names demangled or mangled)" },
	{ "notrace", 'N', required_argument, CMD_RECORD, "GLOB",
	  "never trace these functions (repeatable; C++ names demangled or mangled)" },
	{ "domain", O_DOMAIN, required_argument, CMD_RECORD, "auto",
	  "trace only the functions that left records in the previous recording" },
	{ "buffer-size", O_BUFFER, required_argument, CMD_RECORD, "BYTES",
	  "session memory a thread starts with (default 16M; suffixes K, M, G); its calling-context tree grows past it" },
	{ "max-memory", O_MAX_MEMORY, required_argument, CMD_RECORD, "BYTES",
	  "cap on the session memory the calling-context trees may grow to (default: a quarter of RAM; suffixes K, M, G)" },
	{ "keep-last", O_KEEP_LAST, required_argument, CMD_RECORD, "SIZE",
	  "flight recorder: keep only the newest SIZE of events (at least 1M; suffixes K, M, G)" },
	{ "no-follow-daemons", O_NO_FOLLOW, no_argument, CMD_RECORD, NULL,
	  "end the recording when the program exits, leaving the processes it started running" },
	{ "module", O_MODULE, required_argument, CMD_RECORD, "GLOB",
	  "also patch the functions of the shared libraries whose path or file name matches GLOB (repeatable)" },
	{ "exec", O_EXEC, required_argument, CMD_RECORD, "GLOB",
	  "patch only the programs of the tree (the launched one and those it execs) whose path or file name matches GLOB (repeatable)" },
	{ "no-patch", O_NO_PATCH, no_argument, CMD_RECORD, NULL,
	  "record only code built with sonde-cc (do not patch the functions of other modules)" },
	{ "compress", O_COMPRESS, required_argument, CMD_RECORD, "zstd|none",
	  "how events.sonde stores the events (default zstd: chunks compressed where it pays)" },
	{ "event", 'e', required_argument, CMD_PROBE, "SPEC", "probe spec KIND:LOCATION[:ARGS] or @name (repeatable)" },
	{ "pid", 'p', required_argument, CMD_PROBE | CMD_RECORD, "PID",
	  "attach to a running process (record: its profile, --trace or --locks, a sonde-cc build by its sleds, any other dynamically linked program patched without a rebuild; as often as you like, one recording at a time)" },
	{ "duration", O_DURATION, required_argument, CMD_PROBE | CMD_RECORD, "SECONDS", "detach after SECONDS" },
	{ "every", O_EVERY, required_argument, CMD_RECORD, "SECONDS",
	  "record -p in windows: one of --duration every SECONDS, each into -o DIR/START (its UTC start time); "
	  "with --format=pprof, also DIR/START.pb.gz" },
	{ "count", O_COUNT, required_argument, CMD_RECORD, "N", "with --every: stop after N windows (default: until Ctrl-C)" },
	{ "interactive", O_INTERACTIVE, no_argument, CMD_PROBE, NULL, "read add/list/del commands on stdin" },
	{ "kernel", O_KERNEL, no_argument, CMD_PROBE, NULL,
	  "probe the running kernel and its modules (func:FUNCTION, func:MODULE:FUNCTION, stack: of the same, line:MODULE.ko:FILE:LINE, var: and assert:MODULE.ko:FUNCTION|FILE:LINE:EXPR; root; docs/PROBES.md)" },
	{ "system", O_SYSTEM, no_argument, CMD_PROBE, NULL,
	  "probe an object's code in every process that maps it, running or started meanwhile (func:OBJECT:FUNCTION, "
	  "line:OBJECT:FILE:LINE, var: and assert:OBJECT:FUNCTION|FILE:LINE:EXPR; the kernel's uprobes; root; docs/PROBES.md)" },
	{ "pending", O_PENDING, no_argument, CMD_PROBE, NULL,
	  "a func or line location in no loaded object waits for a library that has it (dlopen; agent engine)" },
	{ "library", O_LIBRARY, required_argument, CMD_PROBE, "FILE", "file of named probe definitions" },
	{ "plugin", O_PLUGIN, required_argument, CMD_PROBE, "SO", "load custom probe handlers" },
	{ "record", O_RECORD, no_argument, CMD_PROBE, NULL, "also write the hits into a recording (-o DIR)" },
	{ "stack-copy", O_STACK_COPY, required_argument, CMD_PROBE, "BYTES",
	  "stack probes on the agent: bytes of the stack copied at each hit (default 8K, 64 to 64K; suffix K)" },
	{ "stack-unwind", O_STACK_UNWIND, required_argument, CMD_PROBE, "program|copy",
	  "stack probes on the agent: walk the stack in the program with sonde's unwind table, copying it only "
	  "where the table has no rule (program, the default), or copy every stack for sonde to unwind (copy)" },
	{ "target", O_TARGET, required_argument, CMD_PROBE | CMD_RECORD, "tcp:HOST:PORT|serial:DEV[,BAUD]|ucsim:HOST:PORT",
	  "probe (or record the functions of) a remote target through its GDB remote protocol stub (gdbserver, QEMU, "
	  "OpenOCD); ucsim:HOST:PORT: 8051 firmware through the ucsim simulator's console (s51 -P -b -Z PORT)" },
	{ "exe", O_EXE, required_argument, CMD_PROBE | CMD_RECORD, "PROGRAM",
	  "--target: the program's ELF on this machine (symbols, lines, DWARF); ucsim: the firmware's .ihx, SDCC's "
	  ".cdb beside it" },
	{ "timeout", O_TIMEOUT, required_argument, CMD_PROBE | CMD_RECORD, "SECONDS",
	  "--target: how long to wait for each reply of the stub (default 5)" },
	{ "hw-breakpoints", O_HW_BREAKPOINTS, required_argument, CMD_PROBE | CMD_RECORD, "N",
	  "--target: the core's hardware breakpoint comparators, for code in flash (refused before placing more)" },
	{ "target-ram", O_TARGET_RAM, required_argument, CMD_PROBE | CMD_RECORD, "ADDR:LEN",
	  "--target on a microcontroller: RAM the firmware does not use, within a branch's reach of the code, where "
	  "sonde writes trampolines so that line probes are counted and (record) calls timed in the target (no stop "
	  "per hit); on the 8051 (ucsim): code memory and xdata the firmware does not use, for the counting stubs" },
	{ "target-clock", O_TARGET_CLOCK, required_argument, CMD_RECORD, "ADDR@HZ|dwt@HZ|systick@HZ",
	  "record --target: the target's time source and its frequency: a 32-bit up counter in its memory, or a "
	  "Cortex-M's DWT cycle counter or SysTick (default on RV32: mtime, 0x0200bff8@10000000)" },
	{ "engine", O_ENGINE, required_argument, CMD_PROBE, "agent|ptrace",
	  "who runs the probes: the agent inside the program (default for func, line and var probes) or ptrace stops" },
	{ "help", O_HELP, no_argument, ~0u, NULL, "show this help (also -h)" },
};
#define NOPTIONS (int)(sizeof(options) / sizeof(options[0]))

const struct cli_option *cli_options(int *n)
{
	*n = NOPTIONS;
	return options;
}

void cli_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("sonde: error: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

void cli_warn(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("sonde: warning: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

_Noreturn void cli_die(int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("sonde: error: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(code);
}

static void help(const struct cli_command *cmd)
{
	printf("usage: sonde %s %s\n%s\n\noptions:\n", cmd->name, cmd->usage, cmd->summary);
	for (int i = 0; i < NOPTIONS; i++) {
		const struct cli_option *op = &options[i];
		if (!(op->mask & cmd->mask))
			continue;
		char left[64];
		int n = 0;
		if (op->val < 256)
			n = snprintf(left, sizeof left, "-%c, --%s", op->val, op->name);
		else
			n = snprintf(left, sizeof left, "    --%s", op->name);
		if (op->arg)
			snprintf(left + n, sizeof left - n, op->has_arg == optional_argument ? "[=%s]" : " %s",
			         op->arg);
		printf("  %-28s %s\n", left, op->help);
	}
}

static long parse_int(const char *opt, const char *s, long lo, long hi)
{
	char *end;
	long v = strtol(s, &end, 10);
	if (!*s || *end || v < lo || v > hi)
		cli_die(EXIT_USAGE, "invalid value '%s' for --%s (expected an integer in %ld..%ld)", s, opt, lo, hi);
	return v;
}

/* A size with an optional K/M/G suffix, 1 .. max bytes. */
static uint64_t parse_size(const char *opt, const char *s, uint64_t max)
{
	char *end;
	errno = 0;
	unsigned long long v = *s >= '0' && *s <= '9' ? strtoull(s, &end, 10) : 0;
	if (!v)
		end = (char *)s;
	uint64_t mul = 1;
	if (*end == 'K' || *end == 'k') mul = 1ull << 10, end++;
	else if (*end == 'M' || *end == 'm') mul = 1ull << 20, end++;
	else if (*end == 'G' || *end == 'g') mul = 1ull << 30, end++;
	if (!v || *end || errno == ERANGE || v > max / mul)
		cli_die(EXIT_USAGE, "invalid size '%s' for --%s (a whole number of bytes with K, M or G, at most %lluG; e.g. 64M)",
		        s, opt, (unsigned long long)(max >> 30));
	return v * mul;
}

/* A finite number (strtod accepts "nan" and "inf"), the whole string. */
static int parse_real(const char *s, double *v)
{
	char *end;
	*v = strtod(s, &end);
	return end != s && !*end && isfinite(*v);
}

int64_t parse_duration_ns(const char *s)
{
	char *end;
	double v = strtod(s, &end);
	double mul = 1;
	if (end == s || !isfinite(v) || v < 0)
		return -1;
	if (!strcmp(end, "") || !strcmp(end, "ns")) mul = 1;
	else if (!strcmp(end, "us")) mul = 1e3;
	else if (!strcmp(end, "ms")) mul = 1e6;
	else if (!strcmp(end, "s")) mul = 1e9;
	else return -1;
	if (v * mul > 1e18) /* 31 years */
		return -1;
	return (int64_t)(v * mul + 0.5);
}

void cli_parse(const struct cli_command *cmd, int argc, char **argv, struct cli_opts *o)
{
	struct option lopts[NOPTIONS + 1];
	char shorts[2 * NOPTIONS + 4];
	int nl = 0, ns = 0;
	if (cmd->mask & (CMD_RECORD | CMD_PROBE))
		shorts[ns++] = '+'; /* stop at the program: "record prog -x" leaves -x to prog */
	shorts[ns++] = ':';     /* report a missing argument as ':' */
	for (int i = 0; i < NOPTIONS; i++) {
		const struct cli_option *op = &options[i];
		if (!(op->mask & cmd->mask))
			continue;
		lopts[nl++] = (struct option){ op->name, op->has_arg, NULL, op->val };
		if (op->val < 256) {
			shorts[ns++] = (char)op->val;
			if (op->has_arg == required_argument)
				shorts[ns++] = ':';
		}
	}
	shorts[ns++] = 'h'; /* -h: --help, on every command */
	lopts[nl] = (struct option){ 0, 0, 0, 0 };
	shorts[ns] = 0;

	memset(o, 0, sizeof *o);
	o->input = "sonde.data";
	optind = 1;
	opterr = 0;
	for (;;) {
		int li = -1;
		int c = getopt_long(argc, argv, shorts, lopts, &li);
		if (c == -1)
			break;
		switch (c) {
		case 'i':
			if (o->ninputs == CLI_MAX_LIST)
				cli_die(EXIT_USAGE, "too many -i recordings (at most %d)", CLI_MAX_LIST);
			o->inputs[o->ninputs++] = optarg;
			o->input = o->inputs[0];
			break;
		case 'o': o->output = optarg; break;
		case O_FORMAT: o->format = optarg; break;
		case O_SORT: o->sort = optarg; break;
		case O_LIMIT: o->limit = (int)parse_int("limit", optarg, 1, 1 << 30); break;
		case O_THREADS: o->threads = 1; break;
		case O_PER_LOCK: o->per_lock = 1; break;
		case O_TID: o->tid = (int)parse_int("tid", optarg, 1, 1 << 30); break;
		case O_PROCESSES: o->processes = 1; break;
		case O_SEL_PID: o->sel_pid = (int)parse_int("pid", optarg, 1, 1 << 30); break;
		case O_COMM:
			if (!*optarg)
				cli_die(EXIT_USAGE, "--comm needs a program name");
			o->sel_comm = optarg;
			break;
		case O_TIME_RANGE: {
			char *end;
			o->time_from = strtod(optarg, &end);
			if (end == optarg || *end != ',' || !isfinite(o->time_from) || o->time_from < 0)
				cli_die(EXIT_USAGE, "invalid --time-range '%s' (expected A,B in seconds, e.g. 0.5,2)", optarg);
			char *b = end + 1;
			o->time_to = strtod(b, &end);
			if (end == b || *end || !isfinite(o->time_to) || o->time_to < o->time_from)
				cli_die(EXIT_USAGE, "invalid --time-range '%s' (expected A,B in seconds with A <= B)", optarg);
			o->has_time_range = 1;
			break;
		}
		case O_DEPTH: o->depth = (int)parse_int("depth", optarg, 1, 1 << 20); break;
		case O_MIN_PERCENT: {
			if (!parse_real(optarg, &o->min_percent) || o->min_percent < 0 || o->min_percent > 100)
				cli_die(EXIT_USAGE, "invalid value '%s' for --min-percent (expected 0..100)", optarg);
			break;
		}
		case O_TRACE: o->trace = 1; break;
		case O_LOCKS:
			o->locks = 1;
			if (optarg) {
				if (strcmp(optarg, "events"))
					cli_die(EXIT_USAGE, "invalid value '%s' for --locks (only --locks or --locks=events)", optarg);
				o->lock_events = 1;
			}
			break;
		case O_SYSCALLS: o->syscalls = 1; break;
		case O_LOSSY: o->lossy = 1; break;
		case O_MIN_TIME: {
			int64_t ns = parse_duration_ns(optarg);
			if (ns < 0)
				cli_die(EXIT_USAGE, "invalid duration '%s' for --min-time (e.g. 50us, 1ms)", optarg);
			o->min_time_ns = (uint64_t)ns;
			break;
		}
		case O_TIMING:
			if (!strcmp(optarg, "all"))
				o->timing = 0;
			else if (!strcmp(optarg, "none"))
				o->timing = 1;
			else if (!strcmp(optarg, "auto"))
				o->timing = 2;
			else
				cli_die(EXIT_USAGE, "invalid value '%s' for --timing (all, none or auto)", optarg);
			break;
		case O_TIMED:
			if (o->ntimed == CLI_MAX_LIST)
				cli_die(EXIT_USAGE, "too many --timed globs (at most %d)", CLI_MAX_LIST);
			o->timed[o->ntimed++] = optarg;
			break;
		case 'F': case 'N':
			if (o->nfilters == CLI_MAX_LIST)
				cli_die(EXIT_USAGE, "too many -F/-N filters (at most %d)", CLI_MAX_LIST);
			{
				size_t n = strlen(optarg) + 2;
				char *s = malloc(n);
				if (!s)
					cli_die(EXIT_DATA, "out of memory");
				snprintf(s, n, "%c%s", c == 'F' ? '+' : '-', optarg);
				o->filters[o->nfilters++] = s;
			}
			break;
		case O_DOMAIN: o->domain = optarg; break;
		case O_BUFFER: o->buffer_size = parse_size("buffer-size", optarg, 4ull << 30); break;
		case O_MAX_MEMORY: o->max_memory = parse_size("max-memory", optarg, 256ull << 30); break;
		case O_KEEP_LAST: o->keep_last = parse_size("keep-last", optarg, 1ull << 40); break;
		case O_NO_FOLLOW: o->no_follow_daemons = 1; break;
		case O_MODULE:
			if (o->nmodules == CLI_MAX_LIST)
				cli_die(EXIT_USAGE, "too many --module globs (at most %d)", CLI_MAX_LIST);
			o->modules[o->nmodules++] = optarg;
			break;
		case O_EXEC:
			if (o->nexecs == CLI_MAX_LIST)
				cli_die(EXIT_USAGE, "too many --exec globs (at most %d)", CLI_MAX_LIST);
			o->execs[o->nexecs++] = optarg;
			break;
		case O_NO_PATCH: o->no_patch = 1; break;
		case O_COMPRESS:
			if (strcmp(optarg, "zstd") && strcmp(optarg, "none"))
				cli_die(EXIT_USAGE, "invalid value '%s' for --compress (expected zstd or none)", optarg);
			o->compress_none = !strcmp(optarg, "none");
			break;
		case 'e':
			if (o->nspecs == CLI_MAX_LIST)
				cli_die(EXIT_USAGE, "too many -e probes (at most %d)", CLI_MAX_LIST);
			o->specs[o->nspecs++] = optarg;
			break;
		case 'p': o->pid = (int)parse_int("pid", optarg, 1, 1 << 30); break;
		case O_DURATION: {
			if (!parse_real(optarg, &o->duration) || o->duration <= 0 || o->duration > 1e9)
				cli_die(EXIT_USAGE, "invalid value '%s' for --duration (seconds, > 0)", optarg);
			break;
		}
		case O_EVERY:
			if (!parse_real(optarg, &o->every) || o->every <= 0 || o->every > 1e9)
				cli_die(EXIT_USAGE, "invalid value '%s' for --every (seconds, > 0)", optarg);
			break;
		case O_COUNT: o->count = parse_int("count", optarg, 1, 1L << 40); break;
		case O_INTERACTIVE: o->interactive = 1; break;
		case O_PENDING: o->pending = 1; break;
		case O_KERNEL: o->kernel = 1; break;
		case O_SYSTEM: o->system = 1; break;
		case O_LIBRARY: o->library = optarg; break;
		case O_PLUGIN: o->plugin = optarg; break;
		case O_RECORD: o->record_probe = 1; break;
		case O_STACK_COPY:
			o->stack_copy = parse_size("stack-copy", optarg, 4ull << 30);
			if (o->stack_copy < 64 || o->stack_copy > 65536)
				cli_die(EXIT_USAGE, "invalid value '%s' for --stack-copy (64 to 64K bytes)", optarg);
			break;
		case O_STACK_UNWIND:
			if (strcmp(optarg, "program") && strcmp(optarg, "copy"))
				cli_die(EXIT_USAGE, "invalid value '%s' for --stack-unwind (program or copy)", optarg);
			o->stack_copy_only = !strcmp(optarg, "copy");
			break;
		case O_TARGET: o->target = optarg; break;
		case O_EXE: o->exe = optarg; break;
		case O_TARGET_CLOCK: o->target_clock = optarg; break;
		case O_ENGINE:
			if (strcmp(optarg, "agent") && strcmp(optarg, "ptrace"))
				cli_die(EXIT_USAGE, "invalid value '%s' for --engine (agent or ptrace)", optarg);
			o->engine = optarg;
			break;
		case O_TIMEOUT:
			if (!parse_real(optarg, &o->timeout) || o->timeout <= 0 || o->timeout > 3600)
				cli_die(EXIT_USAGE, "invalid value '%s' for --timeout (seconds, > 0)", optarg);
			break;
		case O_HW_BREAKPOINTS: {
			char *end;
			long v = strtol(optarg, &end, 10);
			if (*end || end == optarg || v < 1 || v > 64)
				cli_die(EXIT_USAGE, "invalid value '%s' for --hw-breakpoints (1 to 64)", optarg);
			o->hw_breakpoints = (int)v;
			break;
		}
		case O_TARGET_RAM: {
			char *end, *end2 = NULL;
			unsigned long long at = strtoull(optarg, &end, 0), len = *end == ':' ? strtoull(end + 1, &end2, 0) : 0;
			if (end == optarg || *end != ':' || end2 == end + 1 || *end2 || len < 64 || len > (1ull << 32) ||
			    at > (1ull << 32) - len || optarg[0] == '-' || end[1] == '-')
				cli_die(EXIT_USAGE, "invalid value '%s' for --target-ram (ADDR:LEN, e.g. 0x20008000:0x2000, "
				        "inside 32-bit memory)", optarg);
			o->target_ram = at;
			o->target_ram_len = len;
			break;
		}
		case 'h':
		case O_HELP: help(cmd); exit(0);
		case ':':
			cli_die(EXIT_USAGE, "option '%s' needs an argument (see 'sonde %s --help')", argv[optind - 1],
			        cmd->name);
		case '?':
			if (optopt && optopt < 256)
				cli_die(EXIT_USAGE, "unknown option '-%c' for 'sonde %s' (see 'sonde %s --help')", optopt,
				        cmd->name, cmd->name);
			/* fall through */
		default:
			cli_die(EXIT_USAGE, "unknown option '%s' for 'sonde %s' (see 'sonde %s --help')",
			        argv[optind - 1], cmd->name, cmd->name);
		}
	}
	if (o->ninputs > 1 && !(cmd->mask & CMD_REPORT))
		cli_die(EXIT_USAGE, "-i given %d times: only 'sonde report' adds up several recordings (to compare two, "
		        "see 'sonde diff BASE NEW')", o->ninputs);
	o->argc = argc - optind;
	o->argv = argv + optind;
}

int cli_want_json(struct cli_opts *o, const char *allowed)
{
	const char *f = o->format ? o->format : "table";
	size_t n = strlen(f);
	for (const char *p = allowed; n && (p = strstr(p, f)); p += n) {
		if ((p == allowed || p[-1] == ' ') && (p[n] == ' ' || p[n] == 0))
			return !strcmp(f, "json");
	}
	cli_die(EXIT_USAGE, "unknown format '%s' (expected one of: %s)", f, allowed);
}

const char *fmt_ns(double ns, char *buf, int len)
{
	if (ns < 1e3)
		snprintf(buf, len, "%.0f ns", ns);
	else if (ns < 1e6)
		snprintf(buf, len, "%.2f us", ns / 1e3);
	else if (ns < 1e9)
		snprintf(buf, len, "%.2f ms", ns / 1e6);
	else
		snprintf(buf, len, "%.3f s", ns / 1e9);
	return buf;
}

const char *fmt_ns_signed(double ns, char *buf, int len)
{
	char t[32];
	fmt_ns(ns < 0 ? -ns : ns, t, sizeof t);
	snprintf(buf, len, "%s%s", ns < 0 ? "-" : "+", t);
	return buf;
}

int term_width(void)
{
	const char *c = getenv("COLUMNS");
	if (c && atoi(c) > 20)
		return atoi(c);
	struct winsize ws;
	if (isatty(1) && ioctl(1, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 20)
		return ws.ws_col;
	return 120;
}

int cli_finish_stdout(int code)
{
	if (fflush(stdout) != 0 || ferror(stdout)) {
		cli_error("writing standard output failed");
		return code ? code : EXIT_DATA;
	}
	return code;
}
