/* scratch.c — out-of-line slots: executable pages created inside the target
 * by an injected mmap system call, placed within reach of the probed code's
 * RIP-relative operands, and handed out one slot per displaced instruction. */
#include "probe/ptrace/scratch.h"

#include "probe/ptrace/bptab.h"
#include "proc/target.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/wait.h>

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

#define REGION_SIZE (64 * 1024)
#define REACH (1ull << 30)

/* Run a system call in a stopped thread. */
static int inject_syscall(struct target *t, struct bptab *bps, struct thr *th, long nr, const uint64_t args[6],
                          int64_t *ret)
{
	arch_regs saved, r;
	if (target_getregs(th->tid, &saved))
		return -1;
	uint64_t pc = t->entry ? t->entry : arch_pc(&saved);
	uint8_t old[ARCH_SYSCALL_CODE_LEN];
	if (bptab_read_code(bps, t, pc, old, sizeof old) ||
	    target_write(t, pc, arch_syscall_code, sizeof arch_syscall_code))
		return -1;
	r = saved;
	arch_syscall_regs(&r, pc, nr, args);
	int rc = -1;
	if (target_setregs(th->tid, &r) == 0 && ptrace(PTRACE_CONT, th->tid, 0, 0) == 0) {
		for (;;) {
			int st;
			pid_t w = waitpid(th->tid, &st, __WALL);
			if (w < 0 && errno == EINTR)
				continue;
			if (w < 0 || WIFEXITED(st) || WIFSIGNALED(st)) {
				if (w == t->pid || th->tid == t->pid) {
					t->gone = 1;
					t->status = st;
				}
				return -1;
			}
			int ev = st >> 16, sig = WSTOPSIG(st);
			if (!ev && sig == SIGTRAP) {
				if (target_getregs(th->tid, &r) == 0) {
					*ret = arch_syscall_result(&r);
					rc = 0;
				}
				break;
			}
			if (!ev && sig != SIGTRAP && !th->pending_sig)
				th->pending_sig = sig; /* deliver later */
			ptrace(PTRACE_CONT, th->tid, 0, 0);
		}
	}
	/* Restore the code (keeping any breakpoint that was there) and registers. */
	struct bp *b = NULL;
	for (uint64_t a = pc; a < pc + sizeof old; a++)
		if ((b = bptab_find(bps, a)) && b->inserted)
			memcpy(old + (a - pc), arch_bp_insn, ARCH_BP_LEN);
	target_write(t, pc, old, sizeof old);
	target_setregs(th->tid, &saved);
	th->stopped = 1;
	return rc;
}

static struct thr *any_stopped(struct target *t)
{
	for (int i = 0; i < t->nthr; i++)
		if (t->thr[i].stopped)
			return &t->thr[i];
	return NULL;
}

/* A free address range of REGION_SIZE within REACH of near, from the maps. */
static uint64_t find_gap(pid_t pid, uint64_t near)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return 0;
	uint64_t prev_hi = 0x10000, best = 0, bestd = ~0ull;
	char line[512];
	for (int last = 0; !last;) {
		unsigned long lo, hi;
		if (!fgets(line, sizeof line, f)) {
			last = 1;
			lo = 0x7ffffffff000ul;
			hi = lo;
		} else if (sscanf(line, "%lx-%lx", &lo, &hi) != 2) {
			continue;
		}
		if (lo > prev_hi && lo - prev_hi >= REGION_SIZE + 0x2000) {
			/* Gap [prev_hi+guard, lo-guard): take the end nearest to `near`. */
			uint64_t a1 = prev_hi + 0x1000, a2 = lo - 0x1000 - REGION_SIZE;
			uint64_t c = near < a1 ? a1 : near > a2 ? a2 : near;
			uint64_t d = c > near ? c - near : near - c;
			if (d < bestd) {
				bestd = d;
				best = c & ~0xfffull;
			}
		}
		if (hi > prev_hi)
			prev_hi = hi;
	}
	fclose(f);
	return bestd < REACH ? best : 0;
}

int scratch_slot(struct scratch *s, struct target *t, struct bptab *bps, struct bp *b, uint64_t near,
                 uint64_t *slot, char *err, size_t n)
{
	for (int i = 0; i < s->n; i++) {
		struct scratch_region *r = &s->r[i];
		uint64_t d = r->base > near ? r->base - near : near - r->base;
		if (d >= REACH || r->used == r->nslots)
			continue;
		for (int k = 0; k < r->nslots; k++)
			if (!r->owner[k]) {
				r->owner[k] = b;
				r->used++;
				*slot = r->base + (uint64_t)k * ARCH_SLOT_SIZE;
				return 0;
			}
	}
	if (s->n == (int)(sizeof s->r / sizeof s->r[0])) {
		snprintf(err, n, "cannot create a scratch page (too many)");
		return -1;
	}
	struct thr *th = any_stopped(t);
	uint64_t at = find_gap(t->pid, near);
	if (!th || !at) {
		snprintf(err, n, "cannot create a scratch page (%s)", th ? "no free address range near the code"
		                                                        : "no stopped thread");
		return -1;
	}
	uint64_t args[6] = { at, REGION_SIZE, PROT_READ | PROT_EXEC,
	                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, (uint64_t)-1, 0 };
	int64_t ret = 0;
	if (inject_syscall(t, bps, th, ARCH_NR_MMAP, args, &ret) || (ret < 0 && ret > -4096)) {
		snprintf(err, n, "cannot create a scratch page (mmap in the target failed: %s)",
		         ret < 0 && ret > -4096 ? strerror((int)-ret) : "injection failed");
		return -1;
	}
	struct scratch_region *r = &s->r[s->n];
	r->base = (uint64_t)ret;
	r->size = REGION_SIZE;
	r->nslots = REGION_SIZE / ARCH_SLOT_SIZE;
	r->owner = calloc((size_t)r->nslots, sizeof *r->owner);
	if (!r->owner) {
		snprintf(err, n, "out of memory");
		return -1;
	}
	s->n++;
	return scratch_slot(s, t, bps, b, near, slot, err, n);
}

void scratch_release(struct scratch *s, uint64_t slot)
{
	for (int i = 0; i < s->n; i++) {
		struct scratch_region *r = &s->r[i];
		if (slot >= r->base && slot < r->base + r->size) {
			int k = (int)((slot - r->base) / ARCH_SLOT_SIZE);
			if (r->owner[k]) {
				r->owner[k] = NULL;
				r->used--;
			}
		}
	}
}

struct bp *scratch_owner(struct scratch *s, uint64_t pc, uint64_t *slot)
{
	for (int i = 0; i < s->n; i++) {
		struct scratch_region *r = &s->r[i];
		if (pc >= r->base && pc < r->base + r->size) {
			int k = (int)((pc - r->base) / ARCH_SLOT_SIZE);
			*slot = r->base + (uint64_t)k * ARCH_SLOT_SIZE;
			return r->owner[k];
		}
	}
	return NULL;
}

void scratch_unmap_all(struct scratch *s, struct target *t, struct bptab *bps)
{
	struct thr *th = any_stopped(t);
	for (int i = 0; i < s->n; i++) {
		struct scratch_region *r = &s->r[i];
		if (th && !t->gone) {
			uint64_t args[6] = { r->base, r->size, 0, 0, 0, 0 };
			int64_t ret;
			inject_syscall(t, bps, th, ARCH_NR_MUNMAP, args, &ret);
		}
		free(r->owner);
	}
	s->n = 0;
}
