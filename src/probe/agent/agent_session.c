/* agent_session.c — the agent engine's session (probe_engine.h): start
 * the agent in a launched program (LD_PRELOAD) or a running one (dlopen
 * through ptrace), place the probes with every thread held, let the
 * program run while sonde serves interactive commands, libraries that come
 * and go (--pending), exec, sys samples and --record's rings; at the end
 * every site removed and the numbers read (agent_kinds.c). */
#include "probe/agent/agent_kinds.h"

#include "probe/agent/agent_plugin.h"
#include "probe/agent/agent_record.h"
#include "probe/agent/agent_stack.h"
#include "probe/engine.h"
#include "probe/kind.h"
#include "probe/manager.h"
#include "probe/probe.h"
#include "probe/probe_engine.h"
#include "probe/record.h"

#include <linux/futex.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>

/* The session's agent: its shared memory, its sites, the program. */
struct agent_be agent_sess;

/* --- the session ----------------------------------------------------------- */

static volatile sig_atomic_t end_req;

static void on_end(int sig)
{
	(void)sig;
	end_req = 1;
}

/* The backend hooks of the manager and the engine (engine.h). */
/* Around an interactive add: the threads are stopped only if a site needs
 * it (a jump over several instructions), agent_be_place says. */
static int agent_hold(struct engine *e)
{
	(void)e;
	agent_sess.may_hold = 1;
	return 0;
}

static void agent_let_go(struct engine *e)
{
	(void)e;
	agent_be_let_go(&agent_sess);
}

/* Interactive commands from fd (manager.c), read without blocking: 1 when
 * they say quit or end. */
static int commands(struct engine *e, int fd, char *buf, size_t cap, size_t *have)
{
	struct pollfd pf = { .fd = fd, .events = POLLIN };
	if (poll(&pf, 1, 0) <= 0)
		return 0;
	ssize_t r = read(fd, buf + *have, cap - 1 - *have);
	if (r <= 0) { /* end of input ends the session, as on ptrace */
		if (*have) {
			buf[*have] = 0;
			manager_command(e, buf);
		}
		return 1;
	}
	*have += (size_t)r;
	buf[*have] = 0;
	agent_calibrate();
	for (int i = 0; i < e->nprobes; i++)
		agent_collect(e->probes[i]); /* list and show say the counts so far */
	char *line = buf, *nl;
	int quit = 0;
	while (!quit && (nl = strchr(line, '\n'))) {
		*nl = 0;
		quit = manager_command(e, line);
		line = nl + 1;
	}
	*have -= (size_t)(line - buf);
	memmove(buf, line, *have);
	if (*have == cap - 1)
		*have = 0; /* a line longer than the buffer: dropped */
	return quit;
}

/* The modules read so far go to e->old_mods (the probes that end now name
 * their callers with them); e->mods is empty, to be read again.  The
 * image number for those probes (0: out of memory, forgotten). */
static int mods_retire(struct engine *e)
{
	struct modules *om = realloc(e->old_mods, (size_t)(e->nold_mods + 1) * sizeof *om);
	int image = 0;
	if (om) {
		e->old_mods = om;
		om[e->nold_mods++] = e->mods;
		image = e->nold_mods;
	} else {
		modules_free(&e->mods);
	}
	memset(&e->mods, 0, sizeof e->mods);
	return image;
}

/* --- pending probes (--pending): a site at the dynamic linker's r_brk
 * stops each thread that loads or unloads a library, once the link map is
 * consistent, until sonde has looked for the pending probes' locations in
 * the new objects (probe_area.h PA_KIND_LOAD). */
static int load_site = -1;
static uint32_t loads_handled;

static int load_site_place(char *err, size_t n)
{
	if (load_site >= 0)
		return 0;
	uint64_t brk = __atomic_load_n(&agent_sess.pa->r_brk, __ATOMIC_ACQUIRE);
	if (!brk) {
		snprintf(err, n, "the dynamic linker's r_brk of process %d is unknown: libraries loaded later cannot be "
		         "followed", (int)agent_sess.pid);
		return -1;
	}
	char why[200];
	int idx = agent_be_place(&agent_sess, brk, PA_KIND_LOAD, 0, 0, why, sizeof why, err, n);
	if (idx < 0)
		return -1;
	load_site = idx;
	loads_handled = __atomic_load_n(&agent_sess.pa->loads, __ATOMIC_ACQUIRE);
	return 0;
}

/* Libraries came or went since the last look: the pending probes are
 * tried in the objects mapped now, then the loading thread goes on. */
/* A placed probe whose first site's bytes are no longer the agent's: the
 * library it was in is gone. */
static int probe_unloaded(struct probe *p)
{
	struct adata *d = p->edata; /* none for sys */
	if (p->removed || p->pending || !d || d->frozen || !d->nsites)
		return 0;
	return !agent_be_site_live(&agent_sess, d->sites[0]);
}

