/* remote_run.c — a probe session on a remote target (see remote_run.h).
 *
 * A hit: the stub reports SIGTRAP with the pc on one of our breakpoints.
 * The probes of that site run; then the displaced instruction is executed by
 * removing the breakpoint, single-stepping the thread and putting the
 * breakpoint back (other threads stay stopped: all-stop mode).  If the step
 * lands on another of our breakpoints, that one is a hit too, handled the
 * same way before the target is resumed.  Signals that are not ours go to
 * the program.  At the end (Ctrl-C, SIGTERM, --duration, or an error of
 * sonde's) every breakpoint is removed and the stub told to detach, so the
 * program runs on; when the program exits, or the stub closes the
 * connection, the session just ends. */
#include "probe/remote/remote_run.h"
#include "probe/probe_engine.h"

#include "probe/engine.h"
#include "probe/expr.h"
#include "probe/kind.h"
#include "proc/modules.h"
#include "probe/probe.h"
#include "probe/spec.h"
#include "sym/cache.h"
#include "sym/sym.h"
#include "sym/vars.h"

#include <elf.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define GDB_SIGTRAP 5
/* A wait status that is neither an exit nor a signal: output.c says "gone". */

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
	(void)sig;
	stop_flag = 1;
}

/* --- the program's ELF ------------------------------------------------- */

struct elf_id {
	int machine, big_endian, is64;
	uint64_t entry;
};

static int read_elf_id(const char *path, struct elf_id *id, char *err, size_t n)
{
	unsigned char h[64];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(err, n, "cannot open %s (%m)", path);
		return -1;
	}
	ssize_t r = read(fd, h, sizeof h);
	close(fd);
	if (r < 52 || memcmp(h, ELFMAG, SELFMAG) || (h[EI_CLASS] != ELFCLASS32 && h[EI_CLASS] != ELFCLASS64) ||
	    (h[EI_DATA] != ELFDATA2LSB && h[EI_DATA] != ELFDATA2MSB) || (h[EI_CLASS] == ELFCLASS64 && r < 64)) {
		snprintf(err, n, "%s is not an ELF program", path);
		return -1;
	}
	id->is64 = h[EI_CLASS] == ELFCLASS64;
	id->big_endian = h[EI_DATA] == ELFDATA2MSB;
	/* e_machine at 18 (2 bytes), e_entry at 24 (4 or 8 bytes), in the file's order. */
	uint64_t v = 0;
	for (int i = 0; i < 2; i++)
		v |= (uint64_t)h[18 + (id->big_endian ? 1 - i : i)] << (8 * i);
	id->machine = (int)v;
	int w = id->is64 ? 8 : 4;
	v = 0;
	for (int i = 0; i < w; i++)
		v |= (uint64_t)h[24 + (id->big_endian ? w - 1 - i : i)] << (8 * i);
	id->entry = v;
	return 0;
}

/* --- breakpoint sites ------------------------------------------------- */

static struct rsite *site_at(struct rsess *s, uint64_t addr)
{
	for (int i = 0; i < s->nsites; i++)
		if (s->sites[i].addr == addr)
			return &s->sites[i];
	return NULL;
}

/* A breakpoint in a delay slot (MIPS) would be reported on the branch
 * before it, where no site is: it goes on the branch instead (as gdb's
 * mips_adjust_breakpoint_address does), which stops in the same state, the
 * delay slot not yet run, as often as the delay slot runs; except after a
 * branch-likely, whose delay slot is skipped when the branch is not taken:
 * refused.  Only inside one function (not at its entry). */
/* A breakpoint inside a Thumb-2 IT block would stop whether or not its
 * instruction's condition holds (and a written bkpt there is UNPREDICTABLE):
 * it goes on the IT instruction, as gdb's arm_adjust_breakpoint_address
 * does.  The function's code is decoded from its start (read through the
 * stub, with our written breakpoints' bytes put back). */
static int site_it(struct rsess *s, uint64_t *addr, char *err, size_t n)
{
	struct sym_info fi;
	if (sym_lookup(s->sym, *addr - s->bias, &fi) || *addr - s->bias <= fi.start ||
	    *addr - s->bias - fi.start > 4096)
		return 0;
	uint64_t start = fi.start + s->bias, it;
	size_t len = (size_t)(*addr - start) + 4;
	uint8_t *code = malloc(len);
	if (!code || remote_read(&s->c, start, code, len)) {
		free(code);
		if (code)
			snprintf(err, n, "%s", s->c.err);
		else
			snprintf(err, n, "out of memory");
		return -1;
	}
	for (int i = 0; i < s->nsites; i++) {
		const struct rsite *o = &s->sites[i];
		for (int k = 0; o->written == RBP_WRITTEN && k < s->c.arch->bp_len; k++)
			if (o->addr + (uint64_t)k >= start && o->addr + (uint64_t)k < start + len)
				code[o->addr + (uint64_t)k - start] = o->saved[k];
	}
	int rc = s->c.arch->it_start(code, len, start, *addr, &it);
	free(code);
	if (rc == 1)
		*addr = it;
	return 0;
}

