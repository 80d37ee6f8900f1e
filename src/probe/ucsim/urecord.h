/* urecord.h — `sonde record --target ucsim:HOST:PORT --exe fw.ihx`: an exact
 * function profile of 8051 firmware, from the simulator's breakpoints at
 * each function's entry and at each return address a call pushed, timed by
 * the simulator's cycle counter, written by probe/calltrace.c.  Interrupt
 * handlers (the .cdb's `__interrupt(N)` functions) and what they call are
 * their own thread of the recording ("interrupts"), their own roots; the
 * time the main code waited for them is its off-CPU time. */
#ifndef SONDE_PROBE_UCSIM_URECORD_H
#define SONDE_PROBE_UCSIM_URECORD_H

#include <stddef.h>
#include <stdint.h>

#include "probe/ucsim/ulink.h"
#include "sym/cdb.h"

struct engine;
struct probe_opts;
struct urec;

/* The recording o->remote_record started for the .cdb's functions that
 * the filters choose.  NULL with err. */
struct urec *urec_open(const struct probe_opts *o, const struct cdb *cdb, double hz, char *err, size_t n);
int urec_nfuncs(const struct urec *r);
uint32_t urec_func_addr(const struct urec *r, int i);

/* Places a breakpoint at a return address: 0, or -1 (no more sites). */
typedef int (*urec_place_fn)(uint32_t addr);

/* A stop at the entry of function i. */
void urec_entry(struct urec *r, struct ulink *l, int i, urec_place_fn place);
/* A stop at a return address (a site urec_entry placed).  1 when the site
 * is no longer needed: an interrupted pc that no pending frame returns to
 * and no call instruction precedes (left in, a breakpoint in the middle of
 * a loop would stop every pass); else 0. */
int urec_return(struct urec *r, struct ulink *l, uint32_t pc);

/* The simulation's clock now (its last stop, the end): frames open at the
 * end are closed there. */
void urec_stop(struct urec *r, const struct ulink *l);

/* The end: the recording written (status: INT32_MIN unknown, else the
 * firmware's exit; gone: the simulator vanished before it, calltrace_end),
 * its figures in *calls / *untimed.  0, or -1 with err.  urec is freed. */
int urec_close(struct urec *r, int32_t pid, int status, int gone, uint64_t *calls, uint64_t *untimed, char *err,
               size_t n);
/* The recording dropped (an error before the end); urec freed. */
void urec_abort(struct urec *r);

#endif
