/* cpu_time.c — how much of each call the thread spent off the CPU (issue
 * 38), in profile mode: every recorded node keeps, beside its inclusive
 * ticks, the nanoseconds of them its thread was not running (preempted or
 * blocked); the CPU time is the difference.
 *
 * The source (docs/SYSCALLS.md, "On-CPU and off-CPU time"): each thread
 * opens a software perf event for itself (PERF_COUNT_SW_DUMMY, pid 0,
 * cpu -1: allowed to an ordinary user at perf_event_paranoid 2), maps its
 * user page and closes the descriptor (the mapping keeps the event; no file
 * descriptor of the program's is taken).  The kernel updates the page, and
 * so its `lock` word, when it switches the thread in and out.  Each hook
 * reads the word first (one load), before it changes the shadow stack:
 * unchanged since the thread's off-CPU time was last taken, no switch
 * happened since the thread's last hook; changed, the cold path below takes
 * that time again as CLOCK_MONOTONIC - CLOCK_THREAD_CPUTIME_ID, two system
 * calls once per context switch, and gives what it grew by to the context
 * on top of the shadow stack: between two hooks the stack does not change,
 * so the wait happened with that context on top, inside its exclusive
 * time.  A node's inclusive off-CPU time is then its subtree's sum, as its
 * inclusive wall time is (the recorder sums it, record/profile_out.c);
 * exact to the clocks' readings: off-CPU time only grows across a switch,
 * which changes the word.
 *
 * With `record --syscalls` and the kernel's futex exit tracepoint known,
 * the event is that tracepoint (still with its switch records): each
 * futex exit is a sample in the ring, the hooks' word the ring's head, and
 * the cold path books each exit to the function on top of the stack
 * (docs/SYSCALLS.md "futex").
 *
 * No page (perf_event_open refused, a seccomp filter on the thread): the
 * word is a constant, no call has off-CPU time, and the thread's cpu_split
 * says why (the report says the split is unknown, never that all was CPU).
 *
 * Reached from the hooks: raw system calls, general registers only
 * (Makefile), errno untouched. */
#include <linux/perf_event.h>
#include <stddef.h>
#include <string.h>

#include "common/clock.h"
#include "common/sys_session.h"
#include "common/trace_enc.h"
#include "rt/rt.h"

static const uint32_t cpu_none; /* the word of a thread without a page: never changes */

enum { SYS_read_ = 0, SYS_close_ = 3, SYS_mmap_ = 9, SYS_munmap_ = 11, SYS_gettid_ = 186, SYS_clock_gettime_ = 228,
       SYS_openat_ = 257, SYS_perf_event_open_ = 298 };

static long sys6(long n, long a, long b, long c, long d, long e, long f)
{
	long r;
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;
	register long r9 __asm__("r9") = f;
	__asm__ volatile("syscall"
	                 : "=a"(r)
	                 : "0"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
	                 : "rcx", "r11", "memory");
	return r;
}

static uint64_t clock_ns(long clk)
{
	struct { long s, ns; } ts = { 0, 0 };
	if (sys6(SYS_clock_gettime_, clk, (long)&ts, 0, 0, 0, 0) != 0)
		return 0;
	return (uint64_t)ts.s * 1000000000ull + (uint64_t)ts.ns;
}

/* The switch records since the last look (the thread's ring, when it has
 * one): *gap the nanoseconds the thread was off the CPU, from each
 * switch-out to its switch-in, and *run the part of them from switch-outs
 * the kernel marks as a preemption (the thread was still runnable).  A
 * switch-out without that mark is a block (sleep, wait, fault); its gap is
 * blocked time, and so is the wake-up's wait for a CPU after it (the
 * kernel tells the kinds apart at the switch-out only).  Everything in the
 * ring is the kernel's but bounded: a record's size within what is there,
 * times that go forward; a loss (PERF_RECORD_LOST, head past a full ring,
 * a record out of bounds) forgets the pending switch-out, so that gap is
 * blocked time.  In a trace (trace), each wait is a TRX_SWITCH record too:
 * the thread's state track.  0 when the records account for every switch
 * since the last look; -1 when they may not (no ring, a loss). */
