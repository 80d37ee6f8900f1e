/* test_rsp.c — unit tests of the GDB remote protocol packet layer
 * (src/probe/remote/rsp.c) against a peer on the other end of a socketpair: a table
 * of good and malformed replies (bad checksum, truncated, oversize, bad
 * escapes, run-length abuse, garbage, silence, a closed connection) that
 * must give the decoded packet or an error code, never a crash or a hang;
 * the framing and escaping of what sonde sends; acks and no-ack mode. */
#include "unit.h"

#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "probe/remote/rsp.h"

static int peer;

static void pair(struct rsp *r, int timeout_ms)
{
	int sv[2];
	CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
	rsp_init_fd(r, sv[0], timeout_ms);
	peer = sv[1];
}

static void put(const void *b, size_t n)
{
	CHECK(write(peer, b, n) == (ssize_t)n);
}

/* "$body#xx" (or a '%' notification) with the right checksum. */
static void put_framed(const char *start, const char *body, size_t n)
{
	unsigned s = 0;
	char t[8];
	for (size_t i = 0; i < n; i++)
		s += (unsigned char)body[i];
	put(start, 1);
	put(body, n);
	snprintf(t, sizeof t, "#%02x", s & 0xff);
	put(t, 3);
}

static void put_packet(const char *body, size_t n)
{
	put_framed("$", body, n);
}

static size_t drain(char *buf, size_t cap)
{
	struct timespec ts = { 0, 20000000 };
	nanosleep(&ts, NULL);
	ssize_t n = recv(peer, buf, cap - 1, MSG_DONTWAIT);
	buf[n > 0 ? n : 0] = 0;
	return n > 0 ? (size_t)n : 0;
}

struct row {
	const char *name;
	const char *body;   /* packet body as sent (checksum made right) */
	int rc;             /* expected rsp_recv result */
	const char *want;   /* decoded, for RSP_OK */
};

static const struct row rows[] = {
	{ "plain", "OK", RSP_OK, "OK" },
	{ "empty", "", RSP_OK, "" },
	{ "escape", "a}\x03" "b", RSP_OK, "a#b" },
	{ "escaped star", "}\x0a", RSP_OK, "*" },
	{ "rle 3", "0* ", RSP_OK, "0000" },
	{ "rle after escape", "}\x03*!", RSP_OK, "#\x03\x03\x03\x03" },
	{ "escape of a run", "}*\"", RSP_OK, "]]]" },
	{ "run leaves a lone escape", "}*!", RSP_EPROTO, NULL },
	{ "rle max", "x*~", RSP_OK, "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx" },
	{ "escape at end", "abc}", RSP_EPROTO, NULL },
	{ "rle first", "*!", RSP_EPROTO, NULL },
	{ "rle at end", "ab*", RSP_EPROTO, NULL },
	{ "rle count too small", "a*\x1f", RSP_EPROTO, NULL },
	{ "rle count too big", "a*\x7f", RSP_EPROTO, NULL },
};

static void table(void)
{
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		struct rsp r;
		pair(&r, 500);
		r.noack = 1;
		put_packet(rows[i].body, strlen(rows[i].body));
		int rc = rsp_recv(&r, 0);
		if (rc != rows[i].rc || (rc == RSP_OK && strcmp(r.pkt, rows[i].want))) {
			printf("  row '%s': rc %d (want %d), packet '%s' (%s)\n", rows[i].name, rc, rows[i].rc,
			       rc == RSP_OK ? r.pkt : "", r.err);
			CHECK(0);
		}
		if (rc != RSP_OK)
			CHECK(r.err[0]);
		rsp_close(&r);
		close(peer);
	}
}

static void bad_checksum_noack(void)
{
	struct rsp r;
	pair(&r, 500);
	r.noack = 1;
	put("$OK#00", 6);
	CHECK(rsp_recv(&r, 0) == RSP_EPROTO);
	CHECK(strstr(r.err, "checksum"));
	put("$OK#zz", 6);
	CHECK(rsp_recv(&r, 0) == RSP_EPROTO);
}

static void bad_checksum_ack_retry(void)
{
	struct rsp r;
	char buf[64];
	pair(&r, 500);
	put("$OK#00", 6);
	put_packet("S05", 3);
	CHECK(rsp_recv(&r, 0) == RSP_OK);
	CHECK(!strcmp(r.pkt, "S05"));
	drain(buf, sizeof buf);
	CHECK(!strcmp(buf, "-+"));
	/* Four bad ones in a row: an error, not an endless loop. */
	for (int i = 0; i < 4; i++)
		put("$OK#00", 6);
	CHECK(rsp_recv(&r, 0) == RSP_EPROTO);
}

static void truncated(void)
{
	struct rsp r;
	pair(&r, 200);
	r.noack = 1;
	put("$OK", 3);
	CHECK(rsp_recv(&r, 0) == RSP_ETIMEOUT);
	CHECK(strstr(r.err, "truncated"));
	put("#9", 2);
	CHECK(rsp_recv(&r, 0) == RSP_ETIMEOUT);
	/* "$O$K#.." : a new start inside a packet */
	pair(&r, 200);
	r.noack = 1;
	put("$O$K#00", 7);
	CHECK(rsp_recv(&r, 0) == RSP_EPROTO);
}

