/* ucsim_engine.c — the probe engine of 8051 firmware run by ucsim (s51),
 * through its command console (ulink.h), beside the GDB-protocol engine
 * (src/probe/remote/): `sonde probe --target ucsim:HOST:PORT --exe fw.ihx`.
 * The program's symbols, lines and variables come from SDCC's .cdb beside
 * the .ihx (sym/cdb.h).  The probes are the simulator's own fetch
 * breakpoints ("break ADDR"); at each stop the hit's probes run, then the
 * simulation continues (ucsim passes over a breakpoint at the pc itself).
 * Kinds: func (calls; entry and exit, the exit caught by a breakpoint at
 * the return address the call pushed, matched to its call by the stack
 * pointer; time from the simulator's cycle counter), line (hits), branch
 * (the line's conditional jump found by kind_line.c's branch_scan with the
 * 8051's decoder, src/arch/mcs51/, decided on the state before it runs),
 * time (intervals of the simulator's cycle counter), var and assert
 * (expressions, expr.c, over the CDB's variables: char, int, long, float;
 * in data, idata, xdata, code, registers) and plugin (the --plugin
 * handlers run here: pre at the stop, post after a `step`).  Their output
 * halves are the shared ones (callstats.c, kind_func.c, kind_line.c,
 * kind_time.c, kind_var.c, kind_plugin.c), and so is their setup
 * (kind_place, place.h: the engine's part is its struct site_ops,
 * uc_sites).  The session ends when the program stops itself (ucsim's
 * simulator interface), at Ctrl-C / SIGTERM / --duration (the simulation
 * stopped, every breakpoint deleted, the simulator left as it was), or
 * when the simulator vanishes.  See docs/REMOTE.md, "The 8051". */
#include "probe/probe_engine.h"

#include "common/json.h"
#include "probe/callstats.h"
#include "probe/engine.h"
#include "probe/expr.h"
#include "probe/kind.h"
#include "probe/place.h"
#include "probe/probe.h"
#include "probe/spec.h"
#include "probe/ucsim/ucount.h"
#include "probe/ucsim/ulink.h"
#include "probe/ucsim/urecord.h"
#include "sym/cdb.h"
#include "arch/remote_arch.h"
#include "sonde/probe.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define UC_MAX_SITES 1024    /* ucsim's breakpoints are a list; bound ours */

struct usite {
	uint32_t addr;
	int id;                          /* ucsim's breakpoint number */
	/* p NULL: record --target's (urecord.c): role i the entry of its
	 * function i, ROLE_REC_RETURN a return address */
	struct { struct probe *p; int role; } u[8];
	int nu;
};

/* p->edata of a func probe (its statistics are kind_func.c's, p->data). */
struct ufunc {
	struct uframe { uint16_t ret; uint8_t sp; uint64_t t; } f[64];   /* pending calls (the 8051's stack is < 256 bytes) */
	int nf;
	uint64_t lost;                   /* calls deeper than f[] holds: counted, not timed */
};

struct usess {
	struct ulink l;
	struct cdb *cdb;
	struct engine *e;
	struct usite sites[UC_MAX_SITES];
	int nsites;
	struct ucount *count;            /* line probes counted in the chip (--target-ram), or NULL */
	double hz;                       /* the simulated chip's clock (state's "frequency=") */
	struct urec *rec;                /* record --target ucsim:, or NULL */
	int stopped_itself;              /* in a plugin's post step (the program's end), at stop_pc */
	uint32_t stop_pc;
};

static struct usess us;
static volatile sig_atomic_t stop_flag;
static struct sigaction old_int, old_term;

enum { ROLE_ENTRY, ROLE_RETURN, ROLE_REC_RETURN = -1 };

static void on_signal(int sig)
{
	(void)sig;
	stop_flag = 1;
}

static uint64_t ticks_ns(uint64_t ticks)
{
	return (uint64_t)((double)ticks * 1e9 / us.hz);
}

/* --- sites ------------------------------------------------------------- */

static struct usite *site_at(uint32_t addr)
{
	for (int i = 0; i < us.nsites; i++)
		if (us.sites[i].addr == addr)
			return &us.sites[i];
	return NULL;
}

static int site_add(struct probe *p, uint32_t addr, int role, char *err, size_t n)
{
	struct usite *t = site_at(addr);
	if (!t) {
		if (us.nsites == UC_MAX_SITES) {
			snprintf(err, n, "more than %d breakpoints", UC_MAX_SITES);
			return -1;
		}
		t = &us.sites[us.nsites];
		memset(t, 0, sizeof *t);
		t->addr = addr;
		if (ulink_break(&us.l, addr, &t->id)) {
			snprintf(err, n, "%s", us.l.err);
			return -1;
		}
		us.nsites++;
	}
	for (int i = 0; i < t->nu; i++)
		if (t->u[i].p == p && t->u[i].role == role)
			return 0;
	if (t->nu == (int)(sizeof t->u / sizeof t->u[0])) {
		snprintf(err, n, "more than %d probes at 0x%04x", t->nu, addr);
		return -1;
	}
	t->u[t->nu].p = p;
	t->u[t->nu++].role = role;
	return 0;
}

/* role of p taken out of the site at addr; the breakpoint deleted when
 * nothing else uses it.  0, or -1 (the console failed). */