static int switches_since(struct rt_tls *L, uint64_t *gap, uint64_t *run, int trace, uint64_t at, int count)
{
	*gap = *run = 0;
	if (!L->cpu_page || L->cpu_len < 2 * 4096)
		return -1;
	struct perf_event_mmap_page *pg = L->cpu_page;
	const uint8_t *data = (const uint8_t *)L->cpu_page + 4096;
	const uint64_t size = L->cpu_len - 4096; /* a power of two: 1 or 8 pages (rt_cpu_open) */
	uint64_t head = __atomic_load_n(&pg->data_head, __ATOMIC_ACQUIRE), tail = pg->data_tail;
	int whole = 0;
	if (head - tail > size) { /* not the kernel's (it stops at a full ring) */
		L->sw_out_ns = 0;
		tail = head;
		whole = -1;
	}
	while (head - tail >= sizeof(struct perf_event_header)) {
		uint8_t rec[64];
		struct perf_event_header h;
		for (size_t i = 0; i < sizeof h; i++)
			((uint8_t *)&h)[i] = data[(tail + i) % size];
		if (h.size < sizeof h || h.size > head - tail) {
			L->sw_out_ns = 0;
			tail = head;
			whole = -1;
			break;
		}
		size_t n = h.size < sizeof rec ? h.size : sizeof rec;
		for (size_t i = 0; i < n; i++)
			rec[i] = data[(tail + i) % size];
		tail += h.size;
		if (h.type == PERF_RECORD_SWITCH && n >= sizeof h + 8) {
			uint64_t when;
			uint32_t cpu = UINT32_MAX;
			__builtin_memcpy(&when, rec + sizeof h, sizeof when); /* sample_id: its time (CLOCK_MONOTONIC), */
			if (n >= sizeof h + 12)
				__builtin_memcpy(&cpu, rec + sizeof h + 8, sizeof cpu); /* its CPU */
			if (when < L->sw_last_ns) { /* backwards: not to be summed */
				L->sw_out_ns = 0;
				whole = -1;
				continue;
			}
			L->sw_last_ns = when;
			if (h.misc & PERF_RECORD_MISC_SWITCH_OUT) {
				L->sw_out_ns = when;
				L->sw_preempt = (h.misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT) != 0;
			} else if (L->sw_out_ns) {
				*gap += when - L->sw_out_ns;
				if (L->sw_preempt)
					*run += when - L->sw_out_ns;
				if (trace) { /* the wait on the thread's state track (a loss: counted, the sums kept) */
					uint64_t v[4] = { L->sw_out_ns, when - L->sw_out_ns, L->sw_preempt,
					                  cpu < 0xffffu ? (uint64_t)cpu + 1 : 0 };
					rt_trace_ext(L, TRX_SWITCH, v, 4, at ? at : clock_ticks());
				}
				L->sw_out_ns = 0;
			}
		} else if (h.type == PERF_RECORD_SAMPLE && L->cpu_futex) {
			/* a futex exit (TIME | CPU | RAW: time, cpu and a pad, the raw
			 * record's size, the raw record): the kernel's result from its
			 * `ret`; a sample too short for it is counted as lost */
			uint32_t raw = 0;
			int64_t ret = 0;
			size_t at_ret = sizeof h + 20 + L->futex_ret_off;
			if (n >= sizeof h + 20)
				__builtin_memcpy(&raw, rec + sizeof h + 16, sizeof raw);
			int whole_ret = n >= at_ret + 8 && raw >= L->futex_ret_off + 8 && raw <= h.size;
			if (whole_ret)
				__builtin_memcpy(&ret, rec + at_ret, sizeof ret);
			if (count)
				rt_sys_kernel(L, SYS_FUTEX, ret, whole_ret ? 0 : 1);
		} else if (h.type == PERF_RECORD_LOST) {
			L->sw_out_ns = 0;
			whole = -1;
			uint64_t lost = 0;
			if (n >= sizeof h + 16)
				__builtin_memcpy(&lost, rec + sizeof h + 8, sizeof lost);
			if (count && L->cpu_futex) /* switch records or futex exits: which, the kernel does not say */
				rt_sys_kernel(L, SYS_FUTEX, 0, lost ? lost : 1);
		}
	}
	__atomic_store_n(&pg->data_tail, tail, __ATOMIC_RELEASE);
	return whole;
}

