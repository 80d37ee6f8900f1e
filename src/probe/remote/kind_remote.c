/* kind_remote.c — the probe kinds of remote targets (remote_run.h): func,
 * line, branch, time, var and assert, with the same JSON fields and table as
 * their local counterparts.  line, branch, time, var and assert keep the
 * local kinds' statistics and output (kind_line.c, kind_time.c,
 * kind_var.c): here they only place the breakpoints and read the registers
 * and memory through the stub (a branch is decided on the registers at the
 * branch, src/arch/<arch>/remote.c); func shares callstats.c and keeps its
 * pending calls here, because a remote
 * func probe catches returns differently: a breakpoint at the return address
 * (read from the link register on aarch64 and MIPS, from the stack on
 * x86-64) while a call is pending, matched to its call by stack pointer.
 * plugin runs the --plugin handlers in sonde (both ABIs) with the target's
 * registers and memory read through the stub; its output half is
 * kind_plugin.c's. */
#include "probe/remote/remote_run.h"

#include "common/json.h"
#include "probe/callstats.h"
#include "probe/engine.h"
#include "probe/expr.h"
#include "probe/kind.h"
#include "probe/output.h"
#include "proc/modules.h"
#include "probe/probe.h"
#include "probe/spec.h"
#include "sym/sym.h"
#include "sym/vars.h"
#include "sonde/probe.h"

#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- line, time ------------------------------------------------------------ */

static void set_where(struct rsess *s, struct probe *p, uint64_t addr, int n)
{
	char w[400];
	rs_describe(s, addr, w, sizeof w);
	if (n > 1) {
		size_t l = strlen(w);
		snprintf(w + l, sizeof w - l, " and %d more", n - 1);
	}
	p->where = strdup(w);
}

static int line_setup(struct rsess *s, struct probe *p, char *err, size_t n)
{
	uint64_t *v;
	int nv;
	if (rs_resolve(s, &p->sp, &v, &nv, err, n))
		return -1;
	int line = !strcmp(p->sp.kind, "line");
	int rc = line ? line_data_new(p, nv) : time_data_new(p);
	if (rc)
		snprintf(err, n, "out of memory");
	/* A line probe only counts: the target (remote_count.c) or the stub
	 * (tracepoints) can do that itself, no stop per hit, where no
	 * breakpoint is already placed. */
	int traced = 0;
	for (int i = 0; i < nv && !rc; i++) {
		int t = line ? rcount_add(s, p, v[i]) : 1;
		if (t == 0)
			continue;  /* counted in the target: placed by rcount_install */
		if (t < 0) {
			snprintf(err, n, "out of memory");
			rc = -1;
			break;
		}
		t = line ? rs_trace_add(s, p, v[i], err, n) : 1;
		if (t < 0)
			rc = -1;
		else if (t == 0)
			traced++;
		else
			rc = rs_site_add(s, p, v[i], i, err, n);
	}
	if (!rc) {
		set_where(s, p, v[0], nv);
		if (traced && p->where) {
			char *w = NULL;
			if (asprintf(&w, "%s; counted by the stub (tracepoint%s)", p->where, traced > 1 ? "s" : "") > 0) {
				free(p->where);
				p->where = w;
			}
		}
	}
	free(v);
	return rc;
}

static void line_hit(struct rsess *s, struct probe *p, int role, uint64_t pc, uint64_t now)
{
	(void)s; (void)role; (void)pc; (void)now;
	p->hits++;
}

/* sonde's clock when the stop reply arrived: the intervals include the
 * stub's round trips (see docs/REMOTE.md). */
static void time_hit(struct rsess *s, struct probe *p, int role, uint64_t pc, uint64_t now)
{
	(void)role; (void)pc;
	time_account(p, s->c.thread, now);
}

/* --- branch ---------------------------------------------------------------- */

/* The conditional branch of the line at addr (as kind_line.c's find_jcc
 * does locally): from addr to the end of its function, the first one the
 * line table gives to the same line, else the first one before the
 * straight-line code ends.  The code is read through the stub, with the
 * original bytes under breakpoints written with M put back. */
#define BRANCH_SCAN_MAX 65536

/* branch_scan's step (kind_line.c) on the target's instructions. */
struct rstep {
	const struct rarch *a;
	int big_endian;
	struct rbranch b;
};

static int rstep(void *ctx, const uint8_t *code, size_t n, uint64_t addr, int *len)
{
	struct rstep *st = ctx;
	if (st->a->decode(code, n, addr, st->big_endian, &st->b))
		return -1;
	*len = st->b.len;
	return st->b.kind == RB_COND ? BRANCH_COND : st->b.kind == RB_END ? BRANCH_END : BRANCH_OTHER;
}

