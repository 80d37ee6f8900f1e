/* test_locks.c — the lock analysis on a hand-made recording: REC_LOCKS
 * aggregates, and a ring chunk where lock events sit among call events and
 * other extended records; the decoder must rebuild the same counts, find
 * sequence gaps, and refuse damaged chunks without crashing. */
#include <string.h>
#include <sys/stat.h>

#include "analysis/locks.h"
#include "common/trace_enc.h"
#include "record/record.h"
#include "unit.h"

static char dir[] = "/tmp/sonde-test-locks.XXXXXX";

static uint8_t *ev(uint8_t *p, uint64_t dt, uint32_t id, uint8_t op, uint64_t aux)
{
	p += tr_put_varint(p, (dt << 2) | TR_EXT);
	*p++ = TRX_LOCK;
	p += tr_put_varint(p, id);
	*p++ = op;
	p += tr_put_varint(p, aux);
	return p;
}

/* One thread, one mutex (id 3): uncontended acquire (hold 100), contended
 * acquire (wait 40, hold 60), a trylock failure; calls around them. */
static void make_recording(int gap, int damage)
{
	char path[256];
	struct rec_writer w;
	snprintf(path, sizeof path, "%s/%s", dir, SONDE_FILE_PROFILE);
	CHECK(writer_open(&w, path, 1) == 0);
	char meta[256];
	int n = snprintf(meta, sizeof meta, "ticks_per_ns=1.0\nmode=%u\nstart_ticks=0\n",
	                 REC_MODE_PROFILE | REC_MODE_LOCKS | REC_MODE_LOCK_EVENTS);
	writer_put(&w, REC_META, meta, (uint64_t)n, NULL, 0);
	struct rec_process pr = { .index = 0, .pid = 42 };
	writer_put(&w, REC_PROCESS, &pr, sizeof pr, NULL, 0);
	struct rec_thread th = { .index = 0, .proc = 0, .tid = 43 };
	writer_put(&w, REC_THREAD, &th, sizeof th, NULL, 0);
	struct lkrec_lock lk = { .id = 3, .proc = 0, .kind = LK_MUTEX, .addr = 0x1000, .site = 0 };
	struct lkrec_hdr h = { LKREC_LOCKS, 1 };
	writer_put(&w, REC_LOCKS, &h, sizeof h, &lk, sizeof lk);
	struct { struct lkrec_stats_hdr h; struct lkrec_stat st; } s;
	static_assert(sizeof s == sizeof s.h + sizeof s.st, "no padding between them");
	memset(&s, 0, sizeof s);
	s.h.count = 1;
	s.st.lock = 3;
	s.st.acquisitions = 2;
	s.st.contended = 1;
	s.st.trylock_failures = 1;
	s.st.wait_ticks = s.st.max_wait_ticks = 40;
	s.st.hold_ticks = 160;
	s.st.max_hold_ticks = 100;
	s.st.holds = 2;
	s.st.releases = 2;
	struct lkrec_hdr hs = { LKREC_STATS, 1 };
	writer_put(&w, REC_LOCKS, &hs, sizeof hs, &s, sizeof s);
	CHECK(writer_close(&w) == 0);

	snprintf(path, sizeof path, "%s/%s", dir, SONDE_FILE_EVENTS);
	CHECK(writer_open(&w, path, 2) == 0);
	uint8_t buf[256], *p = buf;
	p += tr_put_varint(p, (5 << 2) | TR_ENTER);
	p += tr_put_varint(p, SONDE_FUNC(0, 7));
	p = ev(p, 10, 3, LK_EV_ACQ, 0);
	p += tr_put_varint(p, (3 << 2) | TR_EXT); /* a thread name record in between */
	*p++ = TRX_NAME;
	*p++ = 2;
	*p++ = 'a';
	*p++ = 'b';
	p = ev(p, 97, 3, LK_EV_REL, 100);
	p = ev(p, 1, 3, LK_EV_TRYFAIL, 0);
	p += tr_put_varint(p, (1 << 2) | TR_EXT); /* an unknown sized record: skipped */
	*p++ = TRX_SIZED + 1;
	*p++ = 3;
	*p++ = 1; *p++ = 2; *p++ = 3;
	p = ev(p, 50, 3, LK_EV_ACQ_WAIT, 40);
	p = ev(p, 60, 3, LK_EV_REL, 60);
	p += tr_put_varint(p, (2 << 2) | TR_EXIT);
	uint32_t used = (uint32_t)(p - buf);
	if (damage)
		used -= 2; /* the last lock record is cut */
	struct rec_chunk c = { .used = used, .seq = gap ? 2 : 0, .base_tsc = 1000, .thread = 0 };
	writer_put(&w, REC_CHUNK, &c, sizeof c, buf, used);
	CHECK(writer_close(&w) == 0);
}

static void test_events_match_aggregates(void)
{
	make_recording(0, 0);
	char err[512];
	struct recording *r = rd_open(dir, err, sizeof err);
	CHECK(r != NULL);
	struct lka a;
	CHECK(lka_load(r, &a, err, sizeof err) == 0);
	CHECK_EQ_U(a.nlocks, 1);
	CHECK_EQ_U(a.locks[0].tot.acquisitions, 2);
	CHECK(a.ev.present);
	CHECK_EQ_U(a.ev.lock_records, 5);
	CHECK_EQ_U(a.ev.compared, 1);
	CHECK_EQ_U(a.ev.mismatched, 0);
	CHECK_EQ_U(a.ev.sequence_gaps, 0);
	CHECK(a.ev.error[0] == 0);
	CHECK(strcmp(a.locks[0].kind, "mutex") == 0);
	lka_free(&a);
	rd_close(r);
}

static void test_gap_found(void)
{
	make_recording(1, 0);
	char err[512];
	struct recording *r = rd_open(dir, err, sizeof err);
	CHECK(r != NULL);
	struct lka a;
	CHECK(lka_load(r, &a, err, sizeof err) == 0);
	CHECK_EQ_U(a.ev.sequence_gaps, 2);
	lka_free(&a);
	rd_close(r);
}

static void test_damaged_chunk(void)
{
	make_recording(0, 1);
	char err[512];
	struct recording *r = rd_open(dir, err, sizeof err);
	CHECK(r != NULL);
	struct lka a;
	CHECK(lka_load(r, &a, err, sizeof err) == 0);
	CHECK(a.ev.error[0] != 0);    /* said, not crashed */
	CHECK(a.ev.mismatched == 1);  /* and the counts do not pretend to agree */
	lka_free(&a);
	rd_close(r);
}

int main(void)
{
	CHECK(mkdtemp(dir) != NULL);
	RUN(test_events_match_aggregates);
	RUN(test_gap_found);
	RUN(test_damaged_chunk);
	char cmd[300];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	if (system(cmd) != 0)
		return 1;
	UNIT_END();
}
