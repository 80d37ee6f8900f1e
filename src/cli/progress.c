/* progress.c — the progress line (progress.h). */
#include "cli/progress.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/clock.h"

static struct {
	const char *what;
	int mode;                 /* 0 off, 1 always, 2 terminal after a second */
	uint64_t t0, last;        /* ns: attached, last drawn */
	int drawn;                /* a line is on the screen */
} pg;

static const char *size_str(uint64_t b, char *buf, size_t n)
{
	if (b >= 1ull << 30)
		snprintf(buf, n, "%.1f GiB", (double)b / (1ull << 30));
	else if (b >= 1ull << 20)
		snprintf(buf, n, "%.1f MiB", (double)b / (1ull << 20));
	else
		snprintf(buf, n, "%.0f KiB", (double)b / 1024);
	return buf;
}

static void on_progress(void *arg, uint64_t done, uint64_t total)
{
	(void)arg;
	uint64_t now = clock_mono_ns();
	if (done >= total) { /* the end of a pass: erase the line */
		if (pg.drawn)
			fputs(pg.mode == 1 && !isatty(2) ? "\n" : "\r\033[K", stderr);
		pg.drawn = 0;
		return;
	}
	if (pg.mode == 2 && now - pg.t0 < 1000000000ull)
		return;
	if (pg.drawn && now - pg.last < 100000000ull)
		return;
	char a[32], b[32];
	fprintf(stderr, "\rsonde: reading %s: %3.0f%% (%s of %s)", pg.what, total ? 100.0 * (double)done / (double)total : 0,
	        size_str(done, a, sizeof a), size_str(total, b, sizeof b));
	fflush(stderr);
	pg.drawn = 1;
	pg.last = now;
}

void progress_attach(struct recording *r, const char *what)
{
	const char *e = getenv("SONDE_PROGRESS");
	pg.mode = e && !strcmp(e, "0") ? 0 : e && !strcmp(e, "1") ? 1 : isatty(2) ? 2 : 0;
	if (!pg.mode)
		return;
	pg.what = what;
	pg.t0 = clock_mono_ns();
	pg.drawn = 0;
	r->progress = on_progress;
	r->progress_arg = NULL;
}
