/* plan.c — which functions of a module can be patched without a rebuild
 * (instr.h).  Everything here depends on the file only, not on where the
 * program maps it: done once, before the program runs.
 *
 * A function is patched with a 5-byte `jmp` over its first instructions,
 * to a stub that calls the runtime and then runs those instructions
 * relocated (src/arch/x86_64/reloc.c).  So the first whole instructions
 * covering 5 bytes must be relocatable, no branch of the function may land
 * inside them, and a call among them must be the last (the return address
 * it pushes lies after the jump).  Whether they are depends on the bytes
 * alone: the relocator is asked once here at a stand-in address, and again
 * for the real one when the program asks (stubs.c).  A function that cannot
 * take the jump is left out, with the relocator's reason. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "arch/arch.h"
#include "common/clock.h"
#include "arch/reloc.h"
#include "instr/instr.h"
#include "sym/peek.h"
#include "sym/sym.h"

#define STUB_FIXED 15 /* push imm32, call rel32, jmp rel32 */

static int leave(struct instr_plan *p, size_t *cap, uint64_t vaddr, const char *name, const char *why)
{
	if (p->nleft == *cap) {
		size_t c = *cap ? *cap * 2 : 64;
		struct instr_left *v = realloc(p->left, c * sizeof *v);
		if (!v)
			return -1;
		p->left = v;
		*cap = c;
	}
	struct instr_left *l = &p->left[p->nleft++];
	l->vaddr = vaddr;
	snprintf(l->name, sizeof l->name, "%s", name ? name : "");
	snprintf(l->why, sizeof l->why, "%s", why);
	return 0;
}

/* Every direct branch target of the module's code (sorted), and whether
 * each function can be entered by running on from the code before it. */
struct targets {
	struct tg { uint64_t to, from; } *v;
	size_t n, cap;
};

static int tg_cmp(const void *a, const void *b)
{
	const struct tg *x = a, *y = b;
	return x->to < y->to ? -1 : x->to > y->to;
}

/* One linear sweep of each function's bytes up to the next function. */
static int sweep(struct sym_module *sm, const struct sym_fn *f, size_t nf, struct targets *tg, uint8_t *falls)
{
	for (size_t i = 0; i < nf; i++) {
		size_t avail = 0;
		const uint8_t *code = sym_code(sm, f[i].addr, &avail);
		if (!code)
			continue;
		uint64_t end = i + 1 < nf && f[i + 1].addr > f[i].addr ? f[i + 1].addr - f[i].addr : f[i].size;
		if (end > avail)
			end = avail;
		int last_terminal = 1, any = 0;
		size_t off = 0;
		while (off < end) {
			struct arch_brief in;
			size_t k = end - off < ARCH_MAX_INSN ? end - off : ARCH_MAX_INSN;
			if (arch_brief(code + off, k, f[i].addr + off, &in) < 0) {
				off++;
				last_terminal = 1; /* data, not code that runs on */
				continue;
			}
			any = 1;
			uint64_t t = in.target;
			if (t && in.kind != AI_CALL) {
				if (tg->n == tg->cap) {
					size_t c = tg->cap ? tg->cap * 2 : 4096;
					struct tg *v = realloc(tg->v, c * sizeof *v);
					if (!v)
						return -1;
					tg->v = v;
					tg->cap = c;
				}
				tg->v[tg->n++] = (struct tg){ t, f[i].addr + off };
			}
			if (in.kind != AI_NOP)
				last_terminal = in.terminal; /* a call at a function's end: of one that does not return (abort) */
			off += (size_t)in.len;
		}
		/* the next function starts right where this one's code (and its
		 * padding) ends: can the flow run on into it? */
		if (any && i + 1 < nf && f[i].addr + off == f[i + 1].addr && !last_terminal)
			falls[i + 1] = 1;
	}
	if (tg->n)
		qsort(tg->v, tg->n, sizeof *tg->v, tg_cmp);
	return 0;
}

/* A branch (from anywhere) to an address strictly inside (lo, hi): its
 * origin, or 0. */
static uint64_t branch_into(const struct targets *tg, uint64_t lo, uint64_t hi)
{
	size_t a = 0, b = tg->n;
	while (a < b) {
		size_t mid = (a + b) / 2;
		if (tg->v[mid].to <= lo)
			a = mid + 1;
		else
			b = mid;
	}
	return a < tg->n && tg->v[a].to < hi ? tg->v[a].from : 0;
}

/* A short function's extent with the padding after it (nops or int3 up to
 * the next function, never run: the function ends before it), so that a
 * 4-byte `mov; ret` can take a 5-byte jump. */
