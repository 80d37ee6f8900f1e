/* engine.c — the probe engine's event loop: inserting and removing
 * breakpoints, dispatching every ptrace stop (hits, out-of-line traps and
 * faults, new threads, exec, signals for the program), stopping and resuming
 * all threads, timers, interactive commands, and the clean detach that
 * restores every byte and moves every thread out of our code. */
#include "probe/probe.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int engine_read_code(struct engine *e, uint64_t addr, void *buf, size_t n)
{
	if (target_read(&e->t, addr, buf, n))
		return -1;
	int it = 0;
	struct bp *b;
	while ((b = bptab_next(&e->bps, &it)))
		if (b->inserted && b->addr + ARCH_BP_LEN > addr && b->addr < addr + n)
			for (int k = 0; k < ARCH_BP_LEN; k++)
				if (b->addr + (uint64_t)k >= addr && b->addr + (uint64_t)k < addr + n)
					((uint8_t *)buf)[b->addr + (uint64_t)k - addr] = b->orig[k];
	return 0;
}

static int write_slot(struct engine *e, struct bp *b, char *err, size_t n)
{
	uint8_t code[ARCH_SLOT_SIZE];
	const char *why = NULL;
	int len = arch_ool_build(&b->insn, b->slot, b->want_post, code, &why);
	if (len < 0) {
		snprintf(err, n, "cannot probe '%s' at 0x%llx (%s)", b->insn.text, (unsigned long long)b->addr, why);
		return -1;
	}
	if (target_write(&e->t, b->slot, code, (size_t)len)) {
		snprintf(err, n, "cannot write the out-of-line slot at 0x%llx", (unsigned long long)b->slot);
		return -1;
	}
	b->slot_post = b->want_post;
	return 0;
}

int engine_insert(struct engine *e, struct probe *p, uint64_t addr, int role, int want_post,
                  char *err, size_t n)
{
	struct bp *b = bptab_find(&e->bps, addr);
	int fresh = 0;
	if (!b) {
		uint8_t code[16];
		size_t got = sizeof code;
		while (got > 0 && engine_read_code(e, addr, code, got))
			got--;
		struct arch_insn in;
		if (!got || arch_decode(code, got, addr, &in)) {
			snprintf(err, n, "cannot probe 0x%llx (%s)", (unsigned long long)addr,
			         got ? "not a valid instruction" : "address not readable");
			return -1;
		}
		if (in.kind == AI_BAD) {
			snprintf(err, n, "cannot probe '%s' at 0x%llx (instruction cannot be displaced)",
			         in.text, (unsigned long long)addr);
			return -1;
		}
		if (!(b = bptab_add(&e->bps, addr))) {
			snprintf(err, n, "out of memory");
			return -1;
		}
		b->insn = in;
		memcpy(b->orig, code, ARCH_BP_LEN);
		fresh = 1;
	}
	int old_post = b->want_post;
	b->want_post |= want_post;
	if (!b->insn.emulable) {
		if (!b->slot) {
			if (scratch_slot(e, b, addr, &b->slot, err, n) || write_slot(e, b, err, n)) {
				b->want_post = old_post;
				if (fresh)
					bptab_remove(&e->bps, addr), scratch_release(e, b->slot);
				return -1;
			}
		} else if (b->want_post != b->slot_post && write_slot(e, b, err, n)) {
			return -1;
		}
	}
	struct site *s = realloc(b->sites, (size_t)(b->nsites + 1) * sizeof *s);
	if (!s) {
		snprintf(err, n, "out of memory");
		return -1;
	}
	b->sites = s;
	b->sites[b->nsites].p = p;
	b->sites[b->nsites].role = role;
	b->nsites++;
	if (!b->inserted) {
		if (target_write(&e->t, addr, arch_bp_insn, ARCH_BP_LEN)) {
			snprintf(err, n, "cannot write the breakpoint at 0x%llx", (unsigned long long)addr);
			b->nsites--;
			return -1;
		}
		b->inserted = 1;
	}
	return 0;
}

/* Breakpoints stay in the table when their last probe goes (uninserted):
 * a thread may still be in the slot or have a trap pending on them. */
