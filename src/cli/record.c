/* record.c — `sonde record`: run a program under the session and write the
 * recording directory. */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "analysis/domain_out.h"
#include "attach/agent.h"
#include "cli/cli.h"
#include "record/domain.h"
#include "record/record.h"
#include "record/convert.h"
#include "record/recorder.h"
#include "cli/record_patch.h"

/* What execvp would find (its path in out[0..n), when out): checked before
 * the old recording is replaced, so a typo does not cost the previous
 * recording. */
static int program_find(const char *prog, char *out, size_t outn)
{
	if (strchr(prog, '/')) {
		if (out)
			snprintf(out, outn, "%s", prog);
		return access(prog, X_OK) == 0;
	}
	const char *path = getenv("PATH");
	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	for (const char *p = path; *p;) {
		const char *e = strchr(p, ':');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		char buf[PATH_MAX];
		if (snprintf(buf, sizeof buf, "%.*s/%s", (int)n, n ? p : ".", prog) < (int)sizeof buf &&
		    access(buf, X_OK) == 0) {
			if (out)
				snprintf(out, outn, "%s", buf);
			return 1;
		}
		p += n + (e != NULL);
	}
	return 0;
}

/* After the recording, pass the program's end through: same exit code, or
 * the same signal (without a core dump of sonde itself). */
static int pass_status(const struct launched *l)
{
	if (!l->exited)
		return EXIT_DATA;
	if (WIFEXITED(l->status))
		return WEXITSTATUS(l->status);
	int sig = WTERMSIG(l->status);
	struct rlimit rl = { 0, 0 };
	setrlimit(RLIMIT_CORE, &rl);
	signal(sig, SIG_DFL);
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, sig);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
	fflush(stdout);
	raise(sig);
	return 128 + sig;
}

/* The end of every recording, launched or attached: the session audited,
 * the META lines, the profile records, the recorder closed (dies on error).
 * attached: "key=value" META lines of an attach (NULL-terminated), or NULL. */
static void write_recording(struct session *s, struct recorder *rec, const struct launched *l,
                            const struct record_config *cfg, const char *program, const char *cmd, size_t clen,
                            const char *recorder_name, int status, const char *const *attached)
{
	char msg[4096 + 256];
	uint64_t damaged = 0;
	int rc = recording_finish(s, rec, l, cfg, program, cmd, clen, recorder_name, status, attached, &damaged, msg,
	                          sizeof msg);
	if (damaged)
		cli_warn("the program wrote over sonde's session memory: %llu impossible values left out "
		         "(the recording keeps what was consistent; see 'sonde info')", (unsigned long long)damaged);
	if (rc)
		cli_die(EXIT_DATA, "%s", msg);
}

/* "sonde: recorded ..." on stderr; returns the number of modules. */
static uint32_t print_summary(struct session *s, const char *dir)
{
	struct sonde_session_hdr *h = s->hdr;
	uint32_t nmods = atomic_load(&h->nmodules), nthreads = sess_nthreads(h), nprocs = sess_nprocs(h);
	uint64_t lost = 0;
	for (int i = 0; i < SONDE_LOST_COUNT_; i++)
		lost += h->lost[i];
	for (uint32_t i = 0; i < nthreads; i++) {
		uint64_t off = h->threads_off[i];
		if (!off || !sess_inside(s->size, off, sizeof(struct sonde_thread)))
			continue;
		struct sonde_thread *t = sess_thread(h, i);
		for (int k = 0; k < SONDE_LOST_COUNT_; k++)
			if (k != SONDE_LOST_UNNUMBERED)
				lost += t->lost[k];
	}
	fprintf(stderr, "sonde: recorded %u process%s, %u thread%s, %u instrumented module%s into %s/",
	        nprocs, nprocs == 1 ? "" : "es", nthreads, nthreads == 1 ? "" : "s", nmods, nmods == 1 ? "" : "s", dir);
	if (lost)
		fprintf(stderr, " (%llu events lost: see 'sonde info')", (unsigned long long)lost);
	fputc('\n', stderr);
	char grew[512];
	if (session_growth_line(s, grew, sizeof grew))
		fprintf(stderr, "sonde: %s\n", grew);
	return nmods;
}

/* --syscalls without the kernel's futex events: one line, the rest recorded */
static void warn_futex(const struct session *s)
{
	if (s->futex_why[0])
		cli_warn("futex calls are not counted (%s); every other system call is", s->futex_why);
}