static int site_drop(struct probe *p, uint32_t addr, int role)
{
	struct usite *t = site_at(addr);
	if (!t)
		return 0;
	for (int i = 0; i < t->nu; i++)
		if (t->u[i].p == p && t->u[i].role == role) {
			t->u[i] = t->u[--t->nu];
			break;
		}
	if (t->nu)
		return 0;
	int rc = ulink_delete(&us.l, t->id);
	*t = us.sites[--us.nsites];
	return rc;
}

static int remove_all(void)
{
	int rc = 0;
	while (us.nsites)
		if (ulink_delete(&us.l, us.sites[--us.nsites].id))
			rc = -1;
	return rc;
}

static void describe(uint32_t addr, char *buf, size_t n)
{
	const struct cdb_func *f = cdb_func_at(us.cdb, addr);
	const char *file;
	int line;
	size_t l = f ? (size_t)snprintf(buf, n, "%s+0x%x", f->name, addr - f->lo) : (size_t)snprintf(buf, n, "0x%04x", addr);
	if (l < n && !cdb_addr_line(us.cdb, addr, &file, &line))
		snprintf(buf + l, n - l, " (%s:%d)", file, line);
}

/* A location of the CDB: func:NAME, line:FILE:LINE, addr:0xADDR. */
static int resolve(struct probe *p, uint32_t *addrs, int max, int *nv, char *err, size_t n)
{
	const struct spec *sp = &p->sp;
	if (sp->loc == LOC_FUNC) {
		const struct cdb_func *f = cdb_func_named(us.cdb, sp->func);
		if (!f || !f->has_lo) {
			snprintf(err, n, "no function '%s' in the firmware's debug information", sp->func);
			return -1;
		}
		addrs[0] = f->lo + (uint32_t)sp->off;
		*nv = 1;
		return 0;
	}
	if (sp->loc == LOC_ADDR) {
		if (sp->addr > 0xffff) {
			snprintf(err, n, "0x%llx is beyond the 8051's code memory", (unsigned long long)sp->addr);
			return -1;
		}
		addrs[0] = (uint32_t)sp->addr;
		*nv = 1;
		return 0;
	}
	if (sp->loc == LOC_LINE) {
		int k = cdb_line_addrs(us.cdb, sp->file, sp->line, addrs, max);
		if (k <= 0) {
			snprintf(err, n, k < 0 ? "no file '%s' in the firmware's debug information" : "no code at %s:%d",
			         sp->file, sp->line);
			return -1;
		}
		*nv = k < max ? k : max;
		return 0;
	}
	snprintf(err, n, "a location is needed");
	return -1;
}

/* --- func ---------------------------------------------------------------- */

/* The callers of a func probe: their functions in the CDB, else "?". */
static void u_name(struct engine *e, uint64_t addr, char *buf, size_t n)
{
	(void)e;
	const struct cdb_func *f = us.cdb ? cdb_func_at(us.cdb, (uint32_t)addr) : NULL;
	snprintf(buf, n, "%s", f ? f->name : "?");
}

/* The output is kind_func.c's (callers named by u_name), without its
 * exits, with the calls too deep to be timed. */
static void func_json(struct probe *p, struct json *j)
{
	struct ufunc *d = p->edata;
	if (func_stats(p)) {
		func_stats_json(p, func_stats(p), j);
		json_uint(j, "untimed", d ? d->lost : 0);
	}
}

static void func_table(struct probe *p, FILE *f)
{
	if (func_stats(p))
		func_stats_table(p, func_stats(p), 0, f);
}

static void func_free(struct probe *p)
{
	kind_func.free(p);
	p->data = NULL;
}

static const struct kind_ops ufunc_ops = {
	.name = "func", .needs_location = 1, .setup = kind_place, .json = func_json, .table = func_table,
	.free = func_free,
};

static void func_hit(struct probe *p, int role, uint32_t pc)
{
	struct ufunc *d = p->edata;
	struct call_stats *cs = func_stats(p);
	uint16_t ret;
	uint8_t sp;
	char err[200];
	if (role == ROLE_ENTRY) {
		p->hits++;
		callstats_call(cs);
		if (ulink_ret_addr(&us.l, &ret, &sp)) {
			d->lost++;
			return;
		}
		callstats_caller(cs, ret);
		if (d->nf == (int)(sizeof d->f / sizeof d->f[0]) || site_add(p, ret, ROLE_RETURN, err, sizeof err)) {
			d->lost++;
			return;
		}
		d->f[d->nf++] = (struct uframe){ ret, sp, us.l.ticks };
		return;
	}
	if (ulink_sp(&us.l, &sp))
		return;
	/* the innermost pending call returning here with the stack pointer
	 * below its return address (RET pops two bytes) */
	for (int i = d->nf - 1; i >= 0; i--) {
		if (d->f[i].ret != pc || (uint8_t)(d->f[i].sp - 2) != sp)
			continue;
		callstats_return(cs, ticks_ns(us.l.ticks - d->f[i].t));
		d->nf = i;   /* and the deeper ones that never returned */
		break;
	}
	/* The return's breakpoint stays until the end: the next call from
	 * there (a loop's) needs it again, and each `break` or `delete` costs a
	 * round trip of the console (~100 ms); a stop there without a pending
	 * call matches nothing. */
}

