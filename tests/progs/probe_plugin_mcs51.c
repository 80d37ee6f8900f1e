/* probe_plugin_mcs51.c — a plugin for plugin probes on 8051 firmware run by
 * ucsim (`sonde probe --target ucsim:... --plugin x.so`,
 * include/sonde/probe.h), built with `cc -shared -fPIC -Iinclude` for the
 * machine sonde runs on, used by tests/e2e/probe_ucsim.sh on work(int x) of
 * tests/progs/mcs51_fw.c.
 *
 * Probe spec: plugin:work:CDATA,CALLS — the addresses, in read's encoding
 * (the space in bits 16..23 as SDCC's generic pointers tag it: 0x40
 * data/idata, 0x00 xdata, 0x80 code), of the firmware's unsigned char
 * c_data (data) and of own.work_calls (an unsigned int in xdata).  At the
 * k-th call's entry both hold k - 1 (work sets c_data = x + 1, main calls
 * it with x = 0, 1, ...).
 *   init: reads the probed instruction's first byte from code memory (op);
 *         counts the reads the encoding refuses (bad_ok: 4 expected)
 *   pre:  counts; sums x, the first argument (DPL, DPH in gregs); counts
 *         the hits where c_data and own.work_calls read through c->read
 *         are c->hits - 1, and those where the pc (gregs[14]) is the
 *         probed address and the bank's R0..R7 are the internal RAM's
 *   post: counts; keeps the distance the pc moved (post_off)
 * report: "pre N post N sum_x S cdata_ok N calls_ok N pc_ok N regs_ok N
 * read_fail N post_off N op N bad_ok N arch A nregs N reg_size N". */
#include <sonde/probe.h>

#include <stdlib.h>
#include <string.h>

struct st {
	uint64_t cdata, calls;
	uint64_t pre, post, cdata_ok, calls_ok, pc_ok, regs_ok, read_fail, bad_ok;
	int64_t sum_x, post_off;
	int op;
};

enum { A, B, PSW, SP, DPL, DPH, R0, PC = 14 };

static int init(struct sonde_probe_ctx *c)
{
	struct st *s = c->result;
	char *end;
	if (!c->arch || strcmp(c->arch, "mcs51"))
		return -1;
	s->cdata = strtoull(c->arg, &end, 0);
	if (*end != ',')
		return -1;
	s->calls = strtoull(end + 1, &end, 0);
	if (*end)
		return -1;
	uint8_t b[2];
	s->op = c->read(c, 0x800000 | c->addr, b, 1) ? -1 : b[0];
	/* refused: pdata's tag, beyond idata, above the tag byte, xdata past 0xffff */
	s->bad_ok = (c->read(c, 0x600000, b, 1) == -1) + (c->read(c, 0x4000ff, b, 2) == -1) +
	            (c->read(c, 0x1000000, b, 1) == -1) + (c->read(c, 0x00ffff, b, 2) == -1);
	return 0;
}

static void pre(struct sonde_probe_ctx *c)
{
	struct st *s = c->result;
	const uint64_t *g = c->gregs;
	s->pre++;
	if (c->nregs < 15)
		return;
	s->sum_x += (int16_t)(g[DPH] << 8 | g[DPL]);
	s->pc_ok += g[PC] == c->addr;
	uint8_t r[8], cd, wc[2];
	if (c->read(c, 0x400000 | (g[PSW] & 0x18), r, 8) || c->read(c, s->cdata, &cd, 1) ||
	    c->read(c, s->calls, wc, 2)) {
		s->read_fail++;
		return;
	}
	int same = 1;
	for (int i = 0; i < 8; i++)
		same &= r[i] == g[R0 + i];
	s->regs_ok += same;
	s->cdata_ok += cd == c->hits - 1;
	s->calls_ok += (uint64_t)(wc[1] << 8 | wc[0]) == c->hits - 1;
}

static void post(struct sonde_probe_ctx *c)
{
	struct st *s = c->result;
	s->post++;
	if (c->nregs >= 15)
		s->post_off = (int64_t)c->gregs[PC] - (int64_t)c->addr;
}

static void report(struct sonde_probe_ctx *c, FILE *out)
{
	const struct st *s = c->result;
	fprintf(out, "pre %llu post %llu sum_x %lld cdata_ok %llu calls_ok %llu pc_ok %llu regs_ok %llu read_fail %llu "
	        "post_off %lld op %d bad_ok %llu arch %s nregs %d reg_size %d",
	        (unsigned long long)s->pre, (unsigned long long)s->post, (long long)s->sum_x,
	        (unsigned long long)s->cdata_ok, (unsigned long long)s->calls_ok, (unsigned long long)s->pc_ok,
	        (unsigned long long)s->regs_ok, (unsigned long long)s->read_fail, (long long)s->post_off, s->op,
	        (unsigned long long)s->bad_ok, c->arch ? c->arch : "-", c->nregs, c->reg_size);
}

const struct sonde_probe_plugin sonde_probe_plugin = {
	.abi = SONDE_PROBE_ABI2, .name = "mcs51", .init = init, .pre = pre, .post = post, .report = report,
	.result_size = sizeof(struct st),
};
