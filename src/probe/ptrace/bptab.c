/* bptab.c — the breakpoint table: one entry per probed address (several
 * probes may share it), kept sorted by address for lookup on every trap;
 * and the target's code read through it, as it was before our breakpoints. */
#include "probe/ptrace/bptab.h"

#include "proc/target.h"

#include <stdlib.h>
#include <string.h>

static int lower(struct bptab *t, uint64_t addr)
{
	int lo = 0, hi = t->n;
	while (lo < hi) {
		int mid = (lo + hi) / 2;
		if (t->h[mid]->addr < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

struct bp *bptab_find(struct bptab *t, uint64_t addr)
{
	int i = lower(t, addr);
	return i < t->n && t->h[i]->addr == addr ? t->h[i] : NULL;
}

struct bp *bptab_add(struct bptab *t, uint64_t addr)
{
	int i = lower(t, addr);
	if (i < t->n && t->h[i]->addr == addr)
		return t->h[i];
	if (t->n == t->cap) {
		int cap = t->cap ? t->cap * 2 : 64;
		struct bp **v = realloc(t->h, (size_t)cap * sizeof *v);
		if (!v)
			return NULL;
		t->h = v;
		t->cap = cap;
	}
	struct bp *b = calloc(1, sizeof *b);
	if (!b)
		return NULL;
	b->addr = addr;
	memmove(&t->h[i + 1], &t->h[i], (size_t)(t->n - i) * sizeof *t->h);
	t->h[i] = b;
	t->n++;
	return b;
}

void bptab_remove(struct bptab *t, uint64_t addr)
{
	int i = lower(t, addr);
	if (i < t->n && t->h[i]->addr == addr) {
		free(t->h[i]->sites);
		free(t->h[i]);
		memmove(&t->h[i], &t->h[i + 1], (size_t)(t->n - i - 1) * sizeof *t->h);
		t->n--;
	}
}

struct bp *bptab_next(struct bptab *t, int *it)
{
	return *it < t->n ? t->h[(*it)++] : NULL;
}

void bptab_free(struct bptab *t)
{
	for (int i = 0; i < t->n; i++) {
		free(t->h[i]->sites);
		free(t->h[i]);
	}
	free(t->h);
	memset(t, 0, sizeof *t);
}

int bptab_read_code(struct bptab *t, struct target *tg, uint64_t addr, void *buf, size_t n)
{
	if (target_read(tg, addr, buf, n))
		return -1;
	int it = 0;
	struct bp *b;
	while ((b = bptab_next(t, &it)))
		if (b->inserted && b->addr + ARCH_BP_LEN > addr && b->addr < addr + n)
			for (int k = 0; k < ARCH_BP_LEN; k++)
				if (b->addr + (uint64_t)k >= addr && b->addr + (uint64_t)k < addr + n)
					((uint8_t *)buf)[b->addr + (uint64_t)k - addr] = b->orig[k];
	return 0;
}