RT_HIDDEN uint64_t rt_cpu_refresh(struct rt_tls *L, uint32_t lock, uint32_t mode, uint64_t at)
{
	/* The wait is the clocks' (the program's own measure: interrupt and
	 * stolen time, which no switch record shows, are in it too); the
	 * switch records since the last look say how much of it was runnable.
	 * The word first, then the records and the clocks, then the word
	 * again: a return from the clock's system call is where the kernel
	 * switches a thread whose time is up, and a wait there would go to the
	 * next hook's context (after this hook's time was taken: the wrong
	 * call).  Read again while the word moved (bounded); a switch after
	 * the last look is seen by the next hook. */
	uint64_t gap, run = 0, off, mono = 0, cpu = 0;
	struct sonde_thread *t = L->t;
	int trace = t && L->off_ns && (mode & SONDE_MODE_TRACE) && L->ring && !rt_floor;
	for (int i = 0; i < 4; i++) {
		uint64_t r;
		switches_since(L, &gap, &r, trace, at, t && (mode & (SONDE_MODE_PROFILE | SONDE_MODE_TRACE)));
		run += r;
		mono = clock_ns(1 /* CLOCK_MONOTONIC */);
		cpu = clock_ns(3 /* CLOCK_THREAD_CPUTIME_ID */);
		uint32_t again = *L->cpu_lock;
		if (again == lock)
			break;
		lock = again;
	}
	off = mono > cpu ? mono - cpu : 0;
	if (off < L->off_ns || !mono || !cpu)
		off = L->off_ns; /* never backwards: a failed or coarse reading gives nothing */
	/* of the wait, what the switch records say was runnable (at most all
	 * of it: the two clocks and the records' times are read apart) */
	if (run > off - L->off_ns)
		run = off - L->off_ns;
	/* the first reading (rt_cpu_open: mode 0, off_ns 0) gives nobody anything */
	if (t && L->off_ns && (mode & SONDE_MODE_PROFILE) && L->nodes && t->cur_node < t->nodes_used) {
		L->nodes[t->cur_node].off_ns += off - L->off_ns;
		L->nodes[t->cur_node].run_ns += run;
	}
	/* a trace: the wait as a record before the hook's own (the reader gives
	 * it to the call open there) */
	if (trace && off > L->off_ns) {
		uint64_t v[2] = { off - L->off_ns, run };
		rt_trace_ext(L, TRX_OFFCPU, v, L->cpu_len > 4096 ? 2 : 1, at ? at : clock_ticks());
	}
	L->off_ns = off;
	L->cpu_seen = lock;
	L->cpu_at = at ? at : clock_ticks();
	if (t)
		t->off_ns = off;
	return off;
}

/* A seccomp filter on this thread (/proc/thread-self/status "Seccomp:\t2"):
 * a filter may kill the thread for a system call it does not know, so
 * none is made that the program would not make itself. */
static int seccomp_on(void)
{
	char b[4096];
	long fd = sys6(SYS_openat_, -100 /* AT_FDCWD */, (long)"/proc/thread-self/status", 0 /* O_RDONLY */, 0, 0, 0);
	if (fd < 0)
		return 1; /* cannot tell: as if it were */
	long n = sys6(SYS_read_, fd, (long)b, sizeof b - 1, 0, 0, 0);
	sys6(SYS_close_, fd, 0, 0, 0, 0, 0);
	if (n <= 0)
		return 1;
	b[n] = 0;
	const char *s = strstr(b, "\nSeccomp:");
	if (!s)
		return 0; /* a kernel without seccomp */
	s += 9;
	while (*s == ' ' || *s == '\t')
		s++;
	return *s != '0';
}

