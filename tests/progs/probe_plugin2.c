/* probe_plugin2.c — a plugin of SONDE_PROBE_ABI2 (include/sonde/probe.h):
 * its pre and post handlers run inside the probed program on the agent
 * engine (in sonde on --engine=ptrace), with all their state in the
 * probe's result area, updated with atomics (threads run them at once).
 * Built with `cc -shared -fPIC -Iinclude`, used by
 * tests/e2e/probe_agent_plugin.sh and bench/probe_bench.sh.
 *
 * Probe spec: plugin:LOCATION[:DELTA] as probe_plugin.c's (DELTA: from the
 * probed address to a global int read through c->read at every hit).
 *   init (sonde): parses DELTA into the result area (the handlers read it)
 *   pre:   counts hits, those in the program, sums the first argument
 *          (edi), reads the global, checks that address 0 is unreadable,
 *          that rip is the probed address, that c->hits counts this hit
 *   post:  counts, checks rip - addr (the instruction's length) and that
 *          eax == 3 * edi + 1 (probe_loop.c's and probe_threads.c's work()
 *          start by computing it) and rsp as in pre
 *   error: counts (never called on the agent)
 * report (sonde) one line; fini the same on stderr. */
#include <sonde/probe.h>

#include <stdlib.h>

struct res {
	int64_t delta;
	uint64_t have_delta;
	uint64_t pre, post, errors, in_target, sum_arg, sum_global, read_fail, null_unreadable;
	uint64_t hits_ok, hits_max, pc_ok, post_rax_ok, post_len, post_len_varies, post_rsp_ok;
};

#define ADD(f, v) __atomic_fetch_add(&r->f, (v), __ATOMIC_RELAXED)

static int init(struct sonde_probe_ctx *c)
{
	struct res *r = c->result;
	if (!r || c->result_size < sizeof *r)
		return -1;
	if (c->arg && *c->arg) {
		char *end;
		r->delta = strtoll(c->arg, &end, 0);
		if (*end)
			return -1; /* refuse: bad ARG */
		r->have_delta = 1;
	}
	return 0;
}

static void pre(struct sonde_probe_ctx *c)
{
	struct res *r = c->result;
	uint64_t n = ADD(pre, 1) + 1;
	(void)n;
	if (c->in_target)
		ADD(in_target, 1);
	/* c->hits numbers this probe's hits 1, 2, ...: their maximum is the count. */
	uint64_t m = __atomic_load_n(&r->hits_max, __ATOMIC_RELAXED);
	while (c->hits > m && !__atomic_compare_exchange_n(&r->hits_max, &m, c->hits, 1, __ATOMIC_RELAXED,
	                                                   __ATOMIC_RELAXED))
		;
	if (c->hits >= 1)
		ADD(hits_ok, 1);
	if (c->regs.rip == c->addr)
		ADD(pc_ok, 1);
	ADD(sum_arg, (uint32_t)c->regs.rdi);
	if (r->have_delta) {
		int v;
		if (c->read(c, c->addr + (uint64_t)r->delta, &v, sizeof v) == 0)
			ADD(sum_global, (uint64_t)(int64_t)v);
		else
			ADD(read_fail, 1);
	}
	long junk;
	if (c->read(c, 0, &junk, sizeof junk) == -1)
		ADD(null_unreadable, 1);
}

static void post(struct sonde_probe_ctx *c)
{
	struct res *r = c->result;
	uint64_t k = ADD(post, 1);
	uint64_t len = c->regs.rip - c->addr;
	uint64_t old = __atomic_exchange_n(&r->post_len, len, __ATOMIC_RELAXED);
	if (k > 0 && old != len)
		ADD(post_len_varies, 1);
	if ((uint32_t)c->regs.rax == (uint32_t)(3 * (uint32_t)c->regs.rdi + 1))
		ADD(post_rax_ok, 1);
	/* The stack pointer in post is the one at the site: the instruction
	 * (a lea) leaves it, and it is 8 less than the caller's after the call. */
	uint64_t ret;
	if (c->read(c, c->regs.rsp, &ret, sizeof ret) == 0 && ret != 0)
		ADD(post_rsp_ok, 1);
}

static void error(struct sonde_probe_ctx *c, int signo)
{
	struct res *r = c->result;
	(void)signo;
	ADD(errors, 1);
}

static void line(struct sonde_probe_ctx *c, FILE *out)
{
	const struct res *r = c->result;
	fprintf(out, "plugin2-report pre=%llu post=%llu errors=%llu in_target=%llu sum_arg=%llu sum_global=%llu "
	        "read_fail=%llu null_unreadable=%llu hits_ok=%llu hits_max=%llu pc_ok=%llu post_len=%llu "
	        "post_len_varies=%llu post_rax_ok=%llu post_rsp_ok=%llu",
	        (unsigned long long)r->pre, (unsigned long long)r->post, (unsigned long long)r->errors,
	        (unsigned long long)r->in_target, (unsigned long long)r->sum_arg,
	        (unsigned long long)r->sum_global, (unsigned long long)r->read_fail,
	        (unsigned long long)r->null_unreadable, (unsigned long long)r->hits_ok,
	        (unsigned long long)r->hits_max, (unsigned long long)r->pc_ok, (unsigned long long)r->post_len,
	        (unsigned long long)r->post_len_varies, (unsigned long long)r->post_rax_ok,
	        (unsigned long long)r->post_rsp_ok);
}

static void fini(struct sonde_probe_ctx *c)
{
	fprintf(stderr, "probe %d: ", c->id);
	line(c, stderr);
	fputc('\n', stderr);
}

const struct sonde_probe_plugin sonde_probe_plugin = {
	.abi = SONDE_PROBE_ABI2, .name = "test2", .init = init, .pre = pre, .post = post, .error = error,
	.report = line, .fini = fini, .result_size = sizeof(struct res),
};
