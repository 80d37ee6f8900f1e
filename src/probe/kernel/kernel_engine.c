/* kernel_engine.c — the probe engine of the running kernel and its modules
 * (`sonde probe --kernel -e func:FUNCTION`, `func:MODULE:FUNCTION`; issue
 * 42).  Each func probe is two counting perf events per online CPU of the
 * kernel's kprobe PMU (/sys/bus/event_source/devices/kprobe): a kprobe on
 * the function's entry (its calls) and a kretprobe (its returns, the PMU's
 * retprobe bit).  The kernel counts every hit itself; sonde reads the
 * counts at the end.  A perf-event kprobe belongs to its file descriptor:
 * it is in no kprobe_events list and goes when the fd closes, so a sonde
 * that ends in any way (SIGKILL included) leaves nothing.  Before anything
 * is placed, each function is checked against the kprobe blacklist
 * (/sys/kernel/debug/kprobes/blacklist); one the kernel cannot find is
 * told as such from /proc/kallsyms (a text symbol, in MODULE when given),
 * read only then.  The session lasts until
 * --duration, Ctrl-C / SIGTERM, or the end of a program given to run:
 * then the events are the program's own (per task, inherited by its
 * children, enabled at its exec), so only its hits count.  The output half is the func kind's (callstats.c).  See
 * docs/PROBES.md, "Kernel probes". */
#include "probe/probe_engine.h"

#include "common/json.h"
#include "probe/callstats.h"
#include "probe/engine.h"
#include "probe/kind.h"
#include "probe/probe.h"
#include "probe/spec.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define K_MAX_CPUS 1024
#define K_SYSFS "/sys/bus/event_source/devices/kprobe"
#define K_BLACKLIST "/sys/kernel/debug/kprobes/blacklist"

struct kfunc {
	struct call_stats cs;
	char sym[256];           /* what the PMU is given: FUNCTION or MODULE:FUNCTION */
	int *fd;                 /* 2 * ncpus: entry, return per CPU (-1: none) */
};

static struct {
	int type, retbit, ncpus;
	int cpus[K_MAX_CPUS];    /* system-wide: the online CPUs; a program's: {-1} */
	pid_t pid;               /* -1 system-wide, else the program's (its hits and its children's) */
	int go_fd;               /* the program waits on this pipe before its exec, or -1 */
	struct engine *e;
} ks;

static volatile sig_atomic_t stop_flag;
static struct sigaction old_int, old_term;

static void on_signal(int sig)
{
	(void)sig;
	stop_flag = 1;
}

static void handlers(int on)
{
	static int installed;
	if (on && !installed) {
		struct sigaction sa = { .sa_handler = on_signal };
		sigemptyset(&sa.sa_mask);
		sigaction(SIGINT, &sa, &old_int);
		sigaction(SIGTERM, &sa, &old_term);
	} else if (!on && installed) {
		sigaction(SIGINT, &old_int, NULL);
		sigaction(SIGTERM, &old_term, NULL);
	}
	installed = on;
}

/* The first line of path into buf: 0, or -1. */
static int read_line(const char *path, char *buf, size_t n)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	int ok = fgets(buf, (int)n, f) != NULL;
	fclose(f);
	return ok ? 0 : -1;
}

/* The online CPUs ("0-3,6"): 0, or -1 with err. */
static int read_cpus(char *err, size_t n)
{
	char b[4096], *s;
	ks.ncpus = 0;
	if (read_line("/sys/devices/system/cpu/online", b, sizeof b)) {
		snprintf(err, n, "cannot read /sys/devices/system/cpu/online");
		return -1;
	}
	for (s = b; *s && *s != '\n';) {
		char *end;
		long a = strtol(s, &end, 10), z = a;
		if (end == s || a < 0)
			break;
		if (*end == '-')
			z = strtol(end + 1, &end, 10);
		for (long c = a; c <= z && ks.ncpus < K_MAX_CPUS; c++)
			ks.cpus[ks.ncpus++] = (int)c;
		s = *end == ',' ? end + 1 : end;
	}
	if (!ks.ncpus) {
		snprintf(err, n, "no online CPU in /sys/devices/system/cpu/online");
		return -1;
	}
	return 0;
}

/* MODULE and FUNCTION of a func probe's location (func:MODULE:FUNCTION is
 * parsed as location MODULE, argument FUNCTION). */