/* --- var ------------------------------------------------------------------ */

/* The value of v now: 0, or -1 with why. */
static int var_read(const struct cdb_var *v, struct expr_val *out, char *why, size_t n)
{
	uint8_t b[4] = { 0 };
	int size = v->type.size;
	if (v->type.ptr || v->type.ptr_generic || v->type.array || size < 1 || size > 4 ||
	    !(v->type.base == CDB_T_CHAR || v->type.base == CDB_T_SHORT || v->type.base == CDB_T_INT ||
	      v->type.base == CDB_T_LONG || v->type.base == CDB_T_FLOAT)) {
		snprintf(why, n, "%s: not a char, int, long or float", v->name);
		return -1;
	}
	int rc;
	switch (v->space) {
	case CDB_DATA: case CDB_IDATA:
		rc = v->has_addr ? ulink_read(&us.l, US_IRAM, v->addr, b, (size_t)size) : -1;
		break;
	case CDB_XDATA:
		rc = v->has_addr ? ulink_read(&us.l, US_XRAM, v->addr, b, (size_t)size) : -1;
		break;
	case CDB_CODE:
		rc = v->has_addr ? ulink_read(&us.l, US_ROM, v->addr, b, (size_t)size) : -1;
		break;
	case CDB_REG: {
		/* r0..r7 of the register bank PSW selects */
		uint8_t psw, r[8];
		rc = v->nregs != size || ulink_read(&us.l, US_SFR, 0xd0, &psw, 1) ||
		     ulink_read(&us.l, US_IRAM, (uint32_t)(psw & 0x18), r, 8) ? -1 : 0;
		for (int i = 0; i < v->nregs && !rc; i++) {
			if (v->regs[i][0] != 'r' || v->regs[i][1] < '0' || v->regs[i][1] > '7' || v->regs[i][2])
				rc = -1;   /* a, b, dpl, dph: not read */
			else
				b[i] = r[v->regs[i][1] - '0'];
		}
		break;
	}
	default:
		rc = -1;
	}
	if (rc) {
		snprintf(why, n, "%s: unavailable (%s%s%.120s)", v->name, cdb_space_name(v->space),
		         us.l.err[0] ? ": " : "", us.l.err);
		return -1;
	}
	uint32_t u = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
	memset(out, 0, sizeof *out);
	if (v->type.base == CDB_T_FLOAT) {
		float f;
		memcpy(&f, &u, sizeof f);   /* SDCC's float: IEEE 754 single, little-endian */
		out->is_float = 1;
		out->f = f;
	} else if (v->type.is_unsigned) {
		out->i = (int64_t)u;
	} else {
		int sh = 32 - 8 * size;
		out->i = (int64_t)((int32_t)(u << sh) >> sh);
	}
	return 0;
}

/* The variables of var and assert expressions (expr_compile_names): a
 * name of the CDB visible at the probed address, read by var_read. */
struct uname {
	const struct cdb_var *v;
	char desc[160];
};