static int site_addr(struct rsess *s, uint64_t *addr, char *err, size_t n)
{
	const struct rarch *a = s->c.arch;
	struct sym_info fi;
	uint8_t code[4];
	struct rbranch b;
	if (a->it_start)
		return site_it(s, addr, err, n);
	if (!a->has_delay_slots || *addr < 4 || sym_lookup(s->sym, *addr - s->bias, &fi) ||
	    *addr - s->bias <= fi.start)
		return 0;
	if (remote_read(&s->c, *addr - 4, code, 4)) {
		snprintf(err, n, "%s", s->c.err);
		return -1;
	}
	struct rsite *t = site_at(s, *addr - 4);
	if (t && t->written == RBP_WRITTEN)
		memcpy(code, t->saved, 4);
	if (a->decode(code, 4, *addr - 4, s->c.big_endian, &b) || !b.delay)
		return 0;
	if (b.likely) {
		snprintf(err, n, "0x%llx is in the delay slot of a branch-likely at 0x%llx, which runs it only when the "
		         "branch is taken: probe the branch or its target", (unsigned long long)*addr,
		         (unsigned long long)(*addr - 4));
		return -1;
	}
	*addr -= 4;
	return 0;
}

/* The original bytes of the instruction at t->addr, for the emulator: read
 * before the breakpoint goes in, with the bytes of breakpoints written with
 * M (no Z0) around it put back.  Unreadable: t->ncode stays 0 (stepped). */
static void site_code(struct rsess *s, struct rsite *t)
{
	size_t n = s->c.arch->insn_align > 1 ? 4 : sizeof t->code;  /* 4: the longest instruction where they are aligned (Thumb-2, RV32 too) */
	if (!s->emulate || !s->c.arch->emulate)
		return;
	while (n && remote_read(&s->c, t->addr, t->code, n))
		n = n > 4 ? n / 2 : 0;  /* the end of a mapping: fewer bytes */
	for (int i = 0; i < s->nsites; i++) {
		const struct rsite *o = &s->sites[i];
		for (int k = 0; o->written == RBP_WRITTEN && k < s->c.arch->bp_len; k++)
			if (o->addr + (uint64_t)k >= t->addr && o->addr + (uint64_t)k < t->addr + n)
				t->code[o->addr + (uint64_t)k - t->addr] = o->saved[k];
	}
	t->ncode = (int)n;
}

static int site_add(struct rsess *s, struct probe *p, uint64_t addr, int role, int check, char *err, size_t n)
{
	if (check && !site_at(s, addr) && site_addr(s, &addr, err, n))
		return -1;
	struct rsite *t = site_at(s, addr);
	if (!t) {
		if (addr % (uint64_t)s->c.arch->insn_align) {
			snprintf(err, n, "0x%llx is not on an instruction boundary (%s instructions are %d-byte aligned)",
			         (unsigned long long)addr, s->c.arch->name, s->c.arch->insn_align);
			return -1;
		}
		struct rsite *v = realloc(s->sites, (size_t)(s->nsites + 1) * sizeof *v);
		if (!v) {
			snprintf(err, n, "out of memory");
			return -1;
		}
		s->sites = v;
		t = &v[s->nsites];
		memset(t, 0, sizeof *t);
		t->addr = addr;
		site_code(s, t);
		if (s->defer) {
			t->pending = 1;     /* placed by place_pending, after every probe's setup */
		} else if (remote_insert_bp(&s->c, addr, t->saved, &t->written)) {
			snprintf(err, n, "%s", s->c.err);
			return -1;
		}
		s->nsites++;
	}
	void *u = realloc(t->u, (size_t)(t->nu + 1) * sizeof *t->u);
	if (!u) {
		snprintf(err, n, "out of memory");
		return -1;
	}
	t->u = u;
	t->u[t->nu].p = p;
	t->u[t->nu].role = role;
	t->nu++;
	return 0;
}

/* Remember that addr had one of our breakpoints (stale_hit). */
static void gone_add(struct rsess *s, uint64_t addr, int written)
{
	for (int i = 0; i < s->ngone; i++)
		if (s->gone[i].addr == addr) {
			s->gone[i].written |= written;
			return;
		}
	if (s->ngone == s->capgone) {
		int cap = s->capgone ? 2 * s->capgone : 16;
		struct rgone *v = realloc(s->gone, (size_t)cap * sizeof *v);
		if (!v)
			return;
		s->gone = v;
		s->capgone = cap;
	}
	s->gone[s->ngone++] = (struct rgone){ addr, written };
}

/* A SIGTRAP at pc where no breakpoint of ours is now but one was: a thread
 * that hit it while another thread's stop was being handled, reported by
 * the stub only after we took the breakpoint out (gdbserver keeps such
 * events pending in all-stop mode).  The thread has not executed the
 * instruction: it resumes at the breakpoint's address (pc put back there
 * when the stub leaves it past a written one), without a signal.  1 when it
 * was such a stop. */
static int stale_hit(struct rsess *s, uint64_t pc, char *err, size_t n)
{
	uint64_t adj = (uint64_t)s->c.arch->trap_pc_adj;
	for (int i = 0; i < s->ngone; i++) {
		if (s->gone[i].addr == pc)
			return 1;
		if (adj && s->gone[i].written && s->gone[i].addr == pc - adj) {
			if (remote_set_reg(&s->c, s->c.arch->pc, pc - adj)) {
				snprintf(err, n, "%s", s->c.err);
				return -1;
			}
			return 1;
		}
	}
	return 0;
}