RT_HIDDEN void rt_cpu_open(struct rt_tls *L, struct sonde_thread *t)
{
	int32_t tid = (int32_t)sys6(SYS_gettid_, 0, 0, 0, 0, 0, 0);
	if (L->cpu_page && L->cpu_tid != tid) /* a fork child's copy: its parent's thread's event */
		rt_cpu_close(L);
	/* record --syscalls with the kernel's futex exit tracepoint known (the
	 * recorder read its id): the thread's event is that tracepoint instead
	 * of the dummy, its samples the thread's futex calls beside the switch
	 * records (an ordinary user may open it for its own threads: the
	 * syscall events are open to all, and their records are user mode's).
	 * A page kept from an earlier session of another kind is opened again. */
	uint32_t futex = (rt_mode & SONDE_MODE_SYSCALLS) && rt_sess && rt_sess->futex_tp ? rt_sess->futex_tp : 0;
	if (L->cpu_page && L->cpu_futex != futex)
		rt_cpu_close(L);
	int32_t why = 0;
	if (!L->cpu_page) {
		if (rt_mode & SONDE_MODE_NO_CPU) {
			why = -1001; /* REC_CPU_UNTIMED (common/format.h): not asked */
		} else if (seccomp_on()) {
			why = -1000; /* REC_CPU_SECCOMP (common/format.h): not tried */
		} else {
			struct perf_event_attr a;
			memset(&a, 0, sizeof a);
			a.size = sizeof a;
			a.type = PERF_TYPE_SOFTWARE;
			a.config = PERF_COUNT_SW_DUMMY;
			a.exclude_kernel = 1;
			a.exclude_hv = 1;
			/* the switch records, timed on CLOCK_MONOTONIC, into a ring of one
			 * page: runnable or blocked (runnable_since) */
			a.context_switch = 1;
			a.sample_id_all = 1;
			a.sample_type = PERF_SAMPLE_TIME | PERF_SAMPLE_CPU;
			a.use_clockid = 1;
			a.clockid = 1; /* CLOCK_MONOTONIC */
			long fd = -1;
			L->cpu_futex = 0;
			if (futex && rt_sys_ready()) {
				struct perf_event_attr f = a;
				f.type = PERF_TYPE_TRACEPOINT;
				f.config = futex;
				f.sample_period = 1;
				f.sample_type = PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_RAW;
				fd = sys6(SYS_perf_event_open_, (long)&f, 0, -1, -1, PERF_FLAG_FD_CLOEXEC, 0);
				if (fd >= 0) {
					/* its ring or nothing: without the ring the samples are
					 * nowhere.  8 pages (a sample is 56 bytes: 585 futex calls
					 * between two hooks), else 1 (the locked-memory limit of an
					 * ordinary user: 73 calls, the rest counted as lost) */
					uint32_t len = 9 * 4096;
					long p = sys6(SYS_mmap_, 0, len, 3, 1, fd, 0);
					if (p < 0 && p > -4096) {
						len = 2 * 4096;
						p = sys6(SYS_mmap_, 0, len, 3, 1, fd, 0);
					}
					sys6(SYS_close_, fd, 0, 0, 0, 0, 0);
					fd = -1;
					if (p < 0 && p > -4096) {
						rt_sys_futex_thread(0);
					} else {
						rt_sys_futex_thread(1);
						L->cpu_page = (void *)p;
						L->cpu_len = len;
						L->cpu_tid = tid;
						L->sw_out_ns = 0;
						L->sw_last_ns = 0;
						L->cpu_futex = futex;
						L->futex_ret_off = rt_sess->futex_ret_off;
					}
				} else {
					rt_sys_futex_thread(0);
				}
			}
			if (!L->cpu_page)
				fd = sys6(SYS_perf_event_open_, (long)&a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC, 0);
			if (L->cpu_page) {
				/* the futex event's page and ring */
			} else if (fd < 0) {
				why = (int32_t)fd;
			} else {
				/* the page and the ring (written: its tail is ours); refused
				 * (the locked-memory limit of an ordinary user, many
				 * threads), the page alone: off-CPU time, not split */
				uint32_t len = 2 * 4096;
				long p = sys6(SYS_mmap_, 0, len, 3 /* PROT_READ | PROT_WRITE */, 1 /* MAP_SHARED */, fd, 0);
				if (p < 0 && p > -4096) {
					len = 4096;
					p = sys6(SYS_mmap_, 0, len, 1 /* PROT_READ */, 1 /* MAP_SHARED */, fd, 0);
				}
				sys6(SYS_close_, fd, 0, 0, 0, 0, 0);
				if (p < 0 && p > -4096)
					why = (int32_t)p;
				else {
					L->cpu_page = (void *)p;
					L->cpu_len = len;
					L->cpu_tid = tid;
					L->sw_out_ns = 0;
					L->sw_last_ns = 0;
				}
			}
		}
	}
	if (L->cpu_page) {
		struct perf_event_mmap_page *pg = L->cpu_page;
		/* the futex event's samples come without a switch: its ring's head
		 * is the word then (it moves at every record, a switch's too) */
		L->cpu_lock = L->cpu_futex ? (const volatile uint32_t *)&pg->data_head : (const volatile uint32_t *)&pg->lock;
		L->cpu_quiet = 1u << 18; /* TSC ticks: 65 to 260 us at 1 to 4 GHz (docs/SYSCALLS.md) */
		t->cpu_split = 1;
		t->cpu_flags = L->cpu_len > 4096 ? SONDE_CPU_RUNNABLE : 0;
		uint64_t g, r;
		switches_since(L, &g, &r, 0, 0, 0); /* what an earlier session left in the ring is not this one's */
	} else {
		L->cpu_lock = &cpu_none;
		L->cpu_quiet = ~(uint64_t)0; /* no page: no look without a switch either */
		t->cpu_split = why ? why : -1;
		t->cpu_flags = 0;
	}
	L->off_ns = 0;
	L->cpu_seen = *L->cpu_lock;
	if (L->cpu_page)
		rt_cpu_refresh(L, L->cpu_seen, 0, 0);
	t->off_ns = L->off_ns;
}

