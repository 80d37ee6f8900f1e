/* cli.h — what every sonde command shares: the parsed options, the command
 * entry signature, error reporting and output helpers. */
#ifndef SONDE_CLI_CLI_H
#define SONDE_CLI_CLI_H

#include <stdint.h>
#include <stdio.h>

/* Commands, as bits of an option's mask. */
enum {
	CMD_RECORD = 1u << 0, CMD_REPORT = 1u << 1, CMD_CALLERS = 1u << 2, CMD_TREE = 1u << 3,
	CMD_INFO = 1u << 4, CMD_EXPORT = 1u << 5, CMD_REPLAY = 1u << 6, CMD_FLAME = 1u << 7,
	CMD_LOCKS = 1u << 8, CMD_PROBE = 1u << 9, CMD_DIFF = 1u << 10,
	CMD_READERS = CMD_REPORT | CMD_CALLERS | CMD_TREE | CMD_INFO | CMD_EXPORT | CMD_REPLAY |
	              CMD_FLAME | CMD_LOCKS,
};

#define CLI_MAX_LIST 64

/* Every option of every command; a command reads the fields it owns. */
struct cli_opts {
	const char *input;      /* -i DIR  (default sonde.data; the first -i when given several) */
	const char *inputs[CLI_MAX_LIST]; int ninputs; /* every -i, in order (report adds them up) */
	const char *output;     /* -o PATH */
	const char *format;     /* --format=... (default "table" for reports) */
	const char *sort;       /* --sort=KEY */
	int limit;              /* --limit N (0 = no limit) */
	int threads;            /* --threads */
	int per_lock;           /* locks --per-lock */
	int tid;                /* --tid T (0 = all) */
	int sel_pid;            /* readers' --pid P (0 = all): the processes of that pid */
	int processes;          /* report --processes: one section per process */
	const char *sel_comm;   /* readers' --comm NAME (NULL = all): the processes running that program */
	int has_time_range; double time_from, time_to; /* --time-range A,B (seconds) */
	int depth;              /* --depth N */
	double min_percent;     /* --min-percent P */
	/* record */
	int trace, locks, lock_events, lossy;
	int syscalls;            /* record --syscalls / report --syscalls */
	uint64_t min_time_ns;   /* --min-time DUR */
	int timing;             /* --timing: INSTR_TIME_ALL (0), _NONE (1), _AUTO (2) (instr/instr.h) */
	const char *timed[CLI_MAX_LIST]; int ntimed;     /* --timed GLOB: functions timed whatever --timing says */
	const char *domain;     /* --domain auto|FILE */
	const char *filters[CLI_MAX_LIST]; int nfilters; /* "+glob" (-F) / "-glob" (-N) */
	uint64_t buffer_size;   /* --buffer-size BYTES per thread */
	uint64_t max_memory;    /* --max-memory BYTES: the session's cap (0: the default) */
	uint64_t keep_last;     /* --keep-last SIZE (0: keep everything) */
	int compress_none;      /* --compress=none */
	int no_follow_daemons;  /* --no-follow-daemons */
	const char *modules[CLI_MAX_LIST]; int nmodules; /* --module GLOB: libraries to patch */
	const char *execs[CLI_MAX_LIST]; int nexecs;     /* --exec GLOB: the programs of the tree to patch */
	int no_patch;           /* --no-patch: sonde-cc code only */
	/* probe */
	const char *specs[CLI_MAX_LIST]; int nspecs;     /* -e SPEC */
	int pid;                /* -p PID */
	double duration;        /* --duration SECONDS */
	double every;           /* --every SECONDS (record -p: windows) */
	long count;             /* --count N (with --every; 0: until Ctrl-C) */
	int interactive;        /* --interactive */
	int pending;            /* --pending */
	int kernel;             /* --kernel */
	int system;             /* --system */
	const char *library;    /* --library FILE */
	const char *plugin;     /* --plugin SO */
	int record_probe;       /* --record */
	uint64_t stack_copy;    /* --stack-copy BYTES (stack probes on the agent; 0: the default) */
	int stack_copy_only;    /* --stack-unwind=copy: every stack copied, none walked in the program */
	const char *target;     /* --target tcp:HOST:PORT | serial:DEV[,BAUD] */
	const char *engine;     /* --engine agent|ptrace (probe; NULL: agent where it can) */
	const char *exe;        /* --exe PROGRAM (with --target) */
	double timeout;         /* --timeout SECONDS (with --target; 0 = default) */
	int hw_breakpoints;     /* --hw-breakpoints N (with --target; 0 = not given) */
	uint64_t target_ram, target_ram_len; /* --target-ram ADDR:LEN (len 0 = not given) */
	const char *target_clock; /* record --target-clock SOURCE@HZ */
	/* positional arguments after the options (and after "--") */
	int argc; char **argv;
};

