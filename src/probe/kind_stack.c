/* kind_stack.c — stack probes (stack:LOCATION): at each hit the stopped
 * thread's call stack is unwound through the DWARF CFI of the program's
 * objects (attach/unwind.h, from the registers of the stop) and counted;
 * the output lists the distinct stacks, most hits first, their frames named
 * by the symbolizer.  Bounded: STACK_FRAMES frames a stack (deeper ones are
 * cut and counted as truncated), STACK_DISTINCT distinct stacks (hits of
 * further ones are counted as other).  On the ptrace engine the stopped
 * thread is unwound here; on the agent the program copies the registers and
 * the stack at each hit and sonde unwinds the copies (probe/agent/agent_stack.c)
 * into the same table (stack_data_new, stack_account, stack_set_agent). */
#include "probe/kind.h"
#include "probe/probe.h"

#include "attach/unwind.h"
#include "common/json.h"
#include "common/trace_enc.h"
#include "probe/engine.h"
#include "probe/place.h"
#include "probe/ptrace/ptrace.h"
#include "probe/record.h"
#include "probe/resolve.h"
#include "proc/target.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/user.h>

#define STACK_FRAMES 32
#define STACK_DISTINCT 256

struct ustack {
	uint64_t count, hash;
	uint64_t copied;     /* of count, the agent's stacks unwound here from a copy (the others it walked) */
	int n;
	uint64_t pc[STACK_FRAMES]; /* innermost first: the probed pc, then return addresses */
};

struct sdata {
	struct unwinder *u;
	struct ustack *v;
	int nv;
	uint64_t other;      /* hits of stacks beyond the first STACK_DISTINCT */
	uint64_t truncated;  /* hits whose stack was deeper than STACK_FRAMES */
	uint64_t unwound_none; /* hits where nothing past the probed pc was found */
	/* The agent's (stack_set_agent): stacks it dropped, the cost of those it copied; and the
	 * copies unwound here (stack_account with a stack). */
	int agent;
	uint64_t lost, copied, copy_ns, copy_n;
	uint32_t copy_bytes;
	uint64_t walked, walk_ns, walk_n; /* stacks the agent walked with the unwind table (no copy) */
	stack_namer name;    /* frames named by it, not by the program's modules (the kernel's: kallsyms) */
};

static void count(struct sdata *d, const uint64_t *pc, int n, int copied);

static struct sdata *data_new(struct probe *p, char *err, size_t n)
{
	struct sdata *d = calloc(1, sizeof *d);
	if (!d || !(d->v = calloc(STACK_DISTINCT, sizeof *d->v))) {
		free(d);
		snprintf(err, n, "out of memory");
		return NULL;
	}
	p->data = d;
	return d;
}

int stack_data_new(struct probe *p, char *err, size_t n)
{
	struct sdata *d = data_new(p, err, n);
	if (!d || !(d->u = unwinder_new(p->e->t.pid, err, n)))
		return -1;
	return 0;
}

int stack_data_new_named(struct probe *p, stack_namer name, char *err, size_t n)
{
	struct sdata *d = data_new(p, err, n);
	if (!d)
		return -1;
	d->name = name;
	return 0;
}

void stack_account_pcs(struct probe *p, const uint64_t *pc, int n)
{
	if (n >= 1)
		count(p->data, pc, n, 0);
}

static uint64_t hash_of(const uint64_t *pc, int n)
{
	uint64_t h = 1469598103934665603ull;
	for (int i = 0; i < n; i++)
		h = (h ^ pc[i]) * 1099511628211ull;
	return h;
}

void stack_account(struct probe *p, pid_t tid, const struct user_regs_struct *regs, const void *stack,
                   uint64_t stack_base, size_t stack_n)
{
	struct sdata *d = p->data;
	if (stack)
		d->copied++;
	uint64_t pc[STACK_FRAMES + 1];
	int n = stack ? unwinder_stack_copy(d->u, tid, regs, stack, stack_base, stack_n, pc, STACK_FRAMES + 1)
	              : unwinder_stack(d->u, tid, regs, pc, STACK_FRAMES + 1);
	if (n < 1) {
		pc[0] = regs->rip;
		n = 1;
	}
	count(d, pc, n, stack != NULL);
}

