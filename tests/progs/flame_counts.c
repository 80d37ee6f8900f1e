/* flame_counts.c — a known call tree that reports what it did, for
 * tests/e2e/trace_flame.sh:
 *   main: slow() x3 (3 ms busy each), medium() x2 (2 ms busy, then
 *   inner() x4 of 0.25 ms busy each), fast() x5000 (a few ns each).
 * Every function keeps a shadow call stack of its own: on entry it counts a
 * call of its calling path ("main;medium;inner"), and it measures its own
 * time from entry to exit (CLOCK_MONOTONIC, wall time, like the profile).
 * At the end it prints one line per path:
 *   path main;medium;inner CALLS NS
 * and "span main;fast NS": main's measure of its whole loop of fast() calls
 * (an upper bound for fast()'s time however much a call costs around it).
 * The bookkeeping and the busy work are inline, so the only functions in
 * the machine code are main, slow, medium, inner and fast. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "noipa.h"
#include "work.h"

#define MAXP 16
static struct {
	char name[64];
	long calls;
	long long ns;
} paths[MAXP];
static int npaths;
static char cur[128];

struct frame {
	size_t len;
	int idx;
	long long t0;
};

static inline __attribute__((always_inline)) long long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static inline __attribute__((always_inline)) void enter(struct frame *f, const char *name)
{
	f->len = strlen(cur);
	if (f->len)
		strcat(cur, ";");
	strcat(cur, name);
	int i = 0;
	while (i < npaths && strcmp(paths[i].name, cur))
		i++;
	if (i == npaths)
		strcpy(paths[npaths++].name, cur);
	paths[i].calls++;
	f->idx = i;
	f->t0 = now_ns();
}

static inline __attribute__((always_inline)) void leave(struct frame *f)
{
	paths[f->idx].ns += now_ns() - f->t0;
	cur[f->len] = 0;
}

NOIPA void fast(void)
{
	struct frame f;
	enter(&f, "fast");
	TOUCH();
	leave(&f);
}

NOIPA void slow(void)
{
	struct frame f;
	enter(&f, "slow");
	work_ms(3);
	leave(&f);
}

NOIPA void inner(void)
{
	struct frame f;
	enter(&f, "inner");
	work_ms(0.25);
	leave(&f);
}

NOIPA void medium(void)
{
	struct frame f;
	enter(&f, "medium");
	work_ms(2);
	for (int i = 0; i < 4; i++)
		inner();
	leave(&f);
}

int main(void)
{
	struct frame f;
	enter(&f, "main");
	for (int i = 0; i < 3; i++)
		slow();
	for (int i = 0; i < 2; i++)
		medium();
	long long l0 = now_ns();
	for (int i = 0; i < 5000; i++)
		fast();
	long long loop = now_ns() - l0;
	leave(&f);
	for (int i = 0; i < npaths; i++)
		printf("path %s %ld %lld\n", paths[i].name, paths[i].calls, paths[i].ns);
	printf("span main;fast %lld\n", loop);
	return 0;
}
