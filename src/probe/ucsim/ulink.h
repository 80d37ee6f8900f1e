/* ulink.h — a client of ucsim's command console (ulink.c): the console
 * `s51 -Z PORT -P -b` serves over TCP, the one SDCC's debugger sdcdb drives.
 * Each command is one line; its reply ends with the NUL prompt (-P).  What
 * sonde sends, and how it reads each reply, is in docs/REMOTE.md ("The 8051
 * through ucsim's console"): every reply is bounded (ULINK_REPLY_MAX bytes,
 * a timeout), and every field read from it is checked (addresses, byte
 * counts, breakpoint numbers); anything else is an error, never a guess.
 *
 * Errors: -1 with l->err set; a simulator that closed the connection sets
 * l->closed. */
#ifndef SONDE_PROBE_UCSIM_ULINK_H
#define SONDE_PROBE_UCSIM_ULINK_H

#include <stddef.h>
#include <stdint.h>

#define ULINK_REPLY_MAX (256 * 1024)

/* The 8051's memory spaces as ucsim names them. */
enum ulink_space { US_ROM, US_IRAM, US_XRAM, US_SFR };

struct ulink {
	int fd;
	int closed;             /* the simulator closed the connection */
	int timeout_ms;         /* per reply (not for run: that one waits for the stop) */
	char *in;               /* bytes read and not yet taken (up to ULINK_REPLY_MAX) */
	size_t len, cap;
	char *reply;            /* the last reply, NUL-terminated, without the echo of the command */
	uint64_t ticks;         /* the simulator's clock: every run's "Simulated N ticks" summed */
	/* The internal RAM and the SFRs of the stopped simulation, read at once
	 * at the first read of either after a stop (ucsim answers a command
	 * only every ~100 ms: two dumps in one write are one wait, not 2..n). */
	uint8_t iram[256], sfr[128];
	int snap;
	char err[300];
};

/* A stop of the simulation (ulink_wait). */
enum ulink_stop_kind {
	ULS_BREAK,      /* one of the breakpoints (104) */
	ULS_USER,       /* stopped by the console (105: our ulink_interrupt) */
	ULS_SELF,       /* the program stopped itself (110: the simulator interface's 's') */
	ULS_OTHER,      /* another reason (an error of the simulated chip...): reason says which */
};
struct ulink_stop {
	int kind;
	int code;
	uint32_t pc;
	char reason[80];
};

/* Connect to "HOST:PORT" and read the banner. */
int ulink_open(struct ulink *l, const char *hostport, int timeout_ms);
void ulink_close(struct ulink *l);
/* One command and its reply (l->buf).  0, or -1. */
int ulink_cmd(struct ulink *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

int ulink_read(struct ulink *l, int space, uint32_t addr, uint8_t *buf, size_t n);
int ulink_write(struct ulink *l, int space, uint32_t addr, const uint8_t *buf, size_t n);
/* A fetch breakpoint at addr: its number in *id. */
int ulink_break(struct ulink *l, uint32_t addr, int *id);
int ulink_delete(struct ulink *l, int id);
/* Start the simulation (run / continue from the pc: a breakpoint at the pc
 * is passed over by the simulator itself). */
int ulink_run(struct ulink *l);
/* Wait up to timeout_ms (-1: forever) for the stop of a run: 1 nothing
 * yet, 0 *st filled, -1 error. */
int ulink_wait(struct ulink *l, int timeout_ms, struct ulink_stop *st);
/* After ulink_interrupt, once the run's stop is read: the reply of the
 * `stop` command itself (and any other left) read and dropped, up to the
 * reply of a `state` sent after it.  0, or -1. */
int ulink_sync(struct ulink *l);
/* One instruction (the console's `step`): the pc after it in *pc; any
 * other stop than a step's (109) is an error. */
int ulink_step(struct ulink *l, uint32_t *pc);
/* The same, its stop in *st: code 109 (kind ULS_OTHER) a step, ULS_SELF
 * the program stopped itself in that instruction, any other as ulink_wait
 * gives it. */
int ulink_step_stop(struct ulink *l, struct ulink_stop *st);
/* Stop a running simulation (its stop is then ulink_wait's, ULS_USER). */
int ulink_interrupt(struct ulink *l);

/* The 8051's registers of the stopped simulation. */
int ulink_sp(struct ulink *l, uint8_t *sp);
/* The return address a call left at the stack pointer (LCALL/ACALL push
 * the low byte first, sp at the high byte). */
int ulink_ret_addr(struct ulink *l, uint16_t *ret, uint8_t *sp);

#endif
