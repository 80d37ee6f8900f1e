/* rsp.c — the GDB Remote Serial Protocol packet layer (see rsp.h): framing,
 * checksums, escapes, run-length decoding, acks, timeouts, and the two
 * transports (TCP, serial line).
 *
 * A packet on the wire is `$` body `#` two hex digits, the checksum being the
 * sum of the body's bytes modulo 256.  In the body, `}` escapes the next byte
 * (xor 0x20), and in replies `X*n` means X followed by n-29 more copies of X
 * (n printable, so runs are 3..97; gdb never sends runs of 6 or 7 because
 * they would encode as `#` and `$`).  Every read has a deadline: a stub that
 * stops half-way through a packet is a timeout, never a hang. */
#include "probe/remote/rsp.h"
#include "common/clock.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

static int fail(struct rsp *r, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(struct rsp *r, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r->err, sizeof r->err, fmt, ap);
	va_end(ap);
	if (code == RSP_ECLOSED)
		r->closed = 1;
	return code;
}

int rsp_hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int rsp_unhex(const char *hex, uint8_t *out, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int hi = rsp_hexval((unsigned char)hex[2 * i]);
		int lo = hi < 0 ? -1 : rsp_hexval((unsigned char)hex[2 * i + 1]);
		if (lo < 0)
			return -1;
		out[i] = (uint8_t)(hi << 4 | lo);
	}
	return 0;
}

void rsp_tohex(const uint8_t *in, size_t n, char *out)
{
	static const char d[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = d[in[i] >> 4];
		out[2 * i + 1] = d[in[i] & 15];
	}
	out[2 * n] = 0;
}

void rsp_init_fd(struct rsp *r, int fd, int timeout_ms)
{
	memset(r, 0, sizeof *r);
	r->fd = fd;
	r->timeout_ms = timeout_ms > 0 ? timeout_ms : RSP_DEFAULT_TIMEOUT_MS;
}

void rsp_close(struct rsp *r)
{
	if (r->fd >= 0)
		close(r->fd);
	r->fd = -1;
	free(r->pkt);
	free(r->out);
	r->pkt = r->out = NULL;
	r->pkt_cap = r->out_cap = 0;
}

static int open_tcp(struct rsp *r, const char *spec)
{
	char host[256];
	const char *colon = strrchr(spec, ':');
	if (!colon || colon == spec || !colon[1] || (size_t)(colon - spec) >= sizeof host)
		return fail(r, RSP_EIO, "bad target 'tcp:%s' (expected tcp:HOST:PORT)", spec);
	memcpy(host, spec, (size_t)(colon - spec));
	host[colon - spec] = 0;
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *res, *ai;
	int g = getaddrinfo(host, colon + 1, &hints, &res);
	if (g)
		return fail(r, RSP_EIO, "cannot resolve %s (%s)", spec, gai_strerror(g));
	int fd = -1, saved = 0;
	for (ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
		if (fd < 0) {
			saved = errno;
			continue;
		}
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
			break;
		if (errno == EINPROGRESS) {
			struct pollfd p = { fd, POLLOUT, 0 };
			int soerr = 0;
			socklen_t sl = sizeof soerr;
			int pr = poll(&p, 1, r->timeout_ms);
			if (pr > 0 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) == 0 && !soerr)
				break;
			saved = pr == 0 ? ETIMEDOUT : soerr ? soerr : errno;
		} else {
			saved = errno;
		}
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0)
		return fail(r, RSP_EIO, "cannot connect to %s (%s)", spec, strerror(saved));
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	r->fd = fd;
	return RSP_OK;
}

static speed_t baud_of(long b)
{
	static const struct { long b; speed_t s; } t[] = {
		{ 9600, B9600 }, { 19200, B19200 }, { 38400, B38400 }, { 57600, B57600 },
		{ 115200, B115200 }, { 230400, B230400 }, { 460800, B460800 }, { 921600, B921600 },
	};
	for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
		if (t[i].b == b)
			return t[i].s;
	return 0;
}

