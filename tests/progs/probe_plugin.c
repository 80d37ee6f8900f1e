/* probe_plugin.c — a plugin for `sonde probe --plugin` (include/sonde/probe.h),
 * built with `cc -shared -fPIC -Iinclude`, used by tests/e2e/probe_plugin.sh.
 *
 * Probe spec: plugin:LOCATION[:DELTA] where DELTA (optional, signed, any base
 * strtoll takes) is the distance from the probed address to a global int the
 * plugin reads through the memory reader at every hit.
 *   pre:   counts hits, sums the first argument (edi), reads the global,
 *          checks that address 0 is reported unreadable, that the registers
 *          show the thread at the probed address and the context's hit count
 *   post:  counts, records the instruction's length (rip - addr) and checks
 *          that rax == 3 * edi + 1 (the effect of probe_loop.c's work(), whose
 *          first instruction computes it) and that the stack is unchanged
 *   error: counts, notes the signal, checks that rip is the probed address
 * report (one table line) and, at fini, the same line on stderr. */
#include <sonde/probe.h>

#include <stdlib.h>
#include <string.h>

struct st {
	int64_t delta;
	int have_delta;
	uint64_t pre, post, errors, sum_arg, sum_global, read_fail, null_unreadable;
	uint64_t hits_ok, pc_ok, post_rax_ok, post_rsp_ok, post_len, post_len_varies;
	uint64_t err_pc_ok;
	uint64_t pre_rsp, pre_edi;
	int signo;
};

static int init(struct sonde_probe_ctx *c)
{
	struct st *s = calloc(1, sizeof *s);
	if (!s)
		return -1;
	if (c->arg && *c->arg) {
		char *end;
		s->delta = strtoll(c->arg, &end, 0);
		if (*end) {
			free(s);
			return -1; /* refuse: bad ARG */
		}
		s->have_delta = 1;
	}
	c->user = s;
	return 0;
}

static void pre(struct sonde_probe_ctx *c)
{
	struct st *s = c->user;
	s->pre++;
	if (c->hits == s->pre)
		s->hits_ok++;
	if (c->regs.rip == c->addr)
		s->pc_ok++;
	s->pre_edi = (uint32_t)c->regs.rdi;
	s->pre_rsp = c->regs.rsp;
	s->sum_arg += s->pre_edi;
	if (s->have_delta) {
		int v;
		if (c->read(c, c->addr + (uint64_t)s->delta, &v, sizeof v) == 0)
			s->sum_global += (uint64_t)(int64_t)v;
		else
			s->read_fail++;
	}
	long junk;
	if (c->read(c, 0, &junk, sizeof junk) == -1)
		s->null_unreadable++;
}

static void post(struct sonde_probe_ctx *c)
{
	struct st *s = c->user;
	s->post++;
	uint64_t len = c->regs.rip - c->addr;
	if (s->post > 1 && len != s->post_len)
		s->post_len_varies++;
	s->post_len = len;
	if ((uint32_t)c->regs.rax == (uint32_t)(3 * s->pre_edi + 1))
		s->post_rax_ok++;
	if (c->regs.rsp == s->pre_rsp)
		s->post_rsp_ok++;
}

static void error(struct sonde_probe_ctx *c, int signo)
{
	struct st *s = c->user;
	s->errors++;
	if (c->regs.rip == c->addr) /* the error handler sees the thread on the instruction */
		s->err_pc_ok++;
	s->signo = signo;
}

static void line(struct sonde_probe_ctx *c, FILE *out)
{
	struct st *s = c->user;
	fprintf(out, "plugin-report pre=%llu post=%llu errors=%llu signo=%d sum_arg=%llu "
	        "sum_global=%llu read_fail=%llu null_unreadable=%llu hits_ok=%llu pc_ok=%llu "
	        "post_len=%llu post_len_varies=%llu post_rax_ok=%llu post_rsp_ok=%llu err_pc_ok=%llu",
	        (unsigned long long)s->pre, (unsigned long long)s->post,
	        (unsigned long long)s->errors, s->signo, (unsigned long long)s->sum_arg,
	        (unsigned long long)s->sum_global, (unsigned long long)s->read_fail,
	        (unsigned long long)s->null_unreadable, (unsigned long long)s->hits_ok,
	        (unsigned long long)s->pc_ok, (unsigned long long)s->post_len,
	        (unsigned long long)s->post_len_varies, (unsigned long long)s->post_rax_ok,
	        (unsigned long long)s->post_rsp_ok, (unsigned long long)s->err_pc_ok);
}

static void fini(struct sonde_probe_ctx *c)
{
	struct st *s = c->user;
	if (!s)
		return;
	fprintf(stderr, "probe %d: ", c->id);
	line(c, stderr);
	fputc('\n', stderr);
	free(s);
	c->user = NULL;
}

const struct sonde_probe_plugin sonde_probe_plugin = {
	.abi = SONDE_PROBE_ABI, .name = "test", .init = init, .pre = pre, .post = post,
	.error = error, .report = line, .fini = fini,
};
