/* test_ulink.c — unit tests of src/probe/ucsim/ulink.c (ucsim's console)
 * against a scripted console: a child process listening on 127.0.0.1
 * answers each command line with the next reply of its script (what s51
 * 0.6.4 writes, then damaged versions of it).  Good replies must parse to
 * the values the script holds; damaged ones (addresses out of order, too
 * few bytes, no prompt, an oversize reply, a stop without its fields, a
 * breakpoint at another address, a closed connection) must be errors, in
 * bounded time, never a wrong value. */
#include <netinet/in.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "probe/ucsim/ulink.h"
#include "unit/unit.h"

#define BANNER "\xff\xfb\x01\xff\xfb\x03" "\0" "uCsim 0.6.4, Copyright (C) 1997 Daniel Drotos.\r\n" "\0"

/* Serve: the banner, then for each line read the next reply (len bytes,
 * NUL included by the script).  A reply of NULL closes the connection;
 * "" says nothing (a silent console). */
struct rep { const char *s; size_t len; };
#define R(lit) { lit, sizeof lit - 1 }

static pid_t serve(const struct rep *script, int n, int *port)
{
	int ls = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof a;
	if (ls < 0 || bind(ls, (struct sockaddr *)&a, sizeof a) || listen(ls, 1) || getsockname(ls, (struct sockaddr *)&a, &al))
		return -1;
	*port = ntohs(a.sin_port);
	pid_t p = fork();
	if (p)
		return close(ls), p;
	alarm(20);   /* a test that failed before killing it: the server ends anyway */
	int fd = accept(ls, NULL, NULL);
	if (write(fd, BANNER, sizeof BANNER - 1) < 0)
		_exit(1);
	for (int i = 0; i < n; i++) {
		char c;
		while (read(fd, &c, 1) == 1 && c != '\n')
			;
		if (!script[i].s)
			_exit(0);
		if (script[i].len && write(fd, script[i].s, script[i].len) < 0)
			_exit(1);
		if (!script[i].len)
			pause();
	}
	pause();
	_exit(0);
}

static pid_t child;

static void open_on(struct ulink *l, const struct rep *script, int n)
{
	int port;
	child = serve(script, n, &port);
	CHECK(child > 0);
	char hp[32];
	snprintf(hp, sizeof hp, "127.0.0.1:%d", port);
	CHECK(ulink_open(l, hp, 500) == 0);
}

static void done(struct ulink *l)
{
	ulink_close(l);
	kill(child, SIGKILL);
}