static void oversize(void)
{
	struct rsp r;
	pair(&r, 2000);
	r.noack = 1;
	/* The peer writes in a child (the socket buffer is smaller than the packet). */
	pid_t w = fork();
	if (w == 0) {
		static char big[RSP_MAX_PACKET + 100];
		memset(big, 'a', sizeof big);
		put("$", 1);
		put(big, sizeof big);
		_exit(0);
	}
	CHECK(rsp_recv(&r, 0) == RSP_EPROTO);
	CHECK(strstr(r.err, "exceeds"));
	close(peer);
	rsp_close(&r);
	waitpid(w, NULL, 0);
	/* Run-length expansion past the limit: 700 runs of 97 bytes. */
	pair(&r, 2000);
	r.noack = 1;
	static char rle[2100];
	size_t n = 0;
	for (int i = 0; i < 700; i++) {
		rle[n++] = 'z';
		rle[n++] = '*';
		rle[n++] = '~';
	}
	put_packet(rle, n);
	CHECK(rsp_recv(&r, 0) == RSP_EPROTO);
	CHECK(strstr(r.err, "size limit"));
	/* And sending one that is too big is refused before it is framed. */
	static char huge[RSP_MAX_PACKET + 1];
	CHECK(rsp_send(&r, huge, sizeof huge) == RSP_EPROTO);
}

static void garbage_silence_close(void)
{
	struct rsp r;
	pair(&r, 200);
	CHECK(rsp_recv(&r, 0) == RSP_ETIMEOUT);
	CHECK(strstr(r.err, "no reply"));
	/* Garbage without '$' forever: bounded, then an error (or the timeout). */
	pid_t w = fork();
	if (w == 0) {
		static char junk[RSP_MAX_PACKET + 10];
		memset(junk, 'G', sizeof junk);
		put(junk, sizeof junk);
		_exit(0);
	}
	int rc = rsp_recv(&r, 0);
	CHECK(rc == RSP_EPROTO || rc == RSP_ETIMEOUT);
	waitpid(w, NULL, 0);
	close(peer);
	CHECK(rsp_recv(&r, 0) == RSP_ECLOSED);
	CHECK(rsp_send_str(&r, "g") != RSP_OK);
}

static void send_framing(void)
{
	struct rsp r;
	char buf[128];
	pair(&r, 500);
	put("+", 1);
	static const char data[] = "M0,4:$#}*";
	CHECK(rsp_send(&r, data, sizeof data - 1) == RSP_OK);
	drain(buf, sizeof buf);
	unsigned s = 0;
	const char *body = "M0,4:}\x04}\x03}]}\x0a";
	for (const char *p = body; *p; p++)
		s += (unsigned char)*p;
	char want[64];
	snprintf(want, sizeof want, "$%s#%02x", body, s & 0xff);
	CHECK(!strcmp(buf, want));
	/* A '-' makes it resend; something else instead of an ack is an error. */
	put("-+", 2);
	CHECK(rsp_send_str(&r, "?") == RSP_OK);
	drain(buf, sizeof buf);
	CHECK(!strcmp(buf, "$?#3f$?#3f"));
	put("x", 1);
	CHECK(rsp_send_str(&r, "?") == RSP_EPROTO);
	/* No ack at all: a timeout. */
	pair(&r, 200);
	CHECK(rsp_send_str(&r, "?") == RSP_ETIMEOUT);
	/* No-ack mode: nothing awaited. */
	r.noack = 1;
	CHECK(rsp_send_str(&r, "c") == RSP_OK);
	CHECK(rsp_interrupt(&r) == RSP_OK);
	drain(buf, sizeof buf);
	CHECK(!strcmp(buf, "$?#3f$c#63\x03"));
}

static void request_skips_console(void)
{
	struct rsp r;
	char buf[64];
	pair(&r, 500);
	r.noack = 1;
	put_packet("O6869", 5);
	put_framed("%", "Stop:x", 6);
	put_packet("OK", 2);
	CHECK(rsp_request(&r, "vCont;c", NULL, NULL) == RSP_OK);
	CHECK(!strcmp(r.pkt, "OK"));
	drain(buf, sizeof buf);
	CHECK(!strncmp(buf, "$vCont;c#", 9));
}

static void hex(void)
{
	uint8_t b[4];
	char h[9];
	CHECK(rsp_unhex("00ff7A1b", b, 4) == 0 && b[1] == 0xff && b[2] == 0x7a && b[3] == 0x1b);
	CHECK(rsp_unhex("0g", b, 1) == -1);
	CHECK(rsp_unhex("0", b, 1) == -1);
	rsp_tohex(b, 4, h);
	CHECK(!strcmp(h, "00ff7a1b"));
}

static void bad_targets(void)
{
	struct rsp r;
	CHECK(rsp_open(&r, "udp:1", 100) != RSP_OK && strstr(r.err, "unknown target"));
	CHECK(rsp_open(&r, "tcp:nohostport", 100) != RSP_OK);
	CHECK(rsp_open(&r, "serial:/nonexistent/tty", 100) != RSP_OK && strstr(r.err, "cannot open"));
	CHECK(rsp_open(&r, "serial:/dev/null,123", 100) != RSP_OK && strstr(r.err, "baud"));
	CHECK(rsp_open(&r, "serial:/dev/null", 100) != RSP_OK && strstr(r.err, "not a serial line"));
}

int main(void)
{
	RUN(table);
	RUN(bad_checksum_noack);
	RUN(bad_checksum_ack_retry);
	RUN(truncated);
	RUN(oversize);
	RUN(garbage_silence_close);
	RUN(send_framing);
	RUN(request_skips_console);
	RUN(hex);
	RUN(bad_targets);
	UNIT_END();
}
