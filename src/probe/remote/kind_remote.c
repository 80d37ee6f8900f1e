/* kind_remote.c — the probe kinds of remote targets (remote_run.h): func,
 * line, branch, time, var, assert and plugin, with the same JSON fields and
 * table as their local counterparts.  Their setup is kind_place's (place.h),
 * the same on every engine; what the remote adds is its struct site_ops
 * (remote_sites, at the end): the locations in the program's ELF, the
 * branch decoded by the target's architecture, the expressions in its
 * DWARF variables, a breakpoint per site (a line's counted in the target or
 * by the stub where it can be).  The kinds keep the local kinds' statistics
 * and output (kind_func.c, kind_line.c, kind_time.c, kind_var.c): here they
 * read the registers and memory through the stub at each hit (a branch is
 * decided on the registers at the branch, src/arch/<arch>/remote.c); func
 * keeps its pending calls in p->edata, because a remote func probe catches
 * returns differently: a breakpoint at the return address (read from the
 * link register on aarch64 and MIPS, from the stack on x86-64) while a
 * call is pending, matched to its call by stack pointer.  plugin runs the
 * --plugin handlers in sonde (both ABIs) with the target's registers and
 * memory read through the stub; its output half is kind_plugin.c's. */
#include "probe/remote/remote_run.h"

#include "common/json.h"
#include "probe/callstats.h"
#include "probe/engine.h"
#include "probe/expr.h"
#include "probe/kind.h"
#include "probe/output.h"
#include "probe/place.h"
#include "proc/modules.h"
#include "probe/probe.h"
#include "probe/resolve.h"
#include "probe/spec.h"
#include "sym/sym.h"
#include "sym/vars.h"
#include "sonde/probe.h"

#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- line, time ------------------------------------------------------------ */

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
	const struct rbranch *b = p->edata;    /* the jump of each site (r_branch) */
	int t = s->c.arch->taken(&b[role], branch_reg, s);
	if (t >= 0)
		branch_account(p, t);
}

/* --- var and assert ---------------------------------------------------------- */

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

/* p->edata of a func probe (its statistics are kind_func.c's, p->data). */
struct rfunc {
	struct rframe *f; int nf, capf;     /* pending calls */
};

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
	struct call_stats *cs = func_stats(p);
	uint64_t sp, ret;
	p->hits++;
	callstats_call(cs);
	if (remote_reg(&s->c, a->sp, &sp) ||
	    (a->ra >= 0 ? remote_reg(&s->c, a->ra, &ret) : read_ptr(s, sp, &ret))) {
		rrec_untimed(s);
		return; /* no return address: the call is counted, its return is not timed */
	}
	if (a->thumb_bit)
		ret &= ~(uint64_t)1;    /* lr holds the return address | 1 (Thumb state) */
	callstats_caller(cs, ret);
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
		callstats_return(func_stats(p), now - f->t);
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
	struct rfunc *d = p->edata;
	if (role == ROLE_ENTRY)
		func_entry(s, p, d, pc, now);
	else
		func_return(s, p, d, pc, now);
}

/* The output is kind_func.c's (callers named by r_name), without its exits. */
static void func_json(struct probe *p, struct json *j)
{
	if (func_stats(p))
		func_stats_json(p, func_stats(p), j);
}

static void func_table(struct probe *p, FILE *f)
{
	if (func_stats(p))
		func_stats_table(p, func_stats(p), 0, f);
}

static void func_free(struct probe *p)
{
	kind_func.free(p);
}