struct cli_command {
	const char *name;
	unsigned mask;
	int (*run)(struct cli_opts *o);
	const char *usage;      /* e.g. "[options] FUNC" */
	const char *summary;
};

/* The commands, one file each (record.c, report.c, ...): main.c's table
 * runs them, the reader fuzzer (tests/fuzz) some of them.  The exit code. */
int cmd_record(struct cli_opts *o);
/* record --target (record_remote.c) */
int cmd_record_remote(struct cli_opts *o);
int cmd_report(struct cli_opts *o);
/* report --syscalls (cli/syscalls.c) */
int report_syscalls(struct cli_opts *o, int json);
int cmd_callers(struct cli_opts *o);
int cmd_tree(struct cli_opts *o);
int cmd_info(struct cli_opts *o);
int cmd_export(struct cli_opts *o);
int cmd_replay(struct cli_opts *o);
int cmd_flamegraph(struct cli_opts *o);
int cmd_locks(struct cli_opts *o);
int cmd_probe(struct cli_opts *o);
int cmd_diff(struct cli_opts *o);

/* One entry of the option table (options.c).  --help, the man pages and the
 * shell completions (manual.c) are all generated from it. */
struct cli_option {
	const char *name;
	int val;            /* short option char, or a value >= 256 for a long-only option */
	int has_arg;        /* no_argument / required_argument / optional_argument */
	unsigned mask;      /* commands it applies to */
	const char *arg;    /* argument name for help */
	const char *help;
};
const struct cli_option *cli_options(int *n);

/* The hidden documentation commands of main.c: `sonde --help-man [PAGE]`
 * (list the man pages, or write one in troff) and `sonde --help-completion
 * bash|zsh`.  Returns the exit code. */
int cli_manual(const struct cli_command *cmds, int ncmds, int argc, char **argv);

/* Parse argv for command `cmd` (argv[0] is the command name). Exits 1 with
 * a message on a bad option; exits 0 after printing --help. */
void cli_parse(const struct cli_command *cmd, int argc, char **argv, struct cli_opts *o);

/* Errors: "sonde: error: <what> (<why>)" on stderr. */
#define EXIT_USAGE 1
#define EXIT_DATA  2
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
_Noreturn void cli_die(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void cli_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* --format helpers: 1 if json was asked; dies on a format not in `allowed`
 * (space-separated list, e.g. "table json"). */
int cli_want_json(struct cli_opts *o, const char *allowed);

/* Human output: times with units ("1.23 ms"), into buf. */
const char *fmt_ns(double ns, char *buf, int len);
/* The same with a sign: "+1.20 ms", "-350 ns". */
const char *fmt_ns_signed(double ns, char *buf, int len);
/* Terminal width (COLUMNS, ioctl, else 120). */
int term_width(void);
/* Parse "10ms", "50us", "3s", "100ns" (bare numbers are ns). -1 on error. */
int64_t parse_duration_ns(const char *s);

/* Open the -o file `path` (fopen mode); dies (exit 2) with a message saying
 * why, naming a missing directory (outfile.c). */
FILE *cli_open_output(const char *path, const char *mode);
/* Die the same way now if the directory of `path` does not exist (for
 * commands that write their file at the end of a long run). */
void cli_check_output_dir(const char *path);

/* Check stdout for write errors before exiting (returns the exit code to use). */
int cli_finish_stdout(int code);

/* NAME in sonde's runtime directory beside the binary (libpath.c), malloc'd real path; NULL if missing. */
char *cli_lib_path(const char *name);

#endif