static uint64_t with_padding(const uint8_t *code, uint64_t size, size_t avail, uint64_t next, uint64_t addr)
{
	uint64_t end = next < avail ? next : avail;
	uint64_t off = size;
	while (off < end && off < 15) {
		struct arch_insn in;
		size_t k = end - off < ARCH_MAX_INSN ? (size_t)(end - off) : ARCH_MAX_INSN;
		if (code[off] == 0xcc) {
			off++;
			continue;
		}
		if (arch_decode(code + off, k, addr + off, &in) < 0 || in.kind != AI_NOP)
			break;
		off += (uint64_t)in.len;
	}
	return off;
}

/* Every branch into (fn, fn + first) made a re-targeted one of function
 * number num (p->rts): each a direct jmp or jcc with a rel32 landing on an
 * instruction the relocation copies (r: the relocation of the first bytes,
 * at a stand-in address).  0, or -1 (p->rts as before: an int3 then). */
static int retarget_plan(struct instr_plan *p, size_t *cap, const struct targets *tg, uint64_t fn, size_t first,
                         uint32_t num, const uint8_t *code, size_t avail, struct reloc_out *r)
{
	if (reloc_build_pic(code, avail, fn, 5, code, first, fn, fn + 0x10000000, r, NULL, 0) || r->displaced != first ||
	    r->displaced > SONDE_INSTR_ORIG)
		return -1;
	size_t n0 = p->nrts;
	/* the targets in (fn, fn + first): tg is sorted by target */
	size_t a = 0, b = tg->n;
	while (a < b) {
		size_t mid = (a + b) / 2;
		if (tg->v[mid].to <= fn)
			a = mid + 1;
		else
			b = mid;
	}
	for (; a < tg->n && tg->v[a].to < fn + first; a++) {
		uint64_t from = tg->v[a].from, into = tg->v[a].to - fn;
		size_t av = 0;
		const uint8_t *bc = sym_code(p->sm, from, &av);
		struct arch_insn in;
		if (!bc || arch_decode(bc, av < ARCH_MAX_INSN ? av : ARCH_MAX_INSN, from, &in) < 0)
			goto no;
		int disp = in.len == 5 && bc[0] == 0xe9 ? 1 : in.len == 6 && bc[0] == 0x0f && (bc[1] & 0xf0) == 0x80 ? 2 : 0;
		if (!disp || (from < fn + first && from + (uint64_t)in.len > fn))
			goto no; /* a short branch (no room for the stub's distance), or one inside the displaced bytes */
		int k;
		for (k = 0; k < r->n_insn && k < RELOC_MAP; k++)
			if (r->src_off[k] == into)
				break;
		if (k == r->n_insn || k == RELOC_MAP || r->dst_off[k] == RELOC_NOT_COPIED)
			goto no;
		if (p->nrts == *cap) {
			size_t c = *cap ? *cap * 2 : 64;
			struct sonde_instr_rt *v = realloc(p->rts, c * sizeof *v);
			if (!v)
				goto no;
			p->rts = v;
			*cap = c;
		}
		struct sonde_instr_rt *t = &p->rts[p->nrts++];
		memset(t, 0, sizeof *t);
		t->at = from;
		t->fn = num;
		t->len = (uint8_t)in.len;
		t->disp = (uint8_t)disp;
		t->into = (uint8_t)into;
		memcpy(t->orig, bc, (size_t)in.len);
	}
	return p->nrts > n0 ? 0 : -1;
no:
	p->nrts = n0;
	return -1;
}

/* Bytes of the whole instructions that cover the first `need`, or 0. */
static size_t first_insns(const uint8_t *code, uint64_t size, uint64_t addr, size_t need)
{
	size_t off = 0;
	while (off < need) {
		struct arch_insn in;
		size_t k = size - off < ARCH_MAX_INSN ? (size_t)(size - off) : ARCH_MAX_INSN;
		if (off >= size || arch_decode(code + off, k, addr + off, &in) < 0)
			return 0;
		off += (size_t)in.len;
	}
	return off <= size ? off : 0;
}