static const struct kind_ops rfunc_ops = {
	.name = "func", .needs_location = 1, .setup = kind_place, .json = func_json, .table = func_table,
	.free = func_free,
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

/* site_ops.plugin_ctx: init sees the architecture and may read the target
 * (stopped now); no registers yet (nregs 0). */
static int r_plugin_ctx(struct engine *e, struct probe *p, uint64_t addr, char *err, size_t n)
{
	if (plugin_ctx_alloc(p, addr, NULL, plugin_read, err, n))
		return -1;
	plugin_ctx_set(e->priv, plugin_ctx(p));
	plugin_ctx(p)->nregs = 0;
	plug_live = 1;
	int rc = plugin_ctx_init(p, err, n);
	plug_live = 0;
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

/* --- the sites (place.h) -------------------------------------------------- */

/* Every location through resolve.c in the program's ELF (the session's one
 * module), func:0xADDR too (record --target names functions so, remote_run.c's
 * record_functions), each with its function from the program's symbols. */
static int r_locate(struct engine *e, struct probe *p, int func, struct loc_addr **v, int *nv, char *err, size_t n)
{
	(void)func;
	return resolve_location(e, &p->sp, v, nv, err, n);
}

static void r_describe(struct engine *e, uint64_t addr, char *w, size_t n)
{
	rs_describe(e->priv, addr, w, n);
}

/* The callers of a func probe: their functions, "?" outside every symbol. */
static void r_name(struct engine *e, uint64_t addr, char *buf, size_t n)
{
	snprintf(buf, n, "%s", e->priv ? rs_func_name(e->priv, addr) : "?");
}

/* The jump of site st's line, decoded by the target's architecture, kept
 * for its hits in p->edata (branch_hit). */
static int r_branch(struct engine *e, struct probe *p, struct probe_site *st, char *err, size_t n)
{
	struct rbranch b;
	return find_branch(e->priv, p, st->la.addr, &b, err, n) || site_branch_keep(p, st, &b, err, n) ? -1 : 0;
}

/* var and assert: the expression in the program's DWARF variables, read
 * through the stub at a hit (rs_env). */
static struct expr *r_compile(struct engine *e, struct probe *p, const struct probe_site *st, char *err, size_t n)
{
	struct rsess *s = e->priv;
	if (!s->vars) {
		snprintf(err, n, "no variables in the program (%s)", s->vars_err ? s->vars_err : "no DWARF");
		return NULL;
	}
	return expr_compile(p->sp.args, s->vars, st->la.addr - s->bias, err, n);
}

/* A breakpoint per site (func: its entry, with p->edata for its pending
 * calls, freed by rkinds_free; the returns come with the calls, func_entry).
 * A line probe only counts: the target (remote_count.c) or the stub
 * (tracepoints) can do that itself, no stop per hit, where no breakpoint is
 * already placed. */
static int r_place(struct engine *e, struct probe *p, struct probe_site *st, char *err, size_t n)
{
	struct rsess *s = e->priv;
	if (st->what == SITE_CALL && !(p->edata = calloc(1, sizeof(struct rfunc)))) {
		snprintf(err, n, "out of memory");
		return -1;
	}
	if (p->ops == &kind_line) {
		int t = rcount_add(s, p, st->la.addr);
		if (t == 0)
			return 0;  /* counted in the target: placed by rcount_install */
		if (t < 0) {
			snprintf(err, n, "out of memory");
			return -1;
		}
		t = rs_trace_add(s, p, st->la.addr, err, n);
		if (t <= 0)
			return t;  /* counted by the stub, or -1 */
	}
	return rs_site_add(s, p, st->la.addr, st->what == SITE_CALL ? ROLE_ENTRY : st->i, err, n);
}

static void r_placed(struct engine *e, struct probe *p, char *w, size_t wn)
{
	struct rsess *s = e->priv;
	size_t l = strlen(w);
	int traced = 0;
	for (int i = 0; i < s->ntps; i++)
		traced += s->tps[i].p == p;
	if (p->ops == &rfunc_ops && l < wn)
		snprintf(w + l, wn - l, ", returns at the return address (%s)", s->c.arch->ra >= 0 ? "link register" : "stack");
	else if (traced && l < wn)
		snprintf(w + l, wn - l, "; counted by the stub (tracepoint%s)", traced > 1 ? "s" : "");
}

const struct site_ops remote_sites = {
	.can = SITE_CAN_FUNC_ADDR,
	.locate = r_locate,
	.describe = r_describe,
	.branch = r_branch,
	.compile = r_compile,
	.plugin_ctx = r_plugin_ctx,
	.place = r_place,
	.placed = r_placed,
	.name = r_name,
};

void rkinds_free(struct engine *e)
{
	for (int i = 0; i < e->nprobes; i++) {
		struct probe *p = e->probes[i];
		if (p->ops == &rfunc_ops && p->edata)
			free(((struct rfunc *)p->edata)->f);
		free(p->edata);
		p->edata = NULL;
	}
}

static const struct rkind kinds[] = {
	{ "func", &rfunc_ops, func_hit, NULL },
	{ "line", &kind_line, line_hit, NULL },
	{ "branch", &kind_branch, branch_hit, NULL },
	{ "time", &kind_time, time_hit, NULL },
	{ "var", &kind_var, var_hit, NULL },
	{ "assert", &kind_assert, assert_hit, NULL },
	{ "plugin", &kind_plugin, plugin_hit, plugin_post },
};

const struct rkind *rkind_find(const char *name)
{
	for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
		if (!strcmp(kinds[i].name, name))
			return &kinds[i];
	return NULL;
}