/* A first estimate of the tick rate, for --min-time (refined at the end):
 * 20 ms from the recorder's first clock point. */
static double guess_ticks_per_ns(const struct recorder *rec)
{
	struct clock_point cal;
	struct timespec ts = { 0, 20 * 1000 * 1000 };
	nanosleep(&ts, NULL);
	clock_point_take(&cal);
	double tpn = clock_ticks_per_ns(&rec->c0, &cal);
	return tpn > 0 ? tpn : 1.0;
}

/* The end of a trace, launched or attached: domain.txt (the functions that
 * left records, for --domain auto next time) and, with filters, what they
 * kept out.  ndomain: functions of --domain (0 without). */
static void trace_ending(const struct cli_opts *o, struct session *s, const char *dir, int ndomain)
{
	char msg[4096 + 256];
	if (domain_write(s, dir, msg, sizeof msg) < 0)
		cli_warn("%s (no domain file written)", msg);
	if (o->domain || o->nfilters || o->depth) {
		struct domain_stats ds;
		domain_stats(s, &ds);
		if (ndomain > 0)
			fprintf(stderr, "sonde: domain: %d of %" PRIu64 " functions traced; ", ndomain, ds.funcs);
		else
			fprintf(stderr, "sonde: trace filters: ");
		fprintf(stderr, "%" PRIu64 " functions left dormant (their calls cost nothing); %" PRIu64
		        " calls kept out of the trace by the other filters\n", ds.dormant, ds.filtered);
	}
}

static volatile sig_atomic_t end_requested;

static void request_end(int sig)
{
	(void)sig;
	end_requested = 1;
}

/* Copy of a session string the program's side wrote: bounded, NUL-ended. */
static void copy_str(char *dst, size_t n, const char *src, size_t srcmax)
{
	size_t k = strnlen(src, srcmax < n ? srcmax : n - 1);
	memcpy(dst, src, k);
	dst[k] = 0;
}

/* The attach's META lines: when (wall clock), how many threads were
 * stopped, and per thread the instrumented calls that were running,
 * outermost first ("attached_running.TID", names separated by tabs). */
static void attach_meta(struct meta_buf *m, struct session *s, const struct agent *a)
{
	char v[64];
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	struct tm tm;
	gmtime_r(&now.tv_sec, &tm);
	strftime(v, sizeof v, "%Y-%m-%dT%H:%M:%SZ", &tm);
	meta_add(m, "attached_at", v);
	snprintf(v, sizeof v, "%d", a->frames.nthreads);
	meta_add(m, "attached_threads", v);
	const struct attach_frames *fr = &a->frames;
	for (int i = 0; i < fr->n;) {
		pid_t tid = fr->f[i].tid;
		size_t len = 0, cap = 0;
		char *names = NULL;
		for (; i < fr->n && fr->f[i].tid == tid; i++) {
			const char *nm = fr->f[i].name;
			if (!nm || !frames_is_instrumented(s->hdr, s->size, fr->f[i].fn))
				continue;
			size_t k = strlen(nm);
			if (len + k + 2 > cap) {
				cap = (len + k + 2) * 2;
				char *p = realloc(names, cap);
				if (!p)
					continue; /* that name is left out */
				names = p;
			}
			if (len)
				names[len++] = '\t';
			memcpy(names + len, nm, k);
			len += k;
			names[len] = 0;
		}
		if (names) {
			char key[48];
			snprintf(key, sizeof key, "attached_running.%d", (int)tid);
			meta_add(m, key, names);
			free(names);
		}
	}
}

/* `sonde record [--locks] [--trace] -p PID`: the agent (docs/ATTACH.md)
 * records the running program until Ctrl-C, --duration or its end; then its
 * sleds go back to nops and its lock calls to libc, it runs on, and the
 * recording is written as a launched one is. */