static void test_good(void)
{
	/* the snapshot's two dumps are one write of two commands: their
	 * replies come as one (two prompts) */
	static const struct rep t[] = {
		R("dump /h sfr 0x80 0xff 16\r\n"
		  "0x80 ff 07 00 00 00 00 00 00 00 00 00 00 00 00 00 00 ................\r\n"
		  "0x90 ff 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 ................\r\n"
		  "0xa0 ff 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 ................\r\n"
		  "0xb0 ff 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 ................\r\n"
		  "0xc0 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 ................\r\n"
		  "0xd0 80 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 ................\r\n"
		  "0xe0 2a 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 *...............\r\n"
		  "0xf0 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 ................\r\n" "\0"
		  "0x00 00 01 02 03 04 05 06 07 08 09 0a 0b 0c 0d 0e 0f ................\r\n"
		  "0x10 10 11 12 13 14 15 16 17 18 19 1a 1b 1c 1d 1e 1f ................\r\n"
		  "0x20 20 21 22 23 24 25 26 27 28 29 2a 2b 2c 2d 2e 2f ................\r\n"
		  "0x30 30 31 32 33 34 35 36 37 38 39 3a 3b 3c 3d 3e 3f ................\r\n"
		  "0x40 40 41 42 43 44 45 46 47 48 49 4a 4b 4c 4d 4e 4f ................\r\n"
		  "0x50 50 51 52 53 54 55 56 57 58 59 5a 5b 5c 5d 5e 5f ................\r\n"
		  "0x60 60 61 62 63 64 65 66 67 68 69 6a 6b 6c 6d 6e 6f ................\r\n"
		  "0x70 70 71 72 73 74 75 76 77 78 79 7a 7b 7c 7d 7e 7f ................\r\n"
		  "0x80 80 81 82 83 84 85 86 87 88 89 8a 8b 8c 8d 8e 8f ................\r\n"
		  "0x90 90 91 92 93 94 95 96 97 98 99 9a 9b 9c 9d 9e 9f ................\r\n"
		  "0xa0 a0 a1 a2 a3 a4 a5 a6 a7 a8 a9 aa ab ac ad ae af ................\r\n"
		  "0xb0 b0 b1 b2 b3 b4 b5 b6 b7 b8 b9 ba bb bc bd be bf ................\r\n"
		  "0xc0 c0 c1 c2 c3 c4 c5 c6 c7 c8 c9 ca cb cc cd ce cf ................\r\n"
		  "0xd0 d0 d1 d2 d3 d4 d5 d6 d7 d8 d9 da db dc dd de df ................\r\n"
		  "0xe0 e0 e1 e2 e3 e4 e5 e6 e7 e8 e9 ea eb ec ed ee ef ................\r\n"
		  "0xf0 f0 f1 f2 f3 f4 f5 f6 f7 f8 f9 fa fb fc fd fe ff ................\r\n" "\0"),
		R("dump /h xram 0x7f00 0x7f02 16\r\n0x7f00 28 00 05 (..\r\n" "\0"),
		R("break 0x62\r\nBreakpoint 3 at 0x000062: 0x0062 F? 85 82 09 MOV 0x09,0x82 (cond=\"\")\r\n" "\0"),
		R("\r\nStop at 0x000062: (104) Breakpoint\r\nF 0x000062\r\nSimulated 9948 ticks (8.995e-04 sec)\r\n" "\0"),
		R("delete 3\r\n" "\0"),
	};
	struct ulink l;
	open_on(&l, t, 5);
	uint8_t sp, b[3];
	uint16_t ret;
	CHECK(ulink_ret_addr(&l, &ret, &sp) == 0);
	CHECK_EQ_U(sp, 7);
	CHECK_EQ_U(ret, 0x0706);          /* iram[7] << 8 | iram[6] */
	CHECK(ulink_read(&l, US_SFR, 0xe0, b, 1) == 0 && b[0] == 0x2a);   /* from the snapshot, no command */
	CHECK(ulink_read(&l, US_IRAM, 0xfd, b, 3) == 0 && b[0] == 0xfd && b[2] == 0xff);
	CHECK(ulink_read(&l, US_XRAM, 0x7f00, b, 3) == 0 && b[0] == 0x28 && b[1] == 0 && b[2] == 5);
	int id;
	CHECK(ulink_break(&l, 0x62, &id) == 0 && id == 3);
	CHECK(ulink_run(&l) == 0);
	struct ulink_stop st;
	CHECK(ulink_wait(&l, 2000, &st) == 0);
	CHECK(st.kind == ULS_BREAK && st.pc == 0x62 && st.code == 104);
	CHECK_EQ_U(l.ticks, 9948);
	CHECK(ulink_delete(&l, 3) == 0);
	done(&l);
}

/* One damaged reply to one command: an error, never a value. */
static void bad_read(const char *reply, size_t len, int space, uint32_t addr, size_t n)
{
	struct rep t[] = { { reply, len } };
	struct ulink l;
	open_on(&l, t, 1);
	uint8_t b[64];
	memset(b, 0xee, sizeof b);
	CHECK(ulink_read(&l, space, addr, b, n) == -1);
	CHECK(l.err[0]);
	done(&l);
}

static void test_bad_dumps(void)
{
#define BAD(lit, sp, a, n) bad_read(lit, sizeof lit - 1, sp, a, n)
	BAD("0x7f01 28 00 05 (..\r\n" "\0", US_XRAM, 0x7f00, 3);         /* the line at another address */
	BAD("0x7f00 28 00 (.\r\n" "\0", US_XRAM, 0x7f00, 3);             /* fewer bytes */
	BAD("0x7f00 28 0g 05 (..\r\n" "\0", US_XRAM, 0x7f00, 3);         /* not hex */
	BAD("Error: no such memory\r\n" "\0", US_XRAM, 0x7f00, 3);       /* no dump at all */
	BAD("0x7f00 28 00 05 (..\r\n0x7f00 28 00 05\r\n" "\0", US_XRAM, 0x7f00, 20); /* a line repeated */
#undef BAD
	/* out of range: no command is sent */
	struct ulink l;
	struct rep none[] = { R("\0") };
	open_on(&l, none, 1);
	uint8_t b[8];
	CHECK(ulink_read(&l, US_XRAM, 0xfffe, b, 4) == -1);
	CHECK(ulink_read(&l, US_IRAM, 0xff, b, 2) == -1);
	CHECK(ulink_read(&l, US_SFR, 0x10, b, 1) == -1);
	CHECK(ulink_break(&l, 0x10000, &(int){ 0 }) == -1);
	done(&l);
}