static int find_branch(struct rsess *s, struct probe *p, uint64_t addr, struct rbranch *out, char *err, size_t n)
{
	const struct rarch *a = s->c.arch;
	struct sym_info fi;
	uint64_t end = addr + 256;
	if (sym_lookup(s->sym, addr - s->bias, &fi) == 0 && fi.size)
		end = fi.start + fi.size + s->bias;
	if (end <= addr || end - addr > BRANCH_SCAN_MAX)
		end = addr + BRANCH_SCAN_MAX;
	size_t len = (size_t)(end - addr);
	uint8_t *code = malloc(len);
	if (!code || remote_read(&s->c, addr, code, len)) {
		free(code);
		snprintf(err, n, "cannot read the code at 0x%llx (%s)", (unsigned long long)addr, s->c.err);
		return -1;
	}
	for (int i = 0; i < s->nsites; i++) {
		const struct rsite *t = &s->sites[i];
		if (t->written == RBP_WRITTEN && t->addr >= addr && t->addr + (uint64_t)a->bp_len <= end)
			memcpy(code + (t->addr - addr), t->saved, (size_t)a->bp_len);
	}
	struct rstep st = { .a = a, .big_endian = s->c.big_endian };
	uint64_t at;
	int found = !branch_scan(code, addr, end, s->sym, s->bias, p->sp.line, rstep, &st, &at) &&
	            !a->decode(code + (at - addr), (size_t)(end - at), at, s->c.big_endian, out);
	free(code);
	if (!found)
		snprintf(err, n, "no conditional branch at %s:%d (the condition may have been compiled "
		         "without a branch, e.g. into a conditional select)", p->sp.file ? p->sp.file : "?", p->sp.line);
	return found ? 0 : -1;
}

/* The decoded branches of each branch probe (p->data holds kind_branch's
 * counts), until rkinds_free. */
struct rbranches {
	struct probe *p;
	struct rbranch *b;
	struct rbranches *next;
};
static struct rbranches *branches;

static struct rbranches *branches_of(struct probe *p)
{
	struct rbranches *d = branches;
	while (d && d->p != p)
		d = d->next;
	return d;
}

void rkinds_free(void)
{
	while (branches) {
		struct rbranches *d = branches;
		branches = d->next;
		free(d->b);
		free(d);
	}
}

static int branch_setup(struct rsess *s, struct probe *p, char *err, size_t n)
{
	if (p->sp.loc != LOC_LINE) {
		snprintf(err, n, "branch probes take a source line (branch:FILE:LINE)");
		return -1;
	}
	uint64_t *v;
	int nv;
	if (rs_resolve(s, &p->sp, &v, &nv, err, n))
		return -1;
	struct rbranches *d = calloc(1, sizeof *d);
	int rc = -1;
	if (d && (d->b = calloc((size_t)nv, sizeof *d->b)) && !line_data_new(p, nv)) {
		d->p = p;
		d->next = branches;
		branches = d;
		rc = 0;
	} else {
		if (d)
			free(d->b);
		free(d);
		snprintf(err, n, "out of memory");
	}
	for (int i = 0; i < nv && !rc; i++) {
		rc = find_branch(s, p, v[i], &d->b[i], err, n);
		if (!rc && branch_set_insn(p, d->b[i].text)) {
			snprintf(err, n, "out of memory");
			rc = -1;
		}
		if (!rc)
			rc = rs_site_add(s, p, d->b[i].addr, i, err, n);
	}
	if (!rc)
		set_where(s, p, d->b[0].addr, nv);
	free(v);
	return rc;
}

static int branch_reg(void *ctx, int regno, uint64_t *val)
{
	struct rsess *s = ctx;
	return remote_reg(&s->c, regno, val);
}

/* Decided on the registers at the branch, before it runs (a delay slot
 * cannot change the outcome; no stop after the branch is needed). */
static void branch_hit(struct rsess *s, struct probe *p, int role, uint64_t pc, uint64_t now)
{
	(void)pc; (void)now;
	struct rbranches *d = branches_of(p);
	int t = s->c.arch->taken(&d->b[role], branch_reg, s);
	if (t >= 0)
		branch_account(p, t);
}

/* --- var and assert ---------------------------------------------------------- */

