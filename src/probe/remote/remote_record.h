/* remote_record.h — `sonde record --target ... --exe fw.elf` (remote_record.c):
 * an exact function profile of a remote target, written as a trace
 * recording (docs/FORMAT.md) that every reader takes as a local one.
 *
 * The functions are the remote engine's func probes (kind_remote.c: a
 * breakpoint at each entry, one at each pending return address); at every
 * entry and matched return they tell this file, which reads the target's own
 * clock through the stub (once per stop) and writes an ENTER or EXIT event
 * with that time.  See docs/REMOTE.md "Function profiles of remote targets". */
#ifndef SONDE_PROBE_REMOTE_RECORD_H
#define SONDE_PROBE_REMOTE_RECORD_H

#include <stddef.h>
#include <stdint.h>

struct rsess;
struct probe_opts;

/* Before any probe is placed: the target's clock chosen and started
 * (o->target_clock, else the architecture's default), the recording
 * directory opened, the functions chosen (o->filters).  Their run-time entry
 * addresses in *addrs (malloc'd), *n of them, for the caller's func probes.
 * 0, or -1 with err (nothing left changed in the target). */
int rrec_open(struct rsess *s, const struct probe_opts *o, uint64_t **addrs, int *n, char *err, size_t en);
/* Whether spec is a --target-clock value: 0, or -1 with err. */
int rrec_clock_valid(const char *spec, char *err, size_t n);
/* A call of the function at entry pc, its frame (sp, return address ret)
 * pending; or a call whose return cannot be caught (lost). */
void rrec_enter(struct rsess *s, uint64_t pc, uint64_t sp, uint64_t ret);
void rrec_untimed(struct rsess *s);
/* A return to pc with stack pointer sp (a pending frame of some func probe
 * matched): the innermost recorded frame with that return address and sp
 * ends, and any frame above it (it never returned: closed abnormally). */
void rrec_return(struct rsess *s, uint64_t pc, uint64_t sp);
/* Before each resume: the next stop reads the clock again. */
void rrec_resume(struct rsess *s);
/* The target is stopped and sonde leaves it: the clock read once more and
 * its registers put back as they were.  0, or -1 with s->c.err. */
int rrec_leave(struct rsess *s);
/* Write the rest of the events and profile.sonde, free the state (the
 * session is over: the target exited, or was left).  0, or -1 with err. */
int rrec_close(struct rsess *s, char *err, size_t n);
/* The session failed before it ran: the recording removed, the clock put
 * back when the target is still reachable. */
void rrec_abandon(struct rsess *s);
/* Figures for the command's last line. */
void rrec_counts(const struct rsess *s, uint64_t *calls, uint64_t *untimed, int *nfuncs);

#endif