static int site_remove(struct rsess *s, struct rsite *t)
{
	gone_add(s, t->addr, t->written == RBP_WRITTEN);
	int rc = t->lifted || t->pending ? 0 : remote_remove_bp(&s->c, t->addr, t->saved, t->written);
	if (t->lifted)
		s->has_lifted = 0;
	free(t->u);
	*t = s->sites[--s->nsites];
	return rc;
}

/* After the setup of every probe: the sites in code that cannot be written
 * need hardware breakpoints; with more of them than the core's comparators
 * (--hw-breakpoints), the session is refused before any breakpoint is
 * placed.  A func probe there needs one more at least, for its return. */
static int place_pending(struct rsess *s, char *err, size_t n)
{
	int hw = 0, ret = 0;
	for (int i = 0; i < s->nsites; i++) {
		const struct rsite *t = &s->sites[i];
		if (!t->pending || !remote_readonly(&s->c, t->addr))
			continue;
		hw++;
		for (int k = 0; k < t->nu; k++)
			if (t->u[k].p && !strcmp(t->u[k].p->sp.kind, "func"))
				ret++;
	}
	if (s->c.hw_limit >= 0 && hw + ret > s->c.hw_limit) {
		snprintf(err, n, "these probes need %d hardware breakpoints (%d sites in code that cannot be written, %d for "
		         "the returns of func probes there), the target has %d comparators (--hw-breakpoints %d): nothing "
		         "placed", hw + ret, hw, ret, s->c.hw_limit, s->c.hw_limit);
		return -1;
	}
	for (int i = 0; i < s->nsites; i++) {
		struct rsite *t = &s->sites[i];
		if (!t->pending)
			continue;
		if (remote_insert_bp(&s->c, t->addr, t->saved, &t->written)) {
			snprintf(err, n, "%s", s->c.err);
			return -1;
		}
		t->pending = 0;
	}
	return 0;
}

int rs_site_add(struct rsess *s, struct probe *p, uint64_t addr, int role, char *err, size_t n)
{
	return site_add(s, p, addr, role, 1, err, n);
}

int rs_site_add_return(struct rsess *s, struct probe *p, uint64_t addr, int role, char *err, size_t n)
{
	return site_add(s, p, addr, role, 0, err, n);
}

int rs_site_placed(struct rsess *s, uint64_t addr)
{
	return site_at(s, addr) != NULL;
}

void rs_site_del(struct rsess *s, struct probe *p, uint64_t addr, int role)
{
	char err[300];
	if (!site_at(s, addr) && site_addr(s, &addr, err, sizeof err))
		return;
	struct rsite *t = site_at(s, addr);
	if (!t)
		return;
	for (int i = 0; i < t->nu; i++)
		if (t->u[i].p == p && t->u[i].role == role) {
			t->u[i] = t->u[--t->nu];
			break;
		}
	if (!t->nu)
		site_remove(s, t);
}

/* Every breakpoint out of the target; -1 if the stub failed on one. */
static int remove_all(struct rsess *s)
{
	int rc = 0;
	while (s->nsites)
		if (site_remove(s, &s->sites[s->nsites - 1]))
			rc = -1;
	return rc;
}

/* The table, when the target is gone (nothing to remove from it). */
static void free_sites(struct rsess *s)
{
	free(s->gone);
	s->gone = NULL;
	s->ngone = s->capgone = 0;
	for (int i = 0; i < s->nsites; i++)
		free(s->sites[i].u);
	free(s->sites);
	s->sites = NULL;
	s->nsites = 0;
}

/* --- tracepoints ------------------------------------------------------------ */

int rs_trace_add(struct rsess *s, struct probe *p, uint64_t addr, char *err, size_t n)
{
	if (site_at(s, addr))
		return 1;
	return rs_trace_add_beside(s, p, addr, err, n);
}

int rs_trace_add_beside(struct rsess *s, struct probe *p, uint64_t addr, char *err, size_t n)
{
	if (s->no_tracepoints || !s->c.has_tracepoints)
		return 1;
	struct rtrace *v = realloc(s->tps, (size_t)(s->ntps + 1) * sizeof *v);
	if (!v) {
		snprintf(err, n, "out of memory");
		return -1;
	}
	s->tps = v;
	int num = s->ntps + 1;
	int rc = remote_trace_define(&s->c, num, addr);
	if (rc < 0)
		snprintf(err, n, "%s", s->c.err);
	if (rc)
		return rc;
	v[s->ntps++] = (struct rtrace){ p, num, addr };
	return 0;
}

/* The stub's counts into the probes (the target stopped or exited). */
static int trace_collect(struct rsess *s)
{
	for (int i = 0; i < s->ntps; i++) {
		uint64_t h;
		if (remote_trace_hits(&s->c, s->tps[i].num, s->tps[i].addr, &h))
			return -1;
		s->tps[i].p->hits += h;
		s->e->total_hits += h;
	}
	return 0;
}

/* --- locations: resolve.c's, in the program's ELF as the one module ------ */

/* The program's ELF as the session's only module (e->mods): resolve.c
 * finds locations in it, the symbols come from its cache; its bias is set
 * once the stub said where it is loaded. */
static int program_module(struct engine *e, const char *exe, char *err, size_t n)
{
	e->mods.m = calloc(1, sizeof *e->mods.m);
	e->mods.syms = sym_cache_new();
	char *path = strdup(exe);
	if (!e->mods.m || !e->mods.syms || !path) {
		free(path);
		snprintf(err, n, "out of memory");
		return -1;
	}
	e->mods.m[0] = (struct module){ .path = path, .lo = 0, .hi = UINT64_MAX, .is_main = 1, .syms = e->mods.syms };
	e->mods.n = 1;
	e->foreign_code = 1;
	return 0;
}