static int split_loc(const struct spec *sp, char *sym, size_t n, char *err, size_t en)
{
	if (strcmp(sp->kind, "func") || sp->loc != LOC_FUNC || sp->off) {
		snprintf(err, en, "the kernel engine runs func:FUNCTION and func:MODULE:FUNCTION probes only");
		return -1;
	}
	const char *m = sp->args ? sp->func : NULL, *f = sp->args ? sp->args : sp->func;
	if (strlen(f) > 200 || (m && strlen(m) > 55) || strchr(f, ':') || !f[0]) {
		snprintf(err, en, "bad kernel function '%s'", f);
		return -1;
	}
	snprintf(sym, n, "%s%s%s", m ? m : "", m ? ":" : "", f);
	return 0;
}

/* Whether /proc/kallsyms has sym (FUNCTION or MODULE:FUNCTION) as text:
 * 1, 0, or -1 (unreadable). */
static int kallsyms_has(const char *sym)
{
	const char *c = strchr(sym, ':');
	char mod[64] = "", line[512], name[256], m[80];
	const char *fn = sym;
	if (c) {
		snprintf(mod, sizeof mod, "[%.*s]", (int)(c - sym), sym);
		fn = c + 1;
	}
	FILE *f = fopen("/proc/kallsyms", "r");
	if (!f)
		return -1;
	int found = 0;
	while (!found && fgets(line, sizeof line, f)) {
		char t;
		m[0] = 0;
		if (sscanf(line, "%*s %c %255s %79s", &t, name, m) < 2 || (t != 't' && t != 'T'))
			continue;
		found = !strcmp(name, fn) && (!c || !strcmp(m, mod));
	}
	fclose(f);
	return found;
}

/* Whether FUNCTION (of sym) is in the kprobe blacklist: 1, 0, -1 unreadable. */
static int blacklisted(const char *sym)
{
	const char *c = strchr(sym, ':'), *fn = c ? c + 1 : sym;
	char line[512], name[256];
	FILE *f = fopen(K_BLACKLIST, "r");
	if (!f)
		return -1;
	int found = 0;
	while (!found && fgets(line, sizeof line, f))
		found = sscanf(line, "%*s %255s", name) == 1 && !strcmp(name, fn);
	fclose(f);
	return found;
}

/* --- the func kind's output through callstats ----------------------------- */

static const char *name_of(void *arg, uint64_t ret, char *buf, size_t n)
{
	(void)arg;
	snprintf(buf, n, "0x%llx", (unsigned long long)ret);
	return buf;
}

static void kfunc_json(struct probe *p, struct json *j)
{
	struct kfunc *d = p->data;
	if (d) {
		callstats_json(&d->cs, j, name_of, NULL);
		json_bool(j, "timed", 0);   /* counted by the kernel: no durations yet */
	}
}

static void kfunc_table(struct probe *p, FILE *f)
{
	struct kfunc *d = p->data;
	if (d)
		fprintf(f, "calls %llu, returns %llu (counted by the kernel)",
		        (unsigned long long)d->cs.calls, (unsigned long long)d->cs.returns);
}

static void close_fds(struct kfunc *d)
{
	for (int i = 0; d->fd && i < 2 * ks.ncpus; i++)
		if (d->fd[i] >= 0) {
			close(d->fd[i]);
			d->fd[i] = -1;
		}
}

static void kfunc_free(struct probe *p)
{
	struct kfunc *d = p->data;
	if (d) {
		close_fds(d);
		free(d->fd);
		callstats_free(&d->cs);
	}
	free(d);
	p->data = NULL;
}

static const struct kind_ops kfunc_ops = {
	.name = "func", .needs_location = 1, .json = kfunc_json, .table = kfunc_table, .free = kfunc_free,
};

/* --- placement ------------------------------------------------------------ */

