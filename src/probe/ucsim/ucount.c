/* ucount.c — line probes counted inside the simulated 8051 (ucount.h).
 * Each counted site gets one stub of UC_STUB bytes in the --target-ram
 * range of code memory and one 32-bit counter at the same offset / 16 of
 * that range of xdata:
 *
 *   push acc; push psw; push dpl; push dph
 *   mov dptr,#counter
 *   movx a,@dptr; add a,#1; movx @dptr,a          (byte 0; the carry on)
 *   inc dptr; movx a,@dptr; addc a,#0; movx @dptr,a   x 3
 *   pop dph; pop dpl; pop psw; pop acc
 *   dec sp; dec sp                                 (the LCALL's return address dropped)
 *   <the site's instructions, moved>
 *   ljmp site + covered
 *
 * The moved instructions must not depend on where they are: no relative
 * jump (sjmp, jc..djnz, cjne), no ajmp/acall (2 KiB pages), no movc
 * a,@a+pc; lcall, ljmp, ret, reti and jmp @a+dptr are absolute and move.
 * The stub runs with 6 more bytes on the firmware's stack (the LCALL's 2,
 * its 4 pushes). */
#include "probe/ucsim/ucount.h"

#include "arch/remote_arch.h"
#include "probe/probe.h"
#include "probe/ucsim/ulink.h"
#include "sym/cdb.h"
#include "sym/ihx.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define UC_STUB 64           /* bytes of code memory per stub */
#define UC_MAX 256

struct csite {
	struct probe *p;
	int role;
	uint32_t addr;
	int covered;             /* bytes replaced (3..5) */
	uint8_t orig[8];
	int patched;
	int stub;                /* its stub's index */
	uint8_t stub_orig[UC_STUB], cnt_orig[4];  /* what was in code memory and xdata there */
	int stub_len;
	uint32_t last;           /* the counter at the last read */
};

struct ucount {
	struct ulink *l;
	const struct cdb *cdb;
	uint32_t ram, len;
	struct csite s[UC_MAX];
	int ns, installed;
	struct ihx_image ihx;          /* the firmware's .ihx: the code bytes it fills */
};

struct ucount *ucount_new(struct ulink *l, const struct cdb *cdb, const char *ihx, uint32_t ram, uint32_t len,
                          char *err, size_t n)
{
	if (ram > 0xffff || len > 0x10000 - ram || len < UC_STUB) {
		snprintf(err, n, "--target-ram 0x%x:0x%x: not inside the 8051's 64 KiB of code memory and xdata", ram, len);
		return NULL;
	}
	struct ucount *c = calloc(1, sizeof *c);
	if (!c) {
		snprintf(err, n, "out of memory");
		return NULL;
	}
	c->l = l;
	c->cdb = cdb;
	c->ram = ram;
	c->len = len;
	if (ihx_read(&c->ihx, ihx, err, n)) {
		free(c);
		return NULL;
	}
	for (uint32_t a = ram; a < ram + len; a++)
		if (ihx_has(&c->ihx, a)) {
			snprintf(err, n, "--target-ram 0x%x:0x%x: the firmware's code is at 0x%04x", ram, len, a);
			free(c);
			return NULL;
		}
	for (int i = 0; i < cdb->nvars; i++) {
		const struct cdb_var *v = &cdb->vars[i];
		uint32_t sz = v->type.size > 0 ? (uint32_t)v->type.size : 1;
		if ((v->space == CDB_XDATA || v->space == CDB_PDATA) && v->has_addr && v->addr < ram + len &&
		    v->addr + sz > ram) {
			snprintf(err, n, "--target-ram 0x%x:0x%x: the firmware's variable %s is at xdata 0x%04x", ram, len,
			         v->name, v->addr);
			free(c);
			return NULL;
		}
	}
	return c;
}

int ucount_add(struct ucount *c, struct probe *p, int role, uint32_t addr)
{
	if (c->ns == UC_MAX)
		return -1;
	c->s[c->ns++] = (struct csite){ .p = p, .role = role, .addr = addr };
	return 0;
}

int ucount_sites(const struct ucount *c)
{
	int k = 0;
	for (int i = 0; i < c->ns; i++)
		k += c->s[i].patched;
	return k;
}

/* Whether an instruction can run elsewhere unchanged. */
static int movable(const uint8_t *code, const struct rbranch *b)
{
	uint8_t op = code[0];
	if (b->kind == RB_COND || op == 0x80 || (op & 0x1f) == 0x01 || (op & 0x1f) == 0x11 || op == 0x83)
		return 0;   /* relative, in-page, or reading code relative to the pc */
	return 1;
}

