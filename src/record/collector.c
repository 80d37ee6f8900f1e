/* collector.c — the outside observer of seed 001: follows the program tree
 * to its end (reaping it, as subreaper, with the time and way each process
 * ended) and meanwhile drains the threads' rings into the events file. */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/ring.h"
#include "record/convert.h"
#include "record/record.h"
#include "record/recorder.h"

static volatile sig_atomic_t forward_pid, int_req, snap_req;

static void forward(int sig)
{
	if (forward_pid > 0)
		kill(forward_pid, sig);
}

/* Ctrl-C: the program (in the same foreground group) gets it too and
 * decides; once it has exited, Ctrl-C ends the following of what it left. */
static void on_int(int sig)
{
	(void)sig;
	int_req = 1;
}

/* SIGUSR2 (with l->snapshot): a snapshot, taken by the loop. */
static void on_usr2(int sig)
{
	(void)sig;
	snap_req = 1;
}

static int put_chunk(void *arg, const struct sonde_chunk *c, const void *data)
{
	struct rec_chunk r;
	conv_chunk(&r, c);
	return recorder_chunk(arg, &r, data);
}

int collector_drain(struct session *s, struct recorder *rec, int final)
{
	struct sonde_session_hdr *h = s->hdr;
	uint32_t n = sess_nthreads(h);
	int got = 0;
	for (uint32_t i = 0; i < n; i++) {
		uint64_t off = atomic_load_explicit((_Atomic uint64_t *)&h->threads_off[i], memory_order_acquire);
		if (!off)
			continue;
		if (off > s->size || sizeof(struct sonde_thread) > s->size - off)
			continue; /* counted by session_audit at the end */
		struct sonde_thread *t = sess_ptr(h, off);
		uint64_t ro = t->ring_off;
		if (!ro)
			continue;
		uint64_t damaged = 0;
		int k = ro <= s->size && sizeof(struct sonde_ring) <= s->size - ro
		        ? ring_drain(h, s->size, s->ring_size > 2 * RING_CHUNK_SIZE ? s->ring_size : 2 * RING_CHUNK_SIZE,
		                     sess_ptr(h, ro), final, put_chunk, rec, &damaged) : -1;
		if (k < 0) { /* the ring's place or geometry was damaged: it is left alone from now on */
			t->ring_off = 0;
			damaged++;
		}
		if (damaged)
			atomic_fetch_add(&h->lost[SONDE_LOST_SESSION_DAMAGE], damaged);
		got += k > 0 ? k : 0;
	}
	return got;
}

/* Note how and when a process ended, for every process slot of that pid
 * that did not record its own end. */
static void note_end(struct session *s, pid_t pid, int status, uint64_t now)
{
	struct sonde_session_hdr *h = s->hdr;
	uint32_t n = sess_nprocs(h);
	for (uint32_t i = 0; i < n; i++) {
		struct sonde_proc *p = &h->procs[i];
		if (p->pid != pid)
			continue;
		p->exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
		if (!p->end_tsc)
			p->end_tsc = now;
	}
}

int collect(struct session *s, struct launched *l, struct recorder *rec)
{
	forward_pid = l->pid;
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = forward;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGQUIT, &sa, NULL);
	/* Ctrl-C goes to the whole foreground group: the program decides what to
	 * do with it, and we keep recording until it ends. */
	sa.sa_handler = on_int; /* no SA_RESTART: waitpid returns EINTR */
	sigaction(SIGINT, &sa, NULL);
	int_req = 0;
	snap_req = 0;
	if (l->snapshot && rec) {
		sa.sa_handler = on_usr2;
		sigaction(SIGUSR2, &sa, NULL);
	}
	uint64_t exited_ns = 0; /* CLOCK_MONOTONIC of the program's exit */
	int told = 0;
	/* The nap between looks when nothing came: 1 ms while the rings are
	 * drained (they must not fill); without rings (only the requests of
	 * patched modules to serve, src/instr/serve.c) doubled up to 8 ms while
	 * nothing comes and back to 1 ms after a request: a 1 ms poll through a
	 * whole profile cost a thousand wake-ups a second. */
	long nap_ns = 1000000, nap_max = rec ? 1000000 : 8000000;
	for (;;) {
		int status;
		if (l->exited && (l->end_at_exit || int_req)) {
			l->left = 1; /* the loop below would have stopped at ECHILD */
			break;
		}
		if (l->exited && !told && l->left_running && clock_mono_ns() - exited_ns > 1000000000ull) {
			told = 1;
			l->left_running(l->arg, l->pid);
		}
		if (l->serve && l->serve(l->serve_arg) > 0)
			nap_ns = 1000000;
		pid_t pid = waitpid(-1, &status, rec || l->serve || l->exited ? WNOHANG : 0);
		if (pid > 0) {
			uint64_t now = clock_ticks();
			note_end(s, pid, status, now);
			if (pid == l->pid) {
				l->status = status;
				l->exited = 1;
				l->end_tsc = now;
				exited_ns = clock_mono_ns();
			}
			continue;
		}
		if (snap_req) { /* what the rings hold now, then the snapshot */
			snap_req = 0;
			collector_drain(s, rec, 0);
			l->snapshot(l->snap_arg);
		}
		if (pid < 0 && errno == EINTR)
			continue;
		if (pid < 0)
			break; /* ECHILD: the whole tree has ended */
		if ((!rec || collector_drain(s, rec, 0) == 0) && pid == 0) {
			struct timespec ts = { 0, nap_ns };
			nanosleep(&ts, NULL);
			nap_ns = nap_ns * 2 < nap_max ? nap_ns * 2 : nap_max;
		}
	}
	/* Processes left running (daemons, --no-follow-daemons, Ctrl-C after the
	 * program's exit) go on writing while the session is read: no node pool
	 * moves from now on (rt/cct_grow.c). */
	if (l->left)
		atomic_store_explicit(&s->hdr->stop, 1, memory_order_release);
	signal(SIGINT, SIG_IGN);
	if (l->snapshot && rec)
		signal(SIGUSR2, SIG_IGN); /* too late for a snapshot: the recording itself is written next */
	if (rec)
		collector_drain(s, rec, 1);
	forward_pid = 0;
	return 0;
}