void engine_remove_probe(struct engine *e, struct probe *p)
{
	int it = 0;
	struct bp *b;
	while ((b = bptab_next(&e->bps, &it))) {
		int k = 0;
		for (int i = 0; i < b->nsites; i++)
			if (b->sites[i].p != p)
				b->sites[k++] = b->sites[i];
		b->nsites = k;
		if (!k && b->inserted) {
			if (!e->t.gone)
				target_write(&e->t, b->addr, b->orig, ARCH_BP_LEN);
			b->inserted = 0;
			b->want_post = 0;
		}
	}
	p->removed = 1;
}

void engine_probe_failed(struct engine *e, struct probe *p, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	if (!p->error)
		p->error = strdup(buf);
	fprintf(stderr, "sonde: warning: probe %d (%s): %s\n", p->id, p->spec, buf);
	engine_remove_probe(e, p);
}

/* A stop seen while stopping every thread: leave it so it can be replayed. */
static void park(void *arg, struct thr *th, int st)
{
	struct engine *e = arg;
	int sig = WSTOPSIG(st);
	arch_regs r;
	if (target_getregs(th->tid, &r)) {
		th->pending_sig = sig;
		return;
	}
	uint64_t slot;
	struct bp *b;
	if (sig == SIGTRAP) {
		uint64_t pc = arch_pc(&r) - ARCH_TRAP_PC_ADJ;
		if (bptab_find(&e->bps, pc)) {
			arch_set_pc(&r, pc); /* the hit is taken again when resumed */
			target_setregs(th->tid, &r);
			return;
		}
		if ((b = scratch_owner(e, pc, &slot)) && pc == slot + (uint64_t)arch_ool_trap_off(&b->insn)) {
			arch_set_pc(&r, b->addr + (uint64_t)b->insn.len);
			target_setregs(th->tid, &r);
			return;
		}
	} else if ((sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE) &&
	           (b = scratch_owner(e, arch_pc(&r), &slot))) {
		arch_set_pc(&r, b->addr);
		target_setregs(th->tid, &r);
		return;
	}
	th->pending_sig = sig;
}

int engine_stop_all(struct engine *e)
{
	if (e->t.gone)
		return -1;
	int rc = target_stop_all(&e->t, park, e);
	e->stopped_all = 1;
	return rc;
}

void engine_resume_all(struct engine *e)
{
	if (!e->t.gone)
		target_resume_all(&e->t);
	e->stopped_all = 0;
}

static void handle(struct engine *e, pid_t tid, int st)
{
	struct thr *th = target_thr(&e->t, tid);
	if (WIFEXITED(st) || WIFSIGNALED(st)) {
		if (tid == e->t.pid) {
			e->t.gone = 1;
			e->t.status = st;
		}
		precorder_thread_end(e, tid);
		target_del_thr(&e->t, tid);
		return;
	}
	if (!WIFSTOPPED(st))
		return;
	if (!th && !(th = target_add_thr(&e->t, tid, 1)))
		return;
	th->stopped = 1;
	int ev = st >> 16, sig = WSTOPSIG(st);
	arch_regs r;
	switch (ev) {
	case PTRACE_EVENT_CLONE: {
		unsigned long nt = 0;
		ptrace(PTRACE_GETEVENTMSG, tid, 0, &nt);
		target_add_thr(&e->t, (pid_t)nt, 0);
		target_cont(&e->t, th, 0);
		return;
	}
	case PTRACE_EVENT_EXEC: {
		/* A new program image: our breakpoints and slots are gone with the old one. */
		for (int i = 0; i < e->nprobes; i++)
			if (!e->probes[i]->removed) {
				if (!e->probes[i]->error)
					e->probes[i]->error = strdup("the program called exec: probe removed");
				e->probes[i]->removed = 1;
			}
		int it = 0;
		struct bp *b;
		while ((b = bptab_next(&e->bps, &it))) {
			b->inserted = 0;
			b->nsites = 0;
		}
		for (int i = 0; i < e->sc.n; i++)
			free(e->sc.r[i].owner);
		e->sc.n = 0;
		/* Threads other than the leader are gone. */
		for (int i = e->t.nthr - 1; i >= 0; i--)
			if (e->t.thr[i].tid != tid) {
				precorder_thread_end(e, e->t.thr[i].tid);
				target_del_thr(&e->t, e->t.thr[i].tid);
			}
		target_reopen(&e->t);
		th = target_thr(&e->t, tid);
		if (th)
			target_cont(&e->t, th, 0);
		return;
	}
	case PTRACE_EVENT_STOP:
		if (sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU) {
			ptrace(PTRACE_LISTEN, tid, 0, 0); /* group-stop: stay stopped */
			th->stopped = 0;
		} else {
			target_cont(&e->t, th, 0);
		}
		return;
	case 0:
		break;
	default:
		target_cont(&e->t, th, 0);
		return;
	}
	uint64_t slot;
	struct bp *b;
	if (sig == SIGTRAP) {
		if (target_getregs(tid, &r)) {
			target_cont(&e->t, th, 0);
			return;
		}
		uint64_t pc = arch_pc(&r) - ARCH_TRAP_PC_ADJ;
		if ((b = bptab_find(&e->bps, pc))) {
			arch_set_pc(&r, pc);
			if (b->inserted && b->nsites) {
				step_hit(e, th, &r, b);
			} else { /* trap from a breakpoint removed meanwhile */
				target_setregs(tid, &r);
				target_cont(&e->t, th, 0);
			}
			return;
		}
		if ((b = scratch_owner(e, pc, &slot)) && pc == slot + (uint64_t)arch_ool_trap_off(&b->insn)) {
			step_post(e, th, &r, b);
			return;
		}
		target_cont(&e->t, th, SIGTRAP);
		return;
	}
	if (sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE) {
		if (target_getregs(tid, &r) == 0 && (b = scratch_owner(e, arch_pc(&r), &slot)) &&
		    arch_pc(&r) == slot) {
			step_fault(e, th, &r, b, sig);
			return;
		}
	}
	target_cont(&e->t, th, sig);
}

