/* run.c — the probe engine's event loop: a blocking waitpid woken by
 * signals, dispatching every ptrace stop (hits, out-of-line traps and faults,
 * new threads, exec, signals for the program), timers for the periodic
 * probes, and interactive commands read by a thread of their own. */
#include "probe/ptrace/run.h"
#include "probe/ptrace/ptrace.h"

#include "probe/engine.h"
#include "probe/kind.h"
#include "probe/manager.h"
#include "probe/probe.h"
#include "probe/record.h"
#include "probe/ptrace/step.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

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
		while ((b = bptab_next(&ptrace_state(e)->bps, &it))) {
			b->inserted = 0;
			b->nsites = 0;
		}
		for (int i = 0; i < ptrace_state(e)->sc.n; i++)
			free(ptrace_state(e)->sc.r[i].owner);
		ptrace_state(e)->sc.n = 0;
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
		if ((b = bptab_find(&ptrace_state(e)->bps, pc))) {
			arch_set_pc(&r, pc);
			if (b->inserted && b->nsites) {
				step_hit(e, th, &r, b);
			} else { /* trap from a breakpoint removed meanwhile */
				target_setregs(tid, &r);
				target_cont(&e->t, th, 0);
			}
			return;
		}
		if ((b = scratch_owner(&ptrace_state(e)->sc, pc, &slot)) && pc == slot + (uint64_t)arch_ool_trap_off(&b->insn)) {
			step_post(e, th, &r, b);
			return;
		}
		target_cont(&e->t, th, SIGTRAP);
		return;
	}
	if (sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE) {
		if (target_getregs(tid, &r) == 0 && (b = scratch_owner(&ptrace_state(e)->sc, arch_pc(&r), &slot)) &&
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
	sigaction(SIGPIPE, &sa, NULL); /* our output's reader went away: restore and detach, never die with int3s left */
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
		pid_t tid = target_wait(&st);
		if (tid < 0)
			return -1;
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