static int var_setup(struct rsess *s, struct probe *p, char *err, size_t n)
{
	if (p->sp.args && !s->vars) {
		snprintf(err, n, "no variables in the program (%s)", s->vars_err ? s->vars_err : "no DWARF");
		return -1;
	}
	struct loc_addr *v;
	int nv;
	int rc = var_setup_sites(p, &v, &nv, NULL, NULL, err, n);
	for (int i = 0; i < nv && !rc; i++)
		rc = rs_site_add(s, p, v[i].addr, i, err, n);
	if (!rc) {
		char w[600];
		rs_describe(s, v[0].addr, w, sizeof w);
		size_t l = strlen(w);
		snprintf(w + l, sizeof w - l, "; %s", expr_describe(var_site_expr(p, 0)));
		p->where = strdup(w);
	}
	free(v);
	return rc;
}

/* 0 with *v set, or -1 when the value was unavailable (counted). */
static int eval(struct rsess *s, struct probe *p, int role, struct expr_val *v)
{
	struct var_env env;
	rs_env(s, &env);
	return var_eval_env(p, role, &env, v);
}

static void var_hit(struct rsess *s, struct probe *p, int role, uint64_t pc, uint64_t now)
{
	(void)pc; (void)now;
	struct expr_val v;
	if (!eval(s, p, role, &v))
		var_account(p, &v);
}

static void assert_hit(struct rsess *s, struct probe *p, int role, uint64_t pc, uint64_t now)
{
	(void)pc; (void)now;
	struct expr_val v;
	if (!eval(s, p, role, &v))
		assert_account(p, role, s->c.thread, &v);
}

/* --- func ---------------------------------------------------------------- */

enum { ROLE_ENTRY, ROLE_RETURN };

struct rframe { long thread; uint64_t sp, ret, t; };

struct rfunc {
	struct call_stats cs;
	struct rframe *f; int nf, capf;     /* pending calls */
	struct rsess *s;                    /* names the callers at output time */
};

static int func_setup(struct rsess *s, struct probe *p, char *err, size_t n)
{
	/* func:0xADDR: the function at that address (record --target names
	 * functions so, remote_run.c's record_functions) */
	if ((p->sp.loc != LOC_FUNC && p->sp.loc != LOC_ADDR) || p->sp.off) {
		snprintf(err, n, "func probes take a function name");
		return -1;
	}
	uint64_t *v;
	int nv;
	if (rs_resolve(s, &p->sp, &v, &nv, err, n))
		return -1;
	struct rfunc *d = calloc(1, sizeof *d);
	int rc = (p->data = d) ? 0 : -1;
	if (d) {
		callstats_init(&d->cs);
		d->s = s;
	}
	if (!rc)
		rc = rs_site_add(s, p, v[0], ROLE_ENTRY, err, n);
	if (!rc) {
		char w[400];
		rs_describe(s, v[0], w, sizeof w);
		size_t l = strlen(w);
		snprintf(w + l, sizeof w - l, ", returns at the return address (%s)",
		         s->c.arch->ra >= 0 ? "link register" : "stack");
		p->where = strdup(w);
	}
	free(v);
	return rc;
}

static int read_ptr(struct rsess *s, uint64_t addr, uint64_t *v)
{
	uint8_t b[8];
	int w = s->c.arch->ptr_size;
	if (remote_read(&s->c, addr, b, (size_t)w))
		return -1;
	*v = 0;
	for (int i = 0; i < w; i++)
		*v |= (uint64_t)b[s->c.big_endian ? w - 1 - i : i] << (8 * i);
	return 0;
}

static void func_entry(struct rsess *s, struct probe *p, struct rfunc *d, uint64_t pc, uint64_t now)
{
	const struct rarch *a = s->c.arch;
	uint64_t sp, ret;
	p->hits++;
	callstats_call(&d->cs);
	if (remote_reg(&s->c, a->sp, &sp) ||
	    (a->ra >= 0 ? remote_reg(&s->c, a->ra, &ret) : read_ptr(s, sp, &ret))) {
		rrec_untimed(s);
		return; /* no return address: the call is counted, its return is not timed */
	}
	if (a->thumb_bit)
		ret &= ~(uint64_t)1;    /* lr holds the return address | 1 (Thumb state) */
	callstats_caller(&d->cs, ret);
	int pending = 0;
	for (int i = 0; i < d->nf; i++)
		pending |= d->f[i].ret == ret;
	char err[200];
	if (!pending && rs_site_add_return(s, p, ret, ROLE_RETURN, err, sizeof err)) {
		rrec_untimed(s);  /* e.g. an exception's EXC_RETURN, or no comparator left */
		return;
	}
	if (d->nf == d->capf) {
		int cap = d->capf ? d->capf * 2 : 16;
		struct rframe *v = realloc(d->f, (size_t)cap * sizeof *v);
		if (!v) {
			rrec_untimed(s);
			return;
		}
		d->f = v;
		d->capf = cap;
	}
	d->f[d->nf++] = (struct rframe){ s->c.thread, sp, ret, now };
	rrec_enter(s, pc, sp, ret);
}