void stack_account_frames(struct probe *p, const uint64_t *pc, int n)
{
	struct sdata *d = p->data;
	if (n < 1)
		return;
	d->walked++;
	count(d, pc, n, 0);
}

void stack_set_walked(struct probe *p, uint64_t walks, uint64_t walk_ns)
{
	struct sdata *d = p->data;
	d->walk_n = walks;
	d->walk_ns = walk_ns;
}

/* One hit's stack of n frames: counted with the others the same. */
static void count(struct sdata *d, const uint64_t *pc, int n, int copied)
{
	if (n == 1)
		d->unwound_none++;
	if (n > STACK_FRAMES) {
		n = STACK_FRAMES;
		d->truncated++;
	}
	uint64_t hs = hash_of(pc, n);
	for (int i = 0; i < d->nv; i++) {
		struct ustack *s = &d->v[i];
		if (s->hash == hs && s->n == n && !memcmp(s->pc, pc, (size_t)n * sizeof *pc)) {
			s->count++;
			s->copied += copied != 0;
			return;
		}
	}
	if (d->nv == STACK_DISTINCT) {
		d->other++;
		return;
	}
	struct ustack *s = &d->v[d->nv++];
	s->count = 1;
	s->copied = copied != 0;
	s->hash = hs;
	s->n = n;
	memcpy(s->pc, pc, (size_t)n * sizeof *pc);
}

uint64_t stack_set_agent(struct probe *p, uint64_t lost, uint64_t copies, uint64_t copy_ns, uint32_t bytes)
{
	struct sdata *d = p->data;
	d->agent = 1;
	d->lost = lost;
	d->copy_n = copies;
	d->copy_ns = copy_ns;
	d->copy_bytes = bytes;
	return d->copied + d->walked + d->lost;
}

static void pre(struct probe *p, struct hit *h, int role)
{
	(void)role;
	p->hits++;
	precorder_hit(h, p, TRP_HIT, TRV_NONE, 0, 0, NULL);
	stack_account(p, h->th->tid, h->regs, NULL, 0, 0);
}

static int by_count(const void *a, const void *b)
{
	const struct ustack *x = *(const struct ustack *const *)a, *y = *(const struct ustack *const *)b;
	return x->count < y->count ? 1 : x->count > y->count ? -1 : 0;
}

/* The stacks, most hits first (NULL when none or out of memory): free it. */
static const struct ustack **sorted(struct sdata *d)
{
	if (!d->nv)
		return NULL;
	const struct ustack **o = malloc((size_t)d->nv * sizeof *o);
	if (!o)
		return NULL;
	for (int i = 0; i < d->nv; i++)
		o[i] = &d->v[i];
	qsort(o, (size_t)d->nv, sizeof *o, by_count);
	return o;
}

/* Frame i of a stack: its name, and its source line if known (0 if not).
 * A caller's frame is named by its call instruction (the byte before the
 * return address), as gdb's bt does: a call that ends a function returns
 * past it. */
static int frame_of(struct probe *p, const struct ustack *s, int i, char *name, size_t nn, const char **file)
{
	uint64_t at = i ? s->pc[i] - 1 : s->pc[i];
	int line = 0;
	const struct sdata *d = p->data;
	if (d->name) {
		d->name(at, name, nn);
		return 0;
	}
	/* a probe of an image the program left by exec: that image's modules */
	struct modules *mods = p->image > 0 && p->image <= p->e->nold_mods ? &p->e->old_mods[p->image - 1] : &p->e->mods;
	resolve_name_in(mods, at, name, nn);
	if (resolve_line_in(mods, at, file, &line))
		return 0;
	return line;
}

