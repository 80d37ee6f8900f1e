/* kernel_engine.c — the probe engine of the running kernel and its modules
 * (`sonde probe --kernel -e func:FUNCTION`, `func:MODULE:FUNCTION`; issue
 * 42).  Each func probe is two counting perf events per online CPU of the
 * kernel's kprobe PMU (/sys/bus/event_source/devices/kprobe): a kprobe on
 * the function's entry (its calls) and a kretprobe (its returns, the PMU's
 * retprobe bit).  The kernel counts every hit itself; sonde reads the
 * counts at the end: they stay the exact calls and returns.  Beside them,
 * two sampling events per online CPU (sample_period 1) write each entry
 * (tid, time) and each return (tid, time, and on x86-64 the AX register of
 * the interrupted regs: the return value) into an mmap'ed ring per event,
 * drained while the session runs and at its end; entries and returns are
 * paired per thread (a stack: recursion) in time order across the CPUs
 * for the durations.  What the rings lost (PERF_RECORD_LOST) and the calls
 * not timed are counted and shown.  A perf-event kprobe belongs to its file descriptor:
 * it is in no kprobe_events list and goes when the fd closes, so a sonde
 * that ends in any way (SIGKILL included) leaves nothing.  Before anything
 * is placed, each function is checked against the kprobe blacklist
 * (/sys/kernel/debug/kprobes/blacklist); one the kernel cannot find is
 * told as such from /proc/kallsyms (a text symbol, in MODULE when given),
 * read only then.  The session lasts until
 * --duration, Ctrl-C / SIGTERM, or the end of a program given to run:
 * then the events are the program's own (per task, inherited by its
 * children, enabled at its exec), so only its hits count.  The output half is the func kind's (callstats.c).
 * The return values are typed by the function's return type in the
 * kernel's BTF (/sys/kernel/btf/vmlinux, /sys/kernel/btf/MODULE; sym/btf.h):
 * an int's low 32 bits sign-extended, an unsigned's zero-extended, a bool
 * 0 or 1; without BTF they stay the raw 64-bit AX.  See docs/PROBES.md,
 * "Kernel probes". */
#include "probe/probe_engine.h"

#include "common/json.h"
#include "probe/callstats.h"
#include "probe/engine.h"
#include "probe/kernel/kernel_var.h"
#include "probe/kernel/kprobe_events.h"
#include "probe/kind.h"
#include "probe/place.h"
#include "probe/probe.h"
#include "probe/resolve.h"
#include "probe/spec.h"
#include "proc/modules.h"
#include "sym/btf.h"
#include "sym/peek.h"
#include "sym/sym.h"

#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <asm/perf_regs.h>
#define K_RETVAL 1               /* the return value: AX at the kretprobe */
#else
#define K_RETVAL 0
#endif

#define K_MAX_CPUS 1024
#define K_RING_PAGES 32          /* data pages of each sampling ring (a power of 2) */
#define K_HOLD_NS 50000000ull    /* records younger than this wait a drain: another CPU's may be older */
#define K_MAX_PENDING (1u << 20) /* records waiting for their turn; more: paired at once */
#define K_MAX_DEPTH 1024         /* pending calls per thread; deeper ones are not timed */
#define K_MAX_TIDS 65536         /* threads followed; others' calls are not timed */
#define K_MAX_VALUES 64          /* distinct return values counted; more in returned_other */
#define K_MAX_EV 16              /* events of a probe: a func's entry and return, a line's addresses */
#define K_STACK_FRAMES 40         /* a stack probe's callchain: frames asked of the kernel (kind_stack keeps 32) */
#define K_MAX_PIDS 4096          /* processes whose hits are told apart; others in processes_other */
#define K_SYSFS "/sys/bus/event_source/devices/kprobe"
#define U_SYSFS "/sys/bus/event_source/devices/uprobe"
#define K_BLACKLIST "/sys/kernel/debug/kprobes/blacklist"
#define K_BTF "/sys/kernel/btf"

enum { KR_ENTRY, KR_RETURN, KR_LOST };

/* One record of a ring, waiting to be paired in time order. */
struct krec {
	uint64_t t, seq, key;    /* perf time (CLOCK_MONOTONIC), order read, thread (tid, or CPU for tid 0) */
	int64_t v;               /* a return's value, a loss's count */
	uint32_t kind, hasv;
};

/* A sampling event's ring. */
struct kring {
	int fd, cpu, ret, ev;    /* cpu: the index in ks.online; ret: of a return event; ev: its event */
	unsigned char *base;     /* the header page, then K_RING_PAGES of data; NULL unmapped */
	uint64_t tail;           /* what sonde has read (its own: the page's copy is not trusted) */
	uint64_t last_t;         /* the time of the last sample read from it */
};

/* A thread's pending calls (their entry times, innermost last). */
/* The head of a cell of an open-addressing table (ktab_slot). */
struct kslot { uint64_t key; int used; };

struct ktid {
	struct kslot s;          /* the thread's key */
	int n, cap;
	uint64_t *t;
};

struct kval { int64_t v; uint64_t n; };

/* One event of a probe: where (a uprobe's file offset; 0 for a kprobe's
 * function) and whether it is the return one. */
struct kev {
	uint64_t off;
	int ret;
	char sym[192];           /* a kernel line's MODULE:FUNCTION (else d->sym) */
	int tp;                  /* a var's: its kprobe_events probe's tracepoint id (else the PMU's) */
};

/* A process's sampled hits, and its command (/proc/PID/comm when first
 * seen, or the kernel's COMM record of its exec). */
struct kpid { struct kslot s; uint64_t hits; char comm[16]; };   /* s.key: the pid */

struct kfunc {
	struct call_stats *cs;   /* a func probe's: kind_func's (func_stats), else NULL */
	char sym[256];           /* what the kprobe PMU is given: FUNCTION or MODULE:FUNCTION; --system: OBJECT:WHAT, told */
	char path[PATH_MAX];     /* --system: the object the uprobes are in (the uprobe PMU's path) */
	int line;                /* a line probe: its events are entries only, nothing paired */
	int stack;               /* a stack probe: entries only, each sample's callchain counted (kind_stack.c) */
	struct kvar *kv;         /* a var or assert probe: its sites (kernel_var.c), entries only, each record evaluated */
	struct sym_kmod *km;     /* the .ko of a var or assert probe */
	struct sym_module *um;   /* --system's: the object's symbols and DWARF */
	char mod[64];            /* its module's name */
	int missed_known;        /* kmissed read from kprobe_profile */
	uint64_t kmissed;        /* the hits the kernel missed (a var's kprobe_events probes) */
	struct probe *owner;
	struct kev ev[K_MAX_EV];
	int nev;
	int *fd;                 /* nev * ncpus counting events: event e on CPU c at e * ncpus + c (-1: none) */
	struct kring *ring;      /* nev * nonline sampling rings, the same order over the online CPUs */
	int nring;
	struct kpid *pids;       /* open addressing, cappid a power of 2 */
	size_t cappid, npid;
	uint64_t pid_other;      /* sampled hits of processes beyond K_MAX_PIDS */
	struct krec *pend;       /* read, not yet paired */
	size_t npend, cappend;
	uint64_t seq;
	struct ktid *tid;        /* open addressing, captid a power of 2 */
	size_t captid, ntid;
	struct kval val[K_MAX_VALUES];
	int nval;
	uint64_t val_other, errors;
	struct sym_ret rt;       /* the return type (rt_known: from BTF) */
	int rt_known;
	uint64_t timed;          /* calls paired with their return: timed */
	uint64_t lost_samples;   /* PERF_RECORD_LOST: samples the rings had no room for */
	uint64_t unmatched;      /* returns sampled without their entry's sample: dropped */
	uint64_t too_deep;       /* entries beyond K_MAX_DEPTH or K_MAX_TIDS: not timed */
	uint64_t malformed;      /* records (or whole ring contents) that made no sense: skipped */
	char note[768];          /* said on stderr once placed (a missing BTF) */
};

static struct {
	int user;                /* --system: the uprobe PMU, in every process; else the kprobe PMU */
	int type, retbit, ncpus;
	int cpus[K_MAX_CPUS];    /* counting events: system-wide the online CPUs; a program's: {-1} */
	int nonline;
	int online[K_MAX_CPUS];  /* the sampling events' CPUs (a ring is per CPU, also for a program) */
	size_t page;
	int format_lost;         /* the samplers' read() gives their lost samples */
	pid_t pid;               /* the events' task: -1 system-wide, else the program's (its hits and its children's) */
	pid_t child;             /* a program run meanwhile (the session ends with it), or 0 */
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
	ks.nonline = ks.ncpus;
	memcpy(ks.online, ks.cpus, sizeof ks.online);
	return 0;
}

/* MODULE and FUNCTION of a func probe's location (func:MODULE:FUNCTION is
 * parsed as location MODULE, argument FUNCTION). */
