/* unwind.c — a stopped thread's call stack through the DWARF CFI of the
 * process's objects (unwind.h).  libdwfl does the unwinding; this reports
 * the objects of /proc/PID/maps, walks one thread's frames into arrays, and
 * for a thread whose registers the caller holds (a probe's breakpoint stop:
 * the kernel's pc is one byte past the trap there) gives libdwfl those
 * registers and the process's memory through its own thread callbacks. */
#include "attach/unwind.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <sys/user.h>

Dwfl *unwind_begin(pid_t pid, char *err, size_t n)
{
	static char *debuginfo_path = NULL;
	static const Dwfl_Callbacks cb = {
		.find_elf = dwfl_linux_proc_find_elf,
		.find_debuginfo = dwfl_standard_find_debuginfo,
		.debuginfo_path = &debuginfo_path,
	};
	Dwfl *d = dwfl_begin(&cb);
	if (!d || dwfl_linux_proc_report(d, pid) != 0 || dwfl_report_end(d, NULL, NULL) != 0) {
		snprintf(err, n, "cannot read the stacks of process %d (%s)", (int)pid, dwfl_errmsg(-1));
		if (d)
			dwfl_end(d);
		return NULL;
	}
	return d;
}

struct collect {
	uint64_t *pc, *sp;
	int *act;
	int n, max;
};

static int frame_cb(Dwfl_Frame *state, void *arg)
{
	struct collect *c = arg;
	Dwarf_Addr pc;
	bool act;
	Dwarf_Word sp = 0;
	if (c->n == c->max || !dwfl_frame_pc(state, &pc, &act))
		return DWARF_CB_ABORT;
#if defined(__x86_64__)
	if (dwfl_frame_reg(state, 7 /* rsp */, &sp) != 0)
		return DWARF_CB_ABORT;
#endif
	c->pc[c->n] = pc;
	if (c->sp)
		c->sp[c->n] = sp;
	if (c->act)
		c->act[c->n] = act;
	c->n++;
	return DWARF_CB_OK;
}

int unwind_frames(Dwfl_Thread *th, uint64_t *pc, uint64_t *sp, int *act, int max)
{
	struct collect c = { pc, sp, act, 0, max };
	dwfl_thread_getframes(th, frame_cb, &c); /* a short stack is not an error */
	return c.n;
}

int unwind_read_word(pid_t pid, uint64_t addr, uint64_t *v)
{
	struct iovec l = { v, sizeof *v }, r = { (void *)(uintptr_t)addr, sizeof *v };
	return process_vm_readv(pid, &l, 1, &r, 1, 0) == (ssize_t)sizeof *v ? 0 : -1;
}

/* --- one thread, its registers given ------------------------------------- */

#define UNWIND_REFRESHES 16
#define UNWIND_PAGE 4096
#define UNWIND_PAGES 4

struct unwinder {
	Dwfl *dwfl;
	pid_t pid, tid;
	const struct user_regs_struct *regs;
	int attached;   /* dwfl_attach_state done (once per Dwfl) */
	int refreshes;  /* objects reported again (a pc in none of them) */
	/* The pages read during one unwinding (its stack, mostly): a word read
	 * one by one costs a system call each, most of the time of a hit. */
	struct page { uint64_t base; int ok; uint8_t b[UNWIND_PAGE]; } pages[UNWIND_PAGES];
	int npages;
	/* unwinder_stack_copy: the thread's stack as copied at the hit, read
	 * before the process (where the thread has run on since). */
	const uint8_t *copy;
	uint64_t copy_base;
	size_t copy_n;
};

static pid_t next_thread(Dwfl *d, void *arg, void **thread_argp)
{
	(void)d;
	struct unwinder *u = arg;
	if (*thread_argp)
		return 0;
	*thread_argp = u;
	return u->tid;
}

static bool get_thread(Dwfl *d, pid_t tid, void *arg, void **thread_argp)
{
	(void)d;
	struct unwinder *u = arg;
	if (tid != u->tid)
		return false;
	*thread_argp = u;
	return true;
}