static void json(struct probe *p, struct json *j)
{
	struct sdata *d = p->data;
	if (!d)
		return;
	json_int(j, "distinct", d->nv);
	json_uint(j, "other", d->other);
	json_uint(j, "truncated", d->truncated);
	json_uint(j, "unwound_none", d->unwound_none);
	json_int(j, "max_frames", STACK_FRAMES);
	json_uint(j, "lost", d->lost);
	if (d->agent) {
		json_int(j, "copy_bytes", d->copy_bytes);
		json_uint(j, "copied", d->copied);
		json_uint(j, "copy_ns_per_hit", d->copy_n ? d->copy_ns / d->copy_n : 0);
		json_uint(j, "walked", d->walked);
		json_uint(j, "walk_ns_per_hit", d->walk_n ? d->walk_ns / d->walk_n : 0);
	}
	json_arr_begin(j, "stacks");
	const struct ustack **o = sorted(d);
	for (int k = 0; o && k < d->nv; k++) {
		json_obj_begin(j, NULL);
		json_uint(j, "count", o[k]->count);
		if (d->agent)
			json_uint(j, "copied", o[k]->copied);
		json_arr_begin(j, "frames");
		for (int i = 0; i < o[k]->n; i++) {
			char name[512], addr[32];
			const char *file = NULL;
			int line = frame_of(p, o[k], i, name, sizeof name, &file);
			json_obj_begin(j, NULL);
			json_str(j, "name", name);
			snprintf(addr, sizeof addr, "0x%llx", (unsigned long long)o[k]->pc[i]);
			json_str(j, "addr", addr);
			if (line) {
				json_str(j, "file", file);
				json_int(j, "line", line);
			} else {
				json_null(j, "file");
				json_null(j, "line");
			}
			json_obj_end(j);
		}
		json_arr_end(j);
		json_obj_end(j);
	}
	json_arr_end(j);
	free(o);
}

static void table(struct probe *p, FILE *f)
{
	struct sdata *d = p->data;
	if (!d)
		return;
	fprintf(f, "%d distinct stack%s", d->nv, d->nv == 1 ? "" : "s");
	if (d->other)
		fprintf(f, ", other %llu", (unsigned long long)d->other);
	if (d->truncated)
		fprintf(f, ", %llu truncated at %d frames", (unsigned long long)d->truncated, STACK_FRAMES);
	if (d->unwound_none)
		fprintf(f, ", %llu not unwound", (unsigned long long)d->unwound_none);
	if (d->lost)
		fprintf(f, ", %llu lost (the agent's ring full)", (unsigned long long)d->lost);
	if (d->agent && d->copied && d->walked)
		fprintf(f, ", %llu copied (unwound by sonde)", (unsigned long long)d->copied);
}

/* Under the probe's row: each stack, its count then its frames one a line. */
static void table_after(struct probe *p, FILE *f)
{
	struct sdata *d = p->data;
	const struct ustack **o = d ? sorted(d) : NULL;
	for (int k = 0; o && k < d->nv; k++)
		for (int i = 0; i < o[k]->n; i++) {
			char name[512], cnt[32] = "";
			const char *file = NULL;
			int line = frame_of(p, o[k], i, name, sizeof name, &file);
			if (!i)
				snprintf(cnt, sizeof cnt, "%llu", (unsigned long long)o[k]->count);
			if (line)
				fprintf(f, "      %10s  %s (%s:%d)\n", cnt, name, file, line);
			else
				fprintf(f, "      %10s  %s\n", cnt, name);
		}
	if (d && d->other)
		fprintf(f, "      %10llu  other\n", (unsigned long long)d->other);
	free(o);
}

static void fr(struct probe *p)
{
	struct sdata *d = p->data;
	if (!d)
		return;
	unwinder_free(d->u);
	free(d->v);
	free(d);
}

const struct kind_ops kind_stack = {
	.name = "stack", .needs_location = 1, .setup = kind_place, .pre = pre,
	.json = json, .table = table, .table_after = table_after, .free = fr,
};
