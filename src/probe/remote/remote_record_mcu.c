/* remote_record_mcu.c — `sonde record --target` timed inside a Cortex-M3/M4
 * or RV32 target (declared in remote_run.h): each function whose entry can
 * be patched (code in RAM, a site the trampoline builder takes, --target-ram
 * given) gets an entry trampoline in that RAM (t32_rec_entry,
 * src/arch/arm/remote_tramp.c; rv32_rec_entry, src/arch/riscv/) that reads
 * the target's clock, pushes a shadow frame, writes an event into a ring in
 * target RAM and points lr / ra at the one exit trampoline, which writes
 * the return's event and returns to the saved lr / ra.
 * No stop per call: sonde drains the ring at every stop the target makes
 * (so that the events of functions kept on breakpoints, remote_record.c,
 * stay in time order), at the ring writer's breakpoint when the ring is
 * full (lossless), at the semihosting exit and when it leaves; the events go
 * to remote_record.c's one writer.  Layout of --target-ram: the control
 * block (arch/emit.h), the shadow stack, the ring, then from a 4 KiB
 * boundary the code (a store must not hit a page of translated code on
 * QEMU).  See docs/REMOTE.md. */
#include "arch/arm/remote_tramp.h"
#include "arch/riscv/remote_tramp.h"
#include "arch/emit.h"
#include "probe/engine.h"
#include "probe/remote/remote_count_mcu.h"
#include "probe/remote/remote_run.h"

#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FRAMES 256              /* shadow frames: deeper calls are not hooked (counted as lost) */
#define CODE_ALIGN 4096ull
#define STEPS_OUT 256           /* single steps that bring the pc out of the trampolines, at most */
#define MIN_EVENTS 4

struct rrfn {
	int id;
	uint64_t addr;
	uint8_t orig[16];
	int olen;
	uint64_t tramp;
};

struct rrm {
	int kind;                   /* mcu_count_kind's answer: 1 the target can time calls itself */
	const char *kind_why;
	int asked;
	struct rrfn *f;
	int n;
	const char **why;           /* by function id: why it is on breakpoints (NULL: in the target) */
	int nwhy;
	int installed, undone;
	uint64_t ctl, code, code_end, put, full, ring, ring_end;
	uint8_t *jmp;
	uint64_t *exits;
	int nexits;
	uint64_t events, fills, lost;
	int final, complete;
};

static struct rrm *get(struct rsess *s)
{
	if (!s->recmcu)
		s->recmcu = calloc(1, sizeof *s->recmcu);
	return s->recmcu;
}

static void set_why(struct rrm *k, int id, const char *why)
{
	if (id >= k->nwhy) {
		int m = id + 64;
		const char **v = realloc(k->why, (size_t)m * sizeof *v);
		if (!v)
			return;
		for (int i = k->nwhy; i < m; i++)
			v[i] = NULL;
		k->why = v;
		k->nwhy = m;
	}
	k->why[id] = why;
}

int rrm_add(struct rsess *s, int id, uint64_t addr)
{
	struct rrm *k = get(s);
	const char *why = NULL;
	if (!k)
		return -1;
	if (!k->asked) {
		k->asked = 1;
		const char *v = getenv("SONDE_REMOTE_IN_TARGET");
		k->kind = v && !strcmp(v, "0") ? -1 : mcu_count_kind(s, &k->kind_why);
		if (v && !strcmp(v, "0"))
			k->kind_why = "SONDE_REMOTE_IN_TARGET=0";
	}
	if (k->kind <= 0) {
		set_why(k, id, k->kind < 0 ? k->kind_why : "not a microcontroller");
		return 1;
	}
	struct rrfn t = { .id = id, .addr = addr };
	if (id > (s->c.arch->elf_machine == EM_ARM ? 0xffff : 0x7ff)) {
		set_why(k, id, "past the function ids a trampoline holds (65535 on Thumb-2, 2047 on RV32: choose with -F)");
		return 1;
	}
	if (mcu_site(s, addr, t.orig, &t.olen, &why)) {
		set_why(k, id, why);
		return 1;
	}
	struct rrfn *v = realloc(k->f, (size_t)(k->n + 1) * sizeof *v);
	if (!v)
		return -1;
	k->f = v;
	v[k->n++] = t;
	set_why(k, id, NULL);
	return 0;
}

