/* ulink.c — ucsim's command console over TCP (ulink.h).  The console
 * echoes each command line, then writes its output and the NUL prompt
 * (-P); a `run` writes its output only when the simulation stops ("Stop at
 * 0x0000e4: (104) Breakpoint", registers, "Simulated N ticks ..."), then
 * the prompt.  Replies are read into one buffer of at most
 * ULINK_REPLY_MAX bytes; the fields sonde needs are parsed with explicit
 * bounds (see docs/REMOTE.md for each command and its reply). */
#include "probe/ucsim/ulink.h"

#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static const char *const space_name[] = { "rom", "iram", "xram", "sfr" };
static const uint32_t space_end[] = { 0x10000, 0x100, 0x10000, 0x100 };

static int fail(struct ulink *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(struct ulink *l, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(l->err, sizeof l->err, fmt, ap);
	va_end(ap);
	return -1;
}

static uint64_t mono_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

/* Read until the NUL prompt: 0 (l->in holds the reply), 1 timed out with
 * nothing complete (only when timeout_ms >= 0) or, with wake, a signal
 * came (Ctrl-C: the run loop decides), -1 error / closed.  A command's
 * wait goes on through signals: its reply must be read, or the next
 * reply would be taken for it. */
static int read_reply_w(struct ulink *l, int timeout_ms, int wake)
{
	uint64_t end = timeout_ms >= 0 ? mono_ms() + (uint64_t)timeout_ms : 0;
	for (;;) {
		char *z = l->len ? memchr(l->in, 0, l->len) : NULL;
		if (z)
			return 0;
		if (l->len >= ULINK_REPLY_MAX)
			return fail(l, "the simulator's reply is longer than %d bytes", ULINK_REPLY_MAX);
		int wait = -1;
		if (timeout_ms >= 0) {
			uint64_t now = mono_ms();
			if (now >= end)
				return 1;
			wait = (int)(end - now);
		}
		struct pollfd pf = { .fd = l->fd, .events = POLLIN };
		int r = poll(&pf, 1, wait);
		if (r < 0 && errno == EINTR) {
			if (wake)
				return 1;   /* a signal (Ctrl-C): the caller decides */
			continue;
		}
		if (r < 0)
			return fail(l, "poll: %s", strerror(errno));
		if (r == 0)
			continue;
		if (l->cap - l->len < 4096) {
			size_t cap = l->cap ? l->cap * 2 : 8192;
			char *b = realloc(l->in, cap + 1);
			if (!b)
				return fail(l, "out of memory");
			l->in = b;
			l->cap = cap;
		}
		ssize_t k = read(l->fd, l->in + l->len, l->cap - l->len);
		if (k < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (k <= 0) {
			l->closed = 1;
			return fail(l, "the simulator closed the connection");
		}
		l->len += (size_t)k;
	}
}

static int read_reply(struct ulink *l, int timeout_ms)
{
	return read_reply_w(l, timeout_ms, 0);
}

/* The reply up to the prompt becomes l->in (the rest, if any, kept for
 * the next one); the telnet negotiation bytes (0xff ...) ucsim sends at
 * the start are dropped. */
static int take_reply(struct ulink *l)
{
	char *z = memchr(l->in, 0, l->len);
	size_t n = (size_t)(z - l->in);
	free(l->reply);
	char *last = l->reply = malloc(n + 1);
	if (!last)
		return fail(l, "out of memory");
	size_t k = 0;
	for (size_t i = 0; last && i < n; i++) {
		unsigned char ch = (unsigned char)l->in[i];
		if (ch == 0xff && i + 2 < n) {
			i += 2;
			continue;
		}
		if (ch != '\r')
			last[k++] = (char)ch;
	}
	last[k] = 0;
	memmove(l->in, z + 1, l->len - n - 1);
	l->len -= n + 1;
	return 0;
}

static int send_line(struct ulink *l, const char *line)
{
	size_t n = strlen(line), off = 0;
	while (off < n) {
		ssize_t k = send(l->fd, line + off, n - off, MSG_NOSIGNAL);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			l->closed = 1;
			return fail(l, "the simulator closed the connection");
		}
		off += (size_t)k;
	}
	return 0;
}

static int dump_parse(struct ulink *l, int space, uint32_t addr, uint8_t *buf, size_t n);
static int parse_stop(struct ulink *l, const char *what, struct ulink_stop *st);

/* Both dumps in one write, both replies read: the snapshot. */
static int snapshot(struct ulink *l)
{
	if (send_line(l, "dump /h sfr 0x80 0xff 16\ndump /h iram 0x00 0xff 16\n"))
		return -1;
	for (int k = 0; k < 2; k++) {
		int r = read_reply(l, l->timeout_ms);
		if (r)
			return r < 0 ? -1 : fail(l, "no reply from the simulator to a dump in %d ms", l->timeout_ms);
		if (take_reply(l))
			return -1;
		/* the console echoes the first line of a write, not the next ones */
		char *nl = strchr(l->reply, '\n');
		if (nl && !strncmp(l->reply, "dump ", 5))
			memmove(l->reply, nl + 1, strlen(nl + 1) + 1);
		if (k ? dump_parse(l, US_IRAM, 0, l->iram, 256) : dump_parse(l, US_SFR, 0x80, l->sfr, 128))
			return -1;
	}
	l->snap = 1;
	return 0;
}

int ulink_cmd(struct ulink *l, const char *fmt, ...)
{
	char line[256];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof line - 1, fmt, ap);
	va_end(ap);
	if (n < 0 || n >= (int)sizeof line - 2)
		return fail(l, "command too long");
	strcat(line, "\n");
	if (send_line(l, line))
		return -1;
	int r = read_reply(l, l->timeout_ms);
	if (r < 0)
		return -1;
	if (r)
		return fail(l, "no reply from the simulator to '%.*s' in %d ms", n, line, l->timeout_ms);
	if (take_reply(l))
		return -1;
	char *reply = l->reply;
	/* the echo of the command line */
	char *nl = strchr(reply, '\n');
	size_t cl = (size_t)n;
	if (!strncmp(reply, line, cl) && nl == reply + cl)
		memmove(reply, nl + 1, strlen(nl + 1) + 1);
	return 0;
}