void rs_describe(struct rsess *s, uint64_t addr, char *buf, size_t n)
{
	struct sym_info fi;
	const char *file;
	int line;
	uint64_t la = addr - s->bias;
	size_t l = 0;
	if (sym_lookup(s->sym, la, &fi) == 0)
		l = (size_t)snprintf(buf, n, "%s+0x%llx", fi.name, (unsigned long long)(la - fi.start));
	else
		l = (size_t)snprintf(buf, n, "0x%llx", (unsigned long long)addr);
	if (l < n && sym_addr_line(s->sym, la, &file, &line) == 0 && file) {
		const char *b = strrchr(file, '/');
		snprintf(buf + l, n - l, " (%s:%d)", b ? b + 1 : file, line);
	}
}

const char *rs_func_name(struct rsess *s, uint64_t addr)
{
	static struct sym_info fi;
	if (sym_lookup(s->sym, addr - s->bias, &fi))
		return "?";
	return fi.name;
}

/* --- registers and memory for the variable reader ----------------------- */

static int env_reg(void *ctx, int dw, uint64_t *val)
{
	struct rsess *s = ctx;
	int r = s->c.arch->dwarf_to_stub(dw);
	if (r < 0 && s->c.arch->elf_machine == EM_ARM && dw >= 64 && dw < 96) {
		/* VFP s0..s31 (an M4F's float variables): the register itself
		 * when the stub names it, else its half of d(n/2). */
		char name[8];
		uint8_t b[16];
		int k = dw - 64, got;
		snprintf(name, sizeof name, "s%d", k);
		char err[sizeof s->c.err];
		memcpy(err, s->c.err, sizeof err);
		if ((got = remote_reg_named(&s->c, name, b, sizeof b)) != 4) {
			snprintf(name, sizeof name, "d%d", k / 2);
			if (remote_reg_named(&s->c, name, b, sizeof b) != 8) {
				memcpy(s->c.err, err, sizeof err);
				return -1;
			}
			memmove(b, b + (k & 1) * 4, 4);    /* s(2i) is the low half of d(i), little-endian */
		}
		*val = (uint64_t)b[0] | (uint64_t)b[1] << 8 | (uint64_t)b[2] << 16 | (uint64_t)b[3] << 24;
		return 0;
	}
	return r < 0 ? -1 : remote_reg(&s->c, r, val);
}

/* vars.c asks for DWARF registers 17..40 as vector registers (the x86-64
 * numbering); on aarch64 and MIPS those numbers are integer registers,
 * answered here.  Vector registers are not read remotely. */
static int env_fpreg(void *ctx, int dw, uint8_t buf[16])
{
	struct rsess *s = ctx;
	uint64_t v;
	if (s->c.arch->elf_machine == EM_X86_64 || env_reg(ctx, dw, &v))
		return -1;
	memset(buf, 0, 16);
	memcpy(buf, &v, sizeof v);
	return 0;
}

/* A scalar of a big-endian target is turned into host order here: the
 * variable reader reads one scalar at a time. */
static int env_mem(void *ctx, uint64_t addr, void *buf, size_t n)
{
	struct rsess *s = ctx;
	if (remote_read(&s->c, addr, buf, n))
		return -1;
	if (s->c.big_endian && (n == 2 || n == 4 || n == 8)) {
		uint8_t *b = buf;
		for (size_t i = 0; i < n / 2; i++) {
			uint8_t t = b[i];
			b[i] = b[n - 1 - i];
			b[n - 1 - i] = t;
		}
	}
	return 0;
}

void rs_env(struct rsess *s, struct var_env *env)
{
	env->reg = env_reg;
	env->fpreg = env_fpreg;
	env->mem = env_mem;
	env->ctx = s;
	env->bias = s->bias;
}

/* --- the event loop ----------------------------------------------------- */

static int add_probe(struct rsess *s, const char *text, char *err, size_t n)
{
	struct engine *e = s->e;
	struct spec sp;
	char why[400];
	if (spec_parse(text, &sp, why, sizeof why)) {
		snprintf(err, n, "bad probe '%s' (%s)", text, why);
		return -1;
	}
	const struct rkind *k = rkind_find(sp.kind);
	if (!k) {
		int sys = !strcmp(sp.kind, "sys");
		int stack = !strcmp(sp.kind, "stack");
		snprintf(err, n, "probe '%s': %s probes are not available on remote targets (%s)", text, sp.kind,
		         sys ? "they need the local engine: /proc sampling"
		         : stack ? "they need the local engine: the stopped thread's stack unwound through ptrace"
		               : "remote targets have func, line, branch, time, var, assert and plugin");
		spec_free(&sp);
		return -1;
	}
	struct probe *p = calloc(1, sizeof *p);
	struct probe **v = realloc(e->probes, (size_t)(e->nprobes + 1) * sizeof *v);
	if (!p || !v || !(p->spec = strdup(text))) {
		free(p);
		spec_free(&sp);
		snprintf(err, n, "out of memory");
		return -1;
	}
	e->probes = v;
	p->id = ++e->next_id;
	p->sp = sp;
	p->ops = k->ops;
	p->e = e;
	e->probes[e->nprobes++] = p;
	s->has_post |= k->post != NULL;
	if (p->ops->setup(p, why, sizeof why)) {
		snprintf(err, n, "probe '%s': %s", text, why);
		return -1;
	}
	return 0;
}

