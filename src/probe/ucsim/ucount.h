/* ucount.h — line probes of 8051 firmware counted inside the simulated
 * chip, without a stop per hit (ucount.c), the way 8051 monitors place
 * their breakpoints: the probed instruction(s) (3 bytes at least) are
 * replaced by an LCALL to a stub in code memory the firmware does not use
 * (--target-ram ADDR:LEN: that range of code memory holds the stubs, the
 * same range of xdata their 32-bit counters).  The stub saves A, PSW and
 * DPTR, adds 1 to its counter, restores them, drops the LCALL's return
 * address, runs the relocated instruction(s) and LJMPs back.  The
 * counters are read at every stop and at the end; the original bytes go
 * back when sonde leaves (the end of the firmware, --duration, Ctrl-C),
 * the pc first stepped out of a stub.  A site that cannot be relocated
 * (a pc-relative instruction, a jump target or another probe inside the
 * bytes it would cover) keeps a breakpoint.  See docs/REMOTE.md. */
#ifndef SONDE_PROBE_UCSIM_UCOUNT_H
#define SONDE_PROBE_UCSIM_UCOUNT_H

#include <stddef.h>
#include <stdint.h>

struct ulink;
struct cdb;
struct probe;
struct ucount;

/* The region [ram, ram + len) checked against the firmware: not in its
 * .ihx (code), no variable of the .cdb in it (xdata).  NULL with err. */
struct ucount *ucount_new(struct ulink *l, const struct cdb *cdb, const char *ihx, uint32_t ram, uint32_t len,
                          char *err, size_t n);
/* Site addr of p (role) to be counted: 0 recorded, -1 out of memory. */
int ucount_add(struct ucount *c, struct probe *p, int role, uint32_t addr);
/* Write the stubs, zero the counters, patch the sites.  placed(a) says
 * whether a breakpoint of sonde is at a (such bytes are not covered).
 * The sites that could not be counted in *fb (malloc'd: probe, role,
 * addr), *nfb of them, each with why in e->warn's way (why[i]).  0, or -1
 * with err (nothing is left patched). */
struct ucount_fb { struct probe *p; int role; uint32_t addr; char why[120]; };
int ucount_install(struct ucount *c, int (*placed)(uint32_t a), struct ucount_fb **fb, int *nfb, char *err, size_t n);
/* The counters into the probes' hits (p->hits gets what was added since
 * the last read).  0, or -1 with the link's error. */
int ucount_read(struct ucount *c);
/* Leaving: the last read, the pc (stopped at pc) stepped out of the stubs,
 * the original bytes back.  0, or -1 with the link's error. */
int ucount_undo(struct ucount *c, uint32_t pc);
/* How many sites are counted in the chip. */
int ucount_sites(const struct ucount *c);
void ucount_free(struct ucount *c);

#endif