int instr_plan(const char *path, struct instr_plan *p, char *err, size_t n)
{
	uint64_t t0 = clock_mono_ns();
	memset(p, 0, sizeof *p);
	struct stat st;
	if (stat(path, &st) != 0) {
		snprintf(err, n, "cannot read %s (%s)", path, strerror(errno));
		return -1;
	}
	if (strlen(path) >= sizeof p->path) {
		snprintf(err, n, "the path of %s is too long", path);
		return -1;
	}
	snprintf(p->path, sizeof p->path, "%s", path);
	p->dev = (uint64_t)st.st_dev;
	p->ino = (uint64_t)st.st_ino;
	const char *why = NULL;
	p->sm = sym_open(path, &why);
	if (!p->sm) {
		snprintf(err, n, "cannot read %s as ELF (%s)", path, why ? why : "?");
		return -1;
	}
	if (sym_has_section(p->sm, ".note.sonde")) { /* built with sonde-cc: its sleds are the way */
		instr_plan_free(p);
		return 1;
	}
	struct sym_fn *f = NULL;
	ssize_t nf = sym_functions(p->sm, &f);
	if (nf < 0) {
		snprintf(err, n, "out of memory reading the functions of %s", path);
		goto fail;
	}
	p->nfound = (size_t)nf;
	p->fns = calloc(nf ? (size_t)nf : 1, sizeof *p->fns);
	p->fn_size = calloc(nf ? (size_t)nf : 1, sizeof *p->fn_size);
	if (!p->fns || !p->fn_size) {
		snprintf(err, n, "out of memory");
		goto fail;
	}
	struct targets tg = { 0 };
	uint8_t *falls = calloc(nf ? (size_t)nf : 1, 1);
	if (!falls || sweep(p->sm, f, (size_t)nf, &tg, falls)) {
		free(falls);
		free(tg.v);
		snprintf(err, n, "out of memory");
		goto fail;
	}
	size_t lcap = 0, rcap = 0;
	uint64_t code_bytes = SONDE_INSTR_STUBS_AT; /* the common entry and the slots */
	for (ssize_t i = 0; i < nf; i++) {
		char msg[160];
		size_t avail = 0;
		const uint8_t *code = sym_code(p->sm, f[i].addr, &avail);
		uint64_t size = f[i].size;
		if (i + 1 < nf && f[i + 1].addr > f[i].addr && f[i + 1].addr - f[i].addr < size)
			size = f[i + 1].addr - f[i].addr; /* overlapping extents: the next function starts there */
		if (size > avail)
			size = avail;
		if (code && size < 15)
			size = with_padding(code, size, avail, i + 1 < nf ? f[i + 1].addr - f[i].addr : avail, f[i].addr);
		struct reloc_out r;
		const char *reason = NULL;
		size_t first = 0;
		uint64_t from = 0;
		/* what an int3 can stand in for: an entry only calls reach */
		int int3_ok = !f[i].not_entry && !falls[i];
		int retarget = 0;
		if (f[i].not_entry == 2)
			reason = "the program's entry point: the loader jumps to it with argc where a return address would be";
		else if (f[i].not_entry)
			reason = "its call frame information says it is not entered by a call (a fragment of another "
			         "function)";
		else if (!code)
			reason = "its bytes are not in an executable section of the file";
		else if (size < 5)
			reason = "shorter than the 5 bytes a jump takes";
		else if (falls[i])
			reason = "the code before it runs on into it (no return or jump between): it is entered without a call";
		else if (!(first = first_insns(code, size, f[i].addr, 5)))
			reason = "its first instructions do not decode within its bytes";
		else if ((from = branch_into(&tg, f[i].addr, f[i].addr + first)) &&
		         retarget_plan(p, &rcap, &tg, f[i].addr, first, (uint32_t)p->nfns, code, avail, &r) != 0) {
			snprintf(msg, sizeof msg, "a branch at 0x%llx lands inside the %zu bytes a jump would take",
			         (unsigned long long)from, first);
			reason = msg;
		} else if (from) {
			retarget = 1; /* its branches re-targeted into the stub: r is the relocation */
		} else if (reloc_build_pic(code, avail, f[i].addr, 5, code, first, f[i].addr, f[i].addr + 0x10000000, &r, msg,
		                       sizeof msg))
			reason = msg;
		else if (r.displaced > SONDE_INSTR_ORIG)
			reason = "its first instructions are longer than 15 bytes";
		/* Its entry cannot take a jump: an int3 there, if its first
		 * instruction can run elsewhere (exact, a signal per call). */
		int int3 = 0;
		if (reason && int3_ok && code && size >= 1 && (first = first_insns(code, size, f[i].addr, 1)) &&
		    !reloc_build_pic(code, avail, f[i].addr, 1, code, first, f[i].addr, f[i].addr + 0x10000000, &r, NULL, 0)) {
			int3 = 1;
			p->nint3++;
			reason = NULL;
		}
		if (reason) {
			if (leave(p, &lcap, f[i].addr, f[i].name, reason)) {
				free(falls);
				free(tg.v);
				snprintf(err, n, "out of memory");
				goto fail;
			}
			continue;
		}
		struct sonde_instr_fn *o = &p->fns[p->nfns];
		o->vaddr = f[i].addr;
		o->len = (uint8_t)r.displaced;
		o->int3 = (uint8_t)int3;
		o->retarget = (uint8_t)retarget;
		p->nretarget += (size_t)retarget;
		memcpy(o->orig, code, r.displaced);
		p->fn_size[p->nfns] = (uint32_t)(size < UINT32_MAX ? size : UINT32_MAX);
		p->nfns++;
		code_bytes += (STUB_FIXED + r.code_len + 15 + 16) & ~(uint64_t)15; /* + slack: a longer form */
	}
	free(falls);
	free(tg.v);
	free(f);
	f = NULL;
	if (!p->nfound) {
		snprintf(err, n, "%s defines no function sonde can find (no .symtab, .dynsym or .eh_frame)", path);
		goto fail;
	}
	p->code_bytes = code_bytes;
	p->region_size = (code_bytes + 4095) & ~(uint64_t)4095;
	if (sym_peek_load_vaddr(path, &p->load_vaddr) != 0)
		p->load_vaddr = UINT64_MAX; /* no region built before the program runs */
	p->plan_ms = (double)(clock_mono_ns() - t0) / 1e6;
	return 0;
fail:
	free(f);
	instr_plan_free(p);
	return -1;
}