static void func_return(struct rsess *s, struct probe *p, struct rfunc *d, uint64_t pc, uint64_t now)
{
	uint64_t sp;
	if (remote_reg(&s->c, s->c.arch->sp, &sp))
		return;
	/* The innermost pending call of this thread that returns here with this
	 * stack pointer; calls deeper in the stack that never returned (longjmp)
	 * are dropped.  Another pass through the return address (a loop calling
	 * from there, a recursive call's own return) matches nothing. */
	for (int i = d->nf - 1; i >= 0; i--) {
		struct rframe *f = &d->f[i];
		if (f->thread != s->c.thread || f->ret != pc || f->sp + (uint64_t)s->c.arch->ret_sp_adj != sp)
			continue;
		callstats_return(&d->cs, now - f->t);
		rrec_return(s, pc, sp);
		int k = 0;
		for (int j = 0; j < d->nf; j++)
			if (j != i && !(d->f[j].thread == f->thread && d->f[j].sp < f->sp))
				d->f[k++] = d->f[j];
		d->nf = k;
		break;
	}
	int pending = 0;
	for (int i = 0; i < d->nf; i++)
		pending |= d->f[i].ret == pc;
	if (!pending)
		rs_site_del(s, p, pc, ROLE_RETURN);
}

static void func_hit(struct rsess *s, struct probe *p, int role, uint64_t pc, uint64_t now)
{
	struct rfunc *d = p->data;
	if (role == ROLE_ENTRY)
		func_entry(s, p, d, pc, now);
	else
		func_return(s, p, d, pc, now);
}

static const char *name_of(void *arg, uint64_t ret, char *buf, size_t n)
{
	snprintf(buf, n, "%s", rs_func_name(arg, ret));
	return buf;
}

static void func_json(struct probe *p, struct json *j)
{
	struct rfunc *d = p->data;
	if (d)
		callstats_json(&d->cs, j, name_of, d->s);
}

static void func_table(struct probe *p, FILE *f)
{
	struct rfunc *d = p->data;
	if (d)
		callstats_table(&d->cs, f, name_of, d->s);
}

static void func_free(struct probe *p)
{
	struct rfunc *d = p->data;
	if (!d)
		return;
	free(d->f);
	callstats_free(&d->cs);
	free(d);
}

static const struct kind_ops rfunc_ops = {
	.name = "func", .needs_location = 1, .json = func_json, .table = func_table, .free = func_free,
};

/* --- plugin ---------------------------------------------------------------- */

/* A handler's reads go through the stub only while the target is stopped
 * for it (init, pre, post): report and fini run after the session. */
#define PLUGIN_READ_MAX 65536
static int plug_live;
static uint64_t plug_regs[REMOTE_MAX_REGS];

static int plugin_read(const struct sonde_probe_ctx *c, uint64_t addr, void *buf, size_t len)
{
	struct probe *p = c->sonde_private;
	struct rsess *s = p->e->priv;
	if (!plug_live || !s || len > PLUGIN_READ_MAX)
		return -1;
	if (!len)
		return 0;
	char err[sizeof s->c.err];
	memcpy(err, s->c.err, sizeof err);  /* an unreadable address is the plugin's -1, not sonde's error */
	int rc = remote_read(&s->c, addr, buf, len) ? -1 : 0;
	memcpy(s->c.err, err, sizeof err);
	return rc;
}

static const char *plugin_arch(int machine)
{
	switch (machine) {
	case EM_X86_64: return "x86-64";
	case EM_AARCH64: return "aarch64";
	case EM_ARM: return "arm";
	case EM_MIPS: return "mips";
	case EM_RISCV: return "riscv32";
	default: return "?";
	}
}

static void plugin_ctx_set(struct rsess *s, struct sonde_probe_ctx *c)
{
	const struct rarch *a = s->c.arch;
	c->arch = plugin_arch(a->elf_machine);
	c->big_endian = s->c.big_endian;
	c->reg_size = a->ptr_size;
	c->nregs = a->ncore;
	c->gregs = plug_regs;
	c->tid = (int)s->c.thread;
}