static void loads_serve(struct engine *e)
{
	if (load_site < 0)
		return;
	uint32_t l = __atomic_load_n(&agent_sess.pa->loads, __ATOMIC_ACQUIRE);
	if (l == loads_handled)
		return;
	/* A library went (dlclose): its probes end, counted so far; with
	 * --pending the same specs wait for it to come back (new ids). */
	int n0 = e->nprobes, gone = 0;
	char *was = calloc((size_t)n0 + 1, 1); /* all found before any is removed: sites may be shared */
	for (int i = 0; was && i < n0; i++)
		gone += was[i] = (char)probe_unloaded(e->probes[i]);
	if (gone) {
		agent_calibrate();
		int image = mods_retire(e);
		for (int i = 0; i < n0; i++) {
			struct probe *p = e->probes[i];
			if (!was[i])
				continue;
			agent_remove(e, p); /* counts taken; the agent finds its bytes gone and writes nothing */
			p->removed = 1;
			p->ended = "unloaded";
			p->image = image;
			char err[600];
			if (e->pending_ok && !manager_add(e, p->spec, err, sizeof err) && e->warn)
				e->warn(p, err);
		}
		modules_load(&e->mods, agent_sess.pid);
	}
	free(was);
	if (manager_pending(e) && modules_load(&e->mods, agent_sess.pid) == 0) {
		agent_sess.may_hold = 1;
		manager_retry_pending(e);
		agent_be_let_go(&agent_sess);
	}
	loads_handled = l;
	__atomic_store_n(&agent_sess.pa->loads_seen, l, __ATOMIC_RELEASE);
	syscall(SYS_futex, &agent_sess.pa->loads_seen, FUTEX_WAKE, 0x7fffffff, NULL, NULL, 0);
}

/* --- exec: the program's agent comes back in the new image (the session
 * kept through the exec functions, src/rt/exec_follow.c) and waits there
 * until the probes are placed again: the old image's probes keep their
 * counts and end ("exec"), the same specs are added anew (new ids). */
static uint32_t execs_handled;

static void execs_serve(struct engine *e)
{
	uint32_t x = __atomic_load_n(&agent_sess.pa->execs, __ATOMIC_ACQUIRE);
	if (x == execs_handled)
		return;
	agent_calibrate();
	agent_stack_drain(e, agent_sess.pa, agent_stk_off()); /* the old image's stacks, while its modules are known */
	int n0 = e->nprobes;
	int image = mods_retire(e);
	int *again = calloc((size_t)n0 + 1, sizeof *again);
	for (int i = 0; i < n0; i++) {
		struct probe *p = e->probes[i];
		if (p->removed || p->image)
			continue;
		struct adata *d = p->edata; /* none for sys */
		if (d) {
			agent_collect(p);
			d->frozen = 1;
		}
		p->removed = 1;
		p->ended = "exec";
		p->image = image;
		if (again)
			again[i] = 1;
	}
	char err[600];
	agent_plugin_exec(&agent_sess);
	int ok = agent_be_exec_reset(&agent_sess, err, sizeof err) == 0 && modules_load(&e->mods, agent_sess.pid) == 0;
	load_site = -1;
	if (!ok && e->warn && n0)
		e->warn(e->probes[0], "the program exec'd and its new image cannot be read: its probes end there");
	for (int i = 0; ok && again && i < n0; i++) {
		if (!again[i])
			continue;
		struct probe *q = manager_add(e, e->probes[i]->spec, err, sizeof err);
		if (q && !q->pending && e->placed_later)
			e->placed_later(q, "the program exec'd");
		else if (!q && e->warn)
			e->warn(e->probes[i], err);
	}
	free(again);
	if (ok && manager_pending(e) && load_site_place(err, sizeof err) && e->warn && n0)
		e->warn(e->probes[0], err);
	agent_sess.threads_stopped = 0;
	loads_handled = __atomic_load_n(&agent_sess.pa->loads, __ATOMIC_ACQUIRE);
	execs_handled = x;
	__atomic_store_n(&agent_sess.pa->exec_go, x, __ATOMIC_RELEASE);
	syscall(SYS_futex, &agent_sess.pa->exec_go, FUTEX_WAKE, 0x7fffffff, NULL, NULL, 0);
}

/* sys probes' samples, when their interval has passed (now ~0: the last). */
static void sys_ticks(struct engine *e, uint64_t now)
{
	for (int i = 0; i < e->nprobes; i++)
		if (!e->probes[i]->removed && e->probes[i]->ops->tick)
			e->probes[i]->ops->tick(e->probes[i], now);
}

