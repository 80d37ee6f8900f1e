/* bench/sqlite_rounds.c — hook_ticks_bench.sh's SQLite program: ROUNDS
 * rounds of the same in-memory workload (a table of N rows inserted through
 * one prepared statement in a transaction, an index, an update, a delete,
 * 50 range queries on the index), each timed in the process's CPU time;
 * prints the fastest and the median round in ns.  Linked with the
 * amalgamation's sqlite3.o (tools/build-sqlite.sh).
 * usage: sqlite_rounds [ROUNDS] [N] */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "sqlite3.h"
static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}
static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}
static long work(int n)
{
	sqlite3 *db;
	sqlite3_stmt *st;
	long sum = 0;
	if (sqlite3_open(":memory:", &db) != SQLITE_OK)
		exit(1);
	sqlite3_exec(db, "CREATE TABLE t(a INTEGER PRIMARY KEY, b TEXT, c INT); CREATE INDEX tb ON t(b);"
	             "BEGIN", 0, 0, 0);
	sqlite3_prepare_v2(db, "INSERT INTO t(b, c) VALUES(?1, ?2)", -1, &st, 0);
	for (int i = 0; i < n; i++) {
		char b[32];
		snprintf(b, sizeof b, "k%d", (i * 7919) % n);
		sqlite3_bind_text(st, 1, b, -1, SQLITE_TRANSIENT);
		sqlite3_bind_int(st, 2, i);
		sqlite3_step(st);
		sqlite3_reset(st);
	}
	sqlite3_finalize(st);
	sqlite3_exec(db, "COMMIT; UPDATE t SET c = c * 2 WHERE a % 3 = 0; DELETE FROM t WHERE a % 5 = 0", 0, 0, 0);
	sqlite3_prepare_v2(db, "SELECT sum(c), count(*) FROM t WHERE b >= ?1 AND b < ?2", -1, &st, 0);
	for (int i = 0; i < 50; i++) {
		char lo[32], hi[32];
		snprintf(lo, sizeof lo, "k%d", i * 13);
		snprintf(hi, sizeof hi, "k%d", i * 13 + 400);
		sqlite3_bind_text(st, 1, lo, -1, SQLITE_TRANSIENT);
		sqlite3_bind_text(st, 2, hi, -1, SQLITE_TRANSIENT);
		while (sqlite3_step(st) == SQLITE_ROW)
			sum += sqlite3_column_int64(st, 0) + sqlite3_column_int(st, 1);
		sqlite3_reset(st);
	}
	sqlite3_finalize(st);
	sqlite3_close(db);
	return sum;
}
int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 100, n = argc > 2 ? atoi(argv[2]) : 2000;
	double *t = malloc(sizeof *t * (size_t)(rounds > 0 ? rounds : 1));
	long sink = 0;
	if (!t || rounds <= 0 || n <= 0)
		return 1;
	for (int r = 0; r < rounds; r++) {
		double t0 = now_ns();
		sink += work(n);
		t[r] = now_ns() - t0;
	}
	qsort(t, (size_t)rounds, sizeof *t, cmp);
	printf("%.1f %.1f %ld\n", t[0], t[rounds / 2], sink % 7);
	return 0;
}
