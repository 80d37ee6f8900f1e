/* agent.c — `sonde record -p`'s side of the agent: checks that the process
 * is a sonde build without touching it (any dynamically linked program will
 * do for --locks), dlopens libsonde-rt.so into it (inject.c), calls
 * sonde_agent_start there with two paths it can open (our session memfd and the read end of a pipe whose only writer is us, through
 * /proc/<our pid>/fd), and at the end calls sonde_agent_stop.  If we die
 * instead, the pipe's end-of-file tells the agent (src/rt/agent.c). */
#include "attach/agent.h"

#include "attach/dlfuncs.h"
#include "attach/inject.h"
#include "attach/times.h"
#include "probe/modules.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define START_TIMEOUT_MS 30000
#define HOLD_MS 200

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int agent_target_alive(pid_t pid)
{
	char st = inject_thread_state(pid, pid);
	return st && st != 'Z' && st != 'X';
}

/* Run-time address of sym in the target's copy of the object at path. */
static uint64_t target_sym(pid_t pid, const char *path, const char *sym)
{
	struct modules ms = { 0 };
	uint64_t addr = 0;
	if (modules_load(&ms, pid) == 0)
		for (int i = 0; i < ms.n; i++) {
			if (strcmp(ms.m[i].path, path))
				continue;
			const char *names[1] = { sym };
			uint64_t v = 0;
			if (dl_file_syms(pid, path, names, &v, 1) == 0 && v)
				addr = v + ms.m[i].bias;
			break;
		}
	modules_free(&ms);
	return addr;
}

static const char *start_error(int rc)
{
	switch (rc) {
	case -EBUSY: return "it is already recorded: started under 'sonde record', or attached before (sonde "
	                    "attaches once per process; the agent of the earlier attach stays loaded, inert)";
	case -ENOENT: return "no loaded module was built by sonde-cc (for its locks use 'sonde record --locks -p')";
	case -ENOEXEC: return "its modules were built by another sonde version: relink them";
	case -EINVAL: return "the session memory could not be mapped";
	default: return strerror(-rc);
	}
}