/* SIGPIPE is ignored from the launch to the end of the session: a write of
 * sonde's to the agent's pipe after the program died (a failed placement,
 * the program killed meanwhile) is an error of that write, never sonde's
 * death by SIGPIPE with probes left in. */
static struct sigaction old_pipe, old_int, old_term, old_hup;

/* A session that ends before the program ran: a launched program never
 * does (killed before the agent would let it go at the end of the
 * session), an attached one is left as it was. */
static void give_up(void)
{
	agent_be_let_go(&agent_sess);
	if (agent_sess.launched)
		kill(agent_sess.pid, SIGKILL);
	agent_be_end(&agent_sess);
	if (agent_sess.launched)
		agent_be_reap(&agent_sess);
	sigaction(SIGPIPE, &old_pipe, NULL);
}

static int ag_open(struct engine *e, const struct probe_opts *o, char *err, size_t n)
{
	struct sigaction ign = { .sa_handler = SIG_IGN };
	sigemptyset(&ign.sa_mask);
	sigaction(SIGPIPE, &ign, &old_pipe);
	agent_sess.pipe_ignored = old_pipe.sa_handler == SIG_IGN;
	clock_point_take(&agent_c0);
	agent_sess.record = o->record_dir != NULL;
	/* Stack rings when a stack probe may come (256 MiB of the memfd, its pages used only by the
	 * threads that take stacks). */
	agent_stack_copy = o->stack_copy && o->stack_copy <= PA_STK_COPY_MAX ? o->stack_copy : PA_STK_COPY_DEF;
	agent_sess.stacks = o->in_fd >= 0;
	agent_sess.stack_walk = !o->stack_copy_only;
	for (int i = 0; i < o->nspecs; i++) {
		const char *sp = o->specs[i][0] == '@' ? library_find(&e->lib, o->specs[i] + 1) : o->specs[i];
		agent_sess.stacks |= sp && !strncmp(sp, "stack:", 6);
	}
	int rc = o->argv ? agent_be_launch(&agent_sess, o->argv, o->rt_path, err, n)
	                 : agent_be_attach(&agent_sess, o->pid, o->rt_path, err, n);
	e->t.pid = agent_sess.pid;
	e->t.launched = agent_sess.launched;
	if (rc) {
		if (agent_sess.launched && agent_sess.pid > 0 && !agent_be_gone(&agent_sess))
			kill(agent_sess.pid, SIGKILL);
		if (agent_sess.launched && agent_sess.pid > 0)
			agent_be_reap(&agent_sess);
		sigaction(SIGPIPE, &old_pipe, NULL);
		return -1;
	}
	e->t.memfd = agent_sess.memfd;
	e->priv = &agent_sess;
	agent_time_slots = 0;
	agent_sess.pa->time_gen = now_ns() | 1;
	if (modules_load(&e->mods, agent_sess.pid)) {
		snprintf(err, n, "cannot read the memory map of process %d", (int)agent_sess.pid);
		rc = -1;
	}
	if (!rc && o->record_dir && precorder_open(e, o->record_dir, err, n))
		rc = -1;
	if (!rc && !agent_sess.launched)
		rc = agent_be_hold(&agent_sess, err, n);
	if (rc)
		give_up();
	return rc;
}

static int ag_place(struct engine *e, const struct probe_opts *o, char *err, size_t n)
{
	int rc = 0;
	e->start_ns = now_ns();
	e->pending_ok = o->pending;
	load_site = -1;
	execs_handled = 0;
	for (int i = 0; i < o->nspecs && !rc; i++)
		if (!manager_add(e, o->specs[i], err, n))
			rc = -1;
	if (!rc && o->pending && load_site_place(err, n)) /* libraries that come, and go */
		rc = -1;
	if (rc) {
		give_up();
		return -1;
	}
	agent_be_let_go(&agent_sess);
	return 0;
}

