/* unit.h — tiny unit-test harness: each TEST runs in a forked child, so a
 * crash fails one test, not the run.  Output lines: "ok - NAME" / "not ok - NAME". */
#ifndef SONDE_TESTS_UNIT_H
#define SONDE_TESTS_UNIT_H
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#define CHECK(cond) do { if (!(cond)) { \
	fprintf(stdout, "  check failed: %s (%s:%d)\n", #cond, __FILE__, __LINE__); \
	fflush(stdout); _exit(1); } } while (0)
#define CHECK_EQ_U(a, b) do { unsigned long long _a = (a), _b = (b); if (_a != _b) { \
	fprintf(stdout, "  check failed: %s == %s (%llu != %llu) (%s:%d)\n", #a, #b, _a, _b, __FILE__, __LINE__); \
	fflush(stdout); _exit(1); } } while (0)

static int unit_failed;
static inline void unit_run(const char *name, void (*fn)(void))
{
	fflush(stdout);
	pid_t p = fork();
	if (p == 0) { fn(); fflush(stdout); _exit(0); }
	int st = 0;
	waitpid(p, &st, 0);
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0) printf("ok - %s\n", name);
	else { printf("not ok - %s: %s %d\n", name, WIFSIGNALED(st) ? "signal" : "status",
	              WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st)); unit_failed++; }
	fflush(stdout);
}
#define RUN(fn) unit_run(#fn, fn)
#define UNIT_END() return unit_failed ? 1 : 0
#endif