static int record_attached(struct cli_opts *o, struct record_config *cfg, const char *dir)
{
	if (o->argc)
		cli_die(EXIT_USAGE, "record -p PID takes no program (it records the running process PID)");
	int locks = (cfg->mode & SONDE_MODE_LOCKS) != 0;
	if (cfg->mode & SONDE_MODE_LOCK_EVENTS)
		cli_die(EXIT_USAGE, "record -p does not stream lock events yet (--locks=events and --locks --trace); "
		        "--locks -p records the lock aggregates");
	if (o->domain)
		cli_die(EXIT_USAGE, "--domain does not apply to record -p (use -F / -N)");
	char *rt = cli_lib_path("libsonde-rt.so");
	if (!rt)
		cli_die(EXIT_DATA, "cannot find the runtime libsonde-rt.so next to the sonde binary (is the build complete?)");
	int rings = (cfg->mode & SONDE_MODE_TRACE) != 0;
	static struct recorder rec;
	char msg[4096 + 256];
	int rc = recorder_open(&rec, dir, rings ? RECORDER_EVENTS : 0, msg, sizeof msg);
	if (rc)
		cli_die(rc == RECORDER_USAGE ? EXIT_USAGE : EXIT_DATA, "%s", msg);
	struct session s;
	rc = session_create(&s, cfg, cfg->min_time_ns ? guess_ticks_per_ns(&rec) : 1.0, dir);
	if (rc) {
		recorder_abort(&rec);
		cli_die(EXIT_DATA, "cannot create the session memory for %s (%s)", dir, strerror(-rc));
	}
	session_note_recorder(&s, &rec.c0, 0, 1);
	warn_futex(&s);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = request_end; /* no SA_RESTART: the wait below wakes */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	/* The program's own functions, patched without a rebuild unless it is a
	 * sonde-cc build (and the libraries of --module). */
	static struct record_patch patch;
	char exe[64], exe_path[PATH_MAX];
	snprintf(exe, sizeof exe, "/proc/%d/exe", o->pid);
	ssize_t el = readlink(exe, exe_path, sizeof exe_path - 1);
	struct stat st1, st2;
	if (el <= 0 || stat(exe, &st1) != 0 || (exe_path[el] = 0, stat(exe_path, &st2) != 0) || st1.st_ino != st2.st_ino ||
	    st1.st_dev != st2.st_dev)
		snprintf(exe_path, sizeof exe_path, "%s", exe); /* deleted or replaced since: the file it runs */
	{
		if (record_patch_plan(o, exe_path, &s, &patch, msg, sizeof msg)) {
			session_destroy(&s);
			recorder_abort(&rec);
			cli_die(EXIT_DATA, "%s", msg);
		}
		agent_serve_with(record_patch_serve, &patch);
	}
	struct agent a;
	rc = agent_start(o->pid, rt, s.fd, s.hdr, locks, &a, msg, sizeof msg);
	agent_serve_with(NULL, NULL);
	free(rt);
	if (rc) {
		session_destroy(&s);
		recorder_abort(&rec);
		cli_die(EXIT_DATA, "%s", msg);
	}
	if (locks)
		fprintf(stderr, "sonde: recording process %d (locks: %d object%s redirected; %d instrumented module%s); "
		        "Ctrl-C ends the recording\n", o->pid, a.nobjs, a.nobjs == 1 ? "" : "s", a.nmods,
		        a.nmods == 1 ? "" : "s");
	else
		fprintf(stderr, "sonde: recording process %d (%d instrumented module%s); Ctrl-C ends the recording\n",
		        o->pid, a.nmods, a.nmods == 1 ? "" : "s");
	if (locks && !a.nobjs)
		cli_warn("process %d calls no lock function through a shared library's entry points: nothing to record "
		         "yet (libraries it dlopens later are followed)", o->pid);
	if (a.frames_err[0])
		cli_warn("%s (calls running at the attach are left out)", a.frames_err);
	attach_meta(&rec.meta, &s, &a);
	uint64_t t0 = clock_mono_ns();
	int alive = 1;
	while (!end_requested && (alive = agent_target_alive(o->pid))) {
		double el = (double)(clock_mono_ns() - t0) / 1e9;
		if (o->duration > 0 && el >= o->duration)
			break;
		record_patch_serve(&patch); /* libraries of --module it loads now */
		/* A trace: drain the rings while the process runs (as collect does). */
		if (rings && collector_drain(&s, &rec, 0))
			continue;
		struct timespec nap = { 0, (rings ? 1 : 10) * 1000 * 1000 };
		nanosleep(&nap, NULL);
	}
	if (alive && agent_stop(&a, msg, sizeof msg) && agent_target_alive(o->pid))
		cli_warn("%s (the agent's watcher switches the recording off when sonde ends)", msg);
	else if (!alive)
		agent_stop(&a, msg, sizeof msg); /* closes our end of the pipe */
	if (rings) /* the agent has ended: nothing more comes into the rings */
		collector_drain(&s, &rec, 1);
	struct launched l;
	memset(&l, 0, sizeof l);
	l.pid = o->pid;
	l.end_tsc = clock_ticks(); /* frames still open are closed here */

	struct sonde_proc *p = &s.hdr->procs[0];
	char program[SONDE_PATH_MAX + 1], cmd[SONDE_PATH_MAX + 1], pidstr[16];
	copy_str(program, sizeof program, p->exe, sizeof p->exe);
	size_t clen = p->cmdline_len < sizeof p->cmdline ? p->cmdline_len : sizeof p->cmdline;
	memcpy(cmd, p->cmdline, clen);
	cmd[clen] = 0;
	snprintf(pidstr, sizeof pidstr, "%d", o->pid);
	const char *meta[] = { "attached_pid", pidstr, "attached_end", alive ? "detached" : "process ended", NULL };
	/* the attach's META lines, then what was patched */
	const char *const *pm = record_patch_meta(&patch);
	size_t npm = 0;
	while (pm && pm[npm])
		npm++;
	const char **metas = malloc((npm + 8) * sizeof *metas);
	if (!metas)
		cli_die(EXIT_DATA, "out of memory");
	size_t nm = 0;
	for (int i = 0; meta[i]; i++)
		metas[nm++] = meta[i];
	for (size_t i = 0; i < npm; i++)
		metas[nm++] = pm[i];
	metas[nm] = NULL;
	write_recording(&s, &rec, &l, cfg, program[0] ? program : "?", cmd, clen, "sonde record -p", INT32_MIN, metas);
	free(metas);
	record_patch_end(&patch);
	agent_free(&a);
	if (rings)
		trace_ending(o, &s, dir, 0);
	print_summary(&s, dir);
	session_destroy(&s);
	return 0;
}