static void dispatch(struct rsess *s, uint64_t pc)
{
	struct rsite *t = site_at(s, pc);
	if (!t || !t->nu)
		return;
	uint64_t now = now_ns();
	/* Handlers may add and delete sites (func returns): work on a copy. */
	int nu = t->nu;
	struct { struct probe *p; int role; } u[16], *uv = nu <= 16 ? u : malloc((size_t)nu * sizeof *uv);
	if (!uv)
		return;
	memcpy(uv, t->u, (size_t)nu * sizeof *uv);
	for (int i = 0; i < nu; i++) {
		if (!uv[i].p)
			continue;  /* sonde's own stop (remote_count.c) */
		const struct rkind *k = rkind_find(uv[i].p->ops->name);
		s->e->total_hits++;
		k->hit(s, uv[i].p, uv[i].role, pc, now);
	}
	if (uv != u)
		free(uv);
}

/* The post handlers of the site at pc, its instruction just run. */
static void dispatch_post(struct rsess *s, uint64_t pc)
{
	struct rsite *t = site_at(s, pc);
	if (!t || !s->has_post)
		return;
	uint64_t now = now_ns();
	for (int i = 0; i < t->nu; i++) {
		const struct rkind *k = t->u[i].p ? rkind_find(t->u[i].p->ops->name) : NULL;
		if (k && k->post)
			k->post(s, t->u[i].p, t->u[i].role, pc, now);
	}
}

/* Put back the breakpoint lifted by the last step over, now (before
 * another step), or together with the resume (resume).  */
static int put_back(struct rsess *s, int resume, int sig)
{
	if (!s->has_lifted)
		return resume ? remote_cont(&s->c, sig) : 0;
	struct rsite *t = site_at(s, s->lifted_addr);
	s->has_lifted = 0;
	t->lifted = 0;
	if (resume)
		return remote_insert_cont(&s->c, t->addr, t->saved, &t->written, sig);
	return remote_insert_bp(&s->c, t->addr, t->saved, &t->written);
}

static int emu_reg(void *ctx, int regno, uint64_t *val)
{
	struct rsess *s = ctx;
	return remote_reg(&s->c, regno, val);
}

static int emu_read(void *ctx, uint64_t addr, void *buf, size_t n)
{
	struct rsess *s = ctx;
	return remote_read(&s->c, addr, buf, n);
}

/* Whether an emulated store at [addr, addr+n) goes to pages that earlier
 * stores wrote to (then it may go ahead of its reply); else remember them. */
static int store_known(struct rsess *s, uint64_t addr, size_t n)
{
	uint64_t p0 = addr >> 12, p1 = (addr + n - 1) >> 12;
	int known = 0;
	for (int i = 0; i < s->nwpages; i++)
		known += s->wpages[i] == p0 || (p1 != p0 && s->wpages[i] == p1);
	return known == (p1 != p0 ? 2 : 1);
}

static void store_remember(struct rsess *s, uint64_t addr, size_t n)
{
	uint64_t p[2] = { addr >> 12, (addr + n - 1) >> 12 };
	for (int k = 0; k < (p[1] != p[0] ? 2 : 1); k++) {
		int have = 0;
		for (int i = 0; i < s->nwpages; i++)
			have |= s->wpages[i] == p[k];
		if (!have)
			s->wpages[s->nwpages < 8 ? s->nwpages++ : (int)(p[k] % 8)] = p[k];
	}
}

/* Execute the displaced instruction of site t in sonde (rarch.emulate) and
 * send its effect: registers and stores sent ahead, to go with the resume.
 * 0 done (*npc: where the thread goes on), 1 step it instead (not an
 * instruction the emulator has, or a register or memory it needs could not
 * be read: the target then executes it itself, and takes its own fault),
 * -1 error.  A store is first written and checked on each new page (an
 * unwritable stack is the program's fault to take, not sonde's to hide). */
static int emulate_hit(struct rsess *s, struct rsite *t, uint64_t pc, uint64_t *npc)
{
	const struct rarch *a = s->c.arch;
	if (!s->emulate || !a->emulate || t->no_emulate || !t->ncode)
		return 1;
	struct remu u = { .reg = emu_reg, .read = emu_read, .ctx = s };
	int rc = a->emulate(t->code, (size_t)t->ncode, pc, s->c.big_endian, &u);
	if (rc) {
		t->no_emulate = rc == 1;
		return 1;
	}
	int wr = remote_regs_writable(&s->c);
	if (wr <= 0)
		return wr < 0 ? -1 : 1;
	if (u.store_len) {
		if (store_known(s, u.store_addr, (size_t)u.store_len)) {
			if (remote_queue_write(&s->c, u.store_addr, u.store, (size_t)u.store_len))
				return -1;
		} else {
			if (remote_write(&s->c, u.store_addr, u.store, (size_t)u.store_len))
				return 1;
			store_remember(s, u.store_addr, (size_t)u.store_len);
		}
	}
	int regno[REMU_MAX_SET];
	uint64_t val[REMU_MAX_SET];
	for (int i = 0; i < u.nset; i++) {
		regno[i] = u.set[i].regno;
		val[i] = u.set[i].val;
	}
	if (remote_queue_set_regs(&s->c, u.nset, regno, val))
		return -1;
	*npc = u.set[u.nset - 1].val;
	s->e->emulated_hits++;
	return 0;
}

