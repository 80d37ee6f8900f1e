/* remote_count.c — line probes counted inside a remote aarch64 or x86-64
 * Linux target, or Cortex-M3/M4 or RV32 firmware (declared in remote_run.h;
 * on a microcontroller the RAM is --target-ram's, the code
 * remote_count_mcu.c's, the jumps written with M as on x86-64, and the exit
 * read at a breakpoint on each semihosting trap: install_mcu).  The steps below are aarch64's; on x86-64
 * the syscall instruction is `syscall`, the trampolines are
 * src/arch/x86_64/remote_tramp.c's (the local relocator's code), the jumps
 * are written with M (gdbserver writes the text) and the exit is caught at
 * exit_group (QCatchSyscalls).
 *
 * Installation (once, at the first stop, before the program runs):
 *  1. a page P: the program is made to call mmap itself — its registers
 *     saved (`g`), x8 = 222 and the arguments set, the pc on an `svc #0`
 *     found in the code near the pc (ld.so's, or the static program's), one
 *     step, x0 read, the registers written back (`G`).  P is asked for
 *     below the program's text, and must be within a branch's reach (128
 *     MiB) of every site: else it is unmapped the same way and the sites
 *     keep breakpoints.
 *  2. written into P with `M` (QEMU's stub refuses writes to the text, but
 *     not to a page that has not run yet): a trampoline per site
 *     (src/arch/aarch64/remote_tramp.c), a routine that patches the sites
 *     and one that puts them back; the counters are on their own page, 256
 *     KiB further (a store to a page of translated code would make QEMU
 *     translate the trampolines again at every hit).
 *  3. the patch routine run by the target: registers saved, pc on it,
 *     continue, the stop at its `brk #0` (`brk #1`: an mprotect failed,
 *     nothing patched), registers written back.
 * Counters: read at every stop; at exit_group where the stub catches system
 * calls, else at the program's _fini (glibc's _dl_fini runs it on exit() and
 * on a return from main), where a breakpoint stops it once; a fatal signal stops the target before the
 * program dies (the read then sees every hit).  An exit that no read
 * followed (_exit, a closed connection) marks the counts incomplete.
 * Leaving a live target (Ctrl-C, --duration, an error): a last read, then
 * the target runs the routine that puts the original words back. */

#include "arch/aarch64/remote_tramp.h"
#include "arch/x86_64/remote_tramp.h"
#include "probe/engine.h"
#include "probe/probe.h"
#include "probe/remote/remote_count_mcu.h"
#include "probe/remote/remote_run.h"
#include "sym/sym.h"

#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GDB_SIGTRAP 5
#define MAX_SITES 256
#define MAP_LEN 0x50000ull         /* code (trampolines, routines), then the counters */
#define CODE_LEN 0x40000ull
#define COUNTERS_OFF 0x40000ull
#define BEAT_OFF (COUNTERS_OFF + 8 * MAX_SITES) /* aarch64: the heartbeat's word (a64_tramp): 1 while installed */
#define SVC_SCAN 0x20000           /* bytes of code searched for an svc #0 */
#define EXCL_BACK 16               /* instructions before a site searched for a load-exclusive */
#define REACH (120ull << 20)       /* within a branch's 128 MiB, with room for the code */

struct csite {
	uint64_t addr;
	uint32_t insn;              /* aarch64: the instruction */
	uint8_t orig[16];           /* the bytes the patch replaces (x86-64: the displaced ones) */
	int olen;
	uint64_t faddr, flen;       /* x86-64: its function, for the relocation */
	uint64_t beat;              /* aarch64: its trampoline's heartbeat brk (a64_tramp) */
};

/* A probe counted at site (several probes may share one site and its counter). */
struct cuser {
	struct probe *p;
	int site;
};

struct rcount {
	struct csite *v;
	int n;
	struct cuser *u;
	int nu;
	int installed;
	uint64_t page, counters;
	uint64_t undo_at, undo_ok, undo_fail;
	uint64_t *vals;             /* the counters at the last read */
	uint64_t fini;              /* the program's _fini (run-time), or 0 */
	int fresh;                  /* no hit can have happened since the last read */
	int final;                  /* read at _fini: the program is exiting */
	int stop_code;              /* the signal of the stop of the last read */
	int fatal_ok;               /* resumed with that signal right after the read */
	int complete;               /* at the end: every hit was read */
	int undone;
	int x64;                    /* x86-64 (gdbserver: patched with M, no routine) */
	uint8_t *jmp;               /* x86-64, microcontrollers: each site's jump to its trampoline */
	int catching;               /* the stub stops the target at exit_group (QCatchSyscalls) */
	int mcu;                    /* a microcontroller (remote_count_mcu.c): --target-ram, jumps written with M */
	uint64_t code_end;          /* mcu: the trampolines are [page, code_end) */
	uint64_t *exits;            /* mcu: the semihosting traps, where the exit stops */
	int nexits;
	int refused_noted;          /* mcu: the note that the session cannot count in the target was given */
	int mcu_known, mcu_kind;    /* mcu_count_kind's answer, asked once */
	const char *mcu_why;
};