const char *rrm_path(const struct rsess *s, int id)
{
	const struct rrm *k = s->recmcu;
	if (k && k->installed && id < k->nwhy && !k->why[id])
		return NULL;
	if (!k || id >= k->nwhy || !k->why[id])
		return "not timed in the target";
	return k->why[id];
}

/* Every candidate left to breakpoints (the caller adds their func probes),
 * after those already in *fb. */
static int give_back(struct rrm *k, const char *why, uint64_t *fb, int *nfb)
{
	for (int i = 0; i < k->n; i++) {
		fb[(*nfb)++] = k->f[i].addr;
		set_why(k, k->f[i].id, why);
	}
	k->n = 0;
	return 0;
}

static void put32(uint8_t *b, uint64_t v)
{
	for (int i = 0; i < 4; i++)
		b[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get32(const uint8_t *b)
{
	return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

int rrm_install(struct rsess *s, uint64_t **fb, int *nfb, char *err, size_t n)
{
	struct rrm *k = s->recmcu;
	*fb = NULL;
	*nfb = 0;
	if (!k || !k->n)
		return 0;
	if (!(*fb = malloc((size_t)k->n * sizeof **fb))) {
		snprintf(err, n, "out of memory");
		return -1;
	}
	uint64_t pc = 0;
	if (remote_reg(&s->c, s->c.arch->pc, &pc)) {
		snprintf(err, n, "%s", s->c.err);
		return -1;
	}
	struct rec_addrs a;
	if (rrec_clock_addr(s, &a.clock))
		return give_back(k, "the clock cannot be read by the target", *fb, nfb);
	uint64_t ram = (s->ram + 7) & ~7ull, end = s->ram + s->ram_len;
	int arm = s->c.arch->elf_machine == EM_ARM;
	size_t est = arm ? (size_t)k->n * T32_REC_ENTRY_MAX + T32_REC_EXIT_MAX + T32_REC_PUT_MAX
	                 : (size_t)k->n * RV32_REC_ENTRY_MAX + RV32_REC_EXIT_MAX + RV32_REC_PUT_MAX;
	uint64_t sbase = ram + REC_CTL_LEN, send = sbase + (uint64_t)FRAMES * REC_FRAME;
	uint64_t code = end > est ? (end - est) & ~(CODE_ALIGN - 1) : 0;
	if (code < send + MIN_EVENTS * REC_EVENT)
		return give_back(k, "no room in --target-ram (control block, 256 shadow frames, the ring, then from a 4 KiB "
		                 "boundary the trampolines)", *fb, nfb);
	uint64_t events = (code - send) / REC_EVENT;
	const char *env = getenv("SONDE_REMOTE_RING");
	if (env && strtoull(env, NULL, 0) >= MIN_EVENTS && strtoull(env, NULL, 0) < events)
		events = strtoull(env, NULL, 0);
	a.ctl = ram;
	a.exit = code;
	uint8_t *buf = calloc(1, est);
	k->jmp = malloc((size_t)k->n * MCU_JUMP_LEN);
	if (!buf || !k->jmp) {
		free(buf);
		snprintf(err, n, "out of memory");
		return -1;
	}
	const char *why = NULL;
	size_t at = 0;
	a.put = code;   /* for the exit's size; built again once the writer's place is known */
	int m = arm ? t32_rec_exit(buf, est, a.exit, &a) : rv32_rec_exit(buf, est, a.exit, &a);
	at = ((size_t)(m > 0 ? m : 0) + 3) & ~(size_t)3;
	a.put = code + at;
	uint64_t full = 0;
	m = arm ? t32_rec_put(buf + at, est - at, a.put, &full) : rv32_rec_put(buf + at, est - at, a.put, &full);
	at += ((size_t)m + 3) & ~(size_t)3;
	if (arm)
		t32_rec_exit(buf, est, a.exit, &a);
	else
		rv32_rec_exit(buf, est, a.exit, &a);
	/* A function whose trampoline cannot be built goes to breakpoints alone. */
	int keep = 0;
	for (int i = 0; i < k->n; i++) {
		struct rrfn *f = &k->f[i];
		const char *w = NULL;
		f->tramp = code + at;
		m = -1;
		if (pc > f->addr && pc < f->addr + (uint64_t)f->olen)
			w = "the pc is inside its displaced instructions";
		else if ((m = arm ? t32_rec_entry(buf + at, est - at, f->tramp, f->addr, f->orig, f->olen, (unsigned)f->id, &a, &w)
		                  : rv32_rec_entry(buf + at, est - at, f->tramp, f->addr, f->orig, f->olen, (unsigned)f->id, &a,
		                                   &w)) >= 0 &&
		         (arm ? t32_branch(k->jmp + MCU_JUMP_LEN * keep, f->addr, f->tramp)
		              : rv32_branch(k->jmp + MCU_JUMP_LEN * keep, f->addr, f->tramp)))
			w = arm ? "--target-ram is out of a b.w's reach (±16 MiB) of the function"
			        : "--target-ram is out of a jal's reach (±1 MiB) of the function";
		if (w) {
			(*fb)[(*nfb)++] = f->addr;
			set_why(k, f->id, w);
			continue;
		}
		k->f[keep++] = *f;
		at += ((size_t)m + 3) & ~(size_t)3;
	}
	k->n = keep;
	if (!keep) {
		free(buf);
		return 0;
	}
	if (!why && code + at > end)
		why = "no room for the trampolines in --target-ram";
	uint8_t ctl[REC_CTL_LEN] = { 0 };
	put32(ctl + REC_CTL_SSP, sbase);
	put32(ctl + REC_CTL_SEND, send);
	put32(ctl + REC_CTL_WP, send);
	put32(ctl + REC_CTL_REND, send + events * REC_EVENT);
	put32(ctl + REC_CTL_SBASE, sbase);
	put32(ctl + REC_CTL_RBASE, send);
	if (!why && (remote_write(&s->c, code, buf, at) || remote_write(&s->c, ram, ctl, sizeof ctl)))
		why = "the stub refused writes to --target-ram";
	free(buf);
	if (why)
		return give_back(k, why, *fb, nfb);
	/* The sites: each one's b.w written with M; a refusal puts back those written. */
	for (int i = 0; i < k->n; i++) {
		if (remote_write(&s->c, k->f[i].addr, k->jmp + MCU_JUMP_LEN * i, MCU_JUMP_LEN) == 0)
			continue;
		while (i-- > 0)
			if (remote_write(&s->c, k->f[i].addr, k->f[i].orig, MCU_JUMP_LEN)) {
				snprintf(err, n, "%s", s->c.err);
				return -1;
			}
		return give_back(k, "the stub refused writes to the program's code", *fb, nfb);
	}
	k->installed = 1;
	k->ctl = ram;
	k->code = code;
	k->code_end = code + at;
	k->put = a.put;
	k->full = full;
	k->ring = send;
	k->ring_end = send + events * REC_EVENT;
	/* Stops for sonde: the full ring's bkpt (the stub's breakpoint: QEMU
	 * does not halt on a bkpt instruction) and each semihosting trap (the
	 * exit: the last drain). */
	if (rs_site_add(s, NULL, full, 0, err, n))
		return -1;
	return mcu_exit_breakpoints(s, &k->exits, &k->nexits, err, n);
}

/* The events in the ring to the recording, the ring emptied.  0, -1. */
static int drain(struct rsess *s)
{
	struct rrm *k = s->recmcu;
	uint8_t ctl[REC_CTL_LEN];
	if (remote_read(&s->c, k->ctl, ctl, sizeof ctl))
		return -1;
	uint64_t wp = get32(ctl + REC_CTL_WP);
	k->lost = get32(ctl + REC_CTL_LOST);
	if (wp <= k->ring || wp > k->ring_end)
		return 0;
	size_t len = (size_t)(wp - k->ring);
	uint8_t *b = malloc(len);
	if (!b || remote_read(&s->c, k->ring, b, len)) {
		free(b);
		return -1;
	}
	for (size_t i = 0; i + REC_EVENT <= len; i += REC_EVENT)
		rrec_ring_event(s, get32(b + i), get32(b + i + 4));
	k->events += len / REC_EVENT;
	free(b);
	uint8_t w[4];
	put32(w, k->ring);
	return remote_write(&s->c, k->ctl + REC_CTL_WP, w, 4);
}

void rrm_stop(struct rsess *s, const struct remote_stop *st)
{
	struct rrm *k = s->recmcu;
	if (!k || !k->installed || k->undone)
		return;
	if (st->kind != REMOTE_STOPPED) {
		k->complete = k->final;
		return;
	}
	drain(s);
	uint64_t pc;
	if (k->nexits && st->code == 5 && remote_reg(&s->c, s->c.arch->pc, &pc) == 0)
		for (int i = 0; i < k->nexits; i++)
			if (pc == k->exits[i] && mcu_exit_call(s))
				k->final = 1;
}

int rrm_full(struct rsess *s, uint64_t pc)
{
	struct rrm *k = s->recmcu;
	if (!k || !k->installed || k->undone || pc != k->full)
		return 0;
	k->fills++;
	return remote_set_reg(&s->c, s->c.arch->pc, k->put) ? -1 : 1;
}

int rrm_undo(struct rsess *s)
{
	struct rrm *k = s->recmcu;
	if (!k || !k->installed || k->undone)
		return 0;
	uint64_t pc;
	if (remote_reg(&s->c, s->c.arch->pc, &pc) || (pc == k->full && remote_set_reg(&s->c, s->c.arch->pc, k->put)) ||
	    drain(s))
		return -1;
	k->undone = 1;
	/* the writer returns at once: no event after this (bx lr; jr t5) */
	static const uint8_t bx_lr[2] = { 0x70, 0x47 };
	static const uint8_t jr_t5[4] = { RV32_REC_RETURN & 0xff, (RV32_REC_RETURN >> 8) & 0xff,
	                                  (RV32_REC_RETURN >> 16) & 0xff, RV32_REC_RETURN >> 24 };
	int arm = s->c.arch->elf_machine == EM_ARM;
	if (remote_write(&s->c, k->put, arm ? bx_lr : jr_t5, arm ? 2 : 4))
		return -1;
	for (int i = 0; i < STEPS_OUT; i++) {
		struct remote_stop st;
		if (remote_reg(&s->c, s->c.arch->pc, &pc))
			return -1;
		if (pc < k->code || pc >= k->code_end)
			break;
		if (remote_step(&s->c, &st))
			return -1;
		if (st.kind != REMOTE_STOPPED) {
			snprintf(s->c.err, sizeof s->c.err, "the target ended while sonde stepped it out of a trampoline");
			return -1;
		}
	}
	for (int i = 0; i < k->n; i++)
		if (remote_write(&s->c, k->f[i].addr, k->f[i].orig, MCU_JUMP_LEN))
			return -1;
	k->complete = 1;
	return 0;
}

void rrm_figures(const struct rsess *s, int *in_target, uint64_t *events, uint64_t *fills, uint64_t *lost,
                 int *complete)
{
	const struct rrm *k = s->recmcu;
	*in_target = k && k->installed ? k->n : 0;
	*events = k ? k->events : 0;
	*fills = k ? k->fills : 0;
	*lost = k ? k->lost : 0;
	*complete = !k || !k->installed || k->complete;
}

void rrm_free(struct rsess *s)
{
	struct rrm *k = s->recmcu;
	if (!k)
		return;
	free(k->f);
	free(k->why);
	free(k->jmp);
	free(k->exits);
	free(k);
	s->recmcu = NULL;
}