/* `sonde record -p PID --duration S --every T [--count N] [--format=pprof]`:
 * one attached recording of S seconds every T seconds, each into DIR/START
 * (its start, UTC, to the millisecond), with pprof also DIR/START.pb.gz.
 * Each window is an attach of its own (docs/ATTACH.md, "Windows"): between
 * windows nothing of sonde's is patched in the process.  A window runs in a
 * child of ours (record_attached ends with cli_die on an error, and its
 * state is per recording); Ctrl-C ends the window under way, which is
 * written, and the series. */
static int record_windows(struct cli_opts *o, struct record_config *cfg, const char *dir)
{
	if (o->duration <= 0)
		cli_die(EXIT_USAGE, "--every needs --duration (the length of each window)");
	if (o->duration > o->every)
		cli_die(EXIT_USAGE, "--duration (%g s) is longer than --every (%g s)", o->duration, o->every);
	if (o->format && strcmp(o->format, "pprof"))
		cli_die(EXIT_USAGE, "record --every writes recordings, and with --format=pprof a pprof file per window "
		        "(not '%s')", o->format);
	if (!o->pid)
		cli_die(EXIT_USAGE, "--every goes with -p PID (windows of a running process)");
	if (mkdir(dir, 0777) != 0 && errno != EEXIST)
		cli_die(EXIT_DATA, "cannot create %s (%s)", dir, strerror(errno));
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = request_end;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	uint64_t every_ns = (uint64_t)(o->every * 1e9), next = clock_mono_ns();
	for (long n = 0; !end_requested && (!o->count || n < o->count); n++) {
		struct timespec now;
		clock_gettime(CLOCK_REALTIME, &now);
		struct tm tm;
		gmtime_r(&now.tv_sec, &tm);
		char stamp[32], name[PATH_MAX], pb[PATH_MAX + 8];
		strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%S", &tm);
		if (snprintf(name, sizeof name, "%s/%s.%03ldZ", dir, stamp, now.tv_nsec / 1000000) >= (int)sizeof name)
			cli_die(EXIT_USAGE, "-o %s: the path is too long", dir);
		snprintf(pb, sizeof pb, "%s.pb.gz", name);
		fflush(NULL);
		pid_t c = fork();
		if (c < 0)
			cli_die(EXIT_DATA, "cannot fork (%s)", strerror(errno));
		if (c == 0) {
			int rc = record_attached(o, cfg, name);
			if (!rc && o->format) {
				struct cli_opts eo = *o;
				eo.input = name;
				eo.inputs[0] = name;
				eo.ninputs = 1;
				eo.output = pb;
				eo.format = "pprof";
				rc = cmd_export(&eo);
			}
			fflush(NULL);
			_exit(rc);
		}
		int st = 0;
		while (waitpid(c, &st, 0) < 0) {
			if (errno != EINTR)
				break;
			if (end_requested)
				kill(c, SIGINT); /* a signal for us alone: the window ends, as with Ctrl-C */
		}
		if (WIFSIGNALED(st)) {
			cli_error("window %ld: its recording process was killed by signal %d (%s is incomplete)", n + 1,
			          WTERMSIG(st), name);
			return EXIT_DATA;
		}
		if (!WIFEXITED(st) || WEXITSTATUS(st)) /* its error was said */
			return WIFEXITED(st) ? WEXITSTATUS(st) : EXIT_DATA;
		fprintf(stderr, "sonde: window %ld: %s%s%s\n", n + 1, name, o->format ? ", " : "", o->format ? pb : "");
		if (!agent_target_alive(o->pid))
			break;
		next += every_ns;
		while (!end_requested && (!o->count || n + 1 < o->count)) {
			uint64_t t = clock_mono_ns();
			if (t >= next)
				break;
			uint64_t left = next - t < 100000000u ? next - t : 100000000u;
			struct timespec nap = { 0, (long)left };
			nanosleep(&nap, NULL); /* a signal wakes it */
		}
	}
	return 0;
}

