/* probe_plugin_remote.c — a plugin for plugin probes on remote targets
 * (`sonde probe --target ... --plugin x.so`, include/sonde/probe.h), built
 * with `cc -shared -fPIC -Iinclude` for the machine sonde runs on, used by
 * tests/e2e/probe_remote_plugin.sh on account(int v) of remote_counts.c
 * (aarch64 Linux under QEMU) and mcu_counts.c (Cortex-M3, RV32 firmware).
 *
 * Probe spec: plugin:account:DELTA, DELTA the distance from the probed
 * address to the program's int counter line_runs, which account() raises
 * first thing: at the k-th call's entry it holds k - 1.
 *   pre:  counts; sums the first argument (v, from c->gregs in the
 *         architecture's calling convention); reads line_runs through
 *         c->read and counts the hits where it is c->hits - 1; counts the
 *         hits where the pc register is the probed address, and those
 *         where regs is x86-64's registers (on x86-64) or zero (elsewhere)
 *   post: counts; counts the hits where the pc has moved off the probed
 *         address (the displaced instruction has run)
 * State in the ABI-2 result area (the handlers run in sonde on a remote
 * target).  report: one line "pre N post N sum_v S runs_ok N pc_ok N
 * moved N read_fail N regs_ok N arch A nregs N". */
#include <sonde/probe.h>

#include <stdlib.h>
#include <string.h>

struct st {
	int64_t delta;
	uint64_t pre, post, runs_ok, pc_ok, moved, read_fail, regs_ok;
	int64_t sum_v;
};

/* The first argument's and the pc's index in gregs (the stub's `g` order). */
static int arg0(const char *a)
{
	return !strcmp(a, "x86-64") ? 5 : !strcmp(a, "mips") ? 4 : !strcmp(a, "riscv32") ? 10 : 0;
}

static int pcreg(const char *a)
{
	return !strcmp(a, "x86-64") ? 16 : !strcmp(a, "arm") ? 15 : !strcmp(a, "mips") ? 37 : 32;
}

static int init(struct sonde_probe_ctx *c)
{
	struct st *s = c->result;
	char *end;
	if (!c->arch || !c->arg[0])
		return -1;  /* remote targets only, and a DELTA */
	s->delta = strtoll(c->arg, &end, 0);
	return *end ? -1 : 0;
}

static uint64_t reg(const struct sonde_probe_ctx *c, int i)
{
	return i < c->nregs ? c->gregs[i] : ~0ull;
}

static void pre(struct sonde_probe_ctx *c)
{
	struct st *s = c->result;
	s->pre++;
	s->sum_v += (int32_t)reg(c, arg0(c->arch));
	s->pc_ok += reg(c, pcreg(c->arch)) == c->addr;
	/* regs: x86-64's registers as locally on an x86-64 target, else zero */
	s->regs_ok += strcmp(c->arch, "x86-64") ? c->regs.rip == 0 && c->regs.rdi == 0
	                                        : c->regs.rip == c->addr && c->regs.rdi == reg(c, 5) && c->regs.rsp == reg(c, 7);
	uint8_t b[4];
	if (c->read(c, c->addr + (uint64_t)s->delta, b, sizeof b)) {
		s->read_fail++;
		return;
	}
	uint32_t v = c->big_endian ? (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3]
	                           : (uint32_t)b[3] << 24 | (uint32_t)b[2] << 16 | (uint32_t)b[1] << 8 | b[0];
	s->runs_ok += v == c->hits - 1;
}

static void post(struct sonde_probe_ctx *c)
{
	struct st *s = c->result;
	s->post++;
	s->moved += reg(c, pcreg(c->arch)) != c->addr;
}

static void report(struct sonde_probe_ctx *c, FILE *out)
{
	const struct st *s = c->result;
	fprintf(out, "pre %llu post %llu sum_v %lld runs_ok %llu pc_ok %llu moved %llu read_fail %llu regs_ok %llu arch %s "
	        "nregs %d",
	        (unsigned long long)s->pre, (unsigned long long)s->post, (long long)s->sum_v,
	        (unsigned long long)s->runs_ok, (unsigned long long)s->pc_ok, (unsigned long long)s->moved,
	        (unsigned long long)s->read_fail, (unsigned long long)s->regs_ok, c->arch ? c->arch : "-", c->nregs);
}

const struct sonde_probe_plugin sonde_probe_plugin = {
	.abi = SONDE_PROBE_ABI2, .name = "remote", .init = init, .pre = pre, .post = post, .report = report,
	.result_size = sizeof(struct st),
};