static int allowed(struct rsess *s)
{
	const char *v = getenv("SONDE_REMOTE_IN_TARGET");
	return !s->no_tracepoints && !(v && !strcmp(v, "0")) && !s->c.big_endian;
}

static int enabled(struct rsess *s)
{
	int m = s->c.arch->elf_machine;
	return allowed(s) && (m == EM_AARCH64 || m == EM_X86_64) && s->c.has_auxv;
}

/* The jump that replaces a site: bytes. */
static int jump_len(const struct rcount *k)
{
	return k->mcu ? MCU_JUMP_LEN : X64_JMP_LEN;
}

#define FUNC_MAX 65536              /* bytes of a function read to check x86-64 branch targets */

/* x86-64: whether site addr can be relocated (its function read through
 * the stub), and its displaced bytes into t.  0, 1 not. */
static int x64_site(struct rsess *s, uint64_t addr, struct csite *t)
{
	struct sym_info fi;
	if (sym_lookup(s->sym, addr - s->bias, &fi) || !fi.size || fi.size > FUNC_MAX || addr - s->bias < fi.start ||
	    addr - s->bias - fi.start >= fi.size)
		return 1;
	uint8_t *fc = malloc(fi.size), out[X64_TRAMP_MAX];
	uint64_t fa = fi.start + s->bias;
	size_t disp = 0;
	char err[200];
	int rc = 1;
	if (fc && remote_read(&s->c, fa, fc, fi.size) == 0 &&
	    x64_tramp(out, addr, addr, fc + (addr - fa), fi.size - (addr - fa), fc, fi.size, fa, addr, &disp, err,
	              sizeof err) > 0 && disp <= sizeof t->orig) {
		memcpy(t->orig, fc + (addr - fa), disp);
		t->olen = (int)disp;
		t->faddr = fa;
		t->flen = fi.size;
		rc = 0;
	}
	free(fc);
	return rc;
}