static int ag_run(struct engine *e, const struct probe_opts *o, char *err, size_t n)
{
	(void)err;
	(void)n;
	struct sigaction sa = { .sa_handler = on_end };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	sigaction(SIGHUP, &sa, &old_hup);
	if (o->placed)
		o->placed(e);
	agent_be_go(&agent_sess);
	uint64_t deadline = o->duration > 0 ? e->start_ns + (uint64_t)(o->duration * 1e9) : 0;
	static char cmd[4096];
	size_t have = 0;
	int quit = 0;
	uint64_t cal_ns = now_ns();
	while (!end_req && !quit && !agent_be_gone(&agent_sess) && !(deadline && now_ns() >= deadline)) {
		if (o->in_fd >= 0)
			quit = commands(e, o->in_fd, cmd, sizeof cmd, &have);
		if (load_site < 0 && manager_pending(e)) { /* one added interactively */
			char lerr[300];
			if (load_site_place(lerr, sizeof lerr))
				for (int i = 0; i < e->nprobes; i++)
					if (e->probes[i]->pending && !e->probes[i]->removed) {
						e->probes[i]->pending = 0;
						engine_probe_failed(e, e->probes[i], "%s", lerr);
					}
		}
		execs_serve(e);
		loads_serve(e);
		sys_ticks(e, now_ns());
		if (now_ns() - cal_ns >= 1000000000ull) { /* each second (the loop may not sleep: --record) */
			agent_calibrate(); /* time probes' intervals: a finer ns per tick as the session goes on */
			cal_ns = now_ns();
		}
		/* --record: a ring that had 1024 events or more is drained again at once (the
		 * program makes events faster than every 2 ms can take) */
		uint64_t stacks = agent_stack_drain(e, agent_sess.pa, agent_stk_off());
		if (agent_record_drain(e, agent_sess.pa, pa_area_size(PA_MAX_SITES)) < PA_REC_EVENTS / 64 && stacks < 64)
			agent_sleep_ms(e->rec || agent_sess.stacks ? 2 : 5);
		else
			sched_yield();
	}
	e->end_ns = now_ns();
	if (!agent_be_gone(&agent_sess))
		sys_ticks(e, ~0ull); /* the last sample, the process still there */
	agent_be_end(&agent_sess);
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	sigaction(SIGHUP, &old_hup, NULL);
	if (agent_sess.launched && end_req)
		agent_sleep_ms(20); /* a Ctrl-C from the terminal reached the program too: its end is said */
	if (agent_sess.launched && agent_be_gone(&agent_sess))
		agent_be_reap(&agent_sess);
	else
		e->detached = !agent_be_gone(&agent_sess); /* it runs on, every site removed */
	e->t.gone = agent_sess.gone;
	e->t.status = agent_sess.status;
	if (agent_sess.gone && !agent_sess.launched) {
		/* not sonde's child: what its exit() said, through the agent */
		if (__atomic_load_n(&agent_sess.pa->exited, __ATOMIC_ACQUIRE))
			e->t.status = (__atomic_load_n(&agent_sess.pa->exit_code, __ATOMIC_RELAXED) & 0xff) << 8;
		else
			e->t.status_unknown = 1;
	}
	sigaction(SIGPIPE, &old_pipe, NULL);
	return 0;
}

static void ag_collect(struct engine *e)
{
	agent_calibrate();
	agent_stack_drain(e, agent_sess.pa, agent_stk_off()); /* the stacks left (before collect: they are stack probes' hits) */
	for (int i = 0; i < e->nprobes; i++)
		agent_collect(e->probes[i]);
	agent_plugin_settle(e); /* the plugins' reports, read next, hold every hit counted */
	agent_record_drain(e, agent_sess.pa, pa_area_size(PA_MAX_SITES)); /* what is left (after collect: its assert values) */
	if (agent_stack_bad())
		fprintf(stderr, "sonde: warning: %llu stack records of the program's memory were not the agent's "
		        "(dropped)\n", (unsigned long long)agent_stack_bad());
	if (e->rec && agent_record_dropped())
		fprintf(stderr, "sonde: warning: %llu probe events were not recorded (the program wrote them faster "
		        "than sonde read them; counted as lost in the recording)\n",
		        (unsigned long long)agent_record_dropped());
}

static void ag_close(struct engine *e)
{
	for (int i = 0; i < e->nold_mods; i++)
		modules_free(&e->old_mods[i]);
	free(e->old_mods);
	e->old_mods = NULL;
	e->nold_mods = 0;
	for (int i = 0; i < e->nprobes; i++)
		agent_plugin_fini(e->probes[i]);
	e->t.memfd = -1;
	e->priv = NULL;
	agent_be_free(&agent_sess);
}

static int ag_read_code(struct engine *e, uint64_t addr, void *buf, size_t n)
{
	return agent_be_read_code(e->priv, addr, buf, n);
}

const struct probe_engine_ops agent_engine = {
	.name = "agent",
	.kinds = "func line branch var assert time sys stack plugin",
	.runs = "func, line, branch, var, assert, time, sys, stack and plugin probes (SONDE_PROBE_ABI2 plugins) "
	        "(use --engine=ptrace)",
	.modes = PE_LAUNCH | PE_ATTACH | PE_INTERACTIVE | PE_PENDING | PE_RECORD | PE_PLUGIN,
	.can_run = agent_can_run,
	.open = ag_open,
	.place = ag_place,
	.run = ag_run,
	.collect = ag_collect,
	.close = ag_close,
	.kind = agent_kind,
	.remove = agent_remove,
	.enable = agent_enable,
	.hold = agent_hold,
	.let_go = agent_let_go,
	.sites = &agent_sites,
	.read_code = ag_read_code,
};

