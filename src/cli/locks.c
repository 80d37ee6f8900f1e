/* locks.c — `sonde locks`: which locks cost what, per lock and per thread,
 * from a `sonde record --locks` recording. */
#include <stdlib.h>
#include <string.h>

#include "analysis/locks.h"
#include "cli/cli.h"
#include "cli/load.h"
#include "cli/progress.h"
#include "common/json.h"

static const struct lka *sort_a;
static int sort_key; /* 0 wait, 1 hold, 2 acquisitions, 3 contended, 4 name */

static int cmp(const void *x, const void *y)
{
	const struct lka_lock *a = &sort_a->locks[*(const int *)x], *b = &sort_a->locks[*(const int *)y];
	uint64_t va = 0, vb = 0;
	switch (sort_key) {
	case 0: va = a->tot.wait_ticks; vb = b->tot.wait_ticks; break;
	case 1: va = a->tot.hold_ticks; vb = b->tot.hold_ticks; break;
	case 2: va = a->tot.acquisitions; vb = b->tot.acquisitions; break;
	case 3: va = a->tot.contended; vb = b->tot.contended; break;
	default: break;
	}
	if (va != vb)
		return va < vb ? 1 : -1;
	if (sort_key != 4 && a->tot.acquisitions != b->tot.acquisitions)
		return a->tot.acquisitions < b->tot.acquisitions ? 1 : -1;
	int c = strcmp(a->name, b->name);
	return c ? c : (a->rec.gen < b->rec.gen ? -1 : a->rec.gen > b->rec.gen);
}

static void stat_json(struct json *j, const struct lka *a, const struct lkrec_stat *s, uint32_t kind)
{
	int is_rw = kind == LK_RWLOCK;
	uint64_t waits = lka_waits(kind, s);
	json_uint(j, "acquisitions", s->acquisitions);
	json_uint(j, "contended", s->contended);
	json_double(j, "contended_percent", s->acquisitions ? 100.0 * s->contended / s->acquisitions : 0);
	json_uint(j, "trylock_failures", s->trylock_failures);
	json_uint(j, "timeouts", s->timeouts);
	json_uint(j, "errors", s->errors);
	json_uint(j, "wait_ns", (uint64_t)lka_ns(a, s->wait_ticks));
	json_uint(j, "waits", waits);
	json_uint(j, "avg_wait_ns", waits ? (uint64_t)(lka_ns(a, s->wait_ticks) / waits) : 0);
	json_uint(j, "max_wait_ns", (uint64_t)lka_ns(a, s->max_wait_ticks));
	json_uint(j, "hold_ns", (uint64_t)lka_ns(a, s->hold_ticks));
	json_uint(j, "avg_hold_ns", s->holds ? (uint64_t)(lka_ns(a, s->hold_ticks) / s->holds) : 0);
	json_uint(j, "max_hold_ns", (uint64_t)lka_ns(a, s->max_hold_ticks));
	json_uint(j, "read_acquisitions", is_rw ? s->read_acquisitions : 0);
	json_uint(j, "write_acquisitions", is_rw ? s->write_acquisitions : 0);
	json_uint(j, "owner_changes", s->owner_changes);
	json_uint(j, "max_waiters", s->max_waiters);
	json_uint(j, "releases", s->releases);
	json_uint(j, "unmatched_releases", s->unmatched_releases);
	json_uint(j, "cross_thread_releases", s->cross_thread_releases);
	json_uint(j, "cond_reacquisitions", s->cond_reacquisitions);
}

static void hist_json(struct json *j, const char *key, const struct lka *a, const uint32_t *h)
{
	json_arr_begin(j, key);
	for (uint32_t b = 0; b < LKREC_HIST; b++) {
		if (!h[b])
			continue;
		json_obj_begin(j, NULL);
		json_uint(j, "from_ns", b ? (uint64_t)lka_ns(a, 1ull << b) : 0);
		json_uint(j, "count", h[b]);
		json_obj_end(j);
	}
	json_arr_end(j);
}

static uint64_t lost_total(const struct lka *a)
{
	return a->ring_events_lost + a->ev.chunk_lost + a->sum.lost_locks + a->sum.lost_stats;
}