static bool memory_read(Dwfl *d, Dwarf_Addr addr, Dwarf_Word *result, void *arg)
{
	(void)d;
	struct unwinder *u = arg;
	uint64_t v, base = addr & ~(uint64_t)(UNWIND_PAGE - 1), off = addr - base;
	if (u->copy && addr >= u->copy_base && u->copy_n >= sizeof v && addr - u->copy_base <= u->copy_n - sizeof v) {
		memcpy(&v, u->copy + (addr - u->copy_base), sizeof v);
		*result = v;
		return true;
	}
	if (off > UNWIND_PAGE - sizeof v) { /* across two pages */
		if (unwind_read_word(u->pid, addr, &v))
			return false;
		*result = v;
		return true;
	}
	struct page *pg = NULL;
	for (int i = 0; i < u->npages && !pg; i++)
		if (u->pages[i].base == base)
			pg = &u->pages[i];
	if (!pg) {
		pg = &u->pages[u->npages < UNWIND_PAGES ? u->npages++ : (int)((base / UNWIND_PAGE) % UNWIND_PAGES)];
		struct iovec l = { pg->b, UNWIND_PAGE }, r = { (void *)(uintptr_t)base, UNWIND_PAGE };
		pg->base = base;
		pg->ok = process_vm_readv(u->pid, &l, 1, &r, 1, 0) == UNWIND_PAGE;
	}
	if (!pg->ok)
		return false;
	memcpy(&v, pg->b + off, sizeof v);
	*result = v;
	return true;
}

static bool set_initial_registers(Dwfl_Thread *th, void *thread_arg)
{
#if defined(__x86_64__)
	struct unwinder *u = thread_arg;
	const struct user_regs_struct *r = u->regs;
	/* DWARF's x86-64 numbering: rax rdx rcx rbx rsi rdi rbp rsp r8-r15 rip. */
	Dwarf_Word w[17] = { r->rax, r->rdx, r->rcx, r->rbx, r->rsi, r->rdi, r->rbp, r->rsp, r->r8, r->r9,
	                     r->r10, r->r11, r->r12, r->r13, r->r14, r->r15, r->rip };
	dwfl_thread_state_register_pc(th, r->rip);
	return dwfl_thread_state_registers(th, 0, 17, w);
#else
	(void)th;
	(void)thread_arg;
	return false;
#endif
}

static void detach(Dwfl *d, void *arg)
{
	(void)d;
	(void)arg; /* the thread is the caller's: nothing to let go */
}

static const Dwfl_Thread_Callbacks thread_cbs = {
	.next_thread = next_thread,
	.get_thread = get_thread,
	.memory_read = memory_read,
	.set_initial_registers = set_initial_registers,
	.detach = detach,
};

struct unwinder *unwinder_new(pid_t pid, char *err, size_t n)
{
	struct unwinder *u = calloc(1, sizeof *u);
	if (!u) {
		snprintf(err, n, "out of memory");
		return NULL;
	}
	u->pid = pid;
	if (!(u->dwfl = unwind_begin(pid, err, n))) {
		free(u);
		return NULL;
	}
	return u;
}

int unwinder_refresh(struct unwinder *u)
{
	char err[300];
	Dwfl *d = unwind_begin(u->pid, err, sizeof err);
	if (!d)
		return -1;
	dwfl_end(u->dwfl);
	u->dwfl = d;
	u->attached = 0;
	return 0;
}

int unwinder_stack(struct unwinder *u, pid_t tid, const struct user_regs_struct *regs, uint64_t *pc, int max)
{
#if defined(__x86_64__)
	if (!u->attached) {
		if (!dwfl_attach_state(u->dwfl, NULL, u->pid, &thread_cbs, u))
			return 0;
		u->attached = 1;
	}
	u->tid = tid;
	u->regs = regs;
	u->npages = 0; /* the program has run since */
	struct collect c = { pc, NULL, NULL, 0, max };
	dwfl_getthread_frames(u->dwfl, tid, frame_cb, &c);
	/* A pc in no object reported: one mapped since (dlopen)?  The objects
	 * are reported again, a bounded number of times. */
	if (c.n && c.n < max && u->refreshes < UNWIND_REFRESHES &&
	    !dwfl_addrmodule(u->dwfl, pc[c.n - 1] - (c.n > 1))) {
		u->refreshes++;
		if (unwinder_refresh(u) == 0 && dwfl_attach_state(u->dwfl, NULL, u->pid, &thread_cbs, u)) {
			u->attached = 1;
			c.n = 0;
			dwfl_getthread_frames(u->dwfl, tid, frame_cb, &c);
		}
	}
	u->regs = NULL;
	return c.n;
#else
	(void)u;
	(void)tid;
	(void)regs;
	(void)pc;
	(void)max;
	return 0;
#endif
}

int unwinder_stack_copy(struct unwinder *u, pid_t tid, const struct user_regs_struct *regs, const void *stack,
                        uint64_t stack_base, size_t stack_n, uint64_t *pc, int max)
{
	u->copy = stack;
	u->copy_base = stack_base;
	u->copy_n = stack ? stack_n : 0;
	int n = unwinder_stack(u, tid, regs, pc, max);
	u->copy = NULL;
	u->copy_n = 0;
	return n;
}

void unwinder_free(struct unwinder *u)
{
	if (!u)
		return;
	dwfl_end(u->dwfl);
	free(u);
}
