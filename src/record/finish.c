/* finish.c — the end of every recording: `sonde record` (launched or
 * attached), the recovery of a recording whose recorder was killed
 * (recover.c) and the flight recorder's snapshot (snapshot.c) write
 * profile.sonde through this one function. */
#include "common/clock.h"
#include "record/convert.h"
#include "record/record.h"
#include "record/recorder.h"

int recording_finish(struct session *s, struct recorder *rec, const struct launched *l,
                     const struct record_config *cfg, const char *program, const char *cmd, size_t clen,
                     const char *recorder_name, int status, const char *const *meta, uint64_t *damaged,
                     char *err, size_t errlen)
{
	if (damaged)
		/* the ticks since the recording began bound every count (a
		 * recovery runs later: a looser bound, still a bound) */
		*damaged = session_audit(s, clock_ticks() > rec->c0.ticks ? clock_ticks() - rec->c0.ticks : 0);
	recorder_meta_common(rec, program, cmd, clen, recorder_name, conv_mode(cfg->mode), status);
	for (int i = 0; meta && meta[i]; i += 2)
		meta_add(&rec->meta, meta[i], meta[i + 1]);
	if (write_profile(s, rec, l, cfg, err, errlen) || recorder_close(rec, err, errlen))
		return -1;
	return 0;
}