/* ---- the loop: blocking waitpid, woken by signals ---- */
static volatile sig_atomic_t got_term;
static void on_term(int s) { got_term = s; }
static void on_wake(int s) { (void)s; }

struct cmdq {
	pthread_mutex_t mu;
	char **v;
	int n;
	int eof;
	int fd;
	int stop[2];    /* the main thread writes to stop[1] to end the reader */
	pthread_t main;
};

static void push_line(struct cmdq *q, const char *s, size_t n)
{
	pthread_mutex_lock(&q->mu);
	char **v = realloc(q->v, (size_t)(q->n + 1) * sizeof *v);
	char *l = malloc(n + 1);
	if (v && l) {
		memcpy(l, s, n);
		l[n] = 0;
		q->v = v;
		q->v[q->n++] = l;
		l = NULL;
	} else if (v) {
		q->v = v;
	}
	free(l);
	pthread_mutex_unlock(&q->mu);
}

/* Reads command lines until end of input or until the main thread asks it
 * to stop through the stop pipe (never cancelled: a cancelled thread is
 * unwound behind the sanitizers' and the C library's backs). */
static void *reader(void *arg)
{
	struct cmdq *q = arg;
	char buf[4096];
	size_t have = 0;
	for (;;) {
		struct pollfd pf[2] = { { q->fd, POLLIN, 0 }, { q->stop[0], POLLIN, 0 } };
		if (poll(pf, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (pf[1].revents)
			return NULL;
		ssize_t r = read(q->fd, buf + have, sizeof buf - have);
		if (r <= 0)
			break;
		have += (size_t)r;
		char *nl;
		int any = 0;
		while ((nl = memchr(buf, '\n', have))) {
			size_t len = (size_t)(nl - buf);
			push_line(q, buf, len);
			memmove(buf, nl + 1, have - len - 1);
			have -= len + 1;
			any = 1;
		}
		if (have == sizeof buf) { /* overlong line: take it as is */
			push_line(q, buf, have);
			have = 0;
			any = 1;
		}
		if (any)
			pthread_kill(q->main, SIGUSR1);
	}
	if (have)
		push_line(q, buf, have);
	pthread_mutex_lock(&q->mu);
	q->eof = 1;
	pthread_mutex_unlock(&q->mu);
	pthread_kill(q->main, SIGUSR1);
	return NULL;
}

static int run_commands(struct engine *e, struct cmdq *q)
{
	pthread_mutex_lock(&q->mu);
	char **v = q->v;
	int n = q->n, eof = q->eof;
	q->v = NULL;
	q->n = 0;
	pthread_mutex_unlock(&q->mu);
	int quit = 0;
	for (int i = 0; i < n; i++) {
		if (!quit && manager_command(e, v[i]))
			quit = 1;
		free(v[i]);
	}
	free(v);
	return quit || eof;
}

static uint64_t tick_period(struct engine *e)
{
	uint64_t p = 50000000ull;
	for (int i = 0; i < e->nprobes; i++)
		if (!e->probes[i]->removed && e->probes[i]->sp.interval_ns &&
		    e->probes[i]->sp.interval_ns < p)
			p = e->probes[i]->sp.interval_ns;
	return p < 1000000ull ? 1000000ull : p;
}

int engine_run(struct engine *e, uint64_t deadline_ns, int in_fd)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_term;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sa.sa_handler = on_wake;
	sigaction(SIGALRM, &sa, NULL);
	sigaction(SIGUSR1, &sa, NULL);
	uint64_t period = tick_period(e);
	struct itimerval it = { { 0, (long)(period / 1000) }, { 0, (long)(period / 1000) } };
	setitimer(ITIMER_REAL, &it, NULL);

	struct cmdq q = { .fd = in_fd, .stop = { -1, -1 }, .main = pthread_self() };
	pthread_mutex_init(&q.mu, NULL);
	pthread_t rt;
	int have_reader = in_fd >= 0 && pipe2(q.stop, O_CLOEXEC) == 0 && pthread_create(&rt, NULL, reader, &q) == 0;

	uint64_t next_tick = now_ns() + period;
	while (!e->t.gone && !e->stop_req) {
		int st;
		pid_t tid = waitpid(-1, &st, __WALL);
		if (tid > 0) {
			handle(e, tid, st);
		} else if (errno == ECHILD) {
			e->t.gone = 1;
			break;
		}
		if (got_term) {
			e->stop_req = 1;
			break;
		}
		uint64_t now = now_ns();
		if (deadline_ns && now >= deadline_ns)
			break;
		/* Woken by a timer or a command, or due by the clock: under a steady
		 * stream of breakpoint stops waitpid never returns empty-handed, and
		 * periodic probes and commands must not starve. */
		if (tid <= 0 || now >= next_tick) {
			next_tick = now + period;
			for (int i = 0; i < e->nprobes; i++)
				if (!e->probes[i]->removed && e->probes[i]->ops->tick)
					e->probes[i]->ops->tick(e->probes[i], now);
			if (have_reader && run_commands(e, &q))
				break;
		}
	}
	struct itimerval off = { { 0, 0 }, { 0, 0 } };
	setitimer(ITIMER_REAL, &off, NULL);
	if (have_reader) {
		ssize_t w = write(q.stop[1], "x", 1);
		(void)w;
		pthread_join(rt, NULL);
		run_commands(e, &q);
	}
	if (q.stop[0] >= 0) {
		close(q.stop[0]);
		close(q.stop[1]);
	}
	pthread_mutex_destroy(&q.mu);
	/* A last sample for the periodic probes. */
	for (int i = 0; i < e->nprobes; i++)
		if (!e->probes[i]->removed && e->probes[i]->ops->tick && !e->t.gone)
			e->probes[i]->ops->tick(e->probes[i], ~0ull);
	return 0;
}

/* Move a stopped thread out of an out-of-line slot. */
static void leave_slot(struct engine *e, struct thr *th)
{
	arch_regs r;
	uint64_t slot;
	struct bp *b;
	if (target_getregs(th->tid, &r) || !(b = scratch_owner(e, arch_pc(&r), &slot)))
		return;
	if (arch_pc(&r) == slot)
		arch_set_pc(&r, b->addr);
	else
		arch_set_pc(&r, b->addr + (uint64_t)b->insn.len);
	target_setregs(th->tid, &r);
}

/* Signals pending for one thread (not the process), from /proc. */
static uint64_t thread_sigpnd(struct engine *e, pid_t tid)
{
	char path[64], line[256];
	snprintf(path, sizeof path, "/proc/%d/task/%d/status", (int)e->t.pid, (int)tid);
	FILE *f = fopen(path, "r");
	uint64_t m = 0;
	if (!f)
		return 0;
	while (fgets(line, sizeof line, f))
		if (!strncmp(line, "SigPnd:", 7)) {
			m = strtoull(line + 7, NULL, 16);
			break;
		}
	fclose(f);
	return m;
}

/* A thread that hit one of our int3s just as it was interrupted reports the
 * interrupt first (job-control traps come before signals) and keeps the
 * SIGTRAP pending, with its pc one byte past the breakpoint.  Detached like
 * that, it would resume mid-instruction and die of the SIGTRAP: let it take
 * the trap now, so that park() rewinds it onto the original instruction. */
static void take_pending_traps(struct engine *e)
{
	for (int i = 0; i < e->t.nthr && !e->t.gone; i++) {
		for (int tries = 0; tries < 4; tries++) {
			struct thr *th = &e->t.thr[i];
			pid_t tid = th->tid;
			if (!th->stopped || th->pending_sig ||
			    !(thread_sigpnd(e, tid) & (1ull << (SIGTRAP - 1))))
				break;
			if (ptrace(PTRACE_CONT, tid, 0, 0))
				break;
			int st;
			pid_t w;
			while ((w = waitpid(tid, &st, __WALL)) < 0 && errno == EINTR)
				;
			if (w != tid)
				break;
			if (WIFEXITED(st) || WIFSIGNALED(st)) {
				if (tid == e->t.pid) {
					e->t.gone = 1;
					e->t.status = st;
				}
				target_del_thr(&e->t, tid);
				i--;
				break;
			}
			if (WIFSTOPPED(st) && (st >> 16) == 0)
				park(e, th, st);
		}
	}
}

void engine_detach(struct engine *e)
{
	if (e->t.gone)
		return;
	if (!e->stopped_all)
		engine_stop_all(e);
	take_pending_traps(e);
	if (e->t.gone)
		return;
	int it = 0;
	struct bp *b;
	while ((b = bptab_next(&e->bps, &it)))
		if (b->inserted) {
			target_write(&e->t, b->addr, b->orig, ARCH_BP_LEN);
			b->inserted = 0;
		}
	for (int i = 0; i < e->t.nthr; i++)
		leave_slot(e, &e->t.thr[i]);
	scratch_unmap_all(e);
	target_detach(&e->t);
	e->detached = 1;
}

/* A launched program stops at exec, before the dynamic loader ran: run it to
 * its entry point so that its libraries are mapped and can be probed. */
int engine_run_to_entry(struct engine *e)
{
	uint64_t at = e->t.entry;
	struct thr *th = target_thr(&e->t, e->t.pid);
	uint8_t orig[ARCH_BP_LEN];
	if (!at || !th || target_read(&e->t, at, orig, sizeof orig) ||
	    target_write(&e->t, at, arch_bp_insn, ARCH_BP_LEN))
		return -1;
	target_cont(&e->t, th, 0);
	for (;;) {
		int st;
		pid_t tid = waitpid(-1, &st, __WALL);
		if (tid < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (tid != e->t.pid) { /* threads before main: leave them to the loop */
			handle(e, tid, st);
			continue;
		}
		if (WIFEXITED(st) || WIFSIGNALED(st)) {
			e->t.gone = 1;
			e->t.status = st;
			return -1;
		}
		arch_regs r;
		if ((st >> 16) == 0 && WSTOPSIG(st) == SIGTRAP && target_getregs(tid, &r) == 0 &&
		    arch_pc(&r) == at + ARCH_TRAP_PC_ADJ) {
			target_write(&e->t, at, orig, sizeof orig);
			arch_set_pc(&r, at);
			target_setregs(tid, &r);
			th = target_thr(&e->t, tid);
			if (th)
				th->stopped = 1;
			return engine_stop_all(e);
		}
		handle(e, tid, st);
	}
}

int engine_insert_all(struct engine *e, struct probe *p, const struct loc_addr *v, int nv, int want_post,
                      char *err, size_t n)
{
	int rc = 0;
	for (int i = 0; i < nv && !rc; i++)
		rc = engine_insert(e, p, v[i].addr, i, want_post, err, n);
	return rc;
}