static int name_compile(void *ctx, uint64_t pc, const char *path, void **ref, char *err, size_t n)
{
	(void)ctx;
	if (path[strspn(path, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")]) {
		snprintf(err, n, "'%s': the 8051's variables are read by name (no members, indexes or pointers)", path);
		return -1;
	}
	const struct cdb_func *f = cdb_func_at(us.cdb, (uint32_t)pc);
	const struct cdb_var *v = cdb_var_named(us.cdb, f ? f->name : NULL, path);
	if (!v) {
		snprintf(err, n, "no variable '%s' in the firmware's debug information", path);
		return -1;
	}
	struct uname *u = malloc(sizeof *u);
	if (!u) {
		snprintf(err, n, "out of memory");
		return -1;
	}
	u->v = v;
	snprintf(u->desc, sizeof u->desc, "%s (%s)", path, cdb_space_name(v->space));
	*ref = u;
	return 0;
}

static int name_read(void *ctx, void *ref, struct expr_val *out, char *err, size_t n)
{
	(void)ctx;
	return var_read(((struct uname *)ref)->v, out, err, n);
}

static const char *name_describe(void *ctx, void *ref)
{
	(void)ctx;
	return ((struct uname *)ref)->desc;
}

static void name_free(void *ctx, void *ref)
{
	(void)ctx;
	free(ref);
}

static const struct expr_names cdb_names = { name_compile, name_read, name_describe, name_free, NULL };

static void var_hit(struct probe *p, int role)
{
	struct expr_val x;
	if (!var_eval_env(p, role, NULL, &x))
		var_account(p, &x);
}

/* One CPU: the first failures say "tid 0". */
static void assert_hit(struct probe *p, int role)
{
	struct expr_val x;
	if (!var_eval_env(p, role, NULL, &x))
		assert_account(p, role, 0, &x);
}

/* --- branch, time --------------------------------------------------------- */

/* rarch.taken's registers and memory, from the stop's snapshot (ulink.h). */
static int mcs51_reg(void *ctx, int r, uint64_t *v)
{
	(void)ctx;
	uint8_t b, psw;
	int rc;
	if (r >= MCS51_R0 && r < MCS51_R0 + 8)
		rc = ulink_read(&us.l, US_SFR, 0xd0, &psw, 1) || ulink_read(&us.l, US_IRAM, (uint32_t)((psw & 0x18) + r), &b, 1);
	else if (r == MCS51_A)
		rc = ulink_read(&us.l, US_SFR, 0xe0, &b, 1);
	else if (r == MCS51_PSW)
		rc = ulink_read(&us.l, US_SFR, 0xd0, &b, 1);
	else if (r == MCS51_SP)
		rc = ulink_read(&us.l, US_SFR, 0x81, &b, 1);
	else if (r >= MCS51_DIRECT(0) && r < MCS51_DIRECT(0x100)) {
		uint32_t d = (uint32_t)(r - MCS51_DIRECT(0));
		rc = ulink_read(&us.l, d < 0x80 ? US_IRAM : US_SFR, d, &b, 1);
	} else if (r >= MCS51_BIT(0) && r < MCS51_BIT(0x100)) {
		uint32_t k = (uint32_t)(r - MCS51_BIT(0));
		rc = k < 0x80 ? ulink_read(&us.l, US_IRAM, 0x20 + k / 8, &b, 1) : ulink_read(&us.l, US_SFR, k & 0xf8, &b, 1);
		b = (uint8_t)(b >> (k & 7) & 1);
	} else if (r >= MCS51_IND(0) && r < MCS51_IND(0x100)) {
		rc = ulink_read(&us.l, US_IRAM, (uint32_t)(r - MCS51_IND(0)), &b, 1);
	} else {
		return -1;
	}
	if (rc)
		return -1;
	*v = b;
	return 0;
}

/* branch_scan's step (kind_line.c) on the 8051's instructions. */
static int mstep(void *ctx, const uint8_t *code, size_t n, uint64_t addr, int *len)
{
	struct rbranch *b = ctx;
	if (rarch_mcs51.decode(code, n, addr, 0, b))
		return -1;
	*len = b->len;
	return b->kind == RB_COND ? BRANCH_COND : b->kind == RB_END ? BRANCH_END : BRANCH_OTHER;
}

/* The conditional jump of the line at addr: the first one of the block
 * that starts there (to the end of its function). */
static int find_branch(struct probe *p, uint32_t addr, struct rbranch *out, char *err, size_t n)
{
	const struct cdb_func *f = cdb_func_at(us.cdb, addr);
	uint32_t end = f ? f->hi + 1 : addr + 256;
	if (end > 0x10000)
		end = 0x10000;
	if (end - addr > 4096)
		end = addr + 4096;
	uint8_t code[4096];
	if (ulink_read(&us.l, US_ROM, addr, code, end - addr)) {
		snprintf(err, n, "cannot read the code at 0x%04x (%s)", addr, us.l.err);
		return -1;
	}
	struct rbranch st;
	uint64_t at;
	if (branch_scan(code, addr, end, NULL, 0, p->sp.line, mstep, &st, &at) ||
	    rarch_mcs51.decode(code + (at - addr), (size_t)(end - at), at, 0, out)) {
		snprintf(err, n, "no conditional jump at %s:%d", p->sp.file ? p->sp.file : "?", p->sp.line);
		return -1;
	}
	return 0;
}

static void branch_hit(struct probe *p, int role)
{
	const struct rbranch *b = p->edata;    /* the jump of each site (u_branch) */
	int t = b ? rarch_mcs51.taken(&b[role], mcs51_reg, NULL) : -1;
	if (t >= 0)
		branch_account(p, t);
}

/* --- plugin ----------------------------------------------------------------- */

/* The handlers run here (both ABIs), with the chip's registers in gregs:
 * A, B, PSW, SP, DPL, DPH, R0..R7 of the bank PSW selects, PC (16 bits);
 * read reads memory through the console while the simulation is stopped
 * for them (init, pre, post), the space in bits 16..23 of the address as
 * SDCC's generic pointers tag it: 0x00 xdata, 0x40 data/idata (indirect:
 * 0x80..0xff is idata, not the SFRs), 0x80 code.  docs/REMOTE.md, "The
 * 8051". */
enum { UC_PLUG_PC = 14, UC_PLUG_NREGS = 15 };
#define UC_PLUG_READ_MAX 65536
static uint64_t plug_regs[UC_PLUG_NREGS];
static int plug_live;

static int plugin_read(const struct sonde_probe_ctx *c, uint64_t addr, void *buf, size_t len)
{
	(void)c;
	if (!plug_live || len > UC_PLUG_READ_MAX || addr >> 24)
		return -1;
	unsigned tag = (unsigned)(addr >> 16);
	uint32_t a = (uint32_t)(addr & 0xffff), end = tag == 0x40 ? 0x100 : 0x10000;
	int space = tag == 0x00 ? US_XRAM : tag == 0x40 ? US_IRAM : tag == 0x80 ? US_ROM : -1;
	if (space < 0 || a >= end || len > end - a)
		return -1;
	/* an unreadable address is the plugin's -1, not the session's error */
	char err[sizeof us.l.err];
	memcpy(err, us.l.err, sizeof err);
	int rc = 0;
	for (size_t off = 0; off < len && !rc; off += 4096) {
		size_t k = len - off < 4096 ? len - off : 4096;
		rc = ulink_read(&us.l, space, a + (uint32_t)off, (uint8_t *)buf + off, k) ? -1 : 0;
	}
	memcpy(us.l.err, err, sizeof err);
	return rc;
}

static void plugin_describe(struct sonde_probe_ctx *c, int nregs)
{
	c->arch = "mcs51";
	c->big_endian = 0;
	c->reg_size = 1;
	c->nregs = nregs;
	c->gregs = plug_regs;
	c->pid = c->tid = 0;
}

/* site_ops.plugin_ctx: init sees the architecture and may read the chip
 * (stopped now); no registers yet (nregs 0). */
static int u_plugin_ctx(struct engine *e, struct probe *p, uint64_t addr, char *err, size_t n)
{
	(void)e;
	if (plugin_ctx_alloc(p, addr, NULL, plugin_read, err, n))
		return -1;
	plugin_describe(plugin_ctx(p), 0);
	plug_live = 1;
	int rc = plugin_ctx_init(p, err, n);
	plug_live = 0;
	return rc;
}

/* gregs of the stopped chip, its pc at pc (from the stop's snapshot). */
static int plugin_regs(uint32_t pc)
{
	static const uint8_t sfr[6] = { 0xe0, 0xf0, 0xd0, 0x81, 0x82, 0x83 };   /* A B PSW SP DPL DPH */
	uint8_t b[8];
	for (int i = 0; i < 6; i++) {
		if (ulink_read(&us.l, US_SFR, sfr[i], b, 1))
			return -1;
		plug_regs[i] = b[0];
	}
	if (ulink_read(&us.l, US_IRAM, (uint32_t)(plug_regs[2] & 0x18), b, 8))
		return -1;
	for (int i = 0; i < 8; i++)
		plug_regs[6 + i] = b[i];
	plug_regs[UC_PLUG_PC] = pc;
	return 0;
}

/* A handler called on the stop: addr the probed instruction, pc the chip's
 * pc now (addr at pre, past it at post); time_ns the simulated time. */
static void plugin_call(struct probe *p, void (*fn)(struct sonde_probe_ctx *), uint32_t addr, uint32_t pc)
{
	struct sonde_probe_ctx *c = plugin_ctx(p);
	static int warned;
	if (!fn || !c)
		return;
	if (plugin_regs(pc)) {
		if (!warned++ && p->e->warn)
			p->e->warn(p, "the simulator gave no registers: handler not called");
		return;
	}
	plugin_describe(c, UC_PLUG_NREGS);
	c->addr = addr;
	c->time_ns = ticks_ns(us.l.ticks);
	c->hits = p->hits;
	memset(&c->regs, 0, sizeof c->regs);
	plug_live = 1;
	fn(c);
	plug_live = 0;
}

/* pre; 1 when the probe has a post handler to call after the instruction. */
static int plugin_hit(struct probe *p, uint32_t pc)
{
	p->hits++;
	plugin_call(p, p->e->plugin->pre, pc, pc);
	return p->e->plugin->post != NULL;
}

static void dispatch(uint32_t pc);

/* After the probes of the stop at pc, for the plugin probes post[] there
 * with a post handler: the instruction at pc run alone (`step`, which runs
 * it even under a breakpoint) and the handlers called with the registers
 * after it (should the step enter an interrupt, pc is at its vector).
 * A step that ends on one of our breakpoints is a hit there: the `run`
 * that follows would pass over it, so its probes run first (at most 64
 * such in a row, then a warning and that hit passed over). */
static void plugin_posts(uint32_t pc, struct probe **post, int npost)
{
	static int depth, warned;
	struct ulink_stop st;
	int rc = ulink_step_stop(&us.l, &st);
	if (rc || (st.code != 109 && st.kind != ULS_SELF)) {
		if (!warned++ && post[0]->e->warn) {
			char w[300];
			snprintf(w, sizeof w, "the simulator did not step the probed instruction (%.200s): post handlers not called",
			         rc ? us.l.err : st.reason);
			post[0]->e->warn(post[0], w);
		}
		us.l.err[0] = 0;
		return;
	}
	uint32_t next = st.pc;
	for (int i = 0; i < npost; i++)
		plugin_call(post[i], post[i]->e->plugin->post, pc, next);
	if (st.kind == ULS_SELF) {
		/* the instruction was the firmware's last: the session's end (uc_run) */
		us.stopped_itself = 1;
		us.stop_pc = next;
		return;
	}
	if (!site_at(next))
		return;
	if (depth == 64) {
		if (!warned++ && post[0]->e->warn)
			post[0]->e->warn(post[0], "more than 64 probed instructions stepped in a row: a hit passed over");
		return;
	}
	depth++;
	dispatch(next);
	depth--;
}

/* --- the kinds ------------------------------------------------------------ */

/* site_ops.locate: a location of the CDB (resolve), each address with its
 * function where the CDB has one (mod NULL: no ELF module). */
static int u_locate(struct engine *e, struct probe *p, int func, struct loc_addr **v, int *nv, char *err, size_t n)
{
	(void)e;
	(void)func;
	uint32_t a[16];
	int k;
	if (resolve(p, a, 16, &k, err, n))
		return -1;
	if (!(*v = calloc((size_t)k, sizeof **v))) {
		snprintf(err, n, "out of memory");
		return -1;
	}
	for (int i = 0; i < k; i++) {
		const struct cdb_func *f = cdb_func_at(us.cdb, a[i]);
		(*v)[i].addr = a[i];
		if (f)
			(*v)[i].fn = (struct sym_info){ .name = f->name, .start = f->lo, .line = f->line,
			                                .size = f->has_hi && f->hi >= f->lo ? f->hi + 1 - f->lo : 0 };
	}
	*nv = k;
	return 0;
}

static void u_describe(struct engine *e, uint64_t addr, char *w, size_t n)
{
	(void)e;
	describe((uint32_t)addr, w, n);
}

/* The jump of site st's line, decoded as the 8051's, kept for its hits in
 * p->edata (branch_hit). */
static int u_branch(struct engine *e, struct probe *p, struct probe_site *st, char *err, size_t n)
{
	(void)e;
	struct rbranch b;
	return find_branch(p, (uint32_t)st->la.addr, &b, err, n) || site_branch_keep(p, st, &b, err, n) ? -1 : 0;
}

/* var and assert: the expression of each site compiled in the scope of its
 * address, its names the CDB's (read by var_read). */
static struct expr *u_compile(struct engine *e, struct probe *p, const struct probe_site *st, char *err, size_t n)
{
	(void)e;
	return expr_compile_names(p->sp.args, &cdb_names, st->la.addr, err, n);
}

/* A breakpoint per site (func: its entry, with p->edata for its pending
 * calls, freed by uc_close; the returns come with the calls, func_hit); a
 * line's counted in the chip with --target-ram. */
static int u_place(struct engine *e, struct probe *p, struct probe_site *st, char *err, size_t n)
{
	(void)e;
	uint32_t a = (uint32_t)st->la.addr;
	if (us.count && p->ops == &kind_line) {
		if (!ucount_add(us.count, p, st->i, a))
			return 0;
	} else if (st->what != SITE_CALL || (p->edata = calloc(1, sizeof(struct ufunc)))) {
		return site_add(p, a, st->what == SITE_CALL ? ROLE_ENTRY : st->i, err, n);
	}
	snprintf(err, n, "out of memory");
	return -1;
}

static void u_placed(struct engine *e, struct probe *p, char *w, size_t wn)
{
	(void)e;
	size_t l = strlen(w);
	if (p->ops == &ufunc_ops && l < wn)
		snprintf(w + l, wn - l, ", returns at the return address (stack)");
}

static const struct site_ops uc_sites = {
	.can = SITE_CAN_FUNC_ADDR,
	.locate = u_locate,
	.describe = u_describe,
	.branch = u_branch,
	.compile = u_compile,
	.plugin_ctx = u_plugin_ctx,
	.place = u_place,
	.placed = u_placed,
	.name = u_name,
};

/* The kinds the 8051 runs; NULL: not here (stack, sys). */
static const struct kind_ops *uc_kind(const char *k)
{
	return !strcmp(k, "func") ? &ufunc_ops : !strcmp(k, "line") ? &kind_line
	     : !strcmp(k, "branch") ? &kind_branch : !strcmp(k, "time") ? &kind_time
	     : !strcmp(k, "var") ? &kind_var : !strcmp(k, "assert") ? &kind_assert
	     : !strcmp(k, "plugin") ? &kind_plugin : NULL;
}

static int placed_at(uint32_t a)
{
	return site_at(a) != NULL;
}

static void where_add(struct probe *p, const char *what)
{
	char *w = NULL;
	if (asprintf(&w, "%s; %s", p->where ? p->where : "", what) > 0) {
		free(p->where);
		p->where = w;
	}
}

/* The line sites counted in the chip patched; those that cannot be get
 * breakpoints, and each probe says which it has. */
static int count_install(char *err, size_t n)
{
	struct ucount_fb *fb;
	int nfb;
	if (ucount_install(us.count, placed_at, &fb, &nfb, err, n))
		return -1;
	for (int i = 0; i < nfb; i++) {
		char w[200];
		snprintf(w, sizeof w, "0x%04x on a breakpoint (%s)", fb[i].addr, fb[i].why);
		where_add(fb[i].p, w);
		if (site_add(fb[i].p, fb[i].addr, fb[i].role, err, n)) {
			free(fb);
			return -1;
		}
	}
	free(fb);
	for (int i = 0; i < us.e->nprobes; i++)
		if (us.e->probes[i]->in_target)
			where_add(us.e->probes[i], "counted in the chip (an LCALL to a stub in --target-ram)");
	return 0;
}

static int add_probe(const char *text, char *err, size_t n)
{
	char why[400];
	struct probe *p = engine_new_probe(us.e, text, err, n);
	if (!p)
		return -1;
	/* a kind refused here keeps its own ops, to be freed with no data */
	p->ops = uc_kind(p->sp.kind);
	if (!p->ops) {
		p->ops = kind_find(p->sp.kind);
		snprintf(err, n, "probe '%s': %s probes are not available on the 8051 (ucsim has func, line, branch, time, "
		         "var, assert and plugin)", text, p->sp.kind);
		return -1;
	}
	if (p->ops->setup(p, why, sizeof why)) {
		snprintf(err, n, "probe '%s': %s", text, why);
		return -1;
	}
	return 0;
}

/* urecord.c's breakpoint at a return address */
static int rec_place(uint32_t addr)
{
	char err[200];
	return site_add(NULL, addr, ROLE_REC_RETURN, err, sizeof err);
}

static void dispatch(uint32_t pc)
{
	struct usite *t = site_at(pc);
	if (!t)
		return;
	/* func returns add and delete sites: a copy */
	int nu = t->nu;
	struct { struct probe *p; int role; } u[8];
	memcpy(u, t->u, (size_t)nu * sizeof u[0]);
	/* the recording's returns before its entries: a call made at the
	 * instruction a call returns to nests after that return */
	for (int i = 0; i < nu; i++)
		if (!u[i].p && u[i].role == ROLE_REC_RETURN && urec_return(us.rec, &us.l, pc))
			site_drop(NULL, pc, ROLE_REC_RETURN);
	for (int i = 0; i < nu; i++)
		if (!u[i].p && u[i].role >= 0)
			urec_entry(us.rec, &us.l, u[i].role, rec_place);
	struct probe *post[8];
	int npost = 0;
	for (int i = 0; i < nu; i++) {
		struct probe *p = u[i].p;
		if (!p)
			continue;
		us.e->total_hits++;
		if (p->ops == &ufunc_ops)
			func_hit(p, u[i].role, pc);
		else if (p->ops == &kind_line)
			p->hits++;
		else if (p->ops == &kind_branch)
			branch_hit(p, u[i].role);
		else if (p->ops == &kind_time)
			time_account(p, 0, ticks_ns(us.l.ticks));
		else if (p->ops == &kind_assert)
			assert_hit(p, u[i].role);
		else if (p->ops == &kind_plugin) {
			if (plugin_hit(p, pc))
				post[npost++] = p;
		} else
			var_hit(p, u[i].role);
	}
	if (npost)
		plugin_posts(pc, post, npost);
}

/* --- the engine's operations ---------------------------------------------- */

static void handlers(int on)
{
	if (on) {
		struct sigaction sa = { .sa_handler = on_signal };
		sigemptyset(&sa.sa_mask);
		sigaction(SIGINT, &sa, &old_int);
		sigaction(SIGTERM, &sa, &old_term);
	} else {
		sigaction(SIGINT, &old_int, NULL);
		sigaction(SIGTERM, &old_term, NULL);
	}
}

static int uc_can_run(struct engine *e, const struct probe_opts *o, char *why, size_t wn)
{
	(void)e;
	(void)why;
	(void)wn;
	/* another form of target is the remote engine's (probe_engine.h) */
	return o->target && !strncmp(o->target, "ucsim:", 6);
}

static int uc_open(struct engine *e, const struct probe_opts *o, char *err, size_t n)
{
	char cdbpath[4096];
	memset(&us, 0, sizeof us);
	us.e = e;
	e->priv = &us;
	e->foreign_code = 1;
	stop_flag = 0;
	if (cdb_beside(o->exe, cdbpath, sizeof cdbpath)) {
		snprintf(err, n, "%s: no SDCC debug file (%s) beside it (build with sdcc --debug)", o->exe, cdbpath);
		return -1;
	}
	if (!(us.cdb = cdb_open(cdbpath, err, n)))
		return -1;
	if (ulink_open(&us.l, o->target + 6, o->timeout_ms)) {
		snprintf(err, n, "%s: %s", o->target, us.l.err);
		ulink_close(&us.l);
		cdb_free(us.cdb);
		us.cdb = NULL;
		return -1;
	}
	/* the chip's clock, for the cycle counter's times: "frequency= 11059200 HZ" */
	double hz = 0;
	const char *f;
	if (ulink_cmd(&us.l, "state") || !(f = strstr(us.l.reply, "frequency=")) || sscanf(f, "frequency= %lf", &hz) != 1 ||
	    hz < 1000 || hz > 1e10) {
		snprintf(err, n, "%s: %s", o->target, us.l.err[0] ? us.l.err : "no clock frequency in the simulator's state");
		ulink_close(&us.l);
		cdb_free(us.cdb);
		us.cdb = NULL;
		return -1;
	}
	us.hz = hz;
	if (o->target_ram_len && !(us.count = ucount_new(&us.l, us.cdb, o->exe, (uint32_t)o->target_ram,
	                                                 (uint32_t)o->target_ram_len, err, n))) {
		ulink_close(&us.l);
		cdb_free(us.cdb);
		us.cdb = NULL;
		return -1;
	}
	handlers(1);
	return 0;
}

static void leave(void)
{
	if (us.count) {
		ucount_undo(us.count, 0x10000);
		ucount_free(us.count);
		us.count = NULL;
	}
	remove_all();
	ulink_close(&us.l);
	handlers(0); /* only now: a second Ctrl-C while the breakpoints come out is one more request to end */
}

static int uc_place(struct engine *e, const struct probe_opts *o, char *err, size_t n)
{
	(void)e;
	if (o->remote_record) {
		if (!(us.rec = urec_open(o, us.cdb, us.hz, err, n))) {
			leave();
			return -1;
		}
		for (int i = 0; i < urec_nfuncs(us.rec); i++)
			if (site_add(NULL, urec_func_addr(us.rec, i), i, err, n)) {
				urec_abort(us.rec);
				us.rec = NULL;
				leave();
				return -1;
			}
	}
	for (int i = 0; i < o->nspecs; i++)
		if (add_probe(o->specs[i], err, n)) {
			leave();
			return -1;
		}
	if (us.count && count_install(err, n)) {
		leave();
		return -1;
	}
	return 0;
}

static int uc_run(struct engine *e, const struct probe_opts *o, char *err, size_t n)
{
	e->start_ns = now_ns();
	uint64_t deadline = o->duration > 0 ? e->start_ns + (uint64_t)(o->duration * 1e9) : 0;
	int rc = 0, running = 0, interrupted = 0;
	uint32_t pc = 0x10000;   /* where the simulation stopped last, unknown yet */
	for (;;) {
		if (!running) {
			if (stop_flag || (deadline && now_ns() >= deadline))
				break;
			if (ulink_run(&us.l)) {
				rc = -1;
				break;
			}
			running = 1;
		}
		struct ulink_stop st;
		int w = ulink_wait(&us.l, 100, &st);
		if (w < 0) {
			rc = -1;
			break;
		}
		if (w == 1) {
			if ((stop_flag || (deadline && now_ns() >= deadline)) && !interrupted) {
				if (ulink_interrupt(&us.l)) {
					rc = -1;
					break;
				}
				interrupted = 1;
			}
			continue;
		}
		running = 0;
		pc = st.pc;
		if (st.kind == ULS_BREAK) {
			dispatch(st.pc);
			if (!us.stopped_itself)
				continue;
			st.kind = ULS_SELF;   /* in a plugin's post step */
			pc = us.stop_pc;
		}
		if (st.kind == ULS_USER && interrupted)
			break;
		if (st.kind == ULS_SELF) {
			e->t.gone = 1;
			e->t.status = 0;   /* exited with status 0: the program stopped itself */
			break;
		}
		snprintf(err, n, "%s: the simulation stopped at 0x%04x: (%d) %s", o->target, st.pc, st.code, st.reason);
		rc = -1;
		break;
	}
	e->end_ns = now_ns();
	/* our `stop` has a reply of its own besides the run's stop */
	if (interrupted && !rc && ulink_sync(&us.l)) {
		snprintf(err, n, "%s: %s", o->target, us.l.err);
		rc = -1;
	}
	if (rc && us.l.closed) {
		/* the simulator vanished: nothing of ours is left in it */
		e->t.gone = 1;
		e->t.status = 0xffff;   /* neither an exit nor a signal: output.c says "gone" */
		rc = 0;
	} else if (rc && !err[0]) {
		snprintf(err, n, "%s: %s", o->target, us.l.err);
	}
	if (!us.l.closed) {
		/* the counted sites' bytes back (the pc out of the stubs), every
		 * breakpoint out; a live program is left stopped where it was (the
		 * console's `run` continues it) */
		if (us.count && ucount_undo(us.count, pc) && !rc) {
			snprintf(err, n, "%s: %s", o->target, us.l.err);
			rc = -1;
		}
		if (remove_all() && !rc) {
			snprintf(err, n, "%s: %s", o->target, us.l.err);
			rc = -1;
		}
		if (!e->t.gone)
			e->detached = 1;
	}
	if (us.rec)
		urec_stop(us.rec, &us.l);
	ucount_free(us.count);
	us.count = NULL;
	ulink_close(&us.l);
	/* Ctrl-C and SIGTERM stay ours until the simulator holds nothing of
	 * sonde's: another one while the breakpoints come out (a user's second
	 * Ctrl-C, timeout(1)'s second copy to its process group) is no end */
	handlers(0);
	if (us.rec) {
		/* what was recorded is written, the session's error or not */
		char rerr[300];
		struct urec *r = us.rec;
		us.rec = NULL;
		int status = e->t.gone && e->t.status == 0 ? 0 : INT32_MIN, nf = urec_nfuncs(r);
		int vanished = e->t.gone && e->t.status == 0xffff;
		if (urec_close(r, e->t.pid, status, vanished, &e->recorded.calls, &e->recorded.untimed, rerr, sizeof rerr)) {
			if (!rc)
				snprintf(err, n, "%s", rerr);
			rc = -1;
		} else {
			e->recorded.nfuncs = nf;
			e->recorded.written = 1;
		}
	}
	return rc;
}

static void uc_close(struct engine *e)
{
	e->priv = NULL;
	if (us.rec) {   /* never run */
		urec_abort(us.rec);
		us.rec = NULL;
	}
	for (int i = 0; i < e->nprobes; i++) {
		free(e->probes[i]->edata);
		e->probes[i]->edata = NULL;
	}
	/* the probes' output names functions through the CDB: it goes last */
	cdb_free(us.cdb);
	us.cdb = NULL;
}

const struct probe_engine_ops ucsim_engine = {
	.name = "ucsim",
	.kinds = "func line branch time var assert plugin",
	.runs = "func, line, branch, time, var, assert and plugin probes",
	.modes = PE_REMOTE | PE_PROFILE | PE_SIM_TIMED,
	.can_run = uc_can_run,
	.open = uc_open,
	.place = uc_place,
	.run = uc_run,
	.close = uc_close,
	.kind = uc_kind,
	.sites = &uc_sites,
};