static int split_loc(const struct spec *sp, char *sym, size_t n, char *err, size_t en)
{
	if ((strcmp(sp->kind, "func") && strcmp(sp->kind, "stack")) || sp->loc != LOC_FUNC || sp->off) {
		snprintf(err, en, "--kernel runs func: and stack: probes of FUNCTION or MODULE:FUNCTION");
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

/* --- pairing the sampled entries and returns --------------------------- */

/* The cell of key in an open-addressing table of *cap cells of sz bytes,
 * each starting with a struct kslot (*cap 0 or a power of 2, at most half
 * full): the one there, else, when create and fewer than max are in, a new
 * zeroed one (*added set); NULL otherwise or out of memory. */
static void *ktab_slot(void **tab, size_t *cap, size_t *n, size_t max, size_t sz, uint64_t key, int create, int *added)
{
#define KCELL(t, i) ((struct kslot *)((char *)(t) + (i) * sz))
	size_t m = *cap - 1;
	for (size_t i = key * 0x9e3779b97f4a7c15ull >> 20 & m; *cap && KCELL(*tab, i)->used; i = (i + 1) & m)
		if (KCELL(*tab, i)->key == key)
			return KCELL(*tab, i);
	if (!create || *n >= max)
		return NULL;
	if (2 * (*n + 1) > *cap) {
		size_t nc = *cap ? 2 * *cap : 64;
		void *v = calloc(nc, sz);
		if (!v)
			return NULL;
		for (size_t k = 0; k < *cap; k++) {
			if (!KCELL(*tab, k)->used)
				continue;
			size_t i = KCELL(*tab, k)->key * 0x9e3779b97f4a7c15ull >> 20 & (nc - 1);
			while (KCELL(v, i)->used)
				i = (i + 1) & (nc - 1);
			memcpy(KCELL(v, i), KCELL(*tab, k), sz);
		}
		free(*tab);
		*tab = v;
		*cap = nc;
		m = nc - 1;
	}
	size_t i = key * 0x9e3779b97f4a7c15ull >> 20 & m;
	while (KCELL(*tab, i)->used)
		i = (i + 1) & m;
	struct kslot *c = KCELL(*tab, i);
	memset(c, 0, sz);
	*c = (struct kslot){ .key = key, .used = 1 };
	(*n)++;
	*added = 1;
	return c;
#undef KCELL
}

/* The pending calls of thread key; created when create (NULL: no room). */
static struct ktid *tid_of(struct kfunc *d, uint64_t key, int create)
{
	int added = 0;
	void *t = d->tid;
	struct ktid *r = ktab_slot(&t, &d->captid, &d->ntid, K_MAX_TIDS, sizeof *r, key, create, &added);
	d->tid = t;
	return r;
}

/* The entry of process pid (created, its command read, when create): NULL
 * when there is none, the table is full or out of memory. */
static struct kpid *pid_of(struct kfunc *d, uint32_t pid, int create)
{
	int added = 0;
	void *t = d->pids;
	struct kpid *k = ktab_slot(&t, &d->cappid, &d->npid, K_MAX_PIDS, sizeof *k, pid, create, &added);
	d->pids = t;
	if (!added)
		return k;
	char path[48];
	snprintf(path, sizeof path, "/proc/%u/comm", pid);
	FILE *f = fopen(path, "r");
	if (f) {
		if (fgets(k->comm, sizeof k->comm, f))
			k->comm[strcspn(k->comm, "\n")] = 0;
		fclose(f);
	}
	return k;
}

/* A sampled entry of process pid. */
static void count_pid(struct kfunc *d, uint32_t pid)
{
	struct kpid *k = pid_of(d, pid, 1);
	if (k)
		k->hits++;
	else
		d->pid_other++;
}

/* A kernel error return: -MAX_ERRNO..-1 as a long, or as an int (a
 * function returning int leaves the upper half of AX zero). */
static int is_errno(int64_t v)
{
	int32_t lo = (int32_t)(uint32_t)(uint64_t)v;
	return (v >= -4095 && v <= -1) || ((uint64_t)v >> 32 == 0 && lo >= -4095 && lo <= -1);
}

/* AX as the return type has it: the low bytes of a narrower integer
 * sign- or zero-extended, a bool 0 or 1; 64-bit values and pointers as they are. */
static int64_t typed(const struct kfunc *d, int64_t v)
{
	const struct sym_ret *t = &d->rt;
	uint64_t u = (uint64_t)v;
	if (!d->rt_known || t->is_ptr || t->is_void || t->size >= 8)
		return v;
	if (t->is_bool)
		return (u & 0xff) != 0;
	unsigned bits = 8 * t->size;
	u &= (1ull << bits) - 1;
	if (t->is_signed && u >> (bits - 1))
		u |= ~0ull << bits;
	return (int64_t)u;
}

/* An error return: a negative value of a signed type, an ERR_PTR of a
 * pointer; none of an unsigned type, a bool or void; is_errno's guess when
 * the type is unknown. */
static int is_error(const struct kfunc *d, int64_t v)
{
	const struct sym_ret *t = &d->rt;
	if (!d->rt_known)
		return is_errno(v);
	if (t->is_ptr)
		return v >= -4095 && v <= -1;
	return t->is_signed && !t->is_bool && v < 0;
}

/* Whether the values print as unsigned (an unsigned 64-bit integer). */
static int as_unsigned(const struct kfunc *d)
{
	return d->rt_known && !d->rt.is_ptr && !d->rt.is_void && !d->rt.is_signed && d->rt.size == 8;
}

static void count_value(struct kfunc *d, int64_t v)
{
	int i;
	v = typed(d, v);
	if (is_error(d, v))
		d->errors++;
	for (i = 0; i < d->nval && d->val[i].v != v; i++)
		;
	if (i == d->nval) {
		if (d->nval == K_MAX_VALUES) {
			d->val_other++;
			return;
		}
		d->val[d->nval++] = (struct kval){ v, 0 };
	}
	d->val[i].n++;
}

static void apply(struct kfunc *d, const struct krec *k)
{
	if (k->kind == KR_LOST) {
		/* samples gone: which entry a return closes is no longer known,
		 * so every pending call is left untimed */
		d->lost_samples += (uint64_t)k->v;
		for (size_t i = 0; i < d->captid; i++)
			d->tid[i].n = 0;
		return;
	}
	struct ktid *s = tid_of(d, k->key, k->kind == KR_ENTRY);
	if (k->kind == KR_ENTRY) {
		if (!s || s->n >= K_MAX_DEPTH) {
			d->too_deep++;
			return;
		}
		if (s->n == s->cap) {
			int cap = s->cap ? 2 * s->cap : 8;
			uint64_t *v = realloc(s->t, (size_t)cap * sizeof *v);
			if (!v) {
				d->too_deep++;
				return;
			}
			s->t = v;
			s->cap = cap;
		}
		s->t[s->n++] = k->t;
		return;
	}
	if (k->hasv)
		count_value(d, k->v);
	if (!s || !s->n) {
		d->unmatched++;
		return;
	}
	uint64_t t0 = s->t[--s->n];
	if (k->t < t0) {
		d->malformed++;
		return;
	}
	if (d->cs)
		callstats_return(d->cs, k->t - t0);
	d->timed++;
}

static int by_time(const void *a, const void *b)
{
	const struct krec *x = a, *y = b;
	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The pending records older than upto paired, in time order. */
static void settle(struct kfunc *d, uint64_t upto)
{
	size_t i;
	if (!d->npend)
		return;   /* (pend may be NULL: qsort and memmove take none) */
	qsort(d->pend, d->npend, sizeof *d->pend, by_time);
	for (i = 0; i < d->npend && d->pend[i].t < upto; i++)
		apply(d, &d->pend[i]);
	memmove(d->pend, d->pend + i, (d->npend - i) * sizeof *d->pend);
	d->npend -= i;
}

static void pend(struct kfunc *d, struct krec k)
{
	if (d->npend == d->cappend) {
		size_t cap = d->cappend ? 2 * d->cappend : 1024;
		struct krec *v = cap <= K_MAX_PENDING ? realloc(d->pend, cap * sizeof *v) : NULL;
		if (v) {
			d->pend = v;
			d->cappend = cap;
		} else
			settle(d, UINT64_MAX);   /* no room to wait: paired now */
		if (d->npend == d->cappend) {
			if (k.kind == KR_ENTRY)
				d->too_deep++;
			return;
		}
	}
	k.seq = d->seq++;
	d->pend[d->npend++] = k;
}

/* n bytes at offset off of a ring's data (size a power of 2), across its wrap. */
static void ring_copy(const unsigned char *data, size_t size, uint64_t off, void *dst, size_t n)
{
	size_t o = (size_t)(off & (size - 1)), first = n < size - o ? n : size - o;
	memcpy(dst, data + o, first);
	memcpy((unsigned char *)dst + first, data, n - first);
}

/* --- the user frames of callchains ------------------------------------- */

/* A stack probe's callchain has the user stack after the kernel's (what the
 * kernel's unwinder finds: the pc at the system call or uprobe, then the
 * frame-pointer chain; a program built without frame pointers gives the
 * first frame and whatever its rbp chain holds).  Each user frame is named
 * when its record is read, in the modules its process maps then
 * (/proc/PID/maps, read within 10 ms of the hit: a process gone by then
 * keeps its frames as addresses), and the name kept by address (the
 * innermost frame's pc, a caller's call, its return address minus one): one
 * address, one name, the first process's to reach it (two programs mapping
 * different code at the same address would share the first one's name). */
#define K_USER_PIDS 64      /* processes whose modules are read */
#define K_USER_NAMES 8192   /* user frames named (beyond: their address) */
#define K_USER_TOP 0x800000000000ull   /* user addresses are below (x86-64, 4-level and 5-level paging's low half) */

struct kupid { struct kslot s; struct modules mods; int loads; };
struct kuname { struct kslot s; char name[160]; };
static struct kupid *kupids;
static size_t capkupid, nkupid;
static struct kuname *kunames;
static size_t capkuname, nkuname;

/* The modules of process pid, read (again, at most 3 times: a library
 * mapped since) when they do not hold at. */
static struct modules *user_mods(uint32_t pid, uint64_t at)
{
	int added = 0;
	void *t = kupids;
	struct kupid *u = ktab_slot(&t, &capkupid, &nkupid, K_USER_PIDS, sizeof *u, pid, 1, &added);
	kupids = t;
	if (!u)
		return NULL;
	if ((!u->loads || !modules_at(&u->mods, at)) && u->loads < 3) {
		modules_free(&u->mods);
		memset(&u->mods, 0, sizeof u->mods);
		u->loads++;
		if (modules_load(&u->mods, (pid_t)pid))
			memset(&u->mods, 0, sizeof u->mods);
	}
	return &u->mods;
}

/* The name of user frame at (a call's address) of process pid, kept. */
static void user_frame(uint32_t pid, uint64_t at)
{
	int added = 0;
	void *t = kunames;
	struct kuname *u = ktab_slot(&t, &capkuname, &nkuname, K_USER_NAMES, sizeof *u, at, 1, &added);
	kunames = t;
	if (!u || !added)
		return;
	struct modules *ms = user_mods(pid, at);
	struct module *m = ms ? modules_at(ms, at) : NULL;
	if (!m) {
		snprintf(u->name, sizeof u->name, "0x%llx", (unsigned long long)at);
		return;
	}
	char fn[96];
	resolve_name_in(ms, at, fn, sizeof fn);
	const char *base = strrchr(m->path, '/') ? strrchr(m->path, '/') + 1 : m->path;
	if (strchr(fn, '+'))   /* no symbol: "module+0xOFF" already names its object */
		snprintf(u->name, sizeof u->name, "%s", fn);
	else
		snprintf(u->name, sizeof u->name, "%s (%.60s)", fn, base);
}

static void users_free(void)
{
	for (size_t i = 0; i < capkupid; i++)
		if (kupids[i].s.used)
			modules_free(&kupids[i].mods);
	free(kupids);
	free(kunames);
	kupids = NULL;
	kunames = NULL;
	capkupid = nkupid = capkuname = nkuname = 0;
}

/* One record (type, its n bytes from the header on, n a multiple of 8). */
static void parse(struct kfunc *d, struct kring *r, uint32_t type, const unsigned char *b, size_t n)
{
	struct krec k;
	memset(&k, 0, sizeof k);
	if (type == PERF_RECORD_SAMPLE) {
		/* header; u32 pid, tid; u64 time; a return's: u64 abi, then AX when abi is not NONE */
		uint32_t pid, tid;
		uint64_t abi = 0;
		size_t want = r->ret && K_RETVAL ? 32 : 24;
		if (n < want) {
			d->malformed++;
			return;
		}
		memcpy(&pid, b + 8, 4);
		memcpy(&tid, b + 12, 4);
		if (!r->ret)
			count_pid(d, pid);
		if (d->kv) {
			/* then u32 size, the record (its fields at the offsets of the event's format) */
			uint32_t rs;
			if (n < 28 || (memcpy(&rs, b + 24, 4), rs > n - 28)) {
				d->malformed++;
				return;
			}
			kvar_sample(d->kv, r->ev, (long)tid, b + 28, rs);
			return;
		}
		if (d->stack) {
			/* then u64 nr, u64 ips[nr]: context markers (PERF_CONTEXT_KERNEL, ...) among them */
			uint64_t nr, pc[K_STACK_FRAMES];
			int k = 0;
			if (n < 32 || (memcpy(&nr, b + 24, 8), nr > (n - 32) / 8)) {
				d->malformed++;
				return;
			}
			int user = 0;
			for (uint64_t i = 0; i < nr && k < K_STACK_FRAMES; i++) {
				uint64_t ip;
				memcpy(&ip, b + 32 + 8 * i, 8);
				if (ip >= (uint64_t)PERF_CONTEXT_MAX) {
					user = ip == (uint64_t)PERF_CONTEXT_USER;
					continue;
				}
				if (user && (ip < 4096 || ip >= K_USER_TOP))
					break;   /* the end of a frame-pointer chain, or garbage in it */
				if (user)   /* named as kind_stack names it: the innermost by its pc, a caller by its call */
					user_frame(pid, k ? ip - 1 : ip);
				pc[k++] = ip;
			}
			stack_account_pcs(d->owner, pc, k);
			return;
		}
		if (d->line)
			return;   /* a line's hits: counted, nothing to pair */
		memcpy(&k.t, b + 16, 8);
		k.kind = r->ret ? KR_RETURN : KR_ENTRY;
		/* the idle tasks are all tid 0, one per CPU */
		k.key = tid ? tid : (1ull << 32) | (uint64_t)r->cpu;
		if (r->ret && K_RETVAL) {
			memcpy(&abi, b + 24, 8);
			if (abi != PERF_SAMPLE_REGS_ABI_NONE) {
				if (n < 40) {
					d->malformed++;
					return;
				}
				memcpy(&k.v, b + 32, 8);
				k.hasv = 1;
			}
		}
		r->last_t = k.t;
	} else if (type == PERF_RECORD_LOST) {
		/* header; u64 id, lost; the sample_id.  Placed right after the
		 * ring's last sample before the loss (its own time is the next
		 * sample's, taken after it) */
		uint64_t lost;
		if (n < 24) {
			d->malformed++;
			return;
		}
		memcpy(&lost, b + 16, 8);
		k.kind = KR_LOST;
		k.v = (int64_t)(lost < (1ull << 48) ? lost : 1ull << 48);
		k.t = r->last_t;
		if (d->line || d->stack || d->kv) {
			d->lost_samples += (uint64_t)k.v;
			return;
		}
	} else if (type == PERF_RECORD_COMM) {
		/* header; u32 pid, tid; char comm[] (NUL-terminated, padded to
		 * 8); the sample_id (tid, time): a process's exec, its new name */
		uint32_t pid;
		if (n < 8 + 8 + 8 + 16) {
			d->malformed++;
			return;
		}
		memcpy(&pid, b + 8, 4);
		/* every exec of the system comes here: half the table is kept
		 * for the processes that hit */
		struct kpid *p = pid_of(d, pid, d->npid < K_MAX_PIDS / 2);
		if (p) {
			size_t cl = n - 16 - 16 < sizeof p->comm - 1 ? n - 16 - 16 : sizeof p->comm - 1;
			memcpy(p->comm, b + 16, cl);
			p->comm[cl] = 0;
		}
		return;
	} else
		return;   /* THROTTLE and others: nothing for sonde */
	pend(d, k);
}

/* Everything the kernel wrote into r since the last drain. */
static void drain_ring(struct kfunc *d, struct kring *r)
{
	if (!r->base)
		return;
	struct perf_event_mmap_page *pg = (void *)r->base;
	const unsigned char *data = r->base + ks.page;
	size_t size = K_RING_PAGES * ks.page;
	uint64_t head = __atomic_load_n(&pg->data_head, __ATOMIC_ACQUIRE), tail = r->tail;
	if (head - tail > size) {
		d->malformed++;   /* a head sonde cannot have: the ring is skipped */
		tail = head;
	}
	while (head - tail >= sizeof(struct perf_event_header)) {
		struct perf_event_header h;
		unsigned char rec[64 + 8 * K_STACK_FRAMES];
		ring_copy(data, size, tail, &h, sizeof h);
		if (h.size < sizeof h || h.size > head - tail || h.size % 8) {
			d->malformed++;
			tail = head;
			break;
		}
		if (h.size <= sizeof rec) {
			ring_copy(data, size, tail, rec, h.size);
			parse(d, r, h.type, rec, h.size);
		} else if (h.type == PERF_RECORD_SAMPLE)
			d->malformed++;   /* longer than any sample sonde asked for */
		tail += h.size;
	}
	if (head != tail) {
		d->malformed++;
		tail = head;
	}
	r->tail = tail;
	__atomic_store_n(&pg->data_tail, tail, __ATOMIC_RELEASE);
}

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Every probe's rings drained; what is older than K_HOLD_NS paired (all at the end). */
static void drain_all(struct engine *e, int final)
{
	uint64_t now = mono_ns();   /* before reading: what is older is in the rings */
	for (int i = 0; i < e->nprobes; i++) {
		struct kfunc *d = e->probes[i]->edata;
		if (!d || !d->ring)
			continue;
		for (int k = 0; k < d->nring; k++)
			drain_ring(d, &d->ring[k]);
		settle(d, final ? UINT64_MAX : now > K_HOLD_NS ? now - K_HOLD_NS : 0);
	}
}

/* --- the func kind's output through callstats ----------------------------- */

static const char *name_of(void *arg, uint64_t ret, char *buf, size_t n)
{
	(void)arg;
	snprintf(buf, n, "0x%llx", (unsigned long long)ret);
	return buf;
}

static int by_count(const void *a, const void *b)
{
	const struct kval *x = a, *y = b;
	if (x->n != y->n)
		return x->n < y->n ? 1 : -1;
	return x->v < y->v ? -1 : x->v > y->v;
}

static int by_hits(const void *a, const void *b)
{
	const struct kpid *x = a, *y = b;
	if (x->hits != y->hits)
		return x->hits < y->hits ? 1 : -1;
	return x->s.key < y->s.key ? -1 : x->s.key > y->s.key;
}

/* The processes that hit, most hits first (malloc'd, *n of them; NULL when none). */
static struct kpid *hitters(const struct kfunc *d, size_t *n)
{
	struct kpid *v = d->npid ? malloc(d->npid * sizeof *v) : NULL;
	*n = 0;
	for (size_t i = 0; v && i < d->cappid; i++)
		if (d->pids[i].s.used && d->pids[i].hits)
			v[(*n)++] = d->pids[i];
	if (v)
		qsort(v, *n, sizeof *v, by_hits);
	return v;
}

/* The hits by process (sampled entries: exact unless lost_samples). */
static void processes_json(const struct kfunc *d, struct json *j)
{
	size_t n;
	struct kpid *v = hitters(d, &n);
	json_arr_begin(j, "processes");
	for (size_t i = 0; i < n; i++) {
		json_obj_begin(j, NULL);
		json_uint(j, "pid", v[i].s.key);
		json_str(j, "comm", v[i].comm[0] ? v[i].comm : NULL);
		json_uint(j, "hits", v[i].hits);
		json_obj_end(j);
	}
	json_arr_end(j);
	json_uint(j, "processes_other", d->pid_other);
	free(v);
}

static void processes_table(const struct kfunc *d, FILE *f)
{
	size_t n;
	struct kpid *v = hitters(d, &n);
	for (size_t i = 0; i < n && i < 5; i++)
		fprintf(f, "%s%u %s x%llu", i ? ", " : "; by process: ", (unsigned)v[i].s.key, v[i].comm[0] ? v[i].comm : "?",
		        (unsigned long long)v[i].hits);
	if (n > 5 || d->pid_other)
		fprintf(f, ", ... (%zu processes)", n);
	free(v);
}

static uint64_t untimed(const struct kfunc *d)
{
	return d->cs && d->cs->calls > d->timed ? d->cs->calls - d->timed : 0;
}

static void kfunc_json(struct probe *p, struct json *j)
{
	struct kfunc *d = p->edata;
	if (!d || !d->cs)
		return;
	callstats_json(d->cs, j, name_of, NULL);
	json_bool(j, "timed", 1);
	json_uint(j, "untimed", untimed(d));          /* calls without a duration */
	json_uint(j, "lost_samples", d->lost_samples);
	json_uint(j, "unmatched_returns", d->unmatched);
	json_uint(j, "malformed_records", d->malformed);
	processes_json(d, j);
	if (K_RETVAL) {
		struct kval v[K_MAX_VALUES];
		memcpy(v, d->val, sizeof v);
		qsort(v, (size_t)d->nval, sizeof *v, by_count);
		json_str(j, "return_type", d->rt_known ? d->rt.name : NULL);
		json_arr_begin(j, "returned");
		for (int i = 0; i < d->nval; i++) {
			json_obj_begin(j, NULL);
			if (as_unsigned(d))
				json_uint(j, "value", (uint64_t)v[i].v);
			else
				json_int(j, "value", v[i].v);
			json_uint(j, "calls", v[i].n);
			json_obj_end(j);
		}
		json_arr_end(j);
		json_uint(j, "returned_other", d->val_other);
		if (ks.user)
			json_null(j, "errors");   /* a user function's errors are not the kernel's -errno */
		else
			json_uint(j, "errors", d->errors);
	}
}

/* What the samplers of an entries-only probe (line, stack) say. */
static void sampled_json(const struct kfunc *d, struct json *j)
{
	json_uint(j, "lost_samples", d->lost_samples);
	json_uint(j, "malformed_records", d->malformed);
	processes_json(d, j);
}

static void kline_json(struct probe *p, struct json *j)
{
	struct kfunc *d = p->edata;
	if (!d)
		return;
	json_int(j, "addresses", d->nev);
	sampled_json(d, j);
}

static void kline_table(struct probe *p, FILE *f)
{
	struct kfunc *d = p->edata;
	if (!d)
		return;
	fprintf(f, "%d address%s", d->nev, d->nev == 1 ? "" : "es");
	processes_table(d, f);
	if (d->lost_samples)
		fprintf(f, "; %llu samples lost (the counts by process are short of them)", (unsigned long long)d->lost_samples);
}

static void kfunc_table(struct probe *p, FILE *f)
{
	struct kfunc *d = p->edata;
	if (!d || !d->cs)
		return;
	callstats_table(d->cs, f, name_of, NULL);
	fprintf(f, ", returns %llu (counted by the kernel)", (unsigned long long)d->cs->returns);
	if (K_RETVAL && d->nval) {
		struct kval v[K_MAX_VALUES];
		memcpy(v, d->val, sizeof v);
		qsort(v, (size_t)d->nval, sizeof *v, by_count);
		for (int i = 0; i < d->nval && i < 4; i++) {
			if (!i)
				fprintf(f, "; returned %s%s", d->rt_known ? d->rt.name : "", d->rt_known ? ": " : "");
			fprintf(f, as_unsigned(d) ? "%s%llu x%llu" : "%s%lld x%llu", i ? ", " : "", (long long)v[i].v,
			        (unsigned long long)v[i].n);
		}
		if (d->nval > 4 || d->val_other)
			fprintf(f, ", ...");
		if (!ks.user)
			fprintf(f, " (errors %llu)", (unsigned long long)d->errors);
	}
	processes_table(d, f);
	if (untimed(d) || d->lost_samples)
		fprintf(f, "; %llu call%s not timed (%llu samples lost, %llu returns without their entry)",
		        (unsigned long long)untimed(d), untimed(d) == 1 ? "" : "s", (unsigned long long)d->lost_samples,
		        (unsigned long long)d->unmatched);
}

static void close_fds(struct kfunc *d)
{
	for (int i = 0; d->fd && i < d->nev * ks.ncpus; i++)
		if (d->fd[i] >= 0) {
			close(d->fd[i]);
			d->fd[i] = -1;
		}
	/* a mapping holds its event (and the kprobe) as the fd does */
	for (int i = 0; d->ring && i < d->nring; i++) {
		struct kring *r = &d->ring[i];
		if (r->base)
			munmap(r->base, (1 + K_RING_PAGES) * ks.page);
		r->base = NULL;
		if (r->fd >= 0)
			close(r->fd);
		r->fd = -1;
	}
}

/* The engine's events of the probe, then the kind's data (kind_*.c's;
 * a var's sites' expressions go with the events, kernel_var.c). */
static void kfunc_free(struct probe *p)
{
	struct kfunc *d = p->edata;
	if (d) {
		close_fds(d);
		free(d->fd);
		free(d->ring);
		free(d->pend);
		for (size_t i = 0; i < d->captid; i++)
			free(d->tid[i].t);
		free(d->tid);
		free(d->pids);
		kvar_free(d->kv);
		sym_kmod_close(d->km);
		if (d->um)
			sym_close(d->um);
	}
	free(d);
	p->edata = NULL;
	const struct kind_ops *k = kind_find(p->sp.kind);
	if (p->data && k && k->free)
		k->free(p);
	p->data = NULL;
}

static const struct kind_ops kfunc_ops = {
	.name = "func", .needs_location = 1, .setup = kind_place, .json = kfunc_json, .table = kfunc_table,
	.free = kfunc_free,
};

static const struct kind_ops kline_ops = {
	.name = "line", .needs_location = 1, .setup = kind_place, .json = kline_json, .table = kline_table,
	.free = kfunc_free,
};

/* --- the stack kind: kind_stack.c's table, frames named from kallsyms ------- */

struct ksym { uint64_t a; char *name; };   /* name: "NAME" or "NAME [MODULE]" */
static struct ksym *ksyms;
static size_t nksyms;
static int ksyms_read;     /* 1: read (ksyms_ok: it could be opened) */
static int ksyms_ok, ksyms_hidden;   /* hidden: every address 0 (kptr_restrict) */

static int by_addr(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;
	return x->a < y->a ? -1 : x->a > y->a;
}

/* /proc/kallsyms' text symbols, by address: read once, for the stacks'
 * names and the refusals' reasons. */
static void ksyms_load(void)
{
	if (ksyms_read)
		return;
	ksyms_read = 1;
	FILE *f = fopen("/proc/kallsyms", "r");
	char line[512];
	size_t cap = 0;
	ksyms_ok = f != NULL;
	ksyms_hidden = 1;
	while (f && fgets(line, sizeof line, f)) {
		unsigned long long a;
		char t, name[256], mod[128] = "";
		if (sscanf(line, "%llx %c %255s [%127[^]]]", &a, &t, name, mod) < 3 || (t != 't' && t != 'T'))
			continue;
		if (nksyms == cap) {
			size_t nc = cap ? 2 * cap : 65536;
			struct ksym *v = realloc(ksyms, nc * sizeof *v);
			if (!v)
				break;
			ksyms = v;
			cap = nc;
		}
		char buf[400];
		snprintf(buf, sizeof buf, mod[0] ? "%s [%s]" : "%s", name, mod);
		if (!(ksyms[nksyms].name = strdup(buf)))
			break;
		ksyms[nksyms++].a = a;
		ksyms_hidden &= !a;
	}
	if (f)
		fclose(f);
	qsort(ksyms, nksyms, sizeof *ksyms, by_addr);
}

static void ksyms_free(void)
{
	for (size_t i = 0; i < nksyms; i++)
		free(ksyms[i].name);
	free(ksyms);
	ksyms = NULL;
	nksyms = 0;
	ksyms_read = 0;
}

/* Whether the kernel has sym (FUNCTION or MODULE:FUNCTION) as text: 1, 0,
 * or -1 (kallsyms unreadable). */
static int kallsyms_has(const char *sym)
{
	ksyms_load();
	if (!ksyms_ok)
		return -1;
	const char *c = strchr(sym, ':');
	char want[400];
	if (c)
		snprintf(want, sizeof want, "%s [%.*s]", c + 1, (int)(c - sym), sym);
	size_t wl = strlen(c ? want : sym);
	for (size_t i = 0; i < nksyms; i++)
		/* FUNCTION alone: in vmlinux or in any module */
		if (c ? !strcmp(ksyms[i].name, want)
		      : !strncmp(ksyms[i].name, sym, wl) && (!ksyms[i].name[wl] || ksyms[i].name[wl] == ' '))
			return 1;
	return 0;
}

/* A kernel address's function (and module), or the address. */
static void kname(uint64_t at, char *buf, size_t n)
{
	if (at < K_USER_TOP) {   /* a user frame (at: the call's address, named when its record was read) */
		void *t = kunames;
		int added = 0;
		struct kuname *u = ktab_slot(&t, &capkuname, &nkuname, K_USER_NAMES, sizeof *u, at, 0, &added);
		if (u)
			snprintf(buf, n, "%s", u->name);
		else
			snprintf(buf, n, "0x%llx", (unsigned long long)at);
		return;
	}
	ksyms_load();
	size_t lo = 0, hi = ksyms_hidden ? 0 : nksyms;
	while (lo < hi) {   /* the last symbol at or below at */
		size_t mid = lo + (hi - lo) / 2;
		if (ksyms[mid].a <= at)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo)
		snprintf(buf, n, "%s", ksyms[lo - 1].name);
	else
		snprintf(buf, n, "0x%llx", (unsigned long long)at);
}

static void kstack_json(struct probe *p, struct json *j)
{
	struct kfunc *d = p->edata;
	if (!d)
		return;
	kind_stack.json(p, j);
	sampled_json(d, j);
}

static void kstack_table(struct probe *p, FILE *f)
{
	struct kfunc *d = p->edata;
	if (!d)
		return;
	kind_stack.table(p, f);
	processes_table(d, f);
	if (d->lost_samples)
		fprintf(f, "; %llu samples lost (their stacks not counted)", (unsigned long long)d->lost_samples);
}

static void kstack_after(struct probe *p, FILE *f)
{
	kind_stack.table_after(p, f);
}

static const struct kind_ops kstack_ops = {
	.name = "stack", .needs_location = 1, .json = kstack_json, .table = kstack_table,
	.setup = kind_place, .table_after = kstack_after, .free = kfunc_free,
};

/* --- var and assert: kind_var's and kind_assert's output ------------------- */

static void kvar_json(struct probe *p, struct json *j)
{
	struct kfunc *d = p->edata;
	if (p->data)
		kind_find(p->sp.kind)->json(p, j);   /* kind_var's or kind_assert's */
	if (!d)
		return;
	sampled_json(d, j);
	if (d->missed_known)
		json_uint(j, "kernel_missed", d->kmissed);
	else
		json_null(j, "kernel_missed");
}

static void kvar_table(struct probe *p, FILE *f)
{
	struct kfunc *d = p->edata;
	if (p->data)
		kind_find(p->sp.kind)->table(p, f);
	if (!d)
		return;
	processes_table(d, f);
	if (d->lost_samples)
		fprintf(f, "; %llu records lost (their values not counted)", (unsigned long long)d->lost_samples);
	if (d->missed_known && d->kmissed)
		fprintf(f, "; %llu hits missed by the kernel", (unsigned long long)d->kmissed);
}

static const struct kind_ops kvar_ops = {
	.name = "var", .needs_location = 1, .setup = kind_place, .json = kvar_json, .table = kvar_table,
	.free = kfunc_free,
};

static const struct kind_ops kassert_ops = {
	.name = "assert", .needs_location = 1, .setup = kind_place, .json = kvar_json, .table = kvar_table,
	.free = kfunc_free,
};

/* --- placement ------------------------------------------------------------ */

/* What both kinds of event of d's event ev have: the PMU, the return bit,
 * the kprobe's function or the uprobe's object and offset; for a program
 * (kprobes only), its task's events from its exec on. */
static void event_attr(const struct kfunc *d, int ev, struct perf_event_attr *a)
{
	memset(a, 0, sizeof *a);
	a->size = sizeof *a;
	if (d->ev[ev].tp) {
		/* a kprobe_events probe: its tracepoint */
		a->type = PERF_TYPE_TRACEPOINT;
		a->config = (uint64_t)d->ev[ev].tp;
	} else {
		a->type = (uint32_t)ks.type;
		a->config = d->ev[ev].ret ? 1ull << ks.retbit : 0;
		/* kprobe_func / uprobe_path, and probe_offset */
		a->config1 = (uint64_t)(uintptr_t)(ks.user ? d->path : d->ev[ev].sym[0] ? d->ev[ev].sym : d->sym);
		a->config2 = d->ev[ev].off;
	}
	if (ks.pid > 0) {
		/* the program's own hits from its exec on (not sonde's child
		 * waiting for it), and its children's */
		a->disabled = 1;
		a->enable_on_exec = 1;
		a->inherit = 1;
	}
}

static int open_one(const struct kfunc *d, int ev, int cpu)
{
	struct perf_event_attr a;
	event_attr(d, ev, &a);
	return (int)syscall(SYS_perf_event_open, &a, ks.pid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

/* A sampling event: every hit a record (pid, tid, time; a return's AX) in
 * its ring; the first event's also gets the COMM records of the processes
 * that exec meanwhile (their names).  Per CPU also for a program (the
 * kernel maps no inherited per-task event open on all CPUs). */
static int open_sampler(const struct kfunc *d, int ev, int cpu)
{
	struct perf_event_attr a;
	event_attr(d, ev, &a);
	int ret = d->ev[ev].ret;
	a.sample_period = 1;
	a.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
#if K_RETVAL
	if (ret) {
		/* the regs the kretprobe (uretprobe) interrupted: AX holds the return value */
		a.sample_type |= PERF_SAMPLE_REGS_INTR;
		a.sample_regs_intr = 1ull << PERF_REG_X86_AX;
	}
#endif
	if (d->kv)
		a.sample_type |= PERF_SAMPLE_RAW;   /* the record: the fetch arguments' values */
	if (d->stack) {
		/* the kernel's stack at the hit, innermost first (its ORC or frame-pointer unwinder) */
		a.sample_type |= PERF_SAMPLE_CALLCHAIN;
		a.exclude_callchain_user = 0;   /* and the user stack after it (the process's frames) */
		a.sample_max_stack = K_STACK_FRAMES;
	}
	a.comm = ev == 0;
	a.sample_id_all = 1;     /* a LOST or COMM record's tid and time */
	if (ks.format_lost)
		a.read_format = PERF_FORMAT_LOST;   /* read(): the samples it lost (Linux 6.0) */
	a.use_clockid = 1;       /* times sonde can compare with its own clock */
	a.clockid = CLOCK_MONOTONIC;
	a.watermark = 1;
	a.wakeup_watermark = (uint32_t)(K_RING_PAGES * ks.page / 4);
	int fd = (int)syscall(SYS_perf_event_open, &a, ks.pid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0 && errno == EINVAL && ks.format_lost) {
		/* an older kernel: the losses only from the rings' LOST records */
		ks.format_lost = 0;
		return open_sampler(d, ev, cpu);
	}
	return fd;
}

/* Why the kernel refused an event of sym: into err. */
static void refused(const char *sym, const char *what, int en, char *err, size_t n)
{
	/* the reason: /proc/kallsyms is read only then (it is long) */
	if (ks.user) {
		snprintf(err, n, "%s: the kernel refused a %s (%s)%s", sym, what, strerror(en),
		         en == EACCES || en == EPERM ? ": needs root (or CAP_PERFMON and CAP_SYS_ADMIN)"
		         : en == EINVAL ? ": an instruction uprobes cannot probe, or a file offset outside the object" : "");
		return;
	}
	if (kallsyms_has(sym) == 0) {
		snprintf(err, n, "no function %s in the running kernel (/proc/kallsyms)", sym);
		return;
	}
	snprintf(err, n, "%s: the kernel refused a %s (%s)%s", sym, what, strerror(en),
	         en == EINVAL || en == EOPNOTSUPP ? ": not probeable (notrace, inlined or blacklisted)"
	         : en == EACCES || en == EPERM ? ": needs root (or CAP_PERFMON and CAP_SYS_ADMIN)"
	                                       : "");
}

/* The sampling events of d's event ev and their rings (d->ring made by
 * k_begin): 0, or -1 with err. */
static int place_samplers(struct kfunc *d, int ev, char *err, size_t n)
{
	for (int c = 0; c < ks.nonline; c++) {
		struct kring *g = &d->ring[ev * ks.nonline + c];
		int r = d->ev[ev].ret;
		g->cpu = c;
		g->ret = r;
		g->ev = ev;
		g->fd = open_sampler(d, ev, ks.online[c]);
		if (g->fd < 0) {
			int en = errno;
			char what[80];
			snprintf(what, sizeof what, "sampling %s%s%s", r ? "ret" : "", ks.user ? "uprobe" : "kprobe",
			         r && K_RETVAL ? " with PERF_SAMPLE_REGS_INTR" : "");
			refused(d->sym, what, en, err, n);
			return -1;
		}
		void *m = mmap(NULL, (1 + K_RING_PAGES) * ks.page, PROT_READ | PROT_WRITE, MAP_SHARED, g->fd, 0);
		if (m == MAP_FAILED) {
			snprintf(err, n, "%s: cannot map a sampling ring of %zu KiB (%s)%s", d->sym,
			         K_RING_PAGES * ks.page / 1024, strerror(errno),
			         errno == EPERM || errno == ENOMEM ? ": perf_event_mlock_kb?" : "");
			return -1;
		}
		g->base = m;
	}
	return 0;
}

/* The kernel's BTF (vmlinux), read at the first probe; kbtf_state 0: not
 * yet, 1: read, -1: none.  kbtf_said: its absence told. */
static struct btf *kbtf;
static int kbtf_state, kbtf_said;

/* d's return type from BTF: vmlinux's function FUNCTION, module's
 * MODULE:FUNCTION (split BTF on vmlinux's).  Unknown (raw AX) when either
 * is missing or malformed, or the function is not there.  A missing BTF
 * file: a line for stderr into note (told once the probe is placed). */
static void return_type(const struct spec *sp, struct kfunc *d, char *note, size_t nn)
{
	const char *m = sp->args ? sp->func : NULL, *f = sp->args ? sp->args : sp->func;
	if (!K_RETVAL)
		return;
	if (!kbtf_state) {
		kbtf = btf_open(K_BTF "/vmlinux", NULL);
		kbtf_state = kbtf ? 1 : -1;
	}
	if (!kbtf) {
		if (!kbtf_said++)
			snprintf(note, nn, "sonde: no kernel BTF (%s/vmlinux missing or unreadable): return values are the raw "
			         "64-bit AX, their types unknown", K_BTF);
		return;
	}
	if (!m) {
		d->rt_known = btf_func_ret(kbtf, f, &d->rt) == 0;
		return;
	}
	char path[128];
	if (strchr(m, '/') || !strcmp(m, "vmlinux") || (size_t)snprintf(path, sizeof path, K_BTF "/%s", m) >= sizeof path)
		return;
	struct btf *mb = btf_open(path, kbtf);
	if (!mb)
		snprintf(note, nn, "sonde: no BTF of module %s (%s missing or unreadable): the return values of %s are "
		         "the raw 64-bit AX", m, path, d->sym);
	else
		d->rt_known = btf_func_ret(mb, f, &d->rt) == 0;
	btf_free(mb);
}

/* The .ko's build id against the loaded module's (/sys/module/NAME/notes:
 * the note's namesz, descsz, type, "GNU\0", then the id): 0 when they match
 * or either is unknown, -1 when they differ. */
static int same_build(const char *ko, const char *mod)
{
	char path[256];
	uint8_t note[256], id[128];
	snprintf(path, sizeof path, "/sys/module/%s/notes/.note.gnu.build-id", mod);
	FILE *f = fopen(path, "rb");
	size_t nn = f ? fread(note, 1, sizeof note, f) : 0;
	if (f)
		fclose(f);
	uint32_t namesz, descsz;
	int k = sym_kmod_build_id(ko, id, sizeof id);
	if (nn < 16 || k <= 0)
		return 0;
	memcpy(&namesz, note, 4);
	memcpy(&descsz, note + 4, 4);
	if (namesz != 4 || memcmp(note + 12, "GNU", 4) || descsz > nn - 16)
		return 0;
	return descsz == (uint32_t)k && !memcmp(note + 16, id, descsz) ? 0 : -1;
}

/* The module a .ko is (its file's name, '-' read as '_' as modprobe does)
 * into mod: 0, or -1 (not a NAME.ko). */
static int ko_module(const char *ko, char *mod, size_t n)
{
	const char *base = strrchr(ko, '/') ? strrchr(ko, '/') + 1 : ko;
	size_t bl = strlen(base);
	if (bl < 4 || strcmp(base + bl - 3, ".ko") || bl - 3 >= n)
		return -1;
	for (size_t i = 0; i < bl - 3; i++)
		mod[i] = base[i] == '-' ? '_' : base[i];
	mod[bl - 3] = 0;
	return 0;
}

/* The sites of a .ko's location, FILE:LINE or FUNCTION (its entry), each
 * as MODULE:FUNCTION + offset in d->ev (d->sym the first), checked against
 * the blacklist and the loaded module's build: how many, or -1 with err. */
static int ko_sites(struct kfunc *d, struct sym_kmod *k, const char *ko, const char *file, int line,
                    const char *func, struct sym_kloc *loc, char *err, size_t n)
{
	int c = func ? sym_kmod_func(k, func, loc, err, n) ? -1 : 1 : sym_kmod_lines(k, file, line, loc, K_MAX_EV, err, n);
	if (c < 0)
		return -1;
	if (same_build(ko, d->mod)) {
		snprintf(err, n, "%.200s is not the module %s that is loaded (their build ids differ)", ko, d->mod);
		return -1;
	}
	snprintf(d->sym, sizeof d->sym, "%.60s:%.150s+0x%llx", d->mod, loc[0].func, (unsigned long long)loc[0].off);
	for (int i = 0; i < c; i++) {
		d->ev[i] = (struct kev){ .off = loc[i].off };
		snprintf(d->ev[i].sym, sizeof d->ev[i].sym, "%.60s:%.120s", d->mod, loc[i].func);
		if (blacklisted(d->ev[i].sym) == 1) {
			snprintf(err, n, "%s is in the kernel's kprobe blacklist (%s)", d->ev[i].sym, K_BLACKLIST);
			return -1;
		}
	}
	d->nev = c;
	return c;
}

/* A kernel line probe (line:MODULE.ko:FILE:LINE, parsed as location
 * MODULE.ko, arguments FILE:LINE): from the .ko's DWARF, each address as
 * MODULE:FUNCTION+OFFSET, a kprobe at each: 0, or -1 with err. */
static int resolve_kline(struct probe *p, struct kfunc *d, char *err, size_t n)
{
	const struct spec *sp = &p->sp;
	const char *c = sp->args ? strrchr(sp->args, ':') : NULL;
	int line = c ? atoi(c + 1) : 0;
	char file[256];
	d->line = 1;
	if (sp->loc != LOC_FUNC || sp->off || !c || line <= 0 || c == sp->args) {
		snprintf(err, n, "--kernel runs line:MODULE.ko:FILE:LINE (the module's .ko, built with -g, by path)");
		return -1;
	}
	snprintf(file, sizeof file, "%.*s", (int)(c - sp->args), sp->args);
	if (ko_module(sp->func, d->mod, sizeof d->mod)) {
		snprintf(err, n, "line:%.100s: give the module's .ko file (line:PATH/MODULE.ko:FILE:LINE)", sp->func);
		return -1;
	}
	struct sym_kloc loc[K_MAX_EV];
	struct sym_kmod *k = sym_kmod_open(sp->func, err, n);
	int rc = k ? ko_sites(d, k, sp->func, file, line, NULL, loc, err, n) : -1;
	sym_kmod_close(k);
	return rc < 0 ? -1 : 0;
}

/* A kernel var or assert probe (var:MODULE.ko:FUNCTION:EXPR at the
 * function's entry, var:MODULE.ko:FILE:LINE:EXPR at the line; parsed as
 * location MODULE.ko, arguments the rest): the sites from the .ko's DWARF,
 * the expression's variables as fetch arguments of a kprobe_events probe
 * at each (kernel_var.c): 0, or -1 with err. */
static int resolve_kvar(struct probe *p, struct kfunc *d, char *err, size_t n)
{
	const struct spec *sp = &p->sp;
	const char *a = sp->args, *c1 = a ? spec_sep_colon(a) : NULL, *c2 = c1 ? spec_sep_colon(c1 + 1) : NULL;
	char what[256], *end;
	long line = 0;
	d->line = 1;   /* entries only */
	if (sp->loc != LOC_FUNC || sp->off || !c1 || c1 == a || (size_t)(c1 - a) >= sizeof what ||
	    ko_module(sp->func, d->mod, sizeof d->mod)) {
		snprintf(err, n, "--kernel runs %s:MODULE.ko:FUNCTION:EXPR and %s:MODULE.ko:FILE:LINE:EXPR (the module's "
		         ".ko, built with -g, by path)", sp->kind, sp->kind);
		return -1;
	}
	snprintf(what, sizeof what, "%.*s", (int)(c1 - a), a);
	const char *expr = c1 + 1;
	if (c2 && (line = strtol(c1 + 1, &end, 10)) > 0 && end == c2)
		expr = c2 + 1;
	else
		line = 0;
	if (!*expr) {
		snprintf(err, n, "missing expression (%s:MODULE.ko:LOCATION:EXPR)", sp->kind);
		return -1;
	}
	struct sym_kloc loc[K_MAX_EV];
	if (!(d->km = sym_kmod_open(sp->func, err, n)))
		return -1;
	int k = ko_sites(d, d->km, sp->func, what, (int)line, line ? NULL : what, loc, err, n);
	if (k < 0 || !(d->kv = kvar_new_kmod(p, d->km, d->mod, loc, k, expr, err, n)))
		return -1;
	for (int i = 0; i < k; i++)
		d->ev[i].tp = kvar_id(d->kv, i);
	return 0;
}

/* A kernel func probe: d->sym, its entry and return events, its return
 * type (a missing BTF said into note): 0, or -1 with err. */
static int resolve_kernel(struct probe *p, struct kfunc *d, char *note, size_t nn, char *err, size_t n)
{
	if (split_loc(&p->sp, d->sym, sizeof d->sym, err, n))
		return -1;
	if (!d->stack)
		return_type(&p->sp, d, note, nn);
	if (blacklisted(d->sym) == 1) {
		snprintf(err, n, "%s is in the kernel's kprobe blacklist (%s): the kernel refuses probes there", d->sym,
		         K_BLACKLIST);
		return -1;
	}
	d->ev[0] = (struct kev){ .off = 0, .ret = 0 };
	d->ev[1] = (struct kev){ .off = 0, .ret = 1 };
	d->nev = d->stack ? 1 : 2;   /* a stack: its entry's callchains */
	return 0;
}

/* The object --system names: a path, else a file name (or NAME.so,
 * NAME.so.*) in the library directories, else an executable of PATH; its
 * real path into out: 0, or -1. */
static int find_object(const char *name, char *out)
{
	static const char *const dirs[] = { "/lib/*-linux-gnu", "/usr/lib/*-linux-gnu", "/lib64", "/usr/lib64", "/lib",
	                                    "/usr/lib", "/usr/local/lib" };
	static const char *const forms[] = { "%s/%s", "%s/%s.so", "%s/%s.so.*" };
	char pat[PATH_MAX];
	struct stat st;
	if (strchr(name, '/'))
		return realpath(name, out) && !stat(out, &st) && S_ISREG(st.st_mode) ? 0 : -1;
	if (!name[0] || strlen(name) > 200)
		return -1;
	for (size_t f = 0; f < sizeof forms / sizeof forms[0]; f++)
		for (size_t k = 0; k < sizeof dirs / sizeof dirs[0]; k++) {
			glob_t g;
			snprintf(pat, sizeof pat, forms[f], dirs[k], name);
			if (glob(pat, 0, NULL, &g))
				continue;
			for (size_t i = 0; i < g.gl_pathc; i++)
				if (realpath(g.gl_pathv[i], out) && !stat(out, &st) && S_ISREG(st.st_mode)) {
					globfree(&g);
					return 0;
				}
			globfree(&g);
		}
	const char *path = getenv("PATH");
	for (const char *s = path; s && *s;) {
		size_t l = strcspn(s, ":");
		if (l && l < 4000) {
			snprintf(pat, sizeof pat, "%.*s/%s", (int)l, s, name);
			if (!access(pat, X_OK) && realpath(pat, out) && !stat(out, &st) && S_ISREG(st.st_mode))
				return 0;
		}
		s += l + (s[l] == ':');
	}
	return -1;
}

struct ufind { uint64_t addr[8]; int n; };

static void ufound(void *arg, const struct sym_info *si)
{
	struct ufind *u = arg;
	for (int i = 0; i < u->n && i < 8; i++)
		if (u->addr[i] == si->start)
			return;
	if (u->n < 8)
		u->addr[u->n] = si->start;
	u->n++;
}

/* A --system probe (func:OBJECT:FUNCTION, line:OBJECT:FILE:LINE; the spec
 * parser leaves OBJECT in func and the rest in args): the object's path,
 * the uprobes' file offsets: 0, or -1 with err. */
static int resolve_user(struct probe *p, struct kfunc *d, char *err, size_t n)
{
	const struct spec *sp = &p->sp;
	int var = !strcmp(sp->kind, "var") || !strcmp(sp->kind, "assert");
	d->line = var || !strcmp(sp->kind, "line");
	/* a var's or assert's arguments: FUNCTION:EXPR or FILE:LINE:EXPR */
	const char *c1 = sp->args ? spec_sep_colon(sp->args) : NULL, *c2 = c1 ? spec_sep_colon(c1 + 1) : NULL;
	char loc[400], *end;
	const char *expr = NULL;
	long vline = 0;
	if (var && c1 && (size_t)(c1 - sp->args) < sizeof loc) {
		if (c2 && (vline = strtol(c1 + 1, &end, 10)) > 0 && end == c2 && (size_t)(c2 - sp->args) < sizeof loc) {
			snprintf(loc, sizeof loc, "%.*s", (int)(c2 - sp->args), sp->args);
			expr = c2 + 1;
		} else {
			vline = 0;
			snprintf(loc, sizeof loc, "%.*s", (int)(c1 - sp->args), sp->args);
			expr = c1 + 1;
		}
	}
	if ((!d->line && strcmp(sp->kind, "func") && strcmp(sp->kind, "stack")) || sp->loc != LOC_FUNC || sp->off || !sp->args ||
	    (!d->line && spec_sep_colon(sp->args)) || (var && (!expr || !*expr))) {
		snprintf(err, n, "--system runs func:OBJECT:FUNCTION, stack:OBJECT:FUNCTION, line:OBJECT:FILE:LINE, var: and assert:"
		         "OBJECT:FUNCTION:EXPR or OBJECT:FILE:LINE:EXPR probes (OBJECT an executable or a shared library, "
		         "by path or by name)");
		return -1;
	}
	const char *what = var ? loc : sp->args;   /* FUNCTION, or FILE:LINE */
	int is_line = var ? vline > 0 : d->line;
	if (find_object(sp->func, d->path)) {
		snprintf(err, n, "no object '%s' (a path, or a library or program name: libz, libc.so.6, gzip)", sp->func);
		return -1;
	}
	const char *why = NULL;
	struct sym_module *m = sym_open(d->path, &why);
	if (!m) {
		snprintf(err, n, "%.200s: %s", d->path, why ? why : "not ELF");
		return -1;
	}
	const char *base = strrchr(d->path, '/') ? strrchr(d->path, '/') + 1 : d->path;
	int rc = -1;
	uint64_t addr[K_MAX_EV];
	int na = 0;
	if (!is_line) {
		struct ufind u = { .n = 0 };
		sym_find(m, what, ufound, &u);
		if (!u.n)
			snprintf(err, n, "no function %.100s in %.200s", what, d->path);
		else if (u.n > 1)
			snprintf(err, n, "%.100s names %d functions in %.200s: give one", what, u.n, d->path);
		else {
			addr[na++] = u.addr[0];
			/* its return type from the object's DWARF (typed AX, as BTF's for the kernel) */
			d->rt_known = sym_func_ret(m, u.addr[0], &d->rt) == 0;
			rc = 0;
		}
		snprintf(d->sym, sizeof d->sym, "%.120s:%.120s", base, what);
	} else {
		const char *c = strrchr(what, ':');
		char file[256];
		int line = c ? atoi(c + 1) : 0;
		snprintf(file, sizeof file, "%.*s", c ? (int)(c - what) : 0, what);
		snprintf(d->sym, sizeof d->sym, "%.120s:%.120s", base, what);
		int k = c && line > 0 && file[0] ? sym_line_addrs(m, file, line, addr, K_MAX_EV) : -2;
		if (k == -2)
			snprintf(err, n, "expected %s:OBJECT:FILE:LINE, not %s:%.100s:%.100s", sp->kind, sp->kind, sp->func, what);
		else if (k < 0)
			snprintf(err, n, "no file %.100s in the line table of %.200s (built without -g?)", file, d->path);
		else if (k == 0)
			snprintf(err, n, "no code at %.100s:%d in %.200s", file, line, d->path);
		else if (k > K_MAX_EV)
			snprintf(err, n, "%.100s:%d is at %d addresses in %.200s (inlined copies): at most %d", file, line, k, d->path,
			         K_MAX_EV);
		else {
			na = k;
			rc = 0;
		}
	}
	for (int i = 0; !rc && i < na; i++) {
		if (sym_peek_file_offset(d->path, addr[i], &d->ev[i].off)) {
			snprintf(err, n, "%.200s: 0x%llx is in no executable segment of the file", d->path,
			         (unsigned long long)addr[i]);
			rc = -1;
		}
		d->ev[i].ret = 0;
	}
	if (!rc && !d->line && !d->stack) {
		d->ev[1] = (struct kev){ .off = d->ev[0].off, .ret = 1 };
		na = 2;
	}
	d->nev = rc ? 0 : na;
	if (!rc && var) {
		/* the sites' tracepoints: uprobe_events probes with the variables (kernel_var.c) */
		uint64_t off[K_MAX_EV];
		for (int i = 0; i < na; i++)
			off[i] = d->ev[i].off;
		d->um = m;
		if (!(d->kv = kvar_new_user(p, m, d->path, addr, off, na, expr, err, n)))
			return -1;
		for (int i = 0; i < na; i++)
			d->ev[i].tp = kvar_id(d->kv, i);
		return 0;
	}
	sym_close(m);
	return rc;
}

/* --- the kinds' sites (place.h): kind_place does the rest ------------------ */

/* The probe's events (its struct kfunc, p->edata) from its location: the
 * sites are its events for an entries-only probe (line, var, assert,
 * stack: a kprobe or uprobe each), or one for a func probe (its entry, its
 * return's event with it). */
static int k_locate(struct engine *e, struct probe *p, int func, struct loc_addr **v, int *nv, char *err, size_t n)
{
	(void)e, (void)func;
	struct kfunc *d = calloc(1, sizeof *d);
	if (!d) {
		snprintf(err, n, "out of memory");
		return -1;
	}
	p->edata = d;
	d->owner = p;
	d->stack = !strcmp(p->sp.kind, "stack");
	int var = !strcmp(p->sp.kind, "var") || !strcmp(p->sp.kind, "assert");
	if (ks.user ? resolve_user(p, d, err, n)
	    : var   ? resolve_kvar(p, d, err, n)
	    : !strcmp(p->sp.kind, "line") ? resolve_kline(p, d, err, n)
	                                  : resolve_kernel(p, d, d->note, sizeof d->note, err, n))
		return -1;
	int ns = d->line ? d->nev : 1;
	if (d->nev < 1 || !(*v = calloc((size_t)ns, sizeof **v))) {
		snprintf(err, n, d->nev < 1 ? "no address for the location" : "out of memory");
		return -1;
	}
	for (int i = 0; i < ns; i++) {
		(*v)[i].addr = d->ev[i].off;
		(*v)[i].fn.name = d->ev[i].sym[0] ? d->ev[i].sym : d->sym;
	}
	*nv = ns;
	return 0;
}

/* The kind's data is made: the counters' and samplers' places. */
static int k_begin(struct engine *e, struct probe *p, int nsites, char *err, size_t n)
{
	(void)e, (void)nsites;
	struct kfunc *d = p->edata;
	d->cs = !strcmp(p->sp.kind, "func") ? func_stats(p) : NULL;
	d->nring = d->nev * ks.nonline;
	if (!(d->fd = malloc(sizeof *d->fd * (size_t)d->nev * (size_t)ks.ncpus)) ||
	    !(d->ring = calloc((size_t)d->nring, sizeof *d->ring))) {
		snprintf(err, n, "out of memory");
		return -1;
	}
	for (int i = 0; i < d->nev * ks.ncpus; i++)
		d->fd[i] = -1;
	for (int i = 0; i < d->nring; i++)
		d->ring[i].fd = -1;
	return 0;
}

/* A var's or assert's site: its expression, whose variables become the
 * fetch arguments of its kprobe_events (uprobe_events) probe. */
static struct expr *k_compile(struct engine *e, struct probe *p, const struct probe_site *s, char *err, size_t n)
{
	(void)e;
	struct kfunc *d = p->edata;
	struct expr *x = kvar_site(d->kv, s->i, err, n);
	if (x)
		d->ev[s->i].tp = kvar_id(d->kv, s->i);
	return x;
}

/* A site's events: a counting event on every CPU, and the samplers. */
static int k_place_site(struct engine *e, struct probe *p, struct probe_site *s, char *err, size_t n)
{
	(void)e;
	struct kfunc *d = p->edata;
	int e0 = s->what == SITE_CALL ? 0 : s->i, e1 = s->what == SITE_CALL ? d->nev : s->i + 1;
	for (int ev = e0; ev < e1 && ev < d->nev; ev++) {
		for (int c = 0; c < ks.ncpus; c++) {
			int fd = open_one(d, ev, ks.cpus[c]);
			if (fd < 0) {
				int en = errno;
				close_fds(d);
				refused(d->sym, d->ev[ev].ret ? ks.user ? "uretprobe" : "kretprobe" : ks.user ? "uprobe" : "kprobe",
				        en, err, n);
				return -1;
			}
			d->fd[ev * ks.ncpus + c] = fd;
		}
		if (place_samplers(d, ev, err, n)) {
			close_fds(d);
			return -1;
		}
	}
	return 0;
}

/* Where: the kernel's function, or the object and its file offsets, and
 * the events; a missing BTF told once. */
static void k_placed(struct engine *e, struct probe *p, char *w, size_t wn)
{
	(void)e;
	struct kfunc *d = p->edata;
	if (d->kv && ks.user)
		snprintf(w, wn, "every process mapping %s: uprobe_events probe%s at file offset 0x%llx%s with %s, "
		         "counting on %d CPU%s, its records sampled", d->path, d->nev == 1 ? "" : "s",
		         (unsigned long long)d->ev[0].off, d->nev > 1 ? ", ..." : "",
		         kvar_args(d->kv, 0)[0] ? kvar_args(d->kv, 0) : "no variables", ks.ncpus, ks.ncpus == 1 ? "" : "s");
	else if (d->kv)
		snprintf(w, wn, "kernel %s (kprobe_events probe%s with %s, counting on %d CPU%s; its records sampled on "
		         "%d CPU%s)", d->sym, d->nev == 1 ? "" : "s", kvar_args(d->kv, 0)[0] ? kvar_args(d->kv, 0) : "no "
		         "variables", ks.ncpus, ks.ncpus == 1 ? "" : "s", ks.nonline, ks.nonline == 1 ? "" : "s");
	else if (!ks.user && d->line)
		snprintf(w, wn, "kernel %s (%d kprobe%s on %d CPU%s, counting; sampled on %d CPU%s)", d->sym, d->nev,
		         d->nev == 1 ? "" : "s", ks.ncpus, ks.ncpus == 1 ? "" : "s", ks.nonline, ks.nonline == 1 ? "" : "s");
	else if (d->stack && ks.user)
		snprintf(w, wn, "every process mapping %s: uprobe at file offset 0x%llx, counting on %d CPU%s; its "
		         "callchains (the user stacks) sampled", d->path, (unsigned long long)d->ev[0].off, ks.ncpus,
		         ks.ncpus == 1 ? "" : "s");
	else if (d->stack)
		snprintf(w, wn, "kernel %s (kprobe on %d CPU%s, counting; its callchains sampled on %d CPU%s)", d->sym,
		         ks.ncpus, ks.ncpus == 1 ? "" : "s", ks.nonline, ks.nonline == 1 ? "" : "s");
	else if (!ks.user)
		snprintf(w, wn, "kernel %s (kprobe + kretprobe on %d CPU%s, counting; sampled on %d CPU%s)", d->sym,
		         ks.ncpus, ks.ncpus == 1 ? "" : "s", ks.nonline, ks.nonline == 1 ? "" : "s");
	else if (!d->line)
		snprintf(w, wn, "every process mapping %s: uprobe + uretprobe at file offset 0x%llx, counting on %d "
		         "CPU%s, sampled", d->path, (unsigned long long)d->ev[0].off, ks.ncpus, ks.ncpus == 1 ? "" : "s");
	else
		snprintf(w, wn, "every process mapping %s: %d uprobe%s (file offset 0x%llx%s), counting on %d CPU%s, "
		         "sampled", d->path, d->nev, d->nev == 1 ? "" : "s", (unsigned long long)d->ev[0].off,
		         d->nev > 1 ? ", ..." : "", ks.ncpus, ks.ncpus == 1 ? "" : "s");
	if (d->note[0])
		fprintf(stderr, "%s\n", d->note);
}

static const struct site_ops k_sites = {
	.locate = k_locate, .begin = k_begin, .compile = k_compile, .place = k_place_site, .placed = k_placed,
	.stack_namer = kname,
};

/* The kinds it runs (their output: the kernel's numbers beside the kind's). */
static const struct kind_ops *k_kind(const char *name)
{
	static const struct kind_ops *const kinds[] = { &kfunc_ops, &kline_ops, &kstack_ops, &kvar_ops, &kassert_ops };
	for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
		if (!strcmp(kinds[i]->name, name))
			return kinds[i];
	return NULL;
}

static int add_probe(struct engine *e, const char *text, char *err, size_t n)
{
	char why[400];
	struct probe *p = engine_new_probe(e, text, err, n);
	if (!p)
		return -1;
	if (!(p->ops = k_kind(p->sp.kind))) {
		snprintf(err, n, "probe '%s': the kernel engine does not run %s probes", text, p->sp.kind);
		return -1;
	}
	if (p->ops->setup(p, why, sizeof why)) {
		snprintf(err, n, "probe '%s': %s", text, why);
		return -1;
	}
	return 0;
}

/* Every event closed: the kernel takes its kprobes out with them. */
static void remove_all(struct engine *e)
{
	for (int i = 0; i < e->nprobes; i++)
		if (e->probes[i]->edata)
			close_fds(e->probes[i]->edata);
}

/* --- the session ------------------------------------------------------------ */

static int k_can_run(struct engine *e, const struct probe_opts *o, char *why, size_t wn)
{
	(void)e;
	if (o->kernel || o->system)
		return 1;
	snprintf(why, wn, "the kernel engine takes --kernel or --system");
	return 0;
}

static int k_open(struct engine *e, const struct probe_opts *o, char *err, size_t n)
{
	char b[64];
	memset(&ks, 0, sizeof ks);
	ks.user = o->system;
	const char *dir = ks.user ? U_SYSFS : K_SYSFS, *pmu = ks.user ? "uprobe" : "kprobe";
	ks.e = e;
	e->scope = ks.user ? "every process" : "the kernel";
	ks.pid = -1;
	ks.go_fd = -1;
	e->foreign_code = 1;
	stop_flag = 0;
	ks.format_lost = 1;
	long pg = sysconf(_SC_PAGESIZE);
	ks.page = pg > 0 ? (size_t)pg : 4096;
	if (geteuid() != 0) {
		snprintf(err, n, "sonde probe %s needs root (or CAP_PERFMON and CAP_SYS_ADMIN)",
		         ks.user ? "--system" : "--kernel");
		return -1;
	}
	char path[128];
	snprintf(path, sizeof path, "%s/type", dir);
	if (read_line(path, b, sizeof b) || sscanf(b, "%d", &ks.type) != 1 || ks.type <= 0) {
		snprintf(err, n, "this kernel has no %s perf PMU (%s): built without CONFIG_%s_EVENTS?", pmu, dir,
		         ks.user ? "UPROBE" : "KPROBE");
		return -1;
	}
	/* "config:0": the bit of attr.config that makes a kretprobe (uretprobe) */
	snprintf(path, sizeof path, "%s/format/retprobe", dir);
	if (read_line(path, b, sizeof b) || sscanf(b, "config:%d", &ks.retbit) != 1 || ks.retbit < 0 ||
	    ks.retbit > 63) {
		snprintf(err, n, "cannot read the %s PMU's retprobe bit (%s)", pmu, path);
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
	ks.child = c;
	if (!ks.user) {
		/* --kernel: the program's hits; --system: every process's still */
		ks.pid = c;
		ks.cpus[0] = -1;
		ks.ncpus = 1;
	}
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
	if (ks.child > 0) {
		kill(ks.child, SIGKILL);
		waitpid(ks.child, NULL, 0);
	}
	ks.pid = -1;
	ks.child = 0;
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
	pid_t child = ks.child;
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
	/* the rings' fds: the kernel wakes sonde when one is a quarter full */
	int nfds = 0;
	for (int i = 0; i < e->nprobes; i++) {
		struct kfunc *d = e->probes[i]->edata;
		nfds += d && d->ring ? d->nring : 0;
	}
	struct pollfd *pfd = calloc((size_t)nfds + 1, sizeof *pfd);
	nfds = 0;
	for (int i = 0; pfd && i < e->nprobes; i++) {
		struct kfunc *d = e->probes[i]->edata;
		for (int k = 0; d && d->ring && k < d->nring; k++)
			if (d->ring[k].fd >= 0)
				pfd[nfds++] = (struct pollfd){ .fd = d->ring[k].fd, .events = POLLIN };
	}
	if (o->placed)
		o->placed(e);   /* every event open: "sonde: probes in ..." */
	/* a signal wakes the wait at once; the program's end within 10 ms */
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
		uint64_t t0 = now_ns();
		int r = -1;
		if (pfd)
			r = poll(pfd, (nfds_t)nfds, 10);
		drain_all(e, 0);
		if (r != 0 && now_ns() - t0 < 1000000) {
			/* an event gone with its task says POLLHUP at once, and
			 * without memory for the pollfds there is no poll: no
			 * spinning, a 5 ms tick */
			struct timespec ts = { 0, 5000000 };
			nanosleep(&ts, NULL);
		}
	}
	free(pfd);
	e->end_ns = now_ns();
	handlers(0);
	if (child && !e->t.gone)
		e->detached = 1;   /* still running: left alone */
	else if (!child)
		e->detached = 1;   /* the kernel runs on */
	return 0;
}

/* The kernel's counts into the probes and the rings' last records paired,
 * then every event closed.  The samplers stop first: what they saw the
 * counters counted too. */
static void k_collect(struct engine *e)
{
	for (int i = 0; i < e->nprobes; i++) {
		struct kfunc *d = e->probes[i]->edata;
		for (int k = 0; d && d->ring && k < d->nring; k++)
			if (d->ring[k].fd >= 0)
				ioctl(d->ring[k].fd, PERF_EVENT_IOC_DISABLE, 0);
	}
	drain_all(e, 1);
	/* a LOST record is written with the next sample that finds room: the
	 * kernel's own count of each sampler's losses, when it has one */
	for (int i = 0; ks.format_lost && i < e->nprobes; i++) {
		struct kfunc *d = e->probes[i]->edata;
		uint64_t lost = 0, v[2];
		for (int k = 0; d && d->ring && k < d->nring; k++)
			if (d->ring[k].fd >= 0 && read(d->ring[k].fd, v, sizeof v) == (ssize_t)sizeof v)
				lost += v[1] < (1ull << 48) ? v[1] : 1ull << 48;
		if (d && lost > d->lost_samples)
			d->lost_samples = lost;
	}
	for (int i = 0; i < e->nprobes; i++) {
		struct probe *p = e->probes[i];
		struct kfunc *d = p->edata;
		if (!d || !d->fd)
			continue;
		uint64_t sum[2] = { 0, 0 };
		for (int k = 0; k < d->nev * ks.ncpus; k++) {
			uint64_t v;
			if (d->fd[k] >= 0 && read(d->fd[k], &v, sizeof v) == (ssize_t)sizeof v)
				sum[d->ev[k / ks.ncpus].ret] += v;
		}
		if (d->kv)
			d->missed_known = !kvar_missed(d->kv, &d->kmissed);
		if (d->cs) {
			d->cs->calls = sum[0];
			/* cs.returns counted the timed ones: now the kernel's exact count */
			d->cs->returns = sum[1];
			d->cs->untimed = sum[1] > d->timed ? sum[1] - d->timed : 0;
		}
		p->hits = sum[0];
		e->total_hits += sum[0];
	}
	remove_all(e);
}

static void k_close(struct engine *e)
{
	handlers(0);   /* restores what k_place saved, if k_run did not */
	remove_all(e);
	kpe_close();   /* the kprobe_events probes, once their perf events are closed */
	btf_free(kbtf);
	kbtf = NULL;
	ksyms_free();
	users_free();
	kbtf_state = kbtf_said = 0;
	e->priv = NULL;
}

const struct probe_engine_ops kernel_engine = {
	.name = "kernel",
	.kinds = "func line stack var assert",
	.runs = "func, line, stack, var and assert probes on the running kernel and its modules (--kernel), func, line, "
	        "stack, var and assert probes in every process (--system)",
	.modes = PE_KERNEL | PE_SYSTEM,
	.can_run = k_can_run,
	.open = k_open,
	.place = k_place,
	.run = k_run,
	.collect = k_collect,
	.close = k_close,
	.kind = k_kind,
	.sites = &k_sites,
};