/* A hit at pc (the thread stopped on our breakpoint): run the probes, step
 * over the displaced instruction, and again while the step lands on one of
 * our breakpoints.  The last breakpoint stepped over goes back with the next
 * resume (put_back).  0 when the target may be resumed; 1 with *st filled
 * when the step ended otherwise (exit, a signal); -1 error. */
static int handle_hit(struct rsess *s, uint64_t pc, struct remote_stop *st)
{
	for (;;) {
		dispatch(s, pc);
		if (put_back(s, 0, 0))
			return -1;
		struct rsite *t = site_at(s, pc);
		if (!t)
			return 0;  /* the handlers removed it: nothing in the way */
		uint64_t epc;
		int em = emulate_hit(s, t, pc, &epc);
		if (em < 0)
			return -1;
		if (em == 0) {
			dispatch_post(s, pc);
			if (!site_at(s, epc))
				return 0;
			pc = epc;  /* on another of our breakpoints: a hit now */
			continue;
		}
		s->e->stepped_hits++;
		int lifted;
		if (remote_step_over(&s->c, pc, t->saved, t->written, st, &lifted))
			return -1;
		if (lifted) {
			t->lifted = 1;
			s->has_lifted = 1;
			s->lifted_addr = pc;
		}
		if (st->kind != REMOTE_STOPPED || st->code != GDB_SIGTRAP)
			return 1;
		dispatch_post(s, pc);
		/* A step that lands on another of our breakpoints: when the stub
		 * gave the pc (gdbserver does), that one is a hit now; else the
		 * resume reports it at once (neither QEMU nor gdbserver lets a
		 * continue pass a breakpoint under the pc), which saves asking for
		 * the pc after every step. */
		uint64_t npc = 0;
		if (!(s->c.valid & (1ull << s->c.arch->pc)) || remote_reg(&s->c, s->c.arch->pc, &npc) ||
		    !site_at(s, npc))
			return 0;
		pc = npc;
	}
}

static void set_gone(struct engine *e, const struct remote_stop *st)
{
	e->t.gone = 1;
	if (st->kind == REMOTE_EXITED)
		e->t.status = (st->code & 0xff) << 8;
	else if (st->kind == REMOTE_KILLED)
		e->t.status = st->code & 0x7f;
	else
		e->t.status = STATUS_GONE;
}

static int run_loop(struct rsess *s, uint64_t deadline, char *err, size_t n)
{
	struct engine *e = s->e;
	int sig = 0;
	for (;;) {
		rcount_resume(s, sig);
		rrec_resume(s);
		if (put_back(s, 1, sig)) {
			snprintf(err, n, "%s", s->c.err);
			return -1;
		}
		sig = 0;
		struct remote_stop st;
		int rc, interrupted = 0, noted = 0;
		uint64_t int_ns = 0;
		while ((rc = remote_wait(&s->c, 100, &st)) == 1) {
			if (!interrupted && (stop_flag || (deadline && now_ns() >= deadline))) {
				if (remote_interrupt(&s->c)) {
					snprintf(err, n, "%s", s->c.err);
					return -1;
				}
				interrupted = 1;
				int_ns = now_ns();
			}
			/* QEMU's user-mode stub acts on the interrupt only when the
			 * program stops or exits: with every site counted in the
			 * target that may be long; say why sonde waits. */
			if (interrupted && !noted && e->nprobes && e->warn &&
			    now_ns() - int_ns > (uint64_t)s->c.r.timeout_ms * 1000000ull) {
				noted = 1;
				e->warn(e->probes[0], "the stub has not stopped the program since the interrupt (QEMU's user-mode "
				        "stub acts on one only when the program stops at a breakpoint or a signal, or exits): "
				        "waiting for that");
			}
		}
		if (rc < 0) {
			snprintf(err, n, "%s", s->c.err);
			return -1;
		}
		/* The target may have stopped on its own just before our interrupt
		 * arrived: a second stop reply may follow; take it now, not as the
		 * reply to the next command. */
		struct remote_stop extra;
		while (interrupted && st.kind == REMOTE_STOPPED && remote_wait(&s->c, 200, &extra) == 0)
			if (extra.kind != REMOTE_STOPPED)
				st = extra;
		for (;;) {
			rcount_stop(s, &st);
			rrm_stop(s, &st);
			if (st.kind != REMOTE_STOPPED) {
				set_gone(e, &st);
				return 0;
			}
			if (st.syscall && !interrupted && !stop_flag)
				break;  /* remote_count.c's catch of exit_group: resumed without a signal */
			uint64_t pc = 0;
			if (st.code == GDB_SIGTRAP) {
				if (remote_reg(&s->c, s->c.arch->pc, &pc)) {
					snprintf(err, n, "%s", s->c.err);
					return -1;
				}
				int full = rrm_full(s, pc);  /* the target's ring of calls was full: drained, on */
				if (full < 0) {
					snprintf(err, n, "%s", s->c.err);
					return -1;
				}
				if (full) {
					if (interrupted || stop_flag)
						return 0;
					break;
				}
				if (rcount_heartbeat(s, pc)) { /* a counted site's stop for sonde: on past the brk */
					if (remote_set_reg(&s->c, s->c.arch->pc, pc + 4)) {
						snprintf(err, n, "%s", s->c.err);
						return -1;
					}
					if (interrupted || stop_flag)
						return 0;
					break;
				}
				/* A breakpoint written with M leaves the pc past it on x86-64. */
				uint64_t adj = (uint64_t)s->c.arch->trap_pc_adj;
				struct rsite *t = site_at(s, pc);
				if (!t && adj && (t = site_at(s, pc - adj)) && t->written == RBP_WRITTEN) {
					pc -= adj;
					if (remote_set_reg(&s->c, s->c.arch->pc, pc)) {
						snprintf(err, n, "%s", s->c.err);
						return -1;
					}
				}
				if (t && !interrupted) {
					int h = handle_hit(s, pc, &st);
					if (h < 0) {
						snprintf(err, n, "%s", s->c.err);
						return -1;
					}
					if (h == 1)
						continue;  /* the step ended with a signal or an exit */
					break;
				}
				int stale = t ? 0 : stale_hit(s, pc, err, n);
				if (stale < 0)
					return -1;
				if (stale && !interrupted)
					break;  /* resumed without a signal */
			}
			if (interrupted || stop_flag)
				return 0;
			/* Not ours: the program's signal (our interrupt's SIGINT is not sent). */
			sig = st.code;
			break;
		}
		if (stop_flag || (deadline && now_ns() >= deadline))
			return 0;
	}
}