/* The program exited a second ago and processes it started still run. */
static void tell_left_running(void *arg, int pid)
{
	(void)pid;
	fprintf(stderr, "sonde: %s exited; still recording the processes it left running (daemons). Ctrl-C ends the "
	        "recording and leaves them running; --no-follow-daemons ends at the program's exit\n", (const char *)arg);
}

/* The command line, its words separated by NULs (as /proc/PID/cmdline):
 * malloc'ed, its length in *len; NULL when out of memory. */
static char *command_line(const struct cli_opts *o, size_t *len)
{
	size_t n = 0;
	for (int i = 0; i < o->argc; i++)
		n += strlen(o->argv[i]) + 1;
	char *cmd = malloc(n + 1), *q = cmd;
	for (int i = 0; cmd && i < o->argc; i++)
		q = stpcpy(q, o->argv[i]) + 1;
	*len = cmd ? n : 0;
	return cmd;
}

/* record --keep-last: SIGUSR2 to sonde writes DIR.snap-N/ (snapshot.c). */
struct snap_ctx {
	struct session *s;
	struct recorder *rec;
	const struct launched *l;
	const struct record_config *cfg;
	const struct cli_opts *o;
};

static void take_snapshot(void *arg)
{
	const struct snap_ctx *c = arg;
	char path[PATH_MAX + 32], msg[4096 + 256];
	size_t clen;
	char *cmd = command_line(c->o, &clen);
	if (record_snapshot(c->s, c->rec, c->l, c->cfg, c->o->argv[0], cmd ? cmd : "", clen, path, sizeof path, msg,
	                    sizeof msg))
		cli_warn("no snapshot written: %s", msg);
	else
		fprintf(stderr, "sonde: snapshot of the newest events written to %s/; recording goes on\n", path);
	free(cmd);
}