/* Whether any instruction of the function around addr jumps or calls into
 * (addr, addr + len): such a site cannot be covered. */
static int target_inside(struct ucount *c, uint32_t addr, int len, const uint8_t *fcode, uint32_t lo, uint32_t hi)
{
	for (uint32_t a = lo; a <= hi;) {
		struct rbranch b;
		if (rarch_mcs51.decode(fcode + (a - lo), hi + 1 - a, a, 0, &b))
			return 1;   /* not decodable to its end: be careful */
		if ((b.kind == RB_COND || b.kind == RB_END || b.links) && b.target > addr && b.target < addr + (uint32_t)len)
			return 1;
		a += (uint32_t)b.len;
	}
	/* a line record inside: another line starts there (a jump target of some sort) */
	for (int i = 0; i < c->cdb->nlines; i++)
		if (c->cdb->lines[i].addr > addr && c->cdb->lines[i].addr < addr + (uint32_t)len)
			return 1;
	return 0;
}

static int stub(struct ucount *c, int i, uint32_t back, const uint8_t *moved, int covered, uint8_t *out)
{
	uint32_t cnt = c->ram + (uint32_t)i * 4;
	int k = 0;
	static const uint8_t push[] = { 0xc0, 0xe0, 0xc0, 0xd0, 0xc0, 0x82, 0xc0, 0x83 };
	static const uint8_t pop[] = { 0xd0, 0x83, 0xd0, 0x82, 0xd0, 0xd0, 0xd0, 0xe0, 0x15, 0x81, 0x15, 0x81 };
	memcpy(out + k, push, sizeof push);
	k += (int)sizeof push;
	out[k++] = 0x90;
	out[k++] = (uint8_t)(cnt >> 8);
	out[k++] = (uint8_t)cnt;
	out[k++] = 0xe0;                 /* movx a,@dptr */
	out[k++] = 0x24; out[k++] = 1;   /* add a,#1 */
	out[k++] = 0xf0;                 /* movx @dptr,a */
	for (int b = 1; b < 4; b++) {
		out[k++] = 0xa3;             /* inc dptr */
		out[k++] = 0xe0;
		out[k++] = 0x34; out[k++] = 0;   /* addc a,#0 */
		out[k++] = 0xf0;
	}
	memcpy(out + k, pop, sizeof pop);
	k += (int)sizeof pop;
	memcpy(out + k, moved, (size_t)covered);
	k += covered;
	k += rarch_mcs51_ljmp((uint16_t)back, out + k);
	return k;
}

/* Why site t cannot be counted, or NULL: its bytes (covered) in *covered. */
static const char *plan(struct ucount *c, struct csite *t, int (*placed)(uint32_t a), int *covered)
{
	const struct cdb_func *f = cdb_func_at(c->cdb, t->addr);
	if (!f)
		return "not inside a function of the debug information";
	uint32_t lo = f->lo, hi = f->hi;
	if (hi - lo + 1 > 4096)
		return "in a function longer than 4 KiB";
	uint8_t code[4096];
	if (ulink_read(c->l, US_ROM, lo, code, hi - lo + 1))
		return "its code could not be read";
	int k = 0;
	while (k < 3) {
		struct rbranch b;
		uint32_t a = t->addr + (uint32_t)k;
		if (a > hi || rarch_mcs51.decode(code + (a - lo), hi + 1 - a, a, 0, &b))
			return "fewer than 3 bytes of instructions before the function ends";
		if (!movable(code + (a - lo), &b))
			return "a pc-relative instruction in the 3 bytes an LCALL takes";
		k += b.len;
	}
	for (uint32_t a = t->addr + 1; a < t->addr + (uint32_t)k; a++)
		if (placed(a))
			return "another probe's breakpoint inside the bytes an LCALL takes";
	for (int i = 0; i < c->ns; i++)
		if (&c->s[i] != t && c->s[i].patched && c->s[i].addr < t->addr + (uint32_t)k &&
		    c->s[i].addr + (uint32_t)c->s[i].covered > t->addr)
			return "overlaps another counted site";
	if (target_inside(c, t->addr, k, code, lo, hi))
		return "a jump lands inside the bytes an LCALL takes";
	memcpy(t->orig, code + (t->addr - lo), (size_t)k);
	*covered = k;
	return NULL;
}

