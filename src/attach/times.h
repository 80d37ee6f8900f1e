/* times.h — where the time of an attach goes (times.c): with
 * SONDE_ATTACH_TIMES=1 in sonde's environment, each phase of `sonde record
 * -p` prints one line on stderr, "sonde: attach: PHASE  T ms (+D ms)", T
 * since sonde started (its first constructor), D since the previous phase.
 * For measuring (bench/attach_bench.sh, docs/ATTACH.md "Time to live");
 * silent otherwise. */
#ifndef SONDE_ATTACH_TIMES_H
#define SONDE_ATTACH_TIMES_H

void attach_time(const char *phase);

#endif