static void console(void *arg, const char *text, size_t len)
{
	(void)arg;
	fwrite(text, 1, len, stderr);
}

/* One session per run of sonde; its symbols stay open for the output. */
static struct rsess sess;
static struct sigaction old_int, old_term;
static int handlers_set;

static void handlers_restore(void)
{
	if (handlers_set) {
		sigaction(SIGINT, &old_int, NULL);
		sigaction(SIGTERM, &old_term, NULL);
		handlers_set = 0;
	}
}

/* A session that ends before the target ran: every breakpoint out, the
 * target detached, the connection closed. */
static void abandon(void)
{
	if (sess.tracing)
		remote_trace_stop(&sess.c);
	if (!remove_all(&sess) && !rcount_undo(&sess) && !rrm_undo(&sess))
		remote_detach(&sess.c);
	rrec_abandon(&sess);
	rrm_free(&sess);
	rcount_free(&sess);
	free(sess.tps);
	free_sites(&sess);
	remote_close(&sess.c);
	handlers_restore();
}

static void rm_close(struct engine *e)
{
	sess.sym = NULL; /* e->mods' cache closes it */
	rkinds_free(e);
	e->priv = NULL;
}

static int rm_open(struct engine *e, const struct probe_opts *o, char *err, size_t n)
{
	struct elf_id id;
	const char *why;
	memset(&sess, 0, sizeof sess);
	sess.e = e;
	e->priv = &sess;
	if (read_elf_id(o->exe, &id, err, n))
		return -1;
	sess.exe = o->exe;
	sess.ram = o->target_ram;
	sess.ram_len = o->target_ram_len;
	if ((id.machine == EM_RISCV || id.machine == EM_ARM) && id.is64) {
		snprintf(err, n, "%s: a 64-bit %s program: only RV32 and 32-bit ARM (Cortex-M) are supported", o->exe,
		         id.machine == EM_RISCV ? "RISC-V" : "ARM");
		return -1;
	}
	if (program_module(e, o->exe, err, n))
		return -1;
	if (!(sess.sym = sym_cache_get(e->mods.syms, o->exe, &why))) {
		snprintf(err, n, "cannot read %s (%s)", o->exe, why);
		return -1;
	}
	sess.vars = sym_vars(sess.sym, &sess.vars_err);
	if (remote_open(&sess.c, o->target, o->timeout_ms, id.machine, id.big_endian)) {
		snprintf(err, n, "%s: %s", o->target, sess.c.err);
		remote_close(&sess.c);
		return -1;
	}
	sess.c.console = console;
	e->t.pid = (pid_t)sess.c.thread;
	if (remote_load_bias(&sess.c, id.entry, &sess.bias, &why)) {
		snprintf(err, n, "%s: %s", o->target, sess.c.err);
		abandon();
		return -1;
	}
	e->mods.m[0].bias = sess.bias;
	const char *tp = getenv("SONDE_REMOTE_TRACEPOINTS");
	sess.no_tracepoints = tp && !strcmp(tp, "0");
	const char *em = getenv("SONDE_REMOTE_EMULATE");
	sess.emulate = !(em && !strcmp(em, "0")) && sess.c.arch->emulate;
	/* No stop reply gives the pc (QEMU): `g` reads it with what the
	 * emulator needs, in one round trip. */
	sess.c.fetch_all = sess.emulate;
	/* Ctrl-C / SIGTERM from here on end the session cleanly: one that
	 * comes while the probes are placed is acted on as soon as the run
	 * starts (run_loop interrupts at once), never with breakpoints left in. */
	struct sigaction sa = { .sa_handler = on_signal };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	handlers_set = 1;
	return 0;
}

static int add_func(struct rsess *s, uint64_t addr, char *err, size_t n)
{
	char spec[40];
	snprintf(spec, sizeof spec, "func:0x%llx", (unsigned long long)addr);
	return add_probe(s, spec, err, n);
}