static int open_serial(struct rsp *r, const char *spec)
{
	char dev[512];
	long baud = 115200;
	const char *comma = strchr(spec, ',');
	size_t dl = comma ? (size_t)(comma - spec) : strlen(spec);
	if (!dl || dl >= sizeof dev)
		return fail(r, RSP_EIO, "bad target 'serial:%s' (expected serial:DEVICE[,BAUD])", spec);
	memcpy(dev, spec, dl);
	dev[dl] = 0;
	if (comma) {
		char *end;
		baud = strtol(comma + 1, &end, 10);
		if (*end || !baud_of(baud))
			return fail(r, RSP_EIO, "bad baud rate '%s' (9600 to 921600)", comma + 1);
	}
	int fd = open(dev, O_RDWR | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return fail(r, RSP_EIO, "cannot open %s (%s)", dev, strerror(errno));
	struct termios tio;
	if (tcgetattr(fd, &tio)) {
		int e = errno;
		close(fd);
		return fail(r, RSP_EIO, "%s is not a serial line (%s)", dev, strerror(e));
	}
	cfmakeraw(&tio);
	tio.c_cflag |= CLOCAL | CREAD;
	cfsetispeed(&tio, baud_of(baud));
	cfsetospeed(&tio, baud_of(baud));
	if (tcsetattr(fd, TCSANOW, &tio)) {
		int e = errno;
		close(fd);
		return fail(r, RSP_EIO, "cannot set %s to raw mode (%s)", dev, strerror(e));
	}
	tcflush(fd, TCIOFLUSH);
	r->fd = fd;
	return RSP_OK;
}

int rsp_open(struct rsp *r, const char *target, int timeout_ms)
{
	rsp_init_fd(r, -1, timeout_ms);
	if (!strncmp(target, "tcp:", 4))
		return open_tcp(r, target + 4);
	if (!strncmp(target, "serial:", 7))
		return open_serial(r, target + 7);
	return fail(r, RSP_EIO, "unknown target '%s' (expected tcp:HOST:PORT or serial:DEVICE[,BAUD])", target);
}

static int write_all(struct rsp *r, const void *buf, size_t n)
{
	const char *p = buf;
	int64_t deadline = (int64_t)clock_mono_ms() + r->timeout_ms;
	while (n) {
		/* send(MSG_NOSIGNAL): a closed connection is an error, not SIGPIPE. */
		ssize_t w = send(r->fd, p, n, MSG_NOSIGNAL);
		if (w < 0 && errno == ENOTSOCK)
			w = write(r->fd, p, n);
		if (w > 0) {
			p += w;
			n -= (size_t)w;
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EAGAIN) {
			int left = (int)(deadline - (int64_t)clock_mono_ms());
			struct pollfd pf = { r->fd, POLLOUT, 0 };
			if (left <= 0 || poll(&pf, 1, left) == 0)
				return fail(r, RSP_ETIMEOUT, "the stub does not read what sonde sends (timeout)");
			continue;
		}
		if (w < 0 && (errno == EPIPE || errno == ECONNRESET))
			return fail(r, RSP_ECLOSED, "the stub closed the connection");
		return fail(r, RSP_EIO, "write to the stub failed (%s)", strerror(errno));
	}
	return RSP_OK;
}

/* The next byte from the stub, waiting until deadline (ms, monotonic). */
static int get_byte(struct rsp *r, int64_t deadline, uint8_t *c)
{
	while (r->in_pos == r->in_len) {
		int left = (int)(deadline - (int64_t)clock_mono_ms());
		if (left < 0)
			left = 0;
		struct pollfd pf = { r->fd, POLLIN, 0 };
		int pr = poll(&pf, 1, left);
		if (pr < 0 && errno == EINTR)
			continue; /* a signal (Ctrl-C) is the caller's business, the reply is still due */
		if (pr < 0)
			return fail(r, RSP_EIO, "poll failed (%s)", strerror(errno));
		if (pr == 0)
			return fail(r, RSP_ETIMEOUT, "no reply from the stub within %d ms", r->timeout_ms);
		ssize_t n = read(r->fd, r->in, sizeof r->in);
		if (n == 0 || (n < 0 && (errno == ECONNRESET || errno == EIO)))
			return fail(r, RSP_ECLOSED, "the stub closed the connection");
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (n < 0)
			return fail(r, RSP_EIO, "read from the stub failed (%s)", strerror(errno));
		r->in_pos = 0;
		r->in_len = (size_t)n;
	}
	*c = r->in[r->in_pos++];
	return RSP_OK;
}

long rsp_decode(const char *raw, size_t len, char *out, size_t cap, const char **why)
{
	/* As gdb reads a packet: runs are expanded on the bytes as sent (a run
	 * after "}X" repeats X, still escaped), then escapes are undone. */
	size_t o = 0;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)raw[i];
		if (c == '*') {
			if (o == 0) {
				*why = "run-length '*' with no character to repeat";
				return -1;
			}
			if (++i == len) {
				*why = "run-length '*' at the end of the packet";
				return -1;
			}
			int n = (unsigned char)raw[i];
			if (n < 29 + 3 || n > 126) {
				*why = "bad run-length count";
				return -1;
			}
			size_t rep = (size_t)(n - 29);
			if (o + rep > cap) {
				*why = "run-length expansion exceeds the packet size limit";
				return -1;
			}
			memset(out + o, out[o - 1], rep);
			o += rep;
			continue;
		}
		if (o == cap) {
			*why = "packet exceeds the size limit";
			return -1;
		}
		out[o++] = (char)c;
	}
	size_t w = 0;
	for (size_t i = 0; i < o; i++) {
		if (out[i] == '}') {
			if (++i == o) {
				*why = "escape '}' at the end of the packet";
				return -1;
			}
			out[w++] = (char)(out[i] ^ 0x20);
		} else {
			out[w++] = out[i];
		}
	}
	return (long)w;
}

