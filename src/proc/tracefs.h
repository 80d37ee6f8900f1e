/* tracefs.h — a kernel tracepoint's id and one field's place in its raw
 * record, from tracefs (tracefs.c): what a perf event of type
 * PERF_TYPE_TRACEPOINT needs.  tracefs is root's (mode 0700), mounted at
 * /sys/kernel/tracing or under debugfs. */
#ifndef SONDE_PROC_TRACEFS_H
#define SONDE_PROC_TRACEFS_H

#include <stddef.h>
#include <stdint.h>

struct tracepoint {
	uint32_t id;         /* the event's id (its `id` file) */
	uint32_t off, size;  /* the field's offset and size in the raw record */
};

/* The tracepoint GROUP:EVENT ("syscalls", "sys_exit_futex") and its field
 * FIELD ("ret"): 0, or -1 with why (one clause: "tracefs is not mounted
 * (mount -t tracefs nodev /sys/kernel/tracing)", "tracefs is root's",
 * "the kernel has no syscalls:sys_exit_futex").  Every number read is
 * bounded (an id below 65536, an offset and size within 4 KiB). */
int tracefs_tracepoint(const char *group, const char *event, const char *field, struct tracepoint *tp, char *why,
                       size_t whylen);

/* The same for an event's fields: fields[k]'s offset and size into off[k]
 * and size[k], its id into *id: 0, or -1 with why. */
int tracefs_event(const char *group, const char *event, const char *const *fields, int nf, uint32_t *id,
                  uint32_t *off, uint32_t *size, char *why, size_t whylen);
/* The tracefs that answers (mounted first by root where it is not), into
 * dir: 0, or -1 with why. */
int tracefs_root(char *dir, size_t n, char *why, size_t whylen);

#endif