static int open_one(const char *sym, int ret, int cpu)
{
	struct perf_event_attr a;
	memset(&a, 0, sizeof a);
	a.size = sizeof a;
	a.type = (uint32_t)ks.type;
	a.config = ret ? 1ull << ks.retbit : 0;
	a.config1 = (uint64_t)(uintptr_t)sym;   /* kprobe_func */
	a.config2 = 0;                          /* its offset */
	if (ks.pid > 0) {
		/* the program's own hits from its exec on (not sonde's child
		 * waiting for it), and its children's */
		a.disabled = 1;
		a.enable_on_exec = 1;
		a.inherit = 1;
	}
	return (int)syscall(SYS_perf_event_open, &a, ks.pid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

static int place_func(struct probe *p, char *err, size_t n)
{
	struct kfunc *d = calloc(1, sizeof *d);
	if (!d || !(d->fd = malloc(sizeof *d->fd * 2 * (size_t)ks.ncpus))) {
		free(d);
		snprintf(err, n, "out of memory");
		return -1;
	}
	p->data = d;
	callstats_init(&d->cs);
	for (int i = 0; i < 2 * ks.ncpus; i++)
		d->fd[i] = -1;
	if (split_loc(&p->sp, d->sym, sizeof d->sym, err, n))
		return -1;
	if (blacklisted(d->sym) == 1) {
		snprintf(err, n, "%s is in the kernel's kprobe blacklist (%s): the kernel refuses probes there", d->sym,
		         K_BLACKLIST);
		return -1;
	}
	for (int c = 0; c < ks.ncpus; c++)
		for (int r = 0; r < 2; r++) {
			int fd = open_one(d->sym, r, ks.cpus[c]);
			if (fd < 0) {
				int en = errno;
				close_fds(d);
				/* the reason: /proc/kallsyms is read only then (it is long) */
				if (kallsyms_has(d->sym) == 0) {
					snprintf(err, n, "no function %s in the running kernel (/proc/kallsyms)", d->sym);
					return -1;
				}
				snprintf(err, n, "%s: the kernel refused a %s (%s)%s", d->sym, r ? "kretprobe" : "kprobe",
				         strerror(en),
				         en == EINVAL || en == EOPNOTSUPP ? ": not probeable (notrace, inlined or blacklisted)"
				         : en == EACCES || en == EPERM ? ": needs root (or CAP_PERFMON and CAP_SYS_ADMIN)"
				                                       : "");
				return -1;
			}
			d->fd[2 * c + r] = fd;
		}
	if (asprintf(&p->where, "kernel %s (kprobe + kretprobe on %d CPU%s)", d->sym, ks.ncpus,
	             ks.ncpus == 1 ? "" : "s") < 0)
		p->where = NULL;
	return 0;
}

static int add_probe(struct engine *e, const char *text, char *err, size_t n)
{
	char why[400];
	struct probe *p = engine_new_probe(e, text, err, n);
	if (!p)
		return -1;
	p->ops = &kfunc_ops;
	if (place_func(p, why, sizeof why)) {
		snprintf(err, n, "probe '%s': %s", text, why);
		return -1;
	}
	return 0;
}

/* Every event closed: the kernel takes its kprobes out with them. */
static void remove_all(struct engine *e)
{
	for (int i = 0; i < e->nprobes; i++)
		if (e->probes[i]->data)
			close_fds(e->probes[i]->data);
}

/* --- the session ------------------------------------------------------------ */

static int k_can_run(struct engine *e, const struct probe_opts *o, char *why, size_t wn)
{
	(void)e;
	if (o->kernel)
		return 1;
	snprintf(why, wn, "the kernel engine takes --kernel");
	return 0;
}

static int k_open(struct engine *e, const struct probe_opts *o, char *err, size_t n)
{
	(void)o;
	char b[64];
	memset(&ks, 0, sizeof ks);
	ks.e = e;
	ks.pid = -1;
	ks.go_fd = -1;
	e->foreign_code = 1;
	stop_flag = 0;
	if (geteuid() != 0) {
		snprintf(err, n, "sonde probe --kernel needs root (or CAP_PERFMON and CAP_SYS_ADMIN)");
		return -1;
	}
	if (read_line(K_SYSFS "/type", b, sizeof b) || sscanf(b, "%d", &ks.type) != 1 || ks.type <= 0) {
		snprintf(err, n, "this kernel has no kprobe perf PMU (%s): built without CONFIG_KPROBE_EVENTS?", K_SYSFS);
		return -1;
	}
	/* "config:0": the bit of attr.config that makes a kretprobe */
	if (read_line(K_SYSFS "/format/retprobe", b, sizeof b) || sscanf(b, "config:%d", &ks.retbit) != 1 ||
	    ks.retbit < 0 || ks.retbit > 63) {
		snprintf(err, n, "cannot read the kprobe PMU's retprobe bit (%s/format/retprobe)", K_SYSFS);
		return -1;
	}
	return read_cpus(err, n);
}

/* The program of o forked, held before its exec until k_run writes to
 * ks.go_fd (its probes are per task: they need its pid): 0, or -1. */
static int spawn_held(struct engine *e, const struct probe_opts *o, char *err, size_t n)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC)) {
		snprintf(err, n, "pipe: %s", strerror(errno));
		return -1;
	}
	pid_t c = fork();
	if (c < 0) {
		snprintf(err, n, "fork: %s", strerror(errno));
		close(p[0]);
		close(p[1]);
		return -1;
	}
	if (!c) {
		char b;
		close(p[1]);
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		/* sonde gone before the go (EOF): the program does not run */
		if (read(p[0], &b, 1) != 1)
			_exit(127);
		execvp(o->argv[0], o->argv);
		fprintf(stderr, "sonde: cannot run %s: %s\n", o->argv[0], strerror(errno));
		_exit(127);
	}
	close(p[0]);
	ks.go_fd = p[1];
	ks.pid = c;
	ks.cpus[0] = -1;
	ks.ncpus = 1;
	e->t.pid = c;
	e->t.launched = 1;
	return 0;
}