int agent_start(pid_t pid, const char *rt_path, int session_fd, struct sonde_session_hdr *h, int locks,
                struct agent *a, char *err, size_t n)
{
	attach_time("sonde ready");
	memset(a, 0, sizeof *a);
	a->pid = pid;
	a->alive_w = -1;
	if (!agent_target_alive(pid)) {
		snprintf(err, n, "cannot attach to process %d (no such process)", (int)pid);
		return -1;
	}
	/* A sonde build?  Read from its files, before the process is touched
	 * (--locks works on any dynamically linked program); dlopen too, so
	 * that a static binary is refused without being stopped.  The maps are
	 * read once for both. */
	struct modules ms = { 0 };
	struct dl_funcs dlf;
	int sonde_build = 0;
	if (modules_load(&ms, pid) != 0) {
		modules_free(&ms);
		snprintf(err, n, "cannot attach to process %d (cannot read /proc/%d/maps: %s)", (int)pid, (int)pid,
		         strerror(errno));
		return -1;
	}
	sonde_build = dl_count_note_section(pid, &ms, ".note.sonde") > 0;
	if (!sonde_build && !locks) {
		modules_free(&ms);
		snprintf(err, n, "process %d has no code built by sonde-cc (for its locks use 'sonde record "
		         "--locks -p %d', for probes 'sonde probe -p %d'; or rebuild it with sonde-cc)", (int)pid,
		         (int)pid, (int)pid);
		return AGENT_NOT_SONDE;
	}
	int rc = dl_funcs_find(pid, &ms, &dlf, err, n);
	modules_free(&ms);
	if (rc)
		return -1;
	attach_time("sonde build checked");
	char rt[PATH_MAX];
	if (!realpath(rt_path, rt)) {
		snprintf(err, n, "cannot find the runtime %s (%s)", rt_path, strerror(errno));
		return -1;
	}
	/* The agent's entry points: offsets in our own file of the runtime. */
	const char *names[2] = { "sonde_agent_start", "sonde_agent_stop" };
	uint64_t off[2] = { 0, 0 };
	if (dl_file_syms(getpid(), rt, names, off, 2) != 0 || !off[0] || !off[1]) {
		snprintf(err, n, "the runtime %s has no sonde_agent_start (a broken build?)", rt);
		return -1;
	}
	int pfd[2];
	if (pipe2(pfd, O_CLOEXEC) != 0) {
		snprintf(err, n, "cannot create a pipe (%s)", strerror(errno));
		return -1;
	}
	/* One stop of one thread for the whole start: dlopen, the other
	 * threads' frames (this one unwound as it was stopped), the agent's
	 * start, one detach. */
	struct inject *in = inject_attach(pid, 0, err, n);
	attach_time("thread stopped");
	if (!in)
		goto fail;
	uint64_t handle, start = 0;
	if (inject_dlopen_with(in, &dlf, rt, &handle, err, n))
		goto fail_in;
	/* The handle is the loader's record of the object (glibc's link_map,
	 * musl's dso): its first word is the load bias.  Checked: the runtime
	 * is linked at 0, so its ELF header is there; else from the maps. */
	uint64_t bias = 0;
	unsigned char magic[4] = { 0 };
	if (inject_peek(in, handle, &bias, sizeof bias) || inject_peek(in, bias, magic, sizeof magic) ||
	    memcmp(magic, "\177ELF", 4))
		bias = target_sym(pid, rt, names[0]) - off[0];
	start = bias + off[0];
	a->stop_fn = bias + off[1];
	attach_time("runtime loaded");
	/* The calls running now, which the threads take as resumed frames at
	 * their first event: the other threads stay stopped (after the frames
	 * were read) until the agent's start has switched the sleds on, so no
	 * call can begin or end unseen in between, and the start runs without
	 * the program's threads competing for the CPU.  The start might wait
	 * for a lock one of them holds (the loader's, malloc's): after
	 * HOLD_MS they are let go and the start goes on. */
	int held = sonde_build && inject_put_back(in) == 0 &&
	           frames_take(pid, inject_where(in)->tid, 1, &a->frames, a->frames_err, sizeof a->frames_err) == 0;
	if (held)
		frames_to_session(&a->frames, h);
	attach_time("running calls found");
	char sess[64], alive[64];
	snprintf(sess, sizeof sess, "/proc/%d/fd/%d", (int)getpid(), session_fd);
	snprintf(alive, sizeof alive, "/proc/%d/fd/%d", (int)getpid(), pfd[0]);
	uint64_t s_at, a_at, ret = 0;
	rc = inject_push(in, sess, strlen(sess) + 1, &s_at, err, n);
	if (!rc)
		rc = inject_push(in, alive, strlen(alive) + 1, &a_at, err, n);
	if (!rc) {
		uint64_t args[6] = { s_at, a_at };
		rc = inject_call_begin(in, start, args, err, n);
	}
	if (!rc && held)
		rc = inject_call_end(in, &ret, HOLD_MS, 0, err, n);
	attach_time("start: returned");
	if (held)
		frames_let_go();
	attach_time("threads let go");
	if (rc == 1 || (!rc && !held))
		rc = inject_call_end(in, &ret, START_TIMEOUT_MS, 1, err, n);
	inject_detach(in);
	attach_time("agent started");
	if (rc)
		goto fail;
	close(pfd[0]); /* the agent has its own */
	pfd[0] = -1;
	int r = (int)(int32_t)(uint32_t)ret;
	if (r < 0) {
		snprintf(err, n, "the agent could not start in process %d (%s)", (int)pid, start_error(r));
		close(pfd[1]);
		return r == -ENOENT ? AGENT_NOT_SONDE : -1;
	}
	a->nmods = r & 0xffff;
	a->nobjs = (r >> 16) & 0x7fff;
	a->alive_w = pfd[1];
	a->start_ns = mono_ns();
	return 0;
fail_in:
	inject_detach(in);
fail:
	frames_free(&a->frames);
	if (pfd[0] >= 0)
		close(pfd[0]);
	close(pfd[1]);
	return -1;
}

void agent_free(struct agent *a)
{
	frames_free(&a->frames);
}

int agent_stop(struct agent *a, char *err, size_t n)
{
	int rc = 0;
	if (!agent_target_alive(a->pid)) {
		snprintf(err, n, "process %d has ended", (int)a->pid);
		rc = -1;
	} else {
		uint64_t args[6] = { 0 }, ret;
		rc = inject_call(a->pid, a->stop_fn, args, &ret, err, n);
	}
	if (a->alive_w >= 0)
		close(a->alive_w); /* the watcher ends too */
	a->alive_w = -1;
	return rc;
}