static void test_bad_replies(void)
{
	struct ulink l;
	int id;
	/* a breakpoint the console says is elsewhere */
	struct rep b1[] = { R("Breakpoint 1 at 0x000064: ...\r\n" "\0") };
	open_on(&l, b1, 1);
	CHECK(ulink_break(&l, 0x62, &id) == -1);
	done(&l);
	/* delete refused */
	struct rep d1[] = { R("Error\r\n" "\0") };
	open_on(&l, d1, 1);
	CHECK(ulink_delete(&l, 9) == -1);
	done(&l);
	/* a stop without its fields, a pc beyond 64 KiB */
	struct rep s1[] = { R("\r\nStop at 0x12: Breakpoint\r\n" "\0"), R("\r\nStop at 0x1000000: (104) Breakpoint\r\n" "\0") };
	open_on(&l, s1, 2);
	struct ulink_stop st;
	CHECK(ulink_run(&l) == 0 && ulink_wait(&l, 2000, &st) == -1);
	CHECK(ulink_run(&l) == 0 && ulink_wait(&l, 2000, &st) == -1);
	done(&l);
	/* the program stopping itself, and another reason */
	struct rep s2[] = { R("\r\nStop at 0x000320: (110) Program stopped itself\r\nSimulated 10 ticks\r\n" "\0"),
	                    R("\r\nStop at 0x000100: (107) Invalid address\r\n" "\0") };
	open_on(&l, s2, 2);
	CHECK(ulink_run(&l) == 0 && ulink_wait(&l, 2000, &st) == 0 && st.kind == ULS_SELF && st.pc == 0x320);
	CHECK(ulink_run(&l) == 0 && ulink_wait(&l, 2000, &st) == 0 && st.kind == ULS_OTHER && st.code == 107);
	CHECK(strstr(st.reason, "Invalid address"));
	done(&l);
	/* silence: a command's reply times out (500 ms), a run's wait says "nothing yet" */
	struct rep q1[] = { { "", 0 } };
	open_on(&l, q1, 1);
	CHECK(ulink_cmd(&l, "state") == -1 && strstr(l.err, "no reply"));
	done(&l);
	/* the connection closed in the middle */
	struct rep c1[] = { { NULL, 0 } };
	open_on(&l, c1, 1);
	CHECK(ulink_run(&l) == 0 && ulink_wait(&l, 2000, &st) == -1 && l.closed);
	done(&l);
}

/* A reply that never ends with the prompt: bounded at ULINK_REPLY_MAX. */
static void test_oversize(void)
{
	size_t n = ULINK_REPLY_MAX + 8192;
	char *big = malloc(n);
	CHECK(big);
	memset(big, 'x', n);
	struct rep t[] = { { big, n } };
	struct ulink l;
	open_on(&l, t, 1);
	l.timeout_ms = 5000;
	CHECK(ulink_cmd(&l, "state") == -1 && strstr(l.err, "longer than"));
	done(&l);
}

static void test_not_ucsim(void)
{
	int ls = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof a;
	CHECK(ls >= 0 && !bind(ls, (struct sockaddr *)&a, sizeof a) && !listen(ls, 1) &&
	      !getsockname(ls, (struct sockaddr *)&a, &al));
	pid_t p = fork();
	if (!p) {
		alarm(20);
		int fd = accept(ls, NULL, NULL);
		if (write(fd, "+$OK#9a\0", 8) < 0 || write(fd, "hello\0", 6) < 0 || write(fd, "x\0", 2) < 0)
			_exit(1);
		pause();
		_exit(0);
	}
	close(ls);
	char hp[32];
	snprintf(hp, sizeof hp, "127.0.0.1:%d", ntohs(a.sin_port));
	struct ulink l;
	CHECK(ulink_open(&l, hp, 500) == -1 && strstr(l.err, "not ucsim"));
	ulink_close(&l);
	kill(p, SIGKILL);
	CHECK(ulink_open(&l, "nohost", 500) == -1 && strstr(l.err, "expected ucsim:HOST:PORT"));
	ulink_close(&l);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	RUN(test_good);
	RUN(test_bad_dumps);
	RUN(test_bad_replies);
	RUN(test_oversize);
	RUN(test_not_ucsim);
	UNIT_END();
}