/* A held program that will not run: gone without its exec. */
static void drop_held(void)
{
	if (ks.go_fd >= 0)
		close(ks.go_fd);
	ks.go_fd = -1;
	if (ks.pid > 0) {
		kill(ks.pid, SIGKILL);
		waitpid(ks.pid, NULL, 0);
	}
	ks.pid = -1;
}

/* The handlers go in before the first probe: a Ctrl-C once a probe is in
 * the kernel's list ends the session (a shell's background job inherits
 * SIGINT ignored, and one sent between placing and running was lost). */
static int k_place(struct engine *e, const struct probe_opts *o, char *err, size_t n)
{
	if (o->argv && spawn_held(e, o, err, n))
		return -1;
	handlers(1);
	for (int i = 0; i < o->nspecs; i++)
		if (add_probe(e, o->specs[i], err, n)) {
			remove_all(e);
			drop_held();
			handlers(0);
			return -1;
		}
	return 0;
}

static int k_run(struct engine *e, const struct probe_opts *o, char *err, size_t n)
{
	e->start_ns = now_ns();
	uint64_t deadline = o->duration > 0 ? e->start_ns + (uint64_t)(o->duration * 1e9) : 0;
	pid_t child = ks.pid > 0 ? ks.pid : 0;
	if (child) {
		if (write(ks.go_fd, "g", 1) != 1) {
			snprintf(err, n, "cannot start %s: %s", o->argv[0], strerror(errno));
			drop_held();
			handlers(0);
			e->end_ns = now_ns();
			remove_all(e);
			return -1;
		}
		close(ks.go_fd);
		ks.go_fd = -1;
	}
	/* a signal wakes the sleep at once; the program's end within 10 ms */
	while (!stop_flag && !(deadline && now_ns() >= deadline)) {
		if (child) {
			int st;
			pid_t w = waitpid(child, &st, WNOHANG);
			if (w == child) {
				e->t.gone = 1;
				e->t.status = st;
				break;
			}
		}
		struct timespec ts = { 0, 10000000 };
		nanosleep(&ts, NULL);
	}
	e->end_ns = now_ns();
	handlers(0);
	if (child && !e->t.gone)
		e->detached = 1;   /* still running: left alone */
	else if (!child)
		e->detached = 1;   /* the kernel runs on */
	return 0;
}

/* The kernel's counts into the probes, then every event closed. */
static void k_collect(struct engine *e)
{
	for (int i = 0; i < e->nprobes; i++) {
		struct probe *p = e->probes[i];
		struct kfunc *d = p->data;
		if (!d || !d->fd)
			continue;
		uint64_t sum[2] = { 0, 0 };
		for (int k = 0; k < 2 * ks.ncpus; k++) {
			uint64_t v;
			if (d->fd[k] >= 0 && read(d->fd[k], &v, sizeof v) == (ssize_t)sizeof v)
				sum[k & 1] += v;
		}
		d->cs.calls = sum[0];
		d->cs.returns = sum[1];
		p->hits = sum[0];
		e->total_hits += sum[0];
	}
	remove_all(e);
}

static void k_close(struct engine *e)
{
	handlers(0);   /* restores what k_place saved, if k_run did not */
	remove_all(e);
	e->priv = NULL;
}

const struct probe_engine_ops kernel_engine = {
	.name = "kernel",
	.kinds = "func",
	.runs = "func probes on the running kernel (--kernel)",
	.modes = PE_KERNEL,
	.can_run = k_can_run,
	.open = k_open,
	.place = k_place,
	.run = k_run,
	.collect = k_collect,
	.close = k_close,
};
