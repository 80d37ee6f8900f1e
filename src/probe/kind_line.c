/* kind_line.c — block probes (line:FILE:LINE, hit counts) and branch probes
 * (branch:FILE:LINE: the conditional jump of that line, taken / not taken,
 * read from the registers after the jump in the post-handler). */
#include "probe/kind.h"
#include "probe/probe.h"

#include "common/json.h"
#include "common/trace_enc.h"
#include "probe/engine.h"
#include "probe/place.h"
#include "probe/ptrace/ptrace.h"
#include "proc/modules.h"
#include "probe/record.h"
#include "probe/resolve.h"
#include "sym/sym.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ldata {
	int naddrs;
	uint64_t taken, not_taken;
	uint64_t *next;         /* branch: fall-through address per site */
	char *insn;             /* branch: the jump's text */
};

int line_data_new(struct probe *p, int naddrs)
{
	struct ldata *d = calloc(1, sizeof *d);
	if (!d)
		return -1;
	d->naddrs = naddrs;
	p->data = d;
	return 0;
}

int branch_data_new(struct probe *p, int naddrs)
{
	if (line_data_new(p, naddrs))
		return -1;
	struct ldata *d = p->data;
	return (d->next = calloc((size_t)(naddrs > 0 ? naddrs : 1), sizeof *d->next)) ? 0 : -1;
}

int branch_site(struct probe *p, int i, uint64_t next, const char *text)
{
	struct ldata *d = p->data;
	if (d->next && i >= 0 && i < d->naddrs)
		d->next[i] = next;
	return text && text[0] ? branch_set_insn(p, text) : 0;
}

int branch_set_insn(struct probe *p, const char *text)
{
	struct ldata *d = p->data;
	if (d->insn)
		return 0;
	return (d->insn = strdup(text)) ? 0 : -1;
}

void branch_set(struct probe *p, uint64_t taken, uint64_t not_taken)
{
	struct ldata *d = p->data;
	d->taken = taken;
	d->not_taken = not_taken;
}

void branch_account(struct probe *p, int taken)
{
	struct ldata *d = p->data;
	p->hits++;
	if (taken)
		d->taken++;
	else
		d->not_taken++;
}

static void line_pre(struct probe *p, struct hit *h, int role)
{
	(void)role;
	p->hits++;
	precorder_hit(h, p, TRP_HIT, TRV_NONE, 0, 0, NULL);
}

static void line_json(struct probe *p, struct json *j)
{
	struct ldata *d = p->data;
	if (d)
		json_int(j, "addresses", d->naddrs);
}

/* The conditional jump that belongs to the line: from the line's address to
 * the end of its function, the first jcc attributed to the same line, else
 * the first jcc before the flow leaves the block. */
int branch_scan(const uint8_t *code, uint64_t addr, uint64_t end, struct sym_module *s, uint64_t bias, int line,
                branch_step_fn step, void *ctx, uint64_t *at)
{
	int have_fb = 0, block_open = 1;
	for (uint64_t a = addr; a < end;) {
		int len, what = step(ctx, code + (a - addr), (size_t)(end - a), a, &len);
		if (what < 0)
			break;
		if (what == BRANCH_COND) {
			const char *file;
			int l = 0;
			if (s && sym_addr_line(s, a - bias, &file, &l) == 0 && l == line) {
				*at = a;
				return 0;
			}
			if (block_open && !have_fb) {
				*at = a;
				have_fb = 1;
			}
		}
		if (what == BRANCH_END)
			block_open = 0;
		a += (uint64_t)len;
	}
	return have_fb ? 0 : -1;
}

/* branch_scan's step on this machine's instructions (arch_decode). */
static int jcc_step(void *ctx, const uint8_t *code, size_t n, uint64_t addr, int *len)
{
	struct arch_insn *in = ctx;
	if (arch_decode(code, n, addr, in))
		return -1;
	*len = in->len;
	return in->kind == AI_JCC ? BRANCH_COND : in->kind == AI_JMP || in->kind == AI_RET ? BRANCH_END : BRANCH_OTHER;
}

int branch_find_jcc(struct probe *p, const struct loc_addr *la, struct arch_insn *out, char *err, size_t n)
{
	uint64_t start = la->fn.start + la->mod->bias, end = start + la->fn.size;
	if (!la->fn.size)
		end = la->addr + 256;
	size_t len = (size_t)(end - la->addr);
	uint8_t *code = malloc(len + 16);
	if (!code || engine_read_code(p->e, la->addr, code, len)) {
		free(code);
		snprintf(err, n, "cannot read the code at 0x%llx", (unsigned long long)la->addr);
		return -1;
	}
	struct arch_insn in;
	uint64_t at;
	int rc = branch_scan(code, la->addr, end, module_sym(la->mod), la->mod->bias, p->sp.line, jcc_step, &in, &at);
	if (!rc)
		rc = arch_decode(code + (at - la->addr), (size_t)(end - at), at, out);
	free(code);
	if (rc)
		snprintf(err, n, "no conditional jump at %s:%d (the condition may have been compiled "
		         "without a branch, e.g. into cmov)", p->sp.file ? p->sp.file : "?", p->sp.line);
	return rc ? -1 : 0;
}

static void branch_post(struct probe *p, struct hit *h, int role)
{
	struct ldata *d = p->data;
	int taken = arch_pc(h->regs) != d->next[role];
	branch_account(p, taken);
	precorder_hit(h, p, TRP_HIT, TRV_STR, 0, 0, taken ? "taken" : "not_taken");
}

static void branch_json(struct probe *p, struct json *j)
{
	struct ldata *d = p->data;
	if (!d)
		return;
	json_uint(j, "taken", d->taken);
	json_uint(j, "not_taken", d->not_taken);
	json_str(j, "instruction", d->insn);
}

static void branch_table(struct probe *p, FILE *f)
{
	struct ldata *d = p->data;
	if (d)
		fprintf(f, "taken %llu, not taken %llu (%s)", (unsigned long long)d->taken,
		        (unsigned long long)d->not_taken, d->insn ? d->insn : "");
}

static void fr(struct probe *p)
{
	struct ldata *d = p->data;
	if (d) {
		free(d->next);
		free(d->insn);
		free(d);
	}
}

const struct kind_ops kind_line = {
	.name = "line", .needs_location = 1, .setup = kind_place, .pre = line_pre,
	.json = line_json, .free = fr,
};

const struct kind_ops kind_branch = {
	.name = "branch", .needs_location = 1, .setup = kind_place, .post = branch_post,
	.json = branch_json, .table = branch_table, .free = fr,
};