/* Whether function i is a small leaf (instr_plan_timing): a linear sweep of
 * its bytes finds no call and no jump that leaves them (an indirect one may). */
static int small_leaf(const struct instr_plan *p, size_t i)
{
	uint64_t at = p->fns[i].vaddr, size = p->fn_size[i];
	size_t avail = 0;
	const uint8_t *code = sym_code(p->sm, at, &avail);
	if (!code || size > INSTR_LEAF_MAX || size > avail)
		return 0;
	int ended = 0; /* after a ret / jmp: padding (int3) may follow */
	for (uint64_t off = 0; off < size;) {
		struct arch_brief b;
		if (arch_brief(code + off, (size_t)(size - off), at + off, &b) || b.len <= 0)
			return ended;
		if (b.kind == AI_BAD)
			return ended;
		if (b.kind == AI_CALL)
			return 0;
		if ((b.kind == AI_JMP || b.kind == AI_JCC) && (b.target < at || b.target >= at + size))
			return 0;
		ended = b.kind == AI_RET || b.kind == AI_JMP;
		off += (uint64_t)b.len;
	}
	return 1;
}

struct timed_ctx { struct instr_plan *p; int g; };

/* A function sym_find matched (--timed glob g): its number's count cleared. */
static void keep_timed(void *arg, const struct sym_info *si)
{
	struct timed_ctx *c = arg;
	struct instr_plan *p = c->p;
	size_t lo = 0, hi = p->nfns; /* fns are sorted by address */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (p->fns[mid].vaddr < si->start)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < p->nfns && p->fns[lo].vaddr == si->start) {
		p->fns[lo].count = 0;
		p->fns[lo].sw = 0; /* timed for good */
		if (c->g < 64)
			p->timed_matched |= 1ull << c->g;
	}
}

size_t instr_plan_timing(struct instr_plan *p, int timing, const char *const *timed, int ntimed)
{
	for (size_t i = 0; i < p->nfns; i++) {
		p->fns[i].count = (uint8_t)(timing == INSTR_TIME_NONE || (timing == INSTR_TIME_AUTO && small_leaf(p, i)));
		p->fns[i].sw = (uint8_t)(timing == INSTR_TIME_AUTO && !p->fns[i].int3); /* the static choice is its start */
	}
	p->timed_matched = 0;
	for (int g = 0; timing != INSTR_TIME_ALL && g < ntimed && p->sm; g++)
		sym_find(p->sm, timed[g], keep_timed, &(struct timed_ctx){ p, g });
	size_t n = 0, fast = 0, sw = 0;
	for (size_t i = 0; i < p->nfns; i++) {
		n += p->fns[i].count;
		sw += p->fns[i].sw;
		fast += p->fns[i].count && !p->fns[i].int3 && !p->fns[i].sw;
	}
	p->nswitched = sw;
	/* a counted stub's fast path: INSTR_COUNT_HEAD bytes instead of 10, a
	 * switched one's two ways INSTR_SWITCH_HEAD, and the 16-byte alignment
	 * after them */
	uint64_t bytes = p->code_bytes + (uint64_t)fast * ((INSTR_COUNT_HEAD - 10 + 15) & ~15u) +
	                 (uint64_t)sw * ((INSTR_SWITCH_HEAD - 10 + 15) & ~15u);
	p->region_size = (bytes + 4095) & ~(uint64_t)4095;
	return n;
}

void instr_plan_free(struct instr_plan *p)
{
	if (p->sm)
		sym_close(p->sm);
	free(p->fns);
	free(p->fn_size);
	free(p->left);
	free(p->rts);
	memset(p, 0, sizeof *p);
}