int rsp_poll(struct rsp *r, int timeout_ms)
{
	if (r->in_pos < r->in_len)
		return 1;
	struct pollfd pf = { r->fd, POLLIN, 0 };
	int pr = poll(&pf, 1, timeout_ms);
	if (pr < 0 && errno != EINTR)
		return fail(r, RSP_EIO, "poll failed (%s)", strerror(errno));
	return pr > 0;
}

/* One framed packet (skipping stray acks, noise before '$' and '%'
 * notifications).  Returns 0 with r->pkt set, 1 for a bad checksum
 * (r->err set), or an error. */
static int read_packet(struct rsp *r, int64_t deadline)
{
	uint8_t c;
	int rc;
	size_t noise = 0;
	for (;;) {
		if ((rc = get_byte(r, deadline, &c)))
			return rc;
		if (c == '$' || c == '%')
			break;
		if (c == '+' || c == '-')
			continue;
		if (++noise > RSP_MAX_PACKET)
			return fail(r, RSP_EPROTO, "garbage from the stub (no packet start '$' in %d bytes)", RSP_MAX_PACKET);
	}
	int notification = c == '%';
	static char raw[RSP_MAX_PACKET];
	size_t len = 0;
	unsigned sum = 0;
	for (;;) {
		if ((rc = get_byte(r, deadline, &c)))
			return rc == RSP_ETIMEOUT ? fail(r, rc, "truncated packet from the stub (no end '#' within %d ms)",
			                                 r->timeout_ms) : rc;
		if (c == '#')
			break;
		if (c == '$')
			return fail(r, RSP_EPROTO, "packet start '$' inside a packet from the stub");
		if (len == sizeof raw)
			return fail(r, RSP_EPROTO, "packet from the stub exceeds %d bytes", RSP_MAX_PACKET);
		raw[len++] = (char)c;
		sum += c;
	}
	uint8_t h[2];
	for (int i = 0; i < 2; i++)
		if ((rc = get_byte(r, deadline, &h[i])))
			return rc == RSP_ETIMEOUT ? fail(r, rc, "truncated packet from the stub (no checksum)") : rc;
	int hi = rsp_hexval(h[0]), lo = rsp_hexval(h[1]);
	if (hi < 0 || lo < 0)
		return fail(r, RSP_EPROTO, "bad checksum digits '%c%c' from the stub",
		            h[0] >= 32 && h[0] < 127 ? h[0] : '?', h[1] >= 32 && h[1] < 127 ? h[1] : '?');
	if ((unsigned)(hi << 4 | lo) != (sum & 0xff)) {
		fail(r, RSP_EPROTO, "bad checksum 0x%02x from the stub (computed 0x%02x)", hi << 4 | lo, sum & 0xff);
		return 1;
	}
	if (notification)
		return 2;
	if (!r->pkt && !(r->pkt = malloc(RSP_MAX_PACKET + 1)))
		return fail(r, RSP_EIO, "out of memory");
	r->pkt_cap = RSP_MAX_PACKET;
	const char *why = NULL;
	long n = rsp_decode(raw, len, r->pkt, r->pkt_cap, &why);
	if (n < 0)
		return fail(r, RSP_EPROTO, "malformed packet from the stub (%s)", why);
	r->pkt[n] = 0;
	r->pkt_len = (size_t)n;
	return RSP_OK;
}