/* record --target: a func probe at every function the recording takes
 * (remote_record.c), by address, so that functions of one name are apart. */
static int record_functions(struct rsess *s, const struct probe_opts *o, char *err, size_t n)
{
	uint64_t *v;
	int nv;
	if (rrec_open(s, o, &v, &nv, err, n))
		return -1;
	for (int i = 0; i < nv; i++) {
		int t = rrm_add(s, i, v[i]);  /* timed inside the target: no probe */
		if (t < 0) {
			free(v);
			snprintf(err, n, "out of memory");
			return -1;
		}
		if (t == 0)
			continue;
		if (add_func(s, v[i], err, n)) {
			free(v);
			return -1;
		}
	}
	free(v);
	return 0;
}

static int rm_place(struct engine *e, const struct probe_opts *o, char *err, size_t n)
{
	(void)e;
	sess.c.hw_limit = o->hw_breakpoints > 0 ? o->hw_breakpoints : -1;
	sess.defer = 1;
	for (int i = 0; i < o->nspecs; i++)
		if (add_probe(&sess, o->specs[i], err, n))
			goto fail;
	if (o->remote_record && record_functions(&sess, o, err, n))
		goto fail;
	sess.defer = 0;
	if (place_pending(&sess, err, n))
		goto fail;
	if (rcount_install(&sess, err, n))
		goto fail;
	if (o->remote_record) {
		/* the functions the target times itself; those it cannot after
		 * all go to breakpoints now */
		uint64_t *fb;
		int nfb;
		if (rrm_install(&sess, &fb, &nfb, err, n))
			goto fail;
		for (int i = 0; i < nfb; i++)
			if (add_func(&sess, fb[i], err, n)) {
				free(fb);
				goto fail;
			}
		free(fb);
	}
	if (sess.ntps) {
		if (remote_trace_start(&sess.c)) {
			snprintf(err, n, "%s: %s", o->target, sess.c.err);
			goto fail;
		}
		sess.tracing = 1;
	}
	return 0;
fail:
	abandon();
	return -1;
}

static int rm_run(struct engine *e, const struct probe_opts *o, char *err, size_t n)
{
	e->start_ns = now_ns();
	uint64_t deadline = o->duration > 0 ? e->start_ns + (uint64_t)(o->duration * 1e9) : 0;
	int rc = run_loop(&sess, deadline, err, n);
	e->end_ns = now_ns();
	if (rc && sess.c.r.closed && !e->t.gone) {
		/* The stub vanished in the middle of a request (a resume, a read):
		 * the same end as a closed connection awaiting a stop. */
		e->t.gone = 1;
		e->t.status = STATUS_GONE;
		rc = 0;
	}
	/* The stub's counts: after an exit it still answers (gdbserver); a
	 * closed connection loses them. */
	if (sess.tracing && !(e->t.gone && e->t.status == STATUS_GONE) && trace_collect(&sess) && !rc) {
		snprintf(err, n, "%s: %s", o->target, sess.c.err);
		rc = -1;
	}
	if (sess.tracing && !e->t.gone && remote_trace_stop(&sess.c) && !rc) {
		snprintf(err, n, "%s: %s", o->target, sess.c.err);
		rc = -1;
	}
	if (!e->t.gone) {
		/* Ctrl-C, --duration or our error: leave the program running as it
		 * was (the breakpoints out before the target runs sonde's routine
		 * that puts the counted sites back). */
		if (remove_all(&sess) || rcount_undo(&sess) || rrm_undo(&sess) || rrec_leave(&sess) ||
		    remote_detach(&sess.c)) {
			if (!rc)
				snprintf(err, n, "%s: %s", o->target, sess.c.err);
			rc = -1;
		} else {
			e->detached = 1;
		}
	}
	rcount_finish(&sess);
	if (sess.rec && rrec_close(&sess, rc ? NULL : err, rc ? 0 : n))
		rc = -1;
	rrm_free(&sess);
	rcount_free(&sess);
	free_sites(&sess);
	free(sess.tps);
	remote_close(&sess.c);
	/* Ctrl-C and SIGTERM stay ours until the target holds nothing of
	 * sonde's: another one while the breakpoints come out (a user's second
	 * Ctrl-C; timeout(1) sends its copy to the command and then to its
	 * process group, which a loaded machine may deliver after run_loop
	 * ended: CI saw sonde die of it, the firmware not left running) ends
	 * nothing more */
	handlers_restore();
	return rc;
}

/* Every remote target but ucsim's console (the ucsim engine's): tcp:,
 * serial:, and a malformed one, which rm_open refuses with its reason. */
static int rm_can_run(struct engine *e, const struct probe_opts *o, char *why, size_t wn)
{
	(void)e;
	(void)why;
	(void)wn;
	return o->target && strncmp(o->target, "ucsim:", 6);
}

const struct probe_engine_ops remote_engine = {
	.name = "remote",
	.kinds = "func line branch var assert time plugin",
	.runs = "func, line, branch, var, assert, time and plugin probes",
	.modes = PE_REMOTE | PE_PLUGIN | PE_PROFILE,
	.can_run = rm_can_run,
	.open = rm_open,
	.place = rm_place,
	.run = rm_run,
	.close = rm_close,
	.sites = &remote_sites,
};
