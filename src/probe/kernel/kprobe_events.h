/* kprobe_events.h — probes of tracefs's kprobe_events and uprobe_events (kprobe_events.c):
 * the kernel's own way to read a probed function's registers and memory
 * into each hit's record (fetch arguments), which the kprobe perf PMU
 * has not.  Such a probe is in a list of the kernel, not in a file
 * descriptor: it outlives the process that wrote it.  sonde's are in a
 * group of its own (sonde_PID), and a guardian process forked first
 * removes what is left of the group when sonde ends in any way, SIGKILL
 * included. */
#ifndef SONDE_PROBE_KERNEL_KPROBE_EVENTS_H
#define SONDE_PROBE_KERNEL_KPROBE_EVENTS_H

#include <stddef.h>
#include <stdint.h>

#define KPE_MAX_ARGS 16

/* An event added: its tracepoint id (perf_event_open's PERF_TYPE_TRACEPOINT
 * config) and where each fetch argument is in a sample's raw data. */
struct kpe_event {
	char name[64];
	int id;
	int nargs;
	uint32_t off[KPE_MAX_ARGS], size[KPE_MAX_ARGS];
};

/* tracefs found (proc/tracefs.c: mounted where it is not, and left, as
 * perf does), the group named, the guardian forked: 0, or -1 with err.
 * Idempotent. */
int kpe_open(char *err, size_t n);
/* "p:sonde_PID/NAME WHERE a0=ARGS[0] ..." added to kprobe_events (WHERE:
 * FUNCTION[+OFF] or MODULE:FUNCTION[+OFF]) or, user, to uprobe_events
 * (WHERE: PATH:0xOFFSET, a file offset), its id and fields read into *ev:
 * 0, or -1 with err (the kernel's own reason from tracefs's error_log when
 * it has one). */
int kpe_add(int user, const char *name, const char *where, const char *const *args, int nargs, struct kpe_event *ev,
            char *err, size_t n);
/* The kernel's count of the hits of event name it missed (kprobe_profile's
 * nmissed: a hit while another kprobe's handler ran on that CPU): 0 with
 * *missed, or -1 (not listed). */
int kpe_missed(const char *name, uint64_t *missed);
/* Every event of the group removed (their perf events closed first), the
 * guardian told and waited for. */
void kpe_close(void);

#endif