int ulink_open(struct ulink *l, const char *hostport, int timeout_ms)
{
	memset(l, 0, sizeof *l);
	l->fd = -1;
	l->timeout_ms = timeout_ms > 0 ? timeout_ms : 10000;
	char host[256];
	const char *colon = strrchr(hostport, ':');
	if (!colon || colon == hostport || (size_t)(colon - hostport) >= sizeof host || !colon[1])
		return fail(l, "bad target 'ucsim:%s' (expected ucsim:HOST:PORT)", hostport);
	memcpy(host, hostport, (size_t)(colon - hostport));
	host[colon - hostport] = 0;
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *res, *a;
	int g = getaddrinfo(host, colon + 1, &hints, &res);
	if (g)
		return fail(l, "%s: %s", hostport, gai_strerror(g));
	for (a = res; a; a = a->ai_next) {
		int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
		if (fd < 0)
			continue;
		if (connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
			l->fd = fd;
			break;
		}
		close(fd);
	}
	freeaddrinfo(res);
	if (l->fd < 0)
		return fail(l, "cannot connect to %s: %s", hostport, strerror(errno));
	/* the telnet options and a prompt, then the banner ("uCsim 0.6.4,
	 * Copyright ...") and a prompt */
	for (int k = 0; k < 3; k++) {
		int r = read_reply(l, l->timeout_ms);
		if (r)
			return r < 0 ? -1 : fail(l, "%s: no ucsim console there (no prompt in %d ms; s51 needs -P)",
			                          hostport, l->timeout_ms);
		if (take_reply(l))
			return -1;
		if (strstr(l->reply, "uCsim"))
			return 0;
	}
	return fail(l, "%s: not ucsim's console (no uCsim banner)", hostport);
}

void ulink_close(struct ulink *l)
{
	if (l->fd >= 0)
		close(l->fd);
	l->fd = -1;
	free(l->in);
	l->in = NULL;
	l->len = l->cap = 0;
	free(l->reply);
	l->reply = NULL;
}