int rsp_recv(struct rsp *r, int timeout_ms)
{
	int64_t deadline = (int64_t)clock_mono_ms() + (timeout_ms > 0 ? timeout_ms : r->timeout_ms);
	for (int bad = 0;;) {
		int rc = read_packet(r, deadline);
		if (rc == 2)
			continue; /* notification: not used by sonde */
		if (rc == 1) {
			if (r->noack || ++bad > 3)
				return RSP_EPROTO;
			if ((rc = write_all(r, "-", 1)))
				return rc;
			continue;
		}
		if (rc)
			return rc;
		if (!r->noack && (rc = write_all(r, "+", 1)))
			return rc;
		return RSP_OK;
	}
}

int rsp_send(struct rsp *r, const void *data, size_t len)
{
	if (len > RSP_MAX_PACKET)
		return fail(r, RSP_EPROTO, "packet to send exceeds %d bytes", RSP_MAX_PACKET);
	size_t need = 2 * len + 5;
	if (need > r->out_cap) {
		char *p = realloc(r->out, need);
		if (!p)
			return fail(r, RSP_EIO, "out of memory");
		r->out = p;
		r->out_cap = need;
	}
	const uint8_t *d = data;
	size_t o = 0;
	unsigned sum = 0;
	r->out[o++] = '$';
	for (size_t i = 0; i < len; i++) {
		uint8_t c = d[i];
		if (c == '$' || c == '#' || c == '}' || c == '*') {
			r->out[o++] = '}';
			sum += '}';
			c ^= 0x20;
		}
		r->out[o++] = (char)c;
		sum += c;
	}
	o += (size_t)snprintf(r->out + o, 4, "#%02x", sum & 0xff);
	for (int tries = 0;; tries++) {
		int rc = write_all(r, r->out, o);
		if (rc || r->noack)
			return rc;
		/* Wait for the ack; anything else before it is an error. */
		int64_t deadline = (int64_t)clock_mono_ms() + r->timeout_ms;
		uint8_t c;
		if ((rc = get_byte(r, deadline, &c)))
			return rc == RSP_ETIMEOUT ? fail(r, rc, "no acknowledgement from the stub within %d ms", r->timeout_ms) : rc;
		if (c == '+')
			return RSP_OK;
		if (c != '-')
			return fail(r, RSP_EPROTO, "garbage from the stub instead of an acknowledgement (0x%02x)", c);
		if (tries == 3)
			return fail(r, RSP_EPROTO, "the stub rejected a packet 4 times");
	}
}

int rsp_send_str(struct rsp *r, const char *s)
{
	return rsp_send(r, s, strlen(s));
}

int rsp_request(struct rsp *r, const char *cmd, void (*out_cb)(void *arg, const char *hex), void *arg)
{
	int rc = rsp_send_str(r, cmd);
	while (!rc && !(rc = rsp_recv(r, 0))) {
		/* "O" + hex is console output; a bare "OK" is a reply. */
		if (r->pkt[0] == 'O' && r->pkt_len > 1 && strcmp(r->pkt, "OK") && rsp_hexval((unsigned char)r->pkt[1]) >= 0) {
			if (out_cb)
				out_cb(arg, r->pkt + 1);
			continue;
		}
		break;
	}
	return rc;
}

int rsp_interrupt(struct rsp *r)
{
	return write_all(r, "\x03", 1);
}
