/* rsp.h — the packet layer of the GDB Remote Serial Protocol (rsp.c):
 * `$data#xx` framing with its checksum, `}` escapes, run-length decoding of
 * replies, acks (`+`/`-`) until no-ack mode is agreed, the Ctrl-C interrupt
 * byte, a read timeout on every reply and a bound on packet size, over a TCP
 * connection or a serial line (raw termios).  What the packets mean is the
 * client's business (remote.h).
 *
 * Errors: functions return RSP_OK or a negative RSP_E* code and leave a
 * one-line message in r->err ("bad checksum 0x12 (computed 0x34)").  The
 * stub is never trusted: garbage, truncated or oversize packets, bad escapes
 * and run-length abuse are errors, never a crash, and a silent stub is a
 * timeout, never a hang. */
#ifndef SONDE_PROBE_RSP_H
#define SONDE_PROBE_RSP_H

#include <stddef.h>
#include <stdint.h>

/* Largest packet accepted, raw (before run-length expansion) and decoded. */
#define RSP_MAX_PACKET 65536
#define RSP_DEFAULT_TIMEOUT_MS 5000

enum {
	RSP_OK = 0,
	RSP_EPROTO = -1,    /* malformed packet, bad checksum, garbage */
	RSP_ETIMEOUT = -2,  /* nothing (complete) within the timeout */
	RSP_ECLOSED = -3,   /* the stub closed the connection */
	RSP_EIO = -4,       /* a system call failed (errno in the message) */
};

struct rsp {
	int fd;
	int noack;              /* QStartNoAckMode agreed: no acks either way */
	int timeout_ms;         /* for every reply (and each ack) */
	uint8_t in[4096];       /* bytes read from the stub, not yet consumed */
	size_t in_pos, in_len;
	char *pkt;              /* the last packet received, decoded, NUL-terminated */
	size_t pkt_len, pkt_cap;
	char *out;              /* framing buffer for sends */
	size_t out_cap;
	int closed;             /* an RSP_ECLOSED happened: the stub is gone */
	char err[256];
};

/* Connect to "tcp:HOST:PORT" or "serial:DEVICE[,BAUD]" (default 115200).
 * RSP_OK or an error code (r->err says why). */
int rsp_open(struct rsp *r, const char *target, int timeout_ms);
/* Use an already connected descriptor (tests: one end of a socketpair). */
void rsp_init_fd(struct rsp *r, int fd, int timeout_ms);
void rsp_close(struct rsp *r);

/* Frame and send one packet (data may hold any byte; $ # } * are escaped).
 * In ack mode, waits for the stub's '+' (a '-' resends, at most 3 times). */
int rsp_send(struct rsp *r, const void *data, size_t len);
int rsp_send_str(struct rsp *r, const char *s);
/* Receive one packet into r->pkt / r->pkt_len (acking it in ack mode;
 * a packet with a bad checksum is nacked and awaited again, at most 3 times).
 * Stray acks and `%` notifications are skipped. */
int rsp_recv(struct rsp *r, int timeout_ms);
/* Send cmd, receive its reply, skipping `O` console-output packets
 * (console output is given to out_cb when not NULL). */
int rsp_request(struct rsp *r, const char *cmd, void (*out_cb)(void *arg, const char *hex),
                void *arg);
/* 1 when a byte from the stub is waiting (or the connection has news:
 * closed), 0 after timeout_ms without, or an error code. */
int rsp_poll(struct rsp *r, int timeout_ms);
/* The interrupt byte (Ctrl-C, 0x03): the stub stops the target and sends a
 * stop reply, received by the caller. */
int rsp_interrupt(struct rsp *r);

/* Decode the body of a packet (between '$' and '#'): run-length encoding
 * (on the bytes as sent, as gdb does), then escapes.  out has room for cap bytes.  Returns the length, or -1 with
 * why set to a static message.  Exposed for the unit test. */
long rsp_decode(const char *raw, size_t len, char *out, size_t cap, const char **why);
/* Hex helpers shared by the client. */
int rsp_hexval(int c);
/* Decode 2*n hex digits into n bytes; -1 if a digit is bad. */
int rsp_unhex(const char *hex, uint8_t *out, size_t n);
void rsp_tohex(const uint8_t *in, size_t n, char *out);

#endif