int cmd_record(struct cli_opts *o)
{
	if (o->target)
		return cmd_record_remote(o);
	if (o->exe || o->timeout || o->hw_breakpoints || o->target_clock || o->target_ram_len)
		cli_die(EXIT_USAGE, "--exe, --timeout, --hw-breakpoints, --target-clock and --target-ram go with --target");
	if ((o->every > 0 || o->count) && !o->pid)
		cli_die(EXIT_USAGE, "--every and --count go with -p PID (windows of a running process)");
	if (o->count && !(o->every > 0))
		cli_die(EXIT_USAGE, "--count goes with --every");
	if (o->format && !(o->every > 0))
		cli_die(EXIT_USAGE, "record --format goes with --every (write a pprof file per window: --format=pprof)");
	if (o->argc < 1 && !o->pid)
		cli_die(EXIT_USAGE, "no program to record (usage: sonde record [options] -- PROGRAM [ARGS...], or "
		        "sonde record -p PID)");
	const char *dir = o->output ? o->output : "sonde.data";
	struct record_config cfg;
	memset(&cfg, 0, sizeof cfg);
	cfg.mode = SONDE_MODE_PROFILE;
	/* --trace --timing=auto keeps the calling-context trees beside the
	 * timeline: the learned policy reads them (instr/policy.c) */
	if (o->trace)
		cfg.mode = SONDE_MODE_TRACE | (o->timing == INSTR_TIME_AUTO ? SONDE_MODE_PROFILE : 0);
	if (o->locks)
		cfg.mode |= SONDE_MODE_LOCKS;
	if (o->lock_events || (o->locks && o->trace))
		cfg.mode |= SONDE_MODE_LOCK_EVENTS;
	if (o->lossy)
		cfg.mode |= SONDE_MODE_LOSSY;
	if (o->syscalls)
		cfg.mode |= SONDE_MODE_SYSCALLS;
	/* --timing=none times nothing patched: the off-CPU split (a perf event
	 * per thread, its switch records read by the hooks) would split no
	 * function's time, and it costs a server 8-9% (docs/PERFORMANCE.md) */
	if (o->timing == INSTR_TIME_NONE && !o->ntimed)
		cfg.mode |= SONDE_MODE_NO_CPU;
	if (!o->trace && (o->min_time_ns || o->nfilters || o->domain || o->depth))
		cli_die(EXIT_USAGE, "--depth, --min-time, -F, -N and --domain apply to --trace recordings");
	if (o->ntimed && !o->timing)
		cli_die(EXIT_USAGE, "--timed chooses functions to time under --timing=none or auto (with all, every one is)");
	/* a counted call has no calling context, which -F/-N/--domain choose by */
	if (o->trace && o->timing && (o->nfilters || o->domain))
		cli_die(EXIT_USAGE, "-F, -N and --domain choose a trace's calls by their callers, which a counted call "
		        "(--timing=none|auto) does not have: use them with --timing=all");
	if (o->keep_last && !(cfg.mode & (SONDE_MODE_TRACE | SONDE_MODE_LOCK_EVENTS)))
		cli_die(EXIT_USAGE, "--keep-last applies to recordings with events (--trace, --locks=events)");
	if (o->keep_last && o->keep_last < (1u << 20))
		cli_die(EXIT_USAGE, "--keep-last must be at least 1M");
	if (o->keep_last && o->pid)
		cli_die(EXIT_USAGE, "--keep-last with -p is not supported yet");
	cfg.max_depth = o->trace ? (uint32_t)o->depth : 0;
	cfg.min_time_ns = o->min_time_ns;
	cfg.filters = o->filters;
	cfg.nfilters = o->nfilters;
	cfg.mem_cap = o->max_memory;
	if (o->max_memory && o->max_memory < (16u << 20))
		cli_die(EXIT_USAGE, "--max-memory must be at least 16M");
	if (o->pid) {
		cfg.thread_region = o->buffer_size ? o->buffer_size : 16ull << 20;
		cfg.session_size = 256ull << 30;
		cfg.ring_size = 8ull << 20;
		int rc = o->every > 0 ? record_windows(o, &cfg, dir) : record_attached(o, &cfg, dir);
		for (int i = 0; i < o->nfilters; i++)
			free((char *)o->filters[i]); /* allocated by cli_parse */
		return rc;
	}
	char prog_path[PATH_MAX];
	if (!program_find(o->argv[0], prog_path, sizeof prog_path))
		cli_die(EXIT_DATA, "cannot run %s (no such program%s)", o->argv[0],
		        strchr(o->argv[0], '/') ? "" : " in PATH");
	cfg.thread_region = o->buffer_size ? o->buffer_size : 16ull << 20;
	if (cfg.thread_region < 256 * 1024)
		cli_die(EXIT_USAGE, "--buffer-size must be at least 256K");
	cfg.ring_size = 8ull << 20;
	if (o->keep_last) /* the rings sonde reads count in the bound: SIZE/16 per thread, 256K..8M */
		cfg.ring_size = o->keep_last / 16 < (256u << 10) ? 256u << 10 : o->keep_last / 16 > cfg.ring_size
		                ? cfg.ring_size : o->keep_last / 16 / RING_CHUNK_SIZE * RING_CHUNK_SIZE;
	cfg.session_size = 256ull << 30;
	/* bench/trace_insns.sh: valgrind, which it runs the program under, maps
	 * no 256 GiB; the threads' regions and rings are allocated in the
	 * session as they come, so a small program records into far less */
	const char *bs = getenv("SONDE_BENCH_SESSION");
	unsigned long long bsz = bs ? strtoull(bs, NULL, 0) : 0;
	if (bsz >= (64ull << 20))
		cfg.session_size = bsz;

	char *rt = cli_lib_path("libsonde-rt.so");
	if (!rt)
		cli_die(EXIT_DATA, "cannot find the runtime libsonde-rt.so next to the sonde binary (is the build complete?)");
	int rings = (cfg.mode & (SONDE_MODE_TRACE | SONDE_MODE_LOCK_EVENTS)) != 0;
	static struct recorder rec;
	char msg[4096 + 256];
	int rc = recorder_open(&rec, dir, (rings ? RECORDER_EVENTS : 0) | (o->domain ? RECORDER_KEEP_DOMAIN : 0), msg,
	                       sizeof msg);
	if (rc)
		cli_die(rc == RECORDER_USAGE ? EXIT_USAGE : EXIT_DATA, "%s", msg);
	rec.keep_last = o->keep_last;
	rec.zstd_level = o->compress_none ? 0 : 1;

	struct session s;
	rc = session_create(&s, &cfg, guess_ticks_per_ns(&rec), dir);
	if (rc) {
		recorder_abort(&rec);
		cli_die(EXIT_DATA, "cannot create the session memory for %s (%s)", dir, strerror(-rc));
	}
	session_note_recorder(&s, &rec.c0, rings, 0);
	warn_futex(&s);
	int ndomain = 0; /* --domain: the functions of the domain file become the only traced set */
	if (o->domain) {
		ndomain = domain_apply(&s, dir, o->domain, msg, sizeof msg);
		if (ndomain < 0) {
			session_destroy(&s);
			recorder_abort(&rec);
			cli_die(EXIT_USAGE, "%s", msg);
		}
	}

	static struct record_patch patch;
	if (record_patch_plan(o, prog_path, &s, &patch, msg, sizeof msg)) {
		session_destroy(&s);
		recorder_abort(&rec);
		cli_die(EXIT_DATA, "%s", msg);
	}
	struct launched l;
	rc = launch_program(o->argv, &s, rt, &l);
	record_patch_serve_in(&patch, &l);
	free(rt);
	l.end_at_exit = o->no_follow_daemons;
	l.left_running = tell_left_running;
	l.arg = o->argv[0];
	struct snap_ctx snap = { &s, &rec, &l, &cfg, o };
	if (o->keep_last) {
		l.snapshot = take_snapshot;
		l.snap_arg = &snap;
	}
	collect(&s, &l, rings ? &rec : NULL);
	if (l.left)
		fprintf(stderr, "sonde: %s exited; the recording ends here and the processes it started go on running "
		        "(their later calls are not recorded)\n", o->argv[0]);
	if (rc) {
		session_destroy(&s);
		recorder_abort(&rec);
		cli_die(EXIT_DATA, "cannot run %s (%s)", o->argv[0], strerror(-rc));
	}
	size_t clen;
	char *cmd = command_line(o, &clen);
	int status = !l.exited ? INT32_MIN : WIFEXITED(l.status) ? WEXITSTATUS(l.status) : -WTERMSIG(l.status);
	write_recording(&s, &rec, &l, &cfg, o->argv[0], cmd ? cmd : "", clen, "sonde record", status,
	                record_patch_meta(&patch));
	free(cmd);

	if (o->trace)
		trace_ending(o, &s, dir, ndomain);
	uint32_t nmods = print_summary(&s, dir);
	record_patch_end(&patch);
	session_destroy(&s);
	for (int i = 0; i < o->nfilters; i++)
		free((char *)o->filters[i]); /* allocated by cli_parse */
	if (nmods == 0 && !(cfg.mode & SONDE_MODE_LOCKS)) {
		cli_error("%s has no function sonde could record (%s)", o->argv[0],
		          o->no_patch ? "--no-patch: build it with sonde-cc, or leave --no-patch out"
		                      : "see the warnings above; or use --locks");
		return EXIT_DATA;
	}
	return pass_status(&l);
}