int ucount_install(struct ucount *c, int (*placed)(uint32_t a), struct ucount_fb **fb, int *nfb, char *err, size_t n)
{
	*fb = calloc((size_t)c->ns + 1, sizeof **fb);
	*nfb = 0;
	if (!*fb) {
		snprintf(err, n, "out of memory");
		return -1;
	}
	int nstubs = (int)(c->len / UC_STUB);
	if (nstubs > (int)(c->len / 4))
		nstubs = (int)(c->len / 4);
	int used = 0;
	uint8_t zero[4] = { 0 };
	for (int i = 0; i < c->ns; i++) {
		struct csite *t = &c->s[i];
		int covered = 0;
		const char *why = used < nstubs ? plan(c, t, placed, &covered) : "no room left in --target-ram";
		for (int j = 0; j < i && !why; j++)
			if (c->s[j].patched && c->s[j].addr == t->addr)
				why = "counted twice";
		if (!why) {
			uint8_t code[UC_STUB], call[3] = { 0 };
			uint32_t at = c->ram + (uint32_t)used * UC_STUB;
			int len = stub(c, used, t->addr + (uint32_t)covered, t->orig, covered, code);
			uint8_t patch[8];
			if (ulink_read(c->l, US_ROM, at, t->stub_orig, (size_t)len) ||
			    ulink_read(c->l, US_XRAM, c->ram + (uint32_t)used * 4, t->cnt_orig, 4)) {
				snprintf(err, n, "%s", c->l->err);
				ucount_undo(c, 0x10000);
				return -1;
			}
			t->stub = used;
			t->stub_len = len;
			rarch_mcs51_lcall((uint16_t)at, call);
			memcpy(patch, call, 3);
			for (int k = 3; k < covered; k++)
				patch[k] = 0x00;   /* nop: never run (the stub jumps past them) */
			/* the stub, its counter, then the site: a hit before the site is
			 * written is not counted, never half-written */
			if (ulink_write(c->l, US_ROM, at, code, (size_t)len) ||
			    ulink_write(c->l, US_XRAM, c->ram + (uint32_t)used * 4, zero, 4) ||
			    ulink_write(c->l, US_ROM, t->addr, patch, (size_t)covered)) {
				snprintf(err, n, "%s", c->l->err);
				ucount_undo(c, 0x10000);
				return -1;
			}
			t->covered = covered;
			t->patched = 1;
			t->last = 0;
			used++;
			t->p->in_target = 1;
			continue;
		}
		struct ucount_fb *f = &(*fb)[(*nfb)++];
		f->p = t->p;
		f->role = t->role;
		f->addr = t->addr;
		snprintf(f->why, sizeof f->why, "%s", why);
	}
	c->installed = 1;
	return 0;
}

int ucount_read(struct ucount *c)
{
	/* the counters are one block of xdata: one dump */
	int nstub = 0;
	for (int i = 0; i < c->ns; i++)
		if (c->s[i].patched && c->s[i].stub + 1 > nstub)
			nstub = c->s[i].stub + 1;
	if (!nstub)
		return 0;
	uint8_t b[UC_MAX * 4];
	if (ulink_read(c->l, US_XRAM, c->ram, b, (size_t)nstub * 4))
		return -1;
	for (int i = 0; i < c->ns; i++) {
		struct csite *t = &c->s[i];
		if (!t->patched)
			continue;
		const uint8_t *q = b + t->stub * 4;
		uint32_t v = (uint32_t)q[0] | (uint32_t)q[1] << 8 | (uint32_t)q[2] << 16 | (uint32_t)q[3] << 24;
		t->p->hits += v - t->last;
		t->last = v;
	}
	return 0;
}

int ucount_undo(struct ucount *c, uint32_t pc)
{
	int rc = ucount_read(c);
	/* a pc inside the stubs: stepped out first (a stub is at most
	 * UC_STUB bytes of straight-line code and one jump back), the hit it
	 * was counting read then */
	int k = 0;
	for (; k < UC_STUB && pc >= c->ram && pc < c->ram + c->len && !rc; k++)
		rc = ulink_step(c->l, &pc);
	if (k && !rc)
		rc = ucount_read(c);
	for (int i = 0; i < c->ns; i++) {
		struct csite *t = &c->s[i];
		if (!t->patched)
			continue;
		/* the site, then its stub and counter as they were */
		if (ulink_write(c->l, US_ROM, t->addr, t->orig, (size_t)t->covered) ||
		    ulink_write(c->l, US_ROM, c->ram + (uint32_t)t->stub * UC_STUB, t->stub_orig, (size_t)t->stub_len) ||
		    ulink_write(c->l, US_XRAM, c->ram + (uint32_t)t->stub * 4, t->cnt_orig, 4))
			rc = -1;
		else
			t->patched = 0;
	}
	return rc;
}

void ucount_free(struct ucount *c)
{
	free(c);
}