static uint32_t le32(const uint8_t *b)
{
	return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

/* A load-exclusive in the EXCL_BACK instructions before addr, in its
 * function: the site may be inside an ldxr/stxr sequence. */
static int after_exclusive(struct rsess *s, uint64_t addr)
{
	struct sym_info fi;
	uint64_t start = addr - 4 * EXCL_BACK;
	if (sym_lookup(s->sym, addr - s->bias, &fi) == 0 && fi.start + s->bias > start)
		start = fi.start + s->bias;
	if (start >= addr)
		return 0;
	uint8_t b[4 * EXCL_BACK];
	size_t len = (size_t)(addr - start);
	if (remote_read(&s->c, start, b, len))
		return 1;
	for (size_t i = 0; i + 4 <= len; i += 4)
		if (a64_is_load_exclusive(le32(b + i)))
			return 1;
	return 0;
}

int rcount_add(struct rsess *s, struct probe *p, uint64_t addr)
{
	const char *why = NULL;
	struct rcount *k = s->count;
	if (!k && !(k = s->count = calloc(1, sizeof *k)))
		return -1;
	if (!k->mcu_known) {  /* once: it reads the ELF's attributes */
		k->mcu_known = 1;
		k->mcu_kind = allowed(s) ? mcu_count_kind(s, &k->mcu_why) : 0;
	}
	int mcu = k->mcu_kind;
	why = k->mcu_why;
	if (mcu < 0) {
		if (s->ram_len && !k->refused_noted && s->e->warn) {
			char msg[300];
			snprintf(msg, sizeof msg, "not counted in the target (%s): breakpoints", why);
			s->e->warn(p, msg);
		}
		k->refused_noted = 1;
		return 1;
	}
	if (!mcu && (!enabled(s) || (s->c.arch->elf_machine == EM_AARCH64 && addr % 4)))
		return 1;
	k->x64 = s->c.arch->elf_machine == EM_X86_64;
	k->mcu = mcu;
	int site;
	for (site = 0; site < k->n && k->v[site].addr != addr; site++)
		;
	if (site == k->n) {
		struct csite t = { .addr = addr };
		if (k->n >= MAX_SITES)
			return 1;
		if (k->mcu) {
			if (mcu_site(s, addr, t.orig, &t.olen, &why)) {
				if (s->e->warn) {
					char msg[300];
					snprintf(msg, sizeof msg, "line site 0x%llx not counted in the target (%s): a breakpoint there",
					         (unsigned long long)addr, why);
					s->e->warn(p, msg);
				}
				return 1;
			}
			for (int i = 0; i < k->n; i++)  /* the displaced bytes of two sites must not overlap */
				if (addr < k->v[i].addr + (uint64_t)k->v[i].olen && k->v[i].addr < addr + (uint64_t)t.olen)
					return 1;
		} else if (k->x64) {
			if (x64_site(s, addr, &t))
				return 1;
			for (int i = 0; i < k->n; i++)  /* the displaced bytes of two sites must not overlap */
				if (addr < k->v[i].addr + (uint64_t)k->v[i].olen && k->v[i].addr < addr + (uint64_t)t.olen)
					return 1;
		} else {
			if (remote_read(&s->c, addr, t.orig, 4) || a64_reloc_refused(le32(t.orig)) || after_exclusive(s, addr))
				return 1;
			t.insn = le32(t.orig);
			t.olen = 4;
		}
		struct csite *v = realloc(k->v, (size_t)(k->n + 1) * sizeof *v);
		if (!v)
			return -1;
		k->v = v;
		v[k->n++] = t;
	}
	struct cuser *u = realloc(k->u, (size_t)(k->nu + 1) * sizeof *u);
	if (!u)
		return -1;
	k->u = u;
	u[k->nu++] = (struct cuser){ p, site };
	return 0;
}

/* Site i (and its users) out of the list, the last one in its place. */
static void site_drop(struct rcount *k, int i)
{
	for (int j = 0; j < k->nu; j++)
		if (k->u[j].site == i)
			k->u[j--] = k->u[--k->nu];
	k->n--;
	for (int j = 0; j < k->nu; j++)
		if (k->u[j].site == k->n)
			k->u[j].site = i;
	k->v[i] = k->v[k->n];
}

/* The users of site i to breakpoints there: 0, -1 error. */
static int site_to_bp(struct rsess *s, int i, char *err, size_t n)
{
	struct rcount *k = s->count;
	for (int j = 0; j < k->nu; j++) {
		if (k->u[j].site != i)
			continue;
		int t = rs_trace_add_beside(s, k->u[j].p, k->v[i].addr, err, n);  /* the stub's tracepoint, if it has them */
		if (t < 0 || (t == 1 && rs_site_add(s, k->u[j].p, k->v[i].addr, 0, err, n)))
			return -1;
		struct probe *p = k->u[j].p;
		char *w = NULL;
		if (t == 0 && p->where && !strstr(p->where, "; counted by the stub") &&
		    asprintf(&w, "%s; counted by the stub (tracepoint)", p->where) > 0) {
			free(p->where);
			p->where = w;
		}
	}
	return 0;
}

/* --- running code in the target -------------------------------------------- */

/* The target calls syscall nr (args a[0..5]) at the svc at svc; *ret is
 * its x0.  The registers are written back after it.  0, -1 error. */
static int inject_syscall(struct rsess *s, uint64_t svc, int nr, const uint64_t a[6], uint64_t *ret)
{
	struct remote *c = &s->c;
	char *saved = remote_regs_save(c);
	if (!saved)
		return -1;
	/* aarch64: x0-x5, x8, pc; x86-64 (gdb's numbering): rdi, rsi, rdx, r10,
	 * r8, r9, rax, rip.  The result: x0 / rax, both register 0. */
	static const int a64[8] = { 0, 1, 2, 3, 4, 5, 8, 32 }, x64[8] = { 5, 4, 3, 10, 8, 9, 0, 16 };
	int regno[8];
	memcpy(regno, s->count->x64 ? x64 : a64, sizeof regno);
	uint64_t val[8] = { a[0], a[1], a[2], a[3], a[4], a[5], (uint64_t)nr, svc };
	struct remote_stop st;
	int rc = -1;
	if (remote_queue_set_regs(c, 8, regno, val) || remote_step(c, &st))
		goto out;
	if (st.kind != REMOTE_STOPPED || st.code != GDB_SIGTRAP) {
		snprintf(c->err, sizeof c->err, "the target did not stop after the syscall sonde made it run");
		goto out;
	}
	rc = remote_reg(c, 0, ret);
out:
	if (remote_regs_restore(c, saved))
		rc = -1;
	free(saved);
	return rc;
}

/* The target runs the routine at at until its brk: 0 it stopped at ok, 1
 * at fail, -1 error (an other stop: the target's state is not known). */
static int run_routine(struct rsess *s, uint64_t at, uint64_t ok, uint64_t fail)
{
	struct remote *c = &s->c;
	char *saved = remote_regs_save(c);
	if (!saved)
		return -1;
	struct remote_stop st;
	uint64_t pc = 0;
	int rc = -1;
	if (remote_set_reg(c, c->arch->pc, at) || remote_cont(c, 0) || remote_wait(c, -1, &st))
		goto out;
	if (st.kind != REMOTE_STOPPED) {
		snprintf(c->err, sizeof c->err, "the target ended while it ran sonde's patch routine");
		free(saved);
		return -1;
	}
	if (st.code != GDB_SIGTRAP || remote_reg(c, c->arch->pc, &pc) || (pc != ok && pc != fail)) {
		snprintf(c->err, sizeof c->err, "the target stopped (signal %d, pc 0x%llx) elsewhere than at the end of "
		         "sonde's patch routine", st.code, (unsigned long long)pc);
		goto out;
	}
	rc = pc == fail;
out:
	if (remote_regs_restore(c, saved))
		rc = -1;
	free(saved);
	return rc;
}

/* A system call instruction (`svc #0`; x86-64 `syscall`, 0f 05) in the
 * code from the pc on (ld.so's entry at the first stop of a dynamic
 * program, the static program's own code). */
static int find_svc(struct rsess *s, uint64_t *svc)
{
	uint64_t pc;
	uint8_t b[4096 + 1];
	int x64 = s->count->x64;
	if (remote_reg(&s->c, s->c.arch->pc, &pc))
		return -1;
	if (!x64)
		pc &= ~3ull;
	for (uint64_t a = pc; a < pc + SVC_SCAN; a += 4096) {
		size_t len = 4096 - (size_t)(a & 4095);
		if (remote_read(&s->c, a, b, len))
			break;
		/* x86-64: one byte of the next page for a `0f 05` across pages. */
		size_t got = len + (x64 && remote_read(&s->c, a + len, b + len, 1) == 0);
		for (size_t i = 0; x64 ? i + 2 <= got : i + 4 <= len; i += x64 ? 1 : 4)
			if (x64 ? b[i] == 0x0f && b[i + 1] == 0x05 : le32(b + i) == A64_SVC0) {
				*svc = a + i;
				return 0;
			}
		a -= 4096 - len;
	}
	return 1;
}

/* --- installation ------------------------------------------------------------ */

static void put_words(uint8_t *out, const uint32_t *w, int n)
{
	for (int i = 0; i < n; i++)
		for (int b = 0; b < 4; b++)
			out[4 * i + b] = (uint8_t)(w[i] >> (8 * b));
}

static void found_fini(void *arg, const struct sym_info *i)
{
	*(uint64_t *)arg = i->start;
}

/* The code of P, built for P at page: 0 ok (*len bytes at buf), 1 a site
 * out of reach (why). */
static int build(struct rsess *s, uint64_t page, uint8_t *buf, size_t *len, const char **why)
{
	struct rcount *k = s->count;
	uint32_t *w = malloc(CODE_LEN);
	uint64_t *addrs = malloc((size_t)k->n * sizeof *addrs);
	uint32_t *patch = malloc((size_t)k->n * sizeof *patch), *orig = malloc((size_t)k->n * sizeof *orig);
	int rc = 1, nw = 0, max = (int)(CODE_LEN / 4);
	const char *hb = getenv("SONDE_REMOTE_HEARTBEAT");
	int beat = !(hb && !strcmp(hb, "0")); /* 0: no heartbeat stops (the bench of the bare trampoline, tests) */
	*why = "out of memory";
	if (!w || !addrs || !patch || !orig)
		goto out;
	for (int i = 0; i < k->n; i++) {
		uint64_t at = page + 4 * (uint64_t)nw;
		int m = a64_tramp(w + nw, max - nw, at, k->v[i].addr, k->v[i].insn, page + COUNTERS_OFF + 8 * (uint64_t)i,
		                  beat ? page + BEAT_OFF : 0, why);
		for (int j = 0; j < m; j++)
			if (w[nw + j] == A64_BRK_HEARTBEAT)
				k->v[i].beat = at + 4 * (uint64_t)j;
		if (m < 0 || !(patch[i] = a64_branch(k->v[i].addr, at))) {
			if (m >= 0)
				*why = "the page is out of branch range of a site";
			goto out;
		}
		addrs[i] = k->v[i].addr;
		orig[i] = k->v[i].insn;
		nw += m;
	}
	uint64_t ok, fail;
	uint64_t patch_at = page + 4 * (uint64_t)nw;
	int m = a64_patch_routine(w + nw, max - nw, patch_at, addrs, patch, k->n, &ok, &fail);
	if (m < 0)
		goto room;
	nw += m;
	k->undo_at = page + 4 * (uint64_t)nw;
	m = a64_patch_routine(w + nw, max - nw, k->undo_at, addrs, orig, k->n, &k->undo_ok, &k->undo_fail);
	if (m < 0)
		goto room;
	nw += m;
	put_words(buf, w, nw);
	*len = 4 * (size_t)nw;
	/* Where the patch routine is and ends, after the code. */
	memcpy(buf + *len, &patch_at, 8);
	memcpy(buf + *len + 8, &ok, 8);
	memcpy(buf + *len + 16, &fail, 8);
	rc = 0;
	goto out;
room:
	*why = "no room for the patch routines";
out:
	free(w);
	free(addrs);
	free(patch);
	free(orig);
	return rc;
}

/* x86-64: the trampolines of P at page (reloc_build for each site, with
 * the function re-read), and each site's jmp into k->jmp.  0, 1 (why). */
static int build_x64(struct rsess *s, uint64_t page, uint8_t *buf, size_t *len, const char **why)
{
	struct rcount *k = s->count;
	static char msg[240];
	size_t at = 0;
	free(k->jmp);
	if (!(k->jmp = malloc((size_t)k->n * X64_JMP_LEN))) {
		*why = "out of memory";
		return 1;
	}
	for (int i = 0; i < k->n; i++) {
		struct csite *t = &k->v[i];
		uint8_t *fc = malloc(t->flen);
		size_t disp = 0;
		char e[200];
		int m = -1;
		if (at + X64_TRAMP_MAX > CODE_LEN) {
			free(fc);
			*why = "no room for the trampolines";
			return 1;
		}
		if (fc && remote_read(&s->c, t->faddr, fc, t->flen) == 0 &&
		    (m = x64_tramp(buf + at, page + at, t->addr, fc + (t->addr - t->faddr), t->flen - (t->addr - t->faddr),
		                   fc, t->flen, t->faddr, page + COUNTERS_OFF + 8 * (uint64_t)i, &disp, e, sizeof e)) > 0 &&
		    (disp != (size_t)t->olen || x64_jmp(k->jmp + X64_JMP_LEN * i, t->addr, page + at))) {
			snprintf(e, sizeof e, "the code at 0x%llx changed, or its trampoline is out of reach",
			         (unsigned long long)t->addr);
			m = -1;
		}
		free(fc);
		if (m < 0) {
			snprintf(msg, sizeof msg, "%s", e);
			*why = msg;
			return 1;
		}
		at += (size_t)m;
	}
	*len = at;
	memset(buf + at, 0, 24);  /* no routine: install does not read it */
	return 0;
}

/* x86-64, microcontrollers: the sites patched (on: each one's jump
 * written with M, every thread being stopped) or put back.  0, 1 the stub
 * refused a write when patching (those written are put back), -1 error. */
static int patch_m(struct rsess *s, int on)
{
	struct rcount *k = s->count;
	size_t jl = (size_t)jump_len(k);
	for (int i = 0; i < k->n; i++) {
		if (remote_write(&s->c, k->v[i].addr, on ? k->jmp + jl * (size_t)i : k->v[i].orig, jl) == 0)
			continue;
		if (!on)
			return -1;
		while (i-- > 0)
			if (remote_write(&s->c, k->v[i].addr, k->v[i].orig, jl))
				return -1;
		return 1;
	}
	return 0;
}

/* Every site back to a breakpoint: 0, -1 error. */
static int fall_back(struct rsess *s, const char *why, char *err, size_t n)
{
	struct rcount *k = s->count;
	if (why && k->nu && s->e->warn) {
		char msg[300];
		snprintf(msg, sizeof msg, "not counted in the target (%s): breakpoints", why);
		s->e->warn(k->u[0].p, msg);
	}
	for (int i = 0; i < k->n; i++)
		if (site_to_bp(s, i, err, n))
			return -1;
	k->n = k->nu = 0;
	return 0;
}

/* The sites are in: each probe says how many of its sites count in the target. */
static void mark_installed(struct rcount *k)
{
	k->installed = 1;
	k->fresh = 1;
	for (int i = 0; i < k->nu; i++)
		k->u[i].p->in_target++;
	for (int i = 0; i < k->nu; i++) {
		struct probe *p = k->u[i].p;
		char *w = NULL;
		if (p->where && !strstr(p->where, "; counted in the target") &&
		    asprintf(&w, "%s; counted in the target (%d site%s)", p->where, p->in_target, p->in_target > 1 ? "s" : "") > 0) {
			free(p->where);
			p->where = w;
		}
	}
}

/* A microcontroller (remote_count_mcu.c): the counters and trampolines
 * written into --target-ram, the sites patched with M, a breakpoint on
 * each semihosting trap (the exit: the counters read there).  0, -1. */
static int install_mcu(struct rsess *s, char *err, size_t n)
{
	struct rcount *k = s->count;
	uint64_t pc = 0;
	if (remote_reg(&s->c, s->c.arch->pc, &pc)) {
		snprintf(err, n, "%s", s->c.err);
		return -1;
	}
	for (int i = 0; i < k->n; i++)  /* the pc inside a displaced pair: that site stays a breakpoint */
		if (pc > k->v[i].addr && pc < k->v[i].addr + (uint64_t)k->v[i].olen) {
			if (site_to_bp(s, i, err, n))
				return -1;
			site_drop(k, i--);
		}
	if (!k->n)
		return 0;
	size_t max = s->ram_len < CODE_LEN ? (size_t)s->ram_len : CODE_LEN;
	uint8_t *buf = malloc(max), *zero = calloc((size_t)k->n, 8);
	uint64_t *addrs = malloc((size_t)k->n * sizeof *addrs);
	uint8_t (*orig)[16] = malloc((size_t)k->n * sizeof *orig);
	int *olen = malloc((size_t)k->n * sizeof *olen);
	free(k->jmp);
	k->jmp = malloc((size_t)k->n * MCU_JUMP_LEN);
	const char *why = "out of memory";
	size_t len = 0;
	uint64_t code = 0;
	int rc = 1;
	if (buf && zero && addrs && orig && olen && k->jmp) {
		for (int i = 0; i < k->n; i++) {
			addrs[i] = k->v[i].addr;
			memcpy(orig[i], k->v[i].orig, sizeof orig[i]);
			olen[i] = k->v[i].olen;
		}
		rc = mcu_build(s, k->n, addrs, (const uint8_t (*)[16])orig, olen, buf, max, &code, &len, &k->counters,
		               k->jmp, &why);
		if (!rc && (remote_write(&s->c, k->counters, zero, 8 * (size_t)k->n) || remote_write(&s->c, code, buf, len))) {
			why = "the stub refused writes to --target-ram";
			rc = 1;
		}
	}
	free(buf);
	free(zero);
	free(addrs);
	free(orig);
	free(olen);
	if (rc)
		return fall_back(s, why, err, n);
	k->page = code;
	k->code_end = code + len;
	if (!(k->vals = calloc((size_t)k->n, sizeof *k->vals))) {
		snprintf(err, n, "out of memory");
		return -1;
	}
	int r = patch_m(s, 1);
	if (r < 0) {
		snprintf(err, n, "%s", s->c.err);
		return -1;
	}
	if (r == 1)
		return fall_back(s, "the stub refused writes to the program's code", err, n);
	mark_installed(k);
	return mcu_exit_breakpoints(s, &k->exits, &k->nexits, err, n);
}

int rcount_install(struct rsess *s, char *err, size_t n)
{
	struct rcount *k = s->count;
	struct remote *c = &s->c;
	if (!k || !k->n)
		return 0;
	/* A site where a breakpoint is too (another probe's): the breakpoint's
	 * emulation of the original instruction would skip the count. */
	for (int i = 0; i < k->n; i++) {
		int placed = 0;
		for (int b = 0; b < k->v[i].olen; b++)
			placed |= rs_site_placed(s, k->v[i].addr + (uint64_t)b);
		if (placed) {
			if (site_to_bp(s, i, err, n))
				return -1;
			site_drop(k, i--);
		}
	}
	if (!k->n)
		return 0;
	if (k->mcu)
		return install_mcu(s, err, n);
	uint64_t lo = k->v[0].addr, hi = lo, svc = 0;
	for (int i = 1; i < k->n; i++) {
		lo = k->v[i].addr < lo ? k->v[i].addr : lo;
		hi = k->v[i].addr > hi ? k->v[i].addr : hi;
	}
	int f = find_svc(s, &svc);
	if (f)
		return f < 0 ? -1 : fall_back(s, "no system call instruction found near the pc to make the target call mmap",
		                              err, n);
	uint64_t hint = (lo & ~0xffffull) > (8ull << 20) ? (lo & ~0xffffull) - (4ull << 20) : (hi & ~0xffffull) + (16ull << 20);
	uint64_t args[6] = { hint, MAP_LEN, 7 /* RWX */, 0x22 /* MAP_PRIVATE|MAP_ANONYMOUS */, ~0ull, 0 };
	uint64_t page;
	if (inject_syscall(s, svc, k->x64 ? X64_NR_MMAP : A64_NR_MMAP, args, &page)) {
		snprintf(err, n, "%s", c->err);
		return -1;
	}
	if (page >= ~0xfffull || page & 0xfff)
		return fall_back(s, "the target's mmap failed", err, n);
	const char *why = NULL;
	uint8_t *buf = malloc(CODE_LEN + 24);
	size_t len = 0;
	uint64_t top = hi + 4 > page + MAP_LEN ? hi + 4 : page + MAP_LEN, bottom = lo < page ? lo : page;
	if (!buf || top - bottom > REACH || (k->x64 ? build_x64(s, page, buf, &len, &why) : build(s, page, buf, &len, &why))) {
		uint64_t a[6] = { page, MAP_LEN, 0, 0, 0, 0 }, r;
		free(buf);
		if (inject_syscall(s, svc, k->x64 ? X64_NR_MUNMAP : 215 /* munmap */, a, &r)) {
			snprintf(err, n, "%s", c->err);
			return -1;
		}
		return fall_back(s, why ? why : "the page the target mapped is out of branch range of the sites", err, n);
	}
	uint64_t patch_at, ok, fail;
	memcpy(&patch_at, buf + len, 8);
	memcpy(&ok, buf + len + 8, 8);
	memcpy(&fail, buf + len + 16, 8);
	int wr = remote_write(c, page, buf, len);
	free(buf);
	if (wr)
		return fall_back(s, "the stub refused writes to the page the target mapped", err, n);
	k->page = page;
	k->counters = page + COUNTERS_OFF;
	if (!(k->vals = calloc((size_t)k->n, sizeof *k->vals))) {
		snprintf(err, n, "out of memory");
		return -1;
	}
	static const uint64_t one = 1;
	if (!k->x64 && remote_write(c, page + BEAT_OFF, &one, sizeof one))
		return fall_back(s, "the stub refused writes to the page the target mapped", err, n);
	int r = k->x64 ? patch_m(s, 1) : run_routine(s, patch_at, ok, fail);
	if (r < 0) {
		snprintf(err, n, "%s", c->err);
		return -1;
	}
	if (r == 1)
		return fall_back(s, k->x64 ? "the stub refused writes to the program's text"
		                           : "the target's mprotect of its text failed", err, n);
	mark_installed(k);
	/* The exit: where the stub can stop the target at exit_group
	 * (gdbserver), there; else at the program's _fini (QEMU). */
	int cr = remote_catch_syscall(c, k->x64 ? X64_NR_EXIT_GROUP : 94);
	if (cr < 0) {
		snprintf(err, n, "%s", c->err);
		return -1;
	}
	k->catching = cr == 0;
	if (!k->catching)
		sym_find(s->sym, "_fini", found_fini, &k->fini);
	if (k->fini) {
		k->fini += s->bias;
		if (rs_site_add(s, NULL, k->fini, 0, err, n))
			return -1;
	}
	return 0;
}

/* --- counters ---------------------------------------------------------------- */

static int read_counters(struct rsess *s)
{
	struct rcount *k = s->count;
	uint8_t b[8 * MAX_SITES];
	if (remote_read(&s->c, k->counters, b, 8 * (size_t)k->n))
		return -1;
	for (int i = 0; i < k->n; i++) {
		uint64_t v = 0;
		for (int j = 7; j >= 0; j--)
			v = v << 8 | b[8 * i + j];
		k->vals[i] = v;
	}
	return 0;
}

void rcount_stop(struct rsess *s, const struct remote_stop *st)
{
	struct rcount *k = s->count;
	if (!k || !k->installed)
		return;
	if (st->kind == REMOTE_STOPPED) {
		uint64_t pc;
		if (read_counters(s))
			return;
		k->fresh = 1;
		k->stop_code = st->code;
		if (st->syscall || (st->code == GDB_SIGTRAP && k->fini && remote_reg(&s->c, s->c.arch->pc, &pc) == 0 &&
		                    pc == k->fini))
			k->final = 1;  /* exit_group's entry, or _fini */
		if (k->nexits && st->code == GDB_SIGTRAP && remote_reg(&s->c, s->c.arch->pc, &pc) == 0)
			for (int i = 0; i < k->nexits; i++)
				if (pc == k->exits[i] && mcu_exit_call(s))
					k->final = 1;  /* the semihosting exit */
		return;
	}
	/* The end: an exit after _fini was read there; a death by the signal
	 * whose stop was read and delivered right after it was too. */
	k->complete = (st->kind == REMOTE_EXITED && k->final) || (st->kind == REMOTE_KILLED && k->fatal_ok &&
	              k->stop_code == st->code) || k->fresh;
}

void rcount_resume(struct rsess *s, int sig)
{
	struct rcount *k = s->count;
	if (!k || !k->installed)
		return;
	k->fatal_ok = k->fresh && sig && sig == k->stop_code;
	k->fresh = 0;
}

#define STEPS_OUT 64    /* single steps that bring the pc out of a trampoline, at most */

/* mcu: a target stopped inside a trampoline stepped out of it, so that the
 * last read sees its hit and no relocated instruction is half done.  0, -1. */
static int leave_trampolines(struct rsess *s)
{
	struct rcount *k = s->count;
	uint64_t pc;
	for (int i = 0; i < STEPS_OUT; i++) {
		struct remote_stop st;
		if (remote_reg(&s->c, s->c.arch->pc, &pc))
			return -1;
		if (pc < k->page || pc >= k->code_end)
			return 0;
		if (remote_step(&s->c, &st))
			return -1;
		if (st.kind != REMOTE_STOPPED) {
			snprintf(s->c.err, sizeof s->c.err, "the target ended while sonde stepped it out of a trampoline");
			return -1;
		}
	}
	return 0;
}

int rcount_undo(struct rsess *s)
{
	struct rcount *k = s->count;
	if (!k || !k->installed || k->undone)
		return 0;
	k->undone = 1;
	if (k->catching && remote_catch_syscall(&s->c, -1) < 0)
		return -1;
	if (k->mcu && leave_trampolines(s))
		return -1;
	static const uint64_t zero = 0; /* no heartbeat stops once sonde is gone (the trampolines stay) */
	if (!k->x64 && !k->mcu && remote_write(&s->c, k->page + BEAT_OFF, &zero, sizeof zero))
		return -1;
	int r = k->x64 || k->mcu ? patch_m(s, 0) : run_routine(s, k->undo_at, k->undo_ok, k->undo_fail);
	if (r < 0 || read_counters(s))
		return -1;
	if (r == 1) {
		snprintf(s->c.err, sizeof s->c.err, "the target's mprotect of its text failed: its line sites still count");
		return -1;
	}
	k->complete = 1;
	return 0;
}

int rcount_heartbeat(struct rsess *s, uint64_t pc)
{
	struct rcount *k = s->count;
	if (!k || !k->installed || k->x64 || k->mcu || pc < k->page || pc >= k->page + CODE_LEN)
		return 0;
	for (int i = 0; i < k->n; i++)
		if (k->v[i].beat == pc)
			return 1;
	return 0;
}

void rcount_finish(struct rsess *s)
{
	struct rcount *k = s->count;
	if (!k || !k->installed)
		return;
	for (int i = 0; i < k->nu; i++) {
		struct probe *p = k->u[i].p;
		p->hits += k->vals[k->u[i].site];
		s->e->total_hits += k->vals[k->u[i].site];
		if (!k->complete && !p->in_target_incomplete) {
			p->in_target_incomplete = 1;
			if (s->e->warn)
				s->e->warn(p, "counted in the target, but the program ended without a last read of the counters "
				           "(killed, or an exit sonde does not stop at): the count may be short");
		}
	}
}

void rcount_free(struct rsess *s)
{
	if (!s->count)
		return;
	free(s->count->v);
	free(s->count->u);
	free(s->count->jmp);
	free(s->count->exits);
	free(s->count->vals);
	free(s->count);
	s->count = NULL;
}