static void emit_json(const struct lka *a, const int *idx, int n, struct cli_opts *o)
{
	struct json j;
	json_init(&j, stdout, 1);
	json_obj_begin(&j, NULL);
	json_arr_begin(&j, "locks");
	for (int k = 0; k < n; k++) {
		const struct lka_lock *L = &a->locks[idx[k]];
		json_obj_begin(&j, NULL);
		json_str(&j, "name", L->name);
		json_str(&j, "kind", L->kind);
		json_uint(&j, "generation", L->rec.gen);
		json_int(&j, "pid", L->pid);
		char buf[32];
		snprintf(buf, sizeof buf, "0x%llx", (unsigned long long)L->rec.addr);
		json_str(&j, "address", buf);
		json_bool(&j, "named_by_symbol", L->named_by_symbol);
		json_str(&j, "init_site", L->init_site);
		json_int(&j, "locks", L->members);
		stat_json(&j, a, &L->tot, L->rec.kind);
		hist_json(&j, "wait_histogram", a, L->tot.wait_hist);
		hist_json(&j, "hold_histogram", a, L->tot.hold_hist);
		json_arr_begin(&j, "sites");
		for (int s = 0; s < L->nsites; s++) {
			json_obj_begin(&j, NULL);
			json_str(&j, "site", L->sites[s].name);
			json_uint(&j, "contended", L->sites[s].count);
			json_uint(&j, "wait_ns", (uint64_t)lka_ns(a, L->sites[s].wait_ticks));
			json_obj_end(&j);
		}
		json_arr_end(&j);
		if (o->threads) {
			json_arr_begin(&j, "threads");
			for (int t = 0; t < L->nthreads; t++) {
				json_obj_begin(&j, NULL);
				json_int(&j, "tid", L->threads[t].tid);
				stat_json(&j, a, &L->threads[t].st, L->rec.kind);
				json_obj_end(&j);
			}
			json_arr_end(&j);
		}
		json_obj_end(&j);
	}
	json_arr_end(&j);
	json_uint(&j, "lost_events", lost_total(a));
	json_uint(&j, "sequence_gaps", a->ev.sequence_gaps);
	json_uint(&j, "unmatched_unlocks", a->unmatched_releases);
	json_uint(&j, "untracked_locks", a->sum.lost_locks);
	json_uint(&j, "uncounted_lock_operations", a->sum.lost_stats);
	json_uint(&j, "reentered_calls", a->reentry_lost);
	json_obj_begin(&j, "events");
	json_bool(&j, "present", a->ev.present);
	json_uint(&j, "lock_events", a->ev.lock_records);
	json_uint(&j, "chunks", a->ev.chunks);
	json_uint(&j, "compared", a->ev.compared);
	json_uint(&j, "mismatched", a->ev.mismatched);
	json_uint(&j, "unknown_locks", a->ev.unknown_locks);
	json_str(&j, "error", a->ev.error[0] ? a->ev.error : NULL);
	json_obj_end(&j);
	json_obj_end(&j);
	json_end(&j);
}

static const char *shorten(const char *s, char *buf, int w)
{
	int n = (int)strlen(s);
	if (n <= w)
		return s;
	snprintf(buf, (size_t)w + 1, "%s", s);
	buf[w - 1] = '~';
	return buf;
}

static void stat_row(const struct lka *a, const char *name, int nw, const char *kind, uint32_t k,
                     const struct lkrec_stat *s)
{
	uint64_t waits = lka_waits(k, s);
	char b1[32], b2[32], b3[32], b4[32], b5[32], nb[512];
	printf("%-*s %-9s %10llu %6.1f%% %9s %9s %9s %9s %9s %7llu %5llu\n", nw, shorten(name, nb, nw), kind,
	       (unsigned long long)s->acquisitions, s->acquisitions ? 100.0 * s->contended / s->acquisitions : 0.0,
	       fmt_ns(lka_ns(a, s->wait_ticks), b1, sizeof b1),
	       fmt_ns(waits ? lka_ns(a, s->wait_ticks) / waits : 0, b2, sizeof b2),
	       fmt_ns(lka_ns(a, s->max_wait_ticks), b3, sizeof b3), fmt_ns(lka_ns(a, s->hold_ticks), b4, sizeof b4),
	       fmt_ns(s->holds ? lka_ns(a, s->hold_ticks) / s->holds : 0, b5, sizeof b5),
	       (unsigned long long)s->trylock_failures, (unsigned long long)s->timeouts);
}