static int hexdig(int c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* `dump /h SPACE A B 16`: lines "0xADDR hh hh ... ascii"; each line's
 * address must be the next one expected, and it must give the bytes that
 * remain (16 at most per line). */
int ulink_read(struct ulink *l, int space, uint32_t addr, uint8_t *buf, size_t n)
{
	if (space < 0 || space > US_SFR || !n || n > 4096 || addr >= space_end[space] || n > space_end[space] - addr)
		return fail(l, "read of %zu bytes at %s 0x%x out of range", n, space < 0 || space > US_SFR ? "?" : space_name[space], addr);
	if (space == US_SFR && addr < 0x80)
		return fail(l, "SFR 0x%x below 0x80", addr);
	if (space == US_IRAM || space == US_SFR) {
		if (!l->snap && snapshot(l))
			return -1;
		memcpy(buf, space == US_IRAM ? l->iram + addr : l->sfr + (addr - 0x80), n);
		return 0;
	}
	if (ulink_cmd(l, "dump /h %s 0x%x 0x%x 16", space_name[space], addr, addr + (uint32_t)n - 1))
		return -1;
	return dump_parse(l, space, addr, buf, n);
}

static int dump_parse(struct ulink *l, int space, uint32_t addr, uint8_t *buf, size_t n)
{
	size_t got = 0;
	const char *p = l->reply;
	while (got < n && p && *p) {
		const char *eol = strchr(p, '\n');
		const char *e = eol ? eol : p + strlen(p);
		char *q;
		if (p[0] == '0' && p[1] == 'x') {
			unsigned long a = strtoul(p + 2, &q, 16);
			if (a != addr + got || *q != ' ')
				return fail(l, "dump of %s 0x%x: a line at 0x%lx, 0x%zx expected", space_name[space], addr, a,
				            (size_t)addr + got);
			size_t want = n - got < 16 ? n - got : 16;
			for (size_t i = 0; i < want; i++) {
				if (q + 3 > e || q[0] != ' ' || hexdig(q[1]) < 0 || hexdig(q[2]) < 0 || (q[3] != ' ' && q + 3 != e))
					return fail(l, "dump of %s 0x%x: a line with fewer bytes than asked", space_name[space], addr);
				buf[got++] = (uint8_t)(hexdig(q[1]) << 4 | hexdig(q[2]));
				q += 3;
			}
		}
		p = eol ? eol + 1 : NULL;
	}
	if (got != n)
		return fail(l, "dump of %s 0x%x: %zu bytes of %zu", space_name[space], addr, got, n);
	return 0;
}

/* `set memory SPACE A b0 b1 ...` (16 bytes a command), read back. */
int ulink_write(struct ulink *l, int space, uint32_t addr, const uint8_t *buf, size_t n)
{
	if (space < 0 || space > US_SFR || !n || n > 4096 || addr >= space_end[space] || n > space_end[space] - addr)
		return fail(l, "write of %zu bytes out of range", n);
	for (size_t off = 0; off < n; off += 16) {
		char line[200];
		size_t k = n - off < 16 ? n - off : 16;
		int w = snprintf(line, sizeof line, "set memory %s 0x%x", space_name[space], addr + (uint32_t)off);
		for (size_t i = 0; i < k; i++)
			w += snprintf(line + w, sizeof line - (size_t)w, " 0x%02x", buf[off + i]);
		if (ulink_cmd(l, "%s", line))
			return -1;
	}
	l->snap = 0;
	uint8_t back[4096];
	if (ulink_read(l, space, addr, back, n))
		return -1;
	if (memcmp(back, buf, n))
		return fail(l, "write of %s 0x%x: the simulator kept other bytes (read-only memory?)", space_name[space], addr);
	return 0;
}

/* "Breakpoint N at 0x0000e4: ..." */
int ulink_break(struct ulink *l, uint32_t addr, int *id)
{
	if (addr >= 0x10000)
		return fail(l, "breakpoint at 0x%x: beyond code memory", addr);
	if (ulink_cmd(l, "break 0x%x", addr))
		return -1;
	int num;
	unsigned long a;
	const char *p = strstr(l->reply, "Breakpoint ");
	if (!p || sscanf(p, "Breakpoint %d at 0x%lx", &num, &a) != 2 || num <= 0 || a != addr)
		return fail(l, "break 0x%x: the simulator said '%.60s'", addr, l->reply);
	*id = num;
	return 0;
}

int ulink_delete(struct ulink *l, int id)
{
	if (ulink_cmd(l, "delete %d", id))
		return -1;
	if (strstr(l->reply, "Error"))
		return fail(l, "delete %d: the simulator has no such breakpoint", id);
	return 0;
}

int ulink_run(struct ulink *l)
{
	l->snap = 0;
	return send_line(l, "run\n");
}

int ulink_sync(struct ulink *l)
{
	l->snap = 0;
	if (send_line(l, "state\n"))
		return -1;
	for (int k = 0; k < 4; k++) {
		int r = read_reply(l, l->timeout_ms);
		if (r)
			return r < 0 ? -1 : fail(l, "no reply from the simulator to 'state' in %d ms", l->timeout_ms);
		if (take_reply(l))
			return -1;
		if (strstr(l->reply, "CPU state="))
			return 0;
	}
	return fail(l, "the simulator's replies do not end with the one to 'state'");
}

int ulink_step(struct ulink *l, uint32_t *pc)
{
	struct ulink_stop st;
	if (ulink_step_stop(l, &st))
		return -1;
	if (st.code != 109)
		return fail(l, "step: the simulator said '(%d) %.60s'", st.code, st.reason);
	*pc = st.pc;
	return 0;
}

int ulink_step_stop(struct ulink *l, struct ulink_stop *st)
{
	l->snap = 0;
	if (ulink_cmd(l, "step"))
		return -1;
	/* "Stop at 0x000065: (109) stepped 24 ticks"; the program stopping
	 * itself in the step: "Stop at 0x000323: (110) Program stopped itself"
	 * and "Simulated 12 ticks" */
	if (parse_stop(l, "step", st))
		return -1;
	const char *t = strstr(l->reply, st->code == 109 ? ") stepped " : "Simulated ");
	unsigned long long k;
	if (t && sscanf(t, st->code == 109 ? ") stepped %llu ticks" : "Simulated %llu ticks", &k) == 1 && k < 1000)
		l->ticks += k;
	return 0;
}

int ulink_interrupt(struct ulink *l)
{
	return send_line(l, "stop\n");
}

/* The stop in l->reply: "Stop at 0xPC: (CODE) REASON". */
static int parse_stop(struct ulink *l, const char *what, struct ulink_stop *st)
{
	const char *p = strstr(l->reply, "Stop at 0x");
	char *q;
	if (!p)
		return fail(l, "%s: no stop in the simulator's reply ('%.60s')", what, l->reply);
	unsigned long pc = strtoul(p + 10, &q, 16);
	long code;
	if (pc > 0xffff || strncmp(q, ": (", 3) || (code = strtol(q + 3, &q, 10)) < 0 || code > 100000 || *q != ')')
		return fail(l, "%s: a stop the simulator wrote as '%.60s'", what, p);
	memset(st, 0, sizeof *st);
	st->pc = (uint32_t)pc;
	st->code = (int)code;
	st->kind = code == 104 ? ULS_BREAK : code == 105 ? ULS_USER : code == 110 ? ULS_SELF : ULS_OTHER;
	const char *rs = q + 1 + strspn(q + 1, " ");
	size_t rl = strcspn(rs, "\n");
	snprintf(st->reason, sizeof st->reason, "%.*s", (int)(rl < sizeof st->reason ? rl : sizeof st->reason - 1), rs);
	return 0;
}

int ulink_wait(struct ulink *l, int timeout_ms, struct ulink_stop *st)
{
	int r = read_reply_w(l, timeout_ms, 1);
	if (r)
		return r;
	if (take_reply(l))
		return -1;
	const char *reply = l->reply;
	/* "Stop at 0x0000e4: (104) Breakpoint" and "Simulated 14508 ticks" */
	if (parse_stop(l, "run", st))
		return -1;
	const char *t = strstr(reply, "Simulated ");
	unsigned long long ticks;
	if (t && sscanf(t, "Simulated %llu ticks", &ticks) == 1 && ticks < (1ull << 48))
		l->ticks += ticks;
	else if (t)
		return fail(l, "run: a tick count the simulator wrote as '%.40s'", t);
	return 0;
}

int ulink_sp(struct ulink *l, uint8_t *sp)
{
	return ulink_read(l, US_SFR, 0x81, sp, 1);
}

int ulink_ret_addr(struct ulink *l, uint16_t *ret, uint8_t *sp)
{
	uint8_t b[2];
	if (ulink_sp(l, sp))
		return -1;
	if (*sp < 1)
		return fail(l, "stack pointer 0x%02x: no return address below it", *sp);
	if (ulink_read(l, US_IRAM, (uint32_t)*sp - 1, b, 2))
		return -1;
	*ret = (uint16_t)(b[1] << 8 | b[0]);
	return 0;
}