static int plugin_setup(struct rsess *s, struct probe *p, char *err, size_t n)
{
	uint64_t *v;
	int nv;
	if (!p->e->plugin) {
		snprintf(err, n, "plugin probes need --plugin FILE.so");
		return -1;
	}
	if (rs_resolve(s, &p->sp, &v, &nv, err, n))
		return -1;
	/* init sees the architecture and may read the target (stopped now);
	 * no registers yet (nregs 0). */
	int rc = plugin_ctx_alloc(p, v[0], NULL, plugin_read, err, n);
	if (!rc) {
		plugin_ctx_set(s, plugin_ctx(p));
		plugin_ctx(p)->nregs = 0;
		plug_live = 1;
		rc = plugin_ctx_init(p, err, n);
		plug_live = 0;
	}
	for (int i = 0; i < nv && !rc; i++)
		rc = rs_site_add(s, p, v[i], i, err, n);
	if (!rc)
		set_where(s, p, v[0], nv);
	free(v);
	return rc;
}

/* The context of a hit: the thread's core registers (one `g`, or what this
 * stop already read), regs too on x86-64.  -1: the stub gave no registers
 * (the handler is not called). */
static int plugin_fill(struct rsess *s, struct probe *p, struct sonde_probe_ctx *c, uint64_t pc, uint64_t now)
{
	const struct rarch *a = s->c.arch;
	for (int i = 0; i < a->ncore; i++)
		if (remote_reg(&s->c, i, &plug_regs[i]))
			return -1;
	plugin_ctx_set(s, c);
	c->addr = pc;
	c->time_ns = now;
	c->hits = p->hits;
	memset(&c->regs, 0, sizeof c->regs);
	if (a->elf_machine == EM_X86_64 && a->ncore >= 17) {
		const uint64_t *g = plug_regs;
		struct sonde_regs *r = &c->regs;
		r->rax = g[0]; r->rbx = g[1]; r->rcx = g[2]; r->rdx = g[3];
		r->rsi = g[4]; r->rdi = g[5]; r->rbp = g[6]; r->rsp = g[7];
		r->r8 = g[8]; r->r9 = g[9]; r->r10 = g[10]; r->r11 = g[11];
		r->r12 = g[12]; r->r13 = g[13]; r->r14 = g[14]; r->r15 = g[15];
		r->rip = g[16];
		uint64_t fl;
		if (a->flags >= 0 && !remote_reg(&s->c, a->flags, &fl))
			r->eflags = fl;
	}
	return 0;
}

static void plugin_call(struct rsess *s, struct probe *p, void (*fn)(struct sonde_probe_ctx *), uint64_t pc,
                        uint64_t now)
{
	struct sonde_probe_ctx *c = plugin_ctx(p);
	if (!fn || !c)
		return;
	static int warned;
	if (plugin_fill(s, p, c, pc, now)) {
		if (!warned++ && p->e->warn)
			p->e->warn(p, "the stub gave no registers: handler not called");
		return;
	}
	plug_live = 1;
	fn(c);
	plug_live = 0;
}

static void plugin_hit(struct rsess *s, struct probe *p, int role, uint64_t pc, uint64_t now)
{
	(void)role;
	p->hits++;
	plugin_call(s, p, p->e->plugin->pre, pc, now);
}

/* After the instruction: registers show its effect; addr is still the
 * probed instruction's (as locally). */
static void plugin_post(struct rsess *s, struct probe *p, int role, uint64_t pc, uint64_t now)
{
	(void)role;
	struct sonde_probe_ctx *c = plugin_ctx(p);
	if (!p->e->plugin->post || !c)
		return;
	plugin_call(s, p, p->e->plugin->post, pc, now);
}

static const struct rkind kinds[] = {
	{ "func", &rfunc_ops, func_setup, func_hit, NULL },
	{ "line", &kind_line, line_setup, line_hit, NULL },
	{ "branch", &kind_branch, branch_setup, branch_hit, NULL },
	{ "time", &kind_time, line_setup, time_hit, NULL },
	{ "var", &kind_var, var_setup, var_hit, NULL },
	{ "assert", &kind_assert, var_setup, assert_hit, NULL },
	{ "plugin", &kind_plugin, plugin_setup, plugin_hit, plugin_post },
};

const struct rkind *rkind_find(const char *name)
{
	for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
		if (!strcmp(kinds[i].name, name))
			return &kinds[i];
	return NULL;
}