/* The agent's end (thread L may be running): its event goes, zero pages
 * in its place, so that a hook still reading the word (or draining the
 * ring: it writes the tail) after the end's grace period reads zeros
 * instead of faulting; the pages go at the
 * thread's next session or its end (cpu_tid -1: not an event). */
RT_HIDDEN void rt_cpu_retire(struct rt_tls *L)
{
	if (!L->cpu_page || L->cpu_tid == -1)
		return;
	__atomic_store_n(&L->cpu_lock, &cpu_none, __ATOMIC_RELEASE);
	long p = sys6(SYS_mmap_, (long)L->cpu_page, L->cpu_len, 3 /* PROT_READ | PROT_WRITE: a late ring tail */,
	              0x22 | 0x10 /* MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED */, -1, 0);
	if (p == (long)L->cpu_page)
		L->cpu_tid = -1;
}

/* The thread's end: a signal's handler can still run on the thread after
 * it (a SIGPROF during the thread's last steps), and its hooks look at the
 * page: every field that leads to it says "no page" first (the word that
 * never changes, already seen, no window; no page, no ring), and the pages
 * go after. */
RT_HIDDEN void rt_cpu_close(struct rt_tls *L)
{
	void *page = L->cpu_page;
	uint32_t len = L->cpu_len;
	L->cpu_lock = &cpu_none;
	L->cpu_seen = cpu_none;
	L->cpu_quiet = ~(uint64_t)0;
	L->cpu_page = NULL;
	L->cpu_len = 0;
	atomic_signal_fence(memory_order_seq_cst);
	if (page)
		sys6(SYS_munmap_, (long)page, len, 0, 0, 0, 0);
}