static void emit_table(const struct lka *a, const int *idx, int n, struct cli_opts *o)
{
	int w = term_width();
	int nw = w - 96;
	if (nw < 36)
		nw = 36;
	int multi = 0;
	for (int k = 1; k < a->nlocks; k++)
		if (a->locks[k].pid != a->locks[0].pid)
			multi = 1;
	printf("%-*s %-9s %10s %7s %9s %9s %9s %9s %9s %7s %5s\n", nw, "LOCK", "KIND", "ACQUIRED", "CONT", "WAIT",
	       "AVG-WAIT", "MAX-WAIT", "HOLD", "AVG-HOLD", "TRYFAIL", "TMOUT");
	for (int k = 0; k < n; k++) {
		const struct lka_lock *L = &a->locks[idx[k]];
		char name[700];
		snprintf(name, sizeof name, "%s", L->name);
		if (L->rec.gen)
			snprintf(name + strlen(name), sizeof name - strlen(name), " #%u", L->rec.gen);
		if (multi)
			snprintf(name + strlen(name), sizeof name - strlen(name), " [%d]", L->pid);
		if (L->members > 1)
			snprintf(name + strlen(name), sizeof name - strlen(name), " (%d locks)", L->members);
		for (int o2 = 0; o2 < a->nlocks; o2++) { /* same name: heap locks made at one site */
			const struct lka_lock *M = &a->locks[o2];
			if (M != L && M->rec.gen == L->rec.gen && M->pid == L->pid && !strcmp(M->name, L->name)) {
				snprintf(name + strlen(name), sizeof name - strlen(name), " @%llx",
				         (unsigned long long)L->rec.addr);
				break;
			}
		}
		stat_row(a, name, nw, L->kind, L->rec.kind, &L->tot);
		if (L->rec.kind == LK_RWLOCK)
			printf("%*s read %llu, write %llu\n", 4, "", (unsigned long long)L->tot.read_acquisitions,
			       (unsigned long long)L->tot.write_acquisitions);
		for (int s = 0; s < L->nsites && s < 3; s++) {
			char b[32];
			printf("    waited at %s: %llu times, %s\n", L->sites[s].name, (unsigned long long)L->sites[s].count,
			       fmt_ns(lka_ns(a, L->sites[s].wait_ticks), b, sizeof b));
		}
		if (o->threads)
			for (int t = 0; t < L->nthreads; t++) {
				char tn[64];
				snprintf(tn, sizeof tn, "  tid %d", L->threads[t].tid);
				stat_row(a, tn, nw, "", L->rec.kind, &L->threads[t].st);
			}
	}
	if (!n)
		printf("(no lock was used)\n");
	printf("\ndata: %d lock%s; %llu lost events, %llu sequence gaps, %llu unmatched unlocks",
	       a->nlocks_all, a->nlocks_all == 1 ? "" : "s", (unsigned long long)lost_total(a),
	       (unsigned long long)a->ev.sequence_gaps, (unsigned long long)a->unmatched_releases);
	if (a->sum.lost_locks)
		printf(", %llu locks not tracked (table full)", (unsigned long long)a->sum.lost_locks);
	if (a->ev.present)
		printf("; events: %llu, %s", (unsigned long long)a->ev.lock_records,
		       a->ev.mismatched ? "DIFFER from the aggregates" : "agree with the aggregates");
	printf("\n");
	if (a->ev.error[0])
		cli_warn("%s", a->ev.error);
}

int cmd_locks(struct cli_opts *o)
{
	int json = cli_want_json(o, "table json");
	if (o->argc)
		cli_die(EXIT_USAGE, "unexpected argument '%s' (see 'sonde locks --help')", o->argv[0]);
	sort_key = 0;
	if (o->sort) {
		static const char *const keys[] = { "wait", "hold", "acquisitions", "contended", "name" };
		sort_key = -1;
		for (int i = 0; i < 5; i++)
			if (!strcmp(o->sort, keys[i]))
				sort_key = i;
		if (sort_key < 0)
			cli_die(EXIT_USAGE, "invalid sort key '%s' for locks (wait, hold, acquisitions, contended, name)",
			        o->sort);
	}
	char err[1024];
	struct recording *r = load_open_or_die(o->input);
	progress_attach(r, o->input);
	if (!(r->mode & (REC_MODE_LOCKS | REC_MODE_LOCK_EVENTS)))
		cli_die(EXIT_DATA, "%s was not recorded with --locks (run 'sonde record --locks -- PROGRAM')", o->input);
	struct lka a;
	if (lka_load(r, &a, err, sizeof err) != 0)
		cli_die(EXIT_DATA, "%s", err);
	if (!o->per_lock && lka_group(&a) != 0)
		cli_die(EXIT_DATA, "out of memory grouping the locks");
	int *idx = malloc(sizeof *idx * (a.nlocks + 1));
	int n = 0;
	for (int i = 0; i < a.nlocks; i++) {
		if (o->tid) {
			int has = 0;
			for (int t = 0; t < a.locks[i].nthreads; t++)
				has |= a.locks[i].threads[t].tid == o->tid;
			if (!has)
				continue;
		}
		idx[n++] = i;
	}
	sort_a = &a;
	qsort(idx, n, sizeof *idx, cmp);
	if (o->limit && n > o->limit)
		n = o->limit;
	if (json)
		emit_json(&a, idx, n, o);
	else
		emit_table(&a, idx, n, o);
	free(idx);
	lka_free(&a);
	rd_close(r);
	return 0;
}
