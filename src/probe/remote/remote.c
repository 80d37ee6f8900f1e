/* remote.c — the GDB Remote Serial Protocol client (see remote.h).  Only
 * what sonde's probes need, in all-stop mode: one stop reply per resume.
 * Register values travel as hex bytes in the target's byte order; memory in
 * chunks small enough for any stub's PacketSize. */
#include "probe/remote/remote.h"

#include <elf.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MEM_CHUNK 1024

static int cfail(struct remote *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int cfail(struct remote *c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(c->err, sizeof c->err, fmt, ap);
	va_end(ap);
	return -1;
}

/* The packet layer failed: its message. */
static int rfail(struct remote *c, const char *what)
{
	return cfail(c, "%s: %s", what, c->r.err);
}

static void console_out(void *arg, const char *hex)
{
	struct remote *c = arg;
	char buf[512];
	size_t n = strlen(hex) / 2;
	if (n > sizeof buf)
		n = sizeof buf;
	if (c->console && rsp_unhex(hex, (uint8_t *)buf, n) == 0)
		c->console(c->console_arg, buf, n);
}

/* The replies to the commands sent ahead (remote_queue_*), each "OK". */
static int drain(struct remote *c)
{
	while (c->unread_ok > 0) {
		c->unread_ok--;
		if (rsp_recv(&c->r, 0))
			return rfail(c, "a register or memory write sent ahead");
		if (strcmp(c->r.pkt, "OK"))
			return cfail(c, "the stub refused a register or memory write ('%.10s')", c->r.pkt);
	}
	return 0;
}

static int request(struct remote *c, const char *cmd)
{
	if (c->unread_ok && drain(c))
		return -1;
	int rc = rsp_request(&c->r, cmd, console_out, c);
	if (rc) {
		char what[80];
		snprintf(what, sizeof what, "'%.40s' to the stub", cmd);
		return rfail(c, what);
	}
	return 0;
}

/* A value of n bytes in the target's byte order, from hex. */
static int get_val(struct remote *c, const char *hex, size_t n, uint64_t *v)
{
	uint8_t b[8];
	if (n > 8 || rsp_unhex(hex, b, n))
		return -1;
	uint64_t x = 0;
	for (size_t i = 0; i < n; i++)
		x |= (uint64_t)b[c->big_endian ? n - 1 - i : i] << (8 * i);
	*v = x;
	return 0;
}

static void put_val(struct remote *c, uint64_t v, size_t n, char *hex)
{
	uint8_t b[8];
	for (size_t i = 0; i < n; i++)
		b[c->big_endian ? n - 1 - i : i] = (uint8_t)(v >> (8 * i));
	rsp_tohex(b, n, hex);
}

static const struct rarch *arch_by_name(const char *xml)
{
	static const struct rarch *const all[] = { &rarch_x86_64, &rarch_aarch64, &rarch_mips, &rarch_arm, &rarch_riscv32 };
	for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
		if (!strncmp(xml, all[i]->name, strlen(all[i]->name)))
			return all[i];
	return NULL;
}

static const struct rarch *arch_by_machine(int em)
{
	switch (em) {
	case EM_X86_64: return &rarch_x86_64;
	case EM_AARCH64: return &rarch_aarch64;
	case EM_MIPS: return &rarch_mips;
	case EM_ARM: return &rarch_arm;
	case EM_RISCV: return &rarch_riscv32;
	}
	return NULL;
}

/* qXfer:OBJECT:read:ANNEX, whole, into a malloc'd buffer (*len bytes). */
static char *xfer_read(struct remote *c, const char *object, const char *annex, size_t *len)
{
	size_t n = 0, cap = 0;
	char *out = NULL, cmd[200];
	for (;;) {
		snprintf(cmd, sizeof cmd, "qXfer:%s:read:%s:%zx,%x", object, annex, n, 0xf00);
		if (request(c, cmd))
			break;
		const char *p = c->r.pkt;
		size_t pl = c->r.pkt_len;
		if (!pl || (p[0] != 'm' && p[0] != 'l') || n + pl > (1u << 20)) {
			cfail(c, "the stub cannot give %s%s%s (reply '%.20s')", object, *annex ? " " : "", annex, p);
			break;
		}
		if (n + pl > cap) {
			cap = (n + pl) * 2;
			char *q = realloc(out, cap + 1);
			if (!q)
				break;
			out = q;
		}
		memcpy(out + n, p + 1, pl - 1);
		n += pl - 1;
		out[n] = 0;
		if (p[0] == 'l') {
			*len = n;
			return out;
		}
	}
	free(out);
	return NULL;
}

static int parse_stop(struct remote *c, const char *p, struct remote_stop *st)
{
	memset(st, 0, sizeof *st);
	int hi, lo;
	switch (p[0]) {
	case 'W': case 'X': case 'S': case 'T':
		if ((hi = rsp_hexval((unsigned char)p[1])) < 0 || (lo = rsp_hexval((unsigned char)p[2])) < 0)
			return cfail(c, "malformed stop reply '%.40s' from the stub", p);
		st->code = hi << 4 | lo;
		break;
	case 'E':
		return cfail(c, "the stub reports error %.10s instead of a stop", p + 1);
	default:
		return cfail(c, "unexpected reply '%.40s' from the stub (expected a stop reply)", p);
	}
	st->kind = p[0] == 'W' ? REMOTE_EXITED : p[0] == 'X' ? REMOTE_KILLED : REMOTE_STOPPED;
	if (p[0] != 'T')
		return 0;
	/* T AA n1:r1;n2:r2;... */
	for (const char *q = p + 3; *q;) {
		const char *colon = strchr(q, ':'), *semi = strchr(q, ';');
		if (!colon || (semi && semi < colon))
			break;
		size_t kl = (size_t)(colon - q);
		const char *v = colon + 1;
		size_t vl = semi ? (size_t)(semi - v) : strlen(v);
		if ((kl == 13 && !strncmp(q, "syscall_entry", 13)) || (kl == 14 && !strncmp(q, "syscall_return", 14))) {
			st->syscall = (int)(strtol(v, NULL, 16) & 0xffff) + 1;
		} else if (kl == 6 && !strncmp(q, "thread", 6)) {
			const char *dot = memchr(v, '.', vl);   /* pPID.TID */
			st->thread = strtol(dot ? dot + 1 : v, NULL, 16);
		} else {
			char *end;
			long regno = strtol(q, &end, 16);
			uint64_t val;
			if (end == colon && regno >= 0 && regno < REMOTE_MAX_REGS && vl / 2 <= 8 &&
			    get_val(c, v, vl / 2, &val) == 0) {
				st->reg[regno] = val;
				st->have |= 1ull << regno;
			}
		}
		if (!semi)
			break;
		q = semi + 1;
	}
	return 0;
}

/* After a stop: forget the cached registers, keep the expedited ones. */
static void took_stop(struct remote *c, const struct remote_stop *st)
{
	c->valid = 0;
	c->gimg_ok = 0;
	if (st->thread)
		c->thread = st->thread;
	if (c->arch && st->kind == REMOTE_STOPPED) {
		uint64_t core = c->arch->ncore >= 64 ? ~0ull : (1ull << c->arch->ncore) - 1;
		if (c->arch->flags >= 0)
			core |= 1ull << c->arch->flags;
		memcpy(c->reg, st->reg, sizeof c->reg);
		c->valid = st->have & core;
	}
}

int remote_wait(struct remote *c, int timeout_ms, struct remote_stop *st)
{
	for (;;) {
		if (timeout_ms >= 0) {
			int pr = rsp_poll(&c->r, timeout_ms);
			if (pr < 0)
				return rfail(c, "waiting for the target");
			if (pr == 0)
				return 1;
		}
		int rc = rsp_recv(&c->r, timeout_ms >= 0 ? 0 : -1);
		if (rc == RSP_ECLOSED) {
			memset(st, 0, sizeof *st);
			st->kind = REMOTE_CLOSED;
			return 0;
		}
		if (rc)
			return rfail(c, "waiting for a stop reply");
		if (c->r.pkt[0] == 'O' && c->r.pkt_len > 1 && rsp_hexval((unsigned char)c->r.pkt[1]) >= 0) {
			console_out(c, c->r.pkt + 1);
			continue;
		}
		if (parse_stop(c, c->r.pkt, st))
			return -1;
		took_stop(c, st);
		return 0;
	}
}

/* The <reg> elements of one target description document, numbered as gdb
 * does: regnum when given, else one more than the previous register. */
static void parse_regs(struct remote *c, const char *xml, int *next)
{
	for (const char *r = strstr(xml, "<reg "); r; r = strstr(r + 1, "<reg ")) {
		const char *end = strchr(r, '>'), *nm = strstr(r, "name=\""), *bs = strstr(r, "bitsize=\""),
		           *rn = strstr(r, "regnum=\"");
		if (!end || !nm || nm > end)
			continue;
		if (rn && rn < end)
			*next = (int)strtol(rn + 8, NULL, 0);
		struct rreg *v = realloc(c->regs, (size_t)(c->nregs + 1) * sizeof *v);
		if (!v)
			return;
		c->regs = v;
		struct rreg *g = &v[c->nregs++];
		size_t l = strcspn(nm + 6, "\"");
		snprintf(g->name, sizeof g->name, "%.*s", (int)(l < 15 ? l : 15), nm + 6);
		g->regnum = (*next)++;
		g->bits = bs && bs < end ? (int)strtol(bs + 9, NULL, 0) : 0;
	}
}

/* target.xml's registers, and those of the features it includes (one level,
 * as QEMU and OpenOCD send them).  A feature that cannot be read is left
 * out: its registers are then unavailable. */
static void read_reg_names(struct remote *c, const char *xml)
{
	int next = 0;
	parse_regs(c, xml, &next);
	for (const char *h = strstr(xml, "<xi:include href=\""); h; h = strstr(h + 1, "<xi:include href=\"")) {
		char annex[100];
		size_t l = strcspn(h + 18, "\"");
		if (l >= sizeof annex)
			continue;
		snprintf(annex, sizeof annex, "%.*s", (int)l, h + 18);
		size_t n;
		char err[sizeof c->err];
		memcpy(err, c->err, sizeof err);
		char *f = xfer_read(c, "features", annex, &n);
		memcpy(c->err, err, sizeof err);
		if (f)
			parse_regs(c, f, &next);
		free(f);
	}
}

int remote_reg_named(struct remote *c, const char *name, uint8_t *buf, size_t n)
{
	for (int i = 0; i < c->nregs; i++) {
		if (strcmp(c->regs[i].name, name))
			continue;
		char cmd[16];
		snprintf(cmd, sizeof cmd, "p%x", c->regs[i].regnum);
		if (request(c, cmd))
			return -1;
		size_t got = c->r.pkt_len / 2;
		if (c->r.pkt[0] == 'E' || !got || got > n || rsp_unhex(c->r.pkt, buf, got))
			return cfail(c, "reading register %s failed ('%.10s')", name, c->r.pkt);
		return (int)got;
	}
	return cfail(c, "the stub's target description has no register %s", name);
}

/* The stub's memory map (OpenOCD sends one): its flash and ROM regions,
 * where breakpoints must be hardware ones.  <memory type="flash"
 * start="0x0" length="0x40000"> ... */
static int read_memory_map(struct remote *c)
{
	size_t n;
	char *xml = xfer_read(c, "memory-map", "", &n);
	if (!xml)
		return -1;
	for (const char *m = strstr(xml, "<memory "); m && c->nro < (int)(sizeof c->ro / sizeof c->ro[0]);
	     m = strstr(m + 1, "<memory ")) {
		const char *end = strchr(m, '>'), *t = strstr(m, "type=\""), *st = strstr(m, "start=\""),
		           *ln = strstr(m, "length=\"");
		if (!end || !t || !st || !ln || t > end || st > end || ln > end)
			continue;
		if (strncmp(t + 6, "flash\"", 6) && strncmp(t + 6, "rom\"", 4))
			continue;
		uint64_t lo = strtoull(st + 7, NULL, 0), len = strtoull(ln + 8, NULL, 0);
		c->ro[c->nro].lo = lo;
		c->ro[c->nro].hi = lo + len;
		c->nro++;
	}
	free(xml);
	return 0;
}

int remote_readonly(struct remote *c, uint64_t addr)
{
	if (c->force_hw)
		return 1;
	for (int i = 0; i < c->nro; i++)
		if (addr >= c->ro[i].lo && addr < c->ro[i].hi)
			return 1;
	return 0;
}

int remote_open(struct remote *c, const char *target, int timeout_ms, int elf_machine, int big_endian)
{
	memset(c, 0, sizeof *c);
	c->big_endian = big_endian;
	c->hw_limit = -1;
	if (rsp_open(&c->r, target, timeout_ms))
		return cfail(c, "%s", c->r.err);
	if (request(c, "qSupported:swbreak+;hwbreak+;vContSupported+;xmlRegisters=i386"))
		return -1;
	const char *s = c->r.pkt;
	int noack = strstr(s, "QStartNoAckMode+") != NULL;
	c->has_features = strstr(s, "qXfer:features:read+") != NULL;
	c->has_auxv = strstr(s, "qXfer:auxv:read+") != NULL;
	int has_map = strstr(s, "qXfer:memory-map:read+") != NULL;
	c->has_tracepoints = strstr(s, "ConditionalTracepoints+") != NULL || strstr(s, "InstallInTrace+") != NULL;
	if (noack) {
		if (request(c, "QStartNoAckMode"))
			return -1;
		if (!strcmp(c->r.pkt, "OK"))
			c->r.noack = 1;
	}
	if (request(c, "vCont?"))
		return -1;
	c->has_vcont = !strncmp(c->r.pkt, "vCont", 5) && strstr(c->r.pkt, ";c") && strstr(c->r.pkt, ";s");
	c->has_z0 = c->has_p = 1;  /* until the stub says otherwise */
	c->has_P = -1;
	c->step_passes_bp = -1;
	/* gdbserver describes the registers of the selected thread's process:
	 * select one (any) before asking for them. */
	if (request(c, "Hg0"))
		return -1;
	if (c->has_features) {
		size_t n;
		char *xml = xfer_read(c, "features", "target.xml", &n);
		if (!xml)
			return -1;
		const char *a = strstr(xml, "<architecture>");
		if (a) {
			a += strlen("<architecture>");
			size_t l = strcspn(a, "<");
			snprintf(c->xml_arch, sizeof c->xml_arch, "%.*s", (int)(l < 63 ? l : 63), a);
		}
		/* The register names are for variables in FPU registers (an
		 * M4F's s0-s31): read where they are used, saving the others
		 * the round trips of the included features. */
		if (!strncmp(c->xml_arch, "arm", 3))
			read_reg_names(c, xml);
		free(xml);
	}
	if (has_map && read_memory_map(c))
		return -1;
	const struct rarch *ea = arch_by_machine(elf_machine);
	if (c->xml_arch[0]) {
		c->arch = arch_by_name(c->xml_arch);
		if (!c->arch)
			return cfail(c, "the stub's architecture '%s' is not supported (x86-64, aarch64, mips, arm (Cortex-M), riscv:rv32)", c->xml_arch);
		if (ea && ea != c->arch)
			return cfail(c, "the stub's architecture is %s, the program's is %s", c->xml_arch, ea->name);
	} else if (!(c->arch = ea)) {
		return cfail(c, "the program's architecture (ELF machine %d) is not supported (x86-64, aarch64, mips, arm (Cortex-M), riscv:rv32)",
		             elf_machine);
	}
	struct remote_stop st;
	if (rsp_send_str(&c->r, "?"))
		return rfail(c, "'?' to the stub");
	int rc = remote_wait(c, -1, &st);
	if (rc)
		return -1;
	if (st.kind != REMOTE_STOPPED)
		return cfail(c, "the target is not running (%s)", st.kind == REMOTE_CLOSED ? "connection closed" : "it has exited");
	return 0;
}

void remote_close(struct remote *c)
{
	free(c->regs);
	c->regs = NULL;
	c->nregs = 0;
	free(c->gimg);
	c->gimg = NULL;
	rsp_close(&c->r);
}

int remote_read(struct remote *c, uint64_t addr, void *buf, size_t n)
{
	uint8_t *out = buf;
	char cmd[64];
	while (n) {
		size_t k = n < MEM_CHUNK ? n : MEM_CHUNK;
		snprintf(cmd, sizeof cmd, "m%llx,%zx", (unsigned long long)addr, k);
		if (request(c, cmd))
			return -1;
		/* A stub may return fewer bytes than asked (end of a mapping). */
		size_t got = c->r.pkt_len / 2;
		if (c->r.pkt[0] == 'E' || !got || got > k || rsp_unhex(c->r.pkt, out, got))
			return cfail(c, "reading %zu bytes at 0x%llx failed (%.10s)", k, (unsigned long long)addr, c->r.pkt);
		out += got;
		addr += got;
		n -= got;
	}
	return 0;
}

int remote_write(struct remote *c, uint64_t addr, const void *buf, size_t n)
{
	const uint8_t *in = buf;
	char cmd[64 + 2 * MEM_CHUNK];
	while (n) {
		size_t k = n < MEM_CHUNK ? n : MEM_CHUNK;
		int l = snprintf(cmd, sizeof cmd, "M%llx,%zx:", (unsigned long long)addr, k);
		rsp_tohex(in, k, cmd + l);
		if (request(c, cmd))
			return -1;
		if (strcmp(c->r.pkt, "OK"))
			return cfail(c, "writing %zu bytes at 0x%llx failed (%.10s)", k, (unsigned long long)addr, c->r.pkt);
		in += k;
		addr += k;
		n -= k;
	}
	return 0;
}

static int read_all_regs(struct remote *c)
{
	if (request(c, "g"))
		return -1;
	const char *p = c->r.pkt;
	size_t w = (size_t)c->arch->ptr_size;
	if (p[0] == 'E' || c->r.pkt_len < 2 * w * (size_t)c->arch->ncore)
		return cfail(c, "reading the registers failed (reply of %zu bytes: '%.10s')", c->r.pkt_len, p);
	char *img = realloc(c->gimg, c->r.pkt_len + 1);
	if (img) {
		memcpy(img, p, c->r.pkt_len + 1);
		c->gimg = img;
		c->gimg_len = c->r.pkt_len;
		c->gimg_ok = 1;
	}
	for (int i = 0; i < c->arch->ncore; i++)
		if (get_val(c, p + 2 * w * (size_t)i, w, &c->reg[i]))
			c->reg[i] = 0; /* "xx": unavailable */
	c->valid = c->arch->ncore >= 64 ? ~0ull : (1ull << c->arch->ncore) - 1;
	/* The flags register follows the core ones, 4 bytes. */
	size_t fo = 2 * w * (size_t)c->arch->ncore;
	if (c->arch->flags >= 0 && c->r.pkt_len >= fo + 8 && get_val(c, p + fo, 4, &c->reg[c->arch->flags]) == 0)
		c->valid |= 1ull << c->arch->flags;
	return 0;
}

/* One register with `p`: 0, -1 error, 1 the stub has no `p`. */
static int read_one_reg(struct remote *c, int regno)
{
	char cmd[16];
	snprintf(cmd, sizeof cmd, "p%x", regno);
	if (request(c, cmd))
		return -1;
	if (!c->r.pkt_len) {
		c->has_p = 0;
		return 1;
	}
	size_t w = regno == c->arch->flags ? 4 : (size_t)c->arch->ptr_size;
	if (c->r.pkt[0] == 'E' || c->r.pkt_len < 2 * w || get_val(c, c->r.pkt, w, &c->reg[regno]))
		return cfail(c, "reading register %d failed ('%.10s')", regno, c->r.pkt);
	c->valid |= 1ull << regno;
	return 0;
}

int remote_reg(struct remote *c, int regno, uint64_t *val)
{
	int flags = regno >= 0 && regno == c->arch->flags;
	if (!flags && (regno < 0 || regno >= c->arch->ncore))
		return cfail(c, "register %d is not a core register", regno);
	if (!(c->valid & (1ull << regno))) {
		/* The hot ones alone (a hit needs only these); a variable's
		 * location may need several others: all at once. */
		int rc = 1;
		if (c->has_p && !c->fetch_all && (regno == c->arch->pc || regno == c->arch->sp || regno == c->arch->ra || flags))
			rc = read_one_reg(c, regno);
		if (rc < 0 || (rc == 1 && read_all_regs(c)))
			return -1;
		if (!(c->valid & (1ull << regno)))
			return cfail(c, "the stub did not give register %d", regno);
	}
	*val = c->reg[regno];
	return 0;
}

/* The `P` packet writing val into regno (the flags register is 4 bytes). */
static void set_reg_cmd(struct remote *c, int regno, uint64_t val, char cmd[64])
{
	int l = snprintf(cmd, 64, "P%x=", regno);
	put_val(c, val, regno == c->arch->flags ? 4 : (size_t)c->arch->ptr_size, cmd + l);
}

static int set_regs(struct remote *c, int n, const int *regno, const uint64_t *val, int ahead);
static void took_reg(struct remote *c, int regno, uint64_t val);

int remote_set_reg(struct remote *c, int regno, uint64_t val)
{
	char cmd[64];
	if (c->has_P != 1)
		return set_regs(c, 1, &regno, &val, 0);
	set_reg_cmd(c, regno, val, cmd);
	if (request(c, cmd))
		return -1;
	if (strcmp(c->r.pkt, "OK"))
		return cfail(c, "writing register %d failed (%.10s)", regno, c->r.pkt);
	took_reg(c, regno, val);
	return 0;
}

/* Register regno's new value into the `g` image, in place. */
static void gimg_put(struct remote *c, long off, size_t w, uint64_t val)
{
	char hex[17];
	put_val(c, val, w, hex);
	memcpy(c->gimg + off, hex, 2 * w);
}

/* Offset and width in the `g` image of register regno (the flags register
 * follows the core ones, 4 bytes); -1 when it is not in the image. */
static long gimg_at(struct remote *c, int regno, size_t *w)
{
	size_t pw = (size_t)c->arch->ptr_size;
	size_t off = regno == c->arch->flags ? 2 * pw * (size_t)c->arch->ncore : 2 * pw * (size_t)regno;
	*w = regno == c->arch->flags ? 4 : pw;
	if ((regno != c->arch->flags && (regno < 0 || regno >= c->arch->ncore)) || off + 2 * *w > c->gimg_len)
		return -1;
	return (long)off;
}

/* Register regno now holds val in the target: the cache and this stop's
 * `g` image say so too. */
static void took_reg(struct remote *c, int regno, uint64_t val)
{
	if (regno < REMOTE_MAX_REGS) {
		c->reg[regno] = val;
		c->valid |= 1ull << regno;
	}
	size_t w;
	long off = c->gimg_ok ? gimg_at(c, regno, &w) : -1;
	if (off >= 0)
		gimg_put(c, off, w, val);
}

int remote_regs_writable(struct remote *c)
{
	if (c->has_P)
		return 1;  /* P, or not known yet: the first write finds out */
	if (!c->gimg_ok && read_all_regs(c))
		return -1;
	return c->gimg_ok && !memchr(c->gimg, 'x', c->gimg_len);
}

static int write_whole(struct remote *c, int n, const int *regno, const uint64_t *val, int ahead);

/* Registers with P (or G), sent ahead of their replies when ahead. */
static int set_regs(struct remote *c, int n, const int *regno, const uint64_t *val, int ahead)
{
	/* Several registers, one at a time (no pipelining): one `G` is one
	 * round trip instead of n, when this stop's set was read whole. */
	int whole = !ahead && n > 1 && c->gimg_ok && !memchr(c->gimg, 'x', c->gimg_len);
	for (int i = 0; i < n && whole; i++) {
		size_t w;
		whole = gimg_at(c, regno[i], &w) >= 0;
	}
	if (whole)
		return write_whole(c, n, regno, val, 0);
	for (int i = 0; i < n && c->has_P; i++) {
		char cmd[64];
		set_reg_cmd(c, regno[i], val[i], cmd);
		if (ahead && c->has_P == 1) {
			if (rsp_send_str(&c->r, cmd))
				return rfail(c, "writing a register");
			c->unread_ok++;
		} else {
			if (request(c, cmd))
				return -1;
			if (!c->r.pkt_len && c->has_P == -1) {
				c->has_P = 0;  /* no P: the whole set with G, below */
				break;
			}
			if (strcmp(c->r.pkt, "OK"))
				return cfail(c, "writing register %d failed (%.10s)", regno[i], c->r.pkt);
			c->has_P = 1;
		}
		took_reg(c, regno[i], val[i]);
	}
	if (c->has_P)
		return 0;
	if (remote_regs_writable(c) != 1)
		return cfail(c, "the stub has no P packet, and its register set cannot be written back with G");
	return write_whole(c, n, regno, val, ahead);
}

/* The registers into this stop's `g` image, and all of it back with `G`. */
static int write_whole(struct remote *c, int n, const int *regno, const uint64_t *val, int ahead)
{
	for (int i = 0; i < n; i++) {
		size_t w;
		if (gimg_at(c, regno[i], &w) < 0)
			return cfail(c, "register %d is not in the stub's register set", regno[i]);
		took_reg(c, regno[i], val[i]);
	}
	char *cmd = malloc(c->gimg_len + 2);
	if (!cmd)
		return cfail(c, "out of memory");
	cmd[0] = 'G';
	memcpy(cmd + 1, c->gimg, c->gimg_len + 1);
	int rc;
	if (ahead) {
		rc = rsp_send_str(&c->r, cmd) ? rfail(c, "writing the registers") : 0;
		c->unread_ok += !rc;
	} else {
		rc = request(c, cmd);
		if (!rc && strcmp(c->r.pkt, "OK"))
			rc = cfail(c, "writing the registers failed (%.10s)", c->r.pkt);
	}
	free(cmd);
	return rc;
}

char *remote_regs_save(struct remote *c)
{
	if (!c->gimg_ok && read_all_regs(c))
		return NULL;
	char *img = strdup(c->gimg);
	if (!img)
		cfail(c, "out of memory");
	return img;
}

int remote_regs_restore(struct remote *c, const char *img)
{
	size_t len = strlen(img);
	char *cmd = malloc(len + 2);
	if (!cmd)
		return cfail(c, "out of memory");
	cmd[0] = 'G';
	memcpy(cmd + 1, img, len + 1);
	int rc = request(c, cmd);
	free(cmd);
	if (!rc && strcmp(c->r.pkt, "OK"))
		rc = cfail(c, "writing the registers back failed (%.10s)", c->r.pkt);
	c->valid = 0;
	c->gimg_ok = 0;
	return rc;
}

int remote_queue_set_regs(struct remote *c, int n, const int *regno, const uint64_t *val)
{
	return set_regs(c, n, regno, val, c->r.noack);
}

int remote_queue_write(struct remote *c, uint64_t addr, const void *buf, size_t n)
{
	if (!c->r.noack || n > 64)
		return remote_write(c, addr, buf, n);
	char cmd[64 + 2 * 64];
	int l = snprintf(cmd, sizeof cmd, "M%llx,%zx:", (unsigned long long)addr, n);
	rsp_tohex((const uint8_t *)buf, n, cmd + l);
	if (rsp_send_str(&c->r, cmd))
		return rfail(c, "writing memory");
	c->unread_ok++;
	return 0;
}

/* The Z0/z0 "kind" at addr: bp_len, or, where the instruction's length
 * decides it (Thumb-2, RISC-V C), read from the target once per address
 * (kept in a small table: the code does not change under a breakpoint). */
static int bp_kind(struct remote *c, uint64_t addr)
{
	if (!c->arch->bp_kind)
		return c->arch->bp_len;
	unsigned slot = (unsigned)(addr >> 1) % (sizeof c->kind_addr / sizeof c->kind_addr[0]);
	if (c->kind[slot] && c->kind_addr[slot] == addr)
		return c->kind[slot];
	uint8_t code[4];
	size_t n = 4;
	char err[sizeof c->err];
	memcpy(err, c->err, sizeof err);
	while (n && remote_read(c, addr, code, n))
		n -= 2;
	memcpy(c->err, err, sizeof err);  /* unreadable: bp_len, the stub decides */
	int k = n ? c->arch->bp_kind(code, n, c->big_endian) : c->arch->bp_len;
	c->kind_addr[slot] = addr;
	c->kind[slot] = (uint8_t)k;
	return k;
}

static int insert_hw(struct remote *c, uint64_t addr, int *written)
{
	char cmd[64];
	if (c->hw_limit >= 0 && c->hw_used >= c->hw_limit)
		return cfail(c, "a hardware breakpoint at 0x%llx would be number %d: the target has %d comparators "
		             "(--hw-breakpoints)", (unsigned long long)addr, c->hw_used + 1, c->hw_limit);
	snprintf(cmd, sizeof cmd, "Z1,%llx,%x", (unsigned long long)addr, bp_kind(c, addr));
	if (request(c, cmd))
		return -1;
	if (!c->r.pkt_len)
		return cfail(c, "0x%llx is in code that cannot be written, and the stub has no hardware breakpoints (Z1)",
		             (unsigned long long)addr);
	if (strcmp(c->r.pkt, "OK"))
		return cfail(c, "the stub refused hardware breakpoint number %d, at 0x%llx (%.10s): the core's comparators "
		             "are probably all in use (%d placed; give their count with --hw-breakpoints)",
		             c->hw_used + 1, (unsigned long long)addr, c->r.pkt, c->hw_used);
	c->hw_used++;
	*written = RBP_HW;
	return 0;
}

int remote_insert_bp(struct remote *c, uint64_t addr, uint8_t saved[RARCH_MAX_BP], int *written)
{
	char cmd[64];
	*written = 0;
	if (remote_readonly(c, addr))
		return insert_hw(c, addr, written);
	if (c->has_z0) {
		snprintf(cmd, sizeof cmd, "Z0,%llx,%x", (unsigned long long)addr, bp_kind(c, addr));
		if (request(c, cmd))
			return -1;
		if (!strcmp(c->r.pkt, "OK"))
			return 0;
		if (c->r.pkt_len && c->r.pkt[0] == 'E') {
			/* OpenOCD: the software breakpoint cannot be written there
			 * (flash without a memory map): hardware ones from now on. */
			c->force_hw = 1;
			return insert_hw(c, addr, written);
		}
		if (c->r.pkt_len)
			return cfail(c, "the stub refused a breakpoint at 0x%llx (%.10s)", (unsigned long long)addr, c->r.pkt);
		c->has_z0 = 0; /* empty reply: not supported, write the instruction */
	}
	if (remote_read(c, addr, saved, (size_t)c->arch->bp_len))
		return -1;
	if (remote_write(c, addr, c->big_endian ? c->arch->bp_be : c->arch->bp_le, (size_t)c->arch->bp_len)) {
		c->force_hw = 1;    /* the stub refuses M there: code in flash */
		return insert_hw(c, addr, written);
	}
	*written = RBP_WRITTEN;
	return 0;
}

int remote_remove_bp(struct remote *c, uint64_t addr, const uint8_t saved[RARCH_MAX_BP], int written)
{
	char cmd[64];
	if (written == RBP_WRITTEN)
		return remote_write(c, addr, saved, (size_t)c->arch->bp_len);
	snprintf(cmd, sizeof cmd, "z%d,%llx,%x", written == RBP_HW, (unsigned long long)addr, bp_kind(c, addr));
	if (written == RBP_HW)
		c->hw_used--;
	if (request(c, cmd))
		return -1;
	if (strcmp(c->r.pkt, "OK"))
		return cfail(c, "the stub could not remove the breakpoint at 0x%llx (%.10s)", (unsigned long long)addr, c->r.pkt);
	return 0;
}

int remote_cont(struct remote *c, int sig)
{
	char cmd[32];
	if (c->has_vcont)
		snprintf(cmd, sizeof cmd, sig ? "vCont;C%02x" : "vCont;c", sig);
	else
		snprintf(cmd, sizeof cmd, sig ? "C%02x" : "c", sig);
	c->valid = 0;
	if (rsp_send_str(&c->r, cmd))
		return rfail(c, "resuming the target");
	return drain(c);
}

int remote_step(struct remote *c, struct remote_stop *st)
{
	char cmd[48];
	if (c->has_vcont && c->thread)
		snprintf(cmd, sizeof cmd, "vCont;s:%lx", c->thread);
	else
		snprintf(cmd, sizeof cmd, c->has_vcont ? "vCont;s" : "s");
	c->valid = 0;
	if (rsp_send_str(&c->r, cmd))
		return rfail(c, "single-stepping the target");
	if (drain(c))
		return -1;
	return remote_wait(c, -1, st);
}

/* Pipelining: in no-ack mode a stub reads packets in order and answers each
 * in order, so a command whose reply is "OK" and a resume can go together,
 * and the "OK" is read before the resume's stop reply.  With acks, the '+'
 * of the second packet could come after the first reply: one at a time. */
static int can_pipeline(struct remote *c, int written)
{
	return c->r.noack && !written && c->has_z0;
}

static int expect_ok(struct remote *c, const char *what, uint64_t addr)
{
	int rc = rsp_recv(&c->r, 0);
	if (rc)
		return rfail(c, what);
	if (strcmp(c->r.pkt, "OK"))
		return cfail(c, "%s at 0x%llx failed ('%.10s')", what, (unsigned long long)addr, c->r.pkt);
	return 0;
}

int remote_step_over(struct remote *c, uint64_t addr, const uint8_t saved[RARCH_MAX_BP], int written,
                     struct remote_stop *st, int *lifted)
{
	*lifted = 0;
	if (drain(c))
		return -1;
	if (c->step_passes_bp && written != RBP_WRITTEN && (c->has_z0 || written == RBP_HW)) {
		/* Step with the breakpoint in place.  The first time, see where the
		 * thread is: still on the breakpoint (reported again, not executed)
		 * means this stub needs it lifted, from now on. */
		if (remote_step(c, st))
			return -1;
		if (c->step_passes_bp == 1 || st->kind != REMOTE_STOPPED || st->code != 5)
			return 0;
		uint64_t pc;
		if (remote_reg(c, c->arch->pc, &pc))
			return -1;
		c->step_passes_bp = pc != addr;
		if (c->step_passes_bp)
			return 0;
	}
	*lifted = 1;
	if (!can_pipeline(c, written)) {
		if (remote_remove_bp(c, addr, saved, written))
			return -1;
		return remote_step(c, st);
	}
	char cmd[64];
	snprintf(cmd, sizeof cmd, "z0,%llx,%x", (unsigned long long)addr, bp_kind(c, addr));
	if (rsp_send_str(&c->r, cmd))
		return rfail(c, "removing a breakpoint");
	if (c->thread)
		snprintf(cmd, sizeof cmd, "vCont;s:%lx", c->thread);
	else
		snprintf(cmd, sizeof cmd, c->has_vcont ? "vCont;s" : "s");
	c->valid = 0;
	if (rsp_send_str(&c->r, cmd))
		return rfail(c, "single-stepping the target");
	if (expect_ok(c, "removing the breakpoint", addr))
		return -1;
	return remote_wait(c, -1, st);
}

int remote_insert_cont(struct remote *c, uint64_t addr, uint8_t saved[RARCH_MAX_BP], int *written, int sig)
{
	if (drain(c))
		return -1;
	if (!can_pipeline(c, *written))
		return remote_insert_bp(c, addr, saved, written) ? -1 : remote_cont(c, sig);
	char cmd[64];
	snprintf(cmd, sizeof cmd, "Z0,%llx,%x", (unsigned long long)addr, bp_kind(c, addr));
	if (rsp_send_str(&c->r, cmd))
		return rfail(c, "putting back a breakpoint");
	if (remote_cont(c, sig))
		return -1;
	return expect_ok(c, "putting back the breakpoint", addr);
}

int remote_interrupt(struct remote *c)
{
	if (rsp_interrupt(&c->r))
		return rfail(c, "interrupting the target");
	return 0;
}

int remote_load_bias(struct remote *c, uint64_t elf_entry, uint64_t *bias, const char **how)
{
	*bias = 0;
	*how = "none (the program runs at its link address)";
	if (c->has_auxv) {
		size_t n;
		char *a = xfer_read(c, "auxv", "", &n);
		size_t w = (size_t)c->arch->ptr_size;
		for (size_t off = 0; a && off + 2 * w <= n; off += 2 * w) {
			uint64_t key = 0, val = 0;
			for (size_t i = 0; i < w; i++) {
				key |= (uint64_t)(uint8_t)a[off + (c->big_endian ? w - 1 - i : i)] << (8 * i);
				val |= (uint64_t)(uint8_t)a[off + w + (c->big_endian ? w - 1 - i : i)] << (8 * i);
			}
			if (key == AT_ENTRY) {
				*bias = val - elf_entry;
				*how = "auxv AT_ENTRY";
				free(a);
				return 0;
			}
			if (key == AT_NULL)
				break;
		}
		free(a);
	}
	if (request(c, "qOffsets"))
		return -1;
	const char *t = strstr(c->r.pkt, "Text=");
	if (t) {
		*bias = strtoull(t + 5, NULL, 16);
		*how = "qOffsets";
	}
	return 0;
}

int remote_trace_define(struct remote *c, int num, uint64_t addr)
{
	char cmd[96];
	if (!c->has_tracepoints)
		return 1;
	if (!c->trace_defined) {
		if (request(c, "QTinit"))
			return -1;
		if (strcmp(c->r.pkt, "OK")) {
			c->has_tracepoints = 0;
			return 1;
		}
		c->trace_defined = 1;
	}
	/* Number and address in hex, enabled, no step count, no pass count. */
	snprintf(cmd, sizeof cmd, "QTDP:%x:%llx:E:0:0", num, (unsigned long long)addr);
	if (request(c, cmd))
		return -1;
	return strcmp(c->r.pkt, "OK") ? 1 : 0;
}

int remote_trace_start(struct remote *c)
{
	if (request(c, "QTBuffer:circular:1"))
		return -1;
	if (request(c, "QTStart"))
		return -1;
	if (strcmp(c->r.pkt, "OK"))
		return cfail(c, "the stub could not start the tracepoints (%.20s)", c->r.pkt);
	return 0;
}

int remote_trace_hits(struct remote *c, int num, uint64_t addr, uint64_t *hits)
{
	char cmd[96], *end;
	snprintf(cmd, sizeof cmd, "qTP:%x:%llx", num, (unsigned long long)addr);
	if (request(c, cmd))
		return -1;
	/* "Vhits:usage": gdbserver writes hits in decimal (measured with
	 * gdbserver 13: 10 hits "V10", 27 hits "V27"), unlike most numbers of
	 * the protocol. */
	const char *p = c->r.pkt;
	if (p[0] != 'V' || p[1] < '0' || p[1] > '9')
		return cfail(c, "the stub gave no hit count for tracepoint %d ('%.20s')", num, p);
	*hits = strtoull(p + 1, &end, 10);
	if (*end != ':' && *end)
		return cfail(c, "malformed hit count for tracepoint %d ('%.20s')", num, p);
	return 0;
}

int remote_trace_stop(struct remote *c)
{
	if (request(c, "QTStop"))
		return -1;
	if (strcmp(c->r.pkt, "OK"))
		return cfail(c, "the stub could not stop the tracepoints (%.20s)", c->r.pkt);
	return 0;
}

int remote_catch_syscall(struct remote *c, int nr)
{
	char cmd[48];
	if (nr < 0)
		snprintf(cmd, sizeof cmd, "QCatchSyscalls:0");
	else
		snprintf(cmd, sizeof cmd, "QCatchSyscalls:1;%x", nr);
	if (request(c, cmd))
		return -1;
	if (!c->r.pkt_len || c->r.pkt[0] == 'E')
		return 1;
	return strcmp(c->r.pkt, "OK") ? cfail(c, "catching system call %d: '%.10s'", nr, c->r.pkt) : 0;
}

int remote_detach(struct remote *c)
{
	if (request(c, "D"))
		return -1;
	if (strcmp(c->r.pkt, "OK"))
		return cfail(c, "the stub refused to detach (%.10s)", c->r.pkt);
	return 0;
}

void remote_kill(struct remote *c)
{
	rsp_send_str(&c->r, "k");
}
