/* snapshot.c — the flight recorder's snapshot (record --trace --keep-last,
 * SIGUSR2 to sonde): DIR.snap-N/, a complete recording of the newest events
 * kept at that moment, written while the program runs and the recording
 * goes on (see record.h); its files written as every recording's end
 * writes them (finish.c). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "common/clock.h"
#include "record/record.h"
#include "record/recorder.h"

int record_snapshot(struct session *s, struct recorder *live, const struct launched *l,
                    const struct record_config *cfg, const char *program, const char *cmd, size_t clen,
                    char *path, size_t pathlen, char *err, size_t errlen)
{
	static struct recorder snap; /* large (paths): not on the stack */
	int n = live->snapshots + 1;
	if ((size_t)snprintf(path, pathlen, "%s.snap-%d", live->dir, n) >= pathlen) {
		snprintf(err, errlen, "%s.snap-%d: path too long", live->dir, n);
		return -1;
	}
	if (recorder_open(&snap, path, RECORDER_EVENTS, err, errlen))
		return -1;
	live->snapshots = n;
	snap.c0 = live->c0; /* the recording's start: same times as the recording */
	snap.keep_last = live->keep_last;
	struct launched now = *l;
	now.end_tsc = clock_ticks(); /* calls still open end here */
	if (recorder_copy_kept(live, &snap)) {
		snprintf(err, errlen, "writing %s failed (disk full?)", snap.evpath);
		recorder_abort(&snap);
		return -1;
	}
	char num[32];
	snprintf(num, sizeof num, "%d", n);
	const char *meta[] = { "snapshot", num, NULL };
	/* No audit: it mends the session after the program's end, and the
	 * program still writes it. */
	if (recording_finish(s, &snap, &now, cfg, program, cmd, clen, "sonde record", INT32_MIN, meta, NULL, err,
	                     errlen)) {
		recorder_abort(&snap);
		return -1;
	}
	return 0;
}
