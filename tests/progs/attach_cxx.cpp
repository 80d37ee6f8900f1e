// attach_cxx.cpp — a C++ program for `sonde record -p` whose threads throw
// exceptions through instrumented frames (tests/e2e/attach_cxx.sh).
// Usage: attach_cxx FIFO PIDFILE [N]
// Writes its pid to PIDFILE, then waits for a line on FIFO.  Phase 1: three
// threads each enter worker() -> hold(3) -> hold(2) -> hold(1) -> hold(0)
// (each hold with a Guard whose destructor runs on unwinding) and run N
// rounds of level1(): caught exceptions three frames down, rethrows, a
// destructor that throws and catches inside itself while an exception
// unwinds past it.  It prints the calls of each function, counted by itself,
// then waits in hold(0) for a second line on FIFO.  Phase 2: the same work
// again, then each thread throws Stop from hold(0) through the four hold
// frames entered in phase 1 (still open), caught in worker(); it prints its
// counts again and exits with status 4.
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <pthread.h>
#include <unistd.h>

#include "noipa.h"

namespace cx {
enum { F_WORKER, F_HOLD, F_LEVEL1, F_LEVEL2, F_LEVEL3, F_LEVEL4, F_UNGUARD, F_INNER, NF };
static const char *const names[NF] = { "worker", "hold", "level1", "level2", "level3", "level4", "unguard", "inner" };
static std::atomic<long> calls[NF], caught, rethrown, inner_caught, stops;
static std::atomic<int> parked, gate;
static long rounds = 20000;
static const int nthreads = 3;

struct Err {
	long v;
};
struct Err2 : Err {};
struct Stop {};

static void count(int f) { calls[f].fetch_add(1, std::memory_order_relaxed); }

NOIPA void inner(long i)
{
	TOUCH();
	count(F_INNER);
	throw Err{ i };
}

// Run by every Guard's destructor; while an exception unwinds past it, it
// throws and catches one of its own.
NOIPA void unguard(long i)
{
	TOUCH();
	count(F_UNGUARD);
	if (std::uncaught_exceptions() && i % 2 == 0) {
		try {
			inner(i);
		} catch (const Err &) {
			inner_caught.fetch_add(1, std::memory_order_relaxed);
		}
	}
}

struct Guard {
	long i;
	~Guard() { unguard(i); }
};

NOIPA void level4(long i)
{
	TOUCH();
	count(F_LEVEL4);
	throw Err2{ { i } };
}

NOIPA void level3(long i)
{
	TOUCH();
	count(F_LEVEL3);
	if (i % 3 == 0)
		throw Err{ i };
	if (i % 3 == 1) {
		try {
			level4(i);
		} catch (...) {
			rethrown.fetch_add(1, std::memory_order_relaxed);
			throw;
		}
	}
}

NOIPA void level2(long i)
{
	TOUCH();
	count(F_LEVEL2);
	Guard g{ i };
	level3(i);
}

NOIPA void level1(long i)
{
	TOUCH();
	count(F_LEVEL1);
	try {
		level2(i);
	} catch (const Err &) {
		caught.fetch_add(1, std::memory_order_relaxed);
	}
}

static void work()
{
	for (long i = 0; i < rounds; i++)
		level1(i);
}

NOIPA void hold(int d)
{
	TOUCH();
	count(F_HOLD);
	Guard g{ 1 }; // odd: its destructor throws nothing of its own
	if (d) {
		hold(d - 1);
		return;
	}
	work();
	parked.fetch_add(1);
	while (!gate.load())
		usleep(1000);
	work();
	throw Stop{};
}

NOIPA void worker()
{
	TOUCH();
	count(F_WORKER);
	try {
		hold(3);
	} catch (const Stop &) {
		stops.fetch_add(1);
	}
}
}

static void *thread_main(void *) { cx::worker(); return nullptr; }

static void print(const char *phase)
{
	using namespace cx;
	std::printf("%s:", phase);
	for (int f = 0; f < NF; f++)
		std::printf(" %s %ld", names[f], calls[f].load());
	std::printf(" caught %ld rethrown %ld inner_caught %ld stops %ld\n", caught.load(), rethrown.load(),
	            inner_caught.load(), stops.load());
	std::fflush(stdout);
}

NOIPA static bool read_line(FILE *f)
{
	TOUCH();
	char buf[64];
	return std::fgets(buf, sizeof buf, f) != nullptr;
}

int main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	if (argc > 3)
		cx::rounds = std::atol(argv[3]);
	FILE *pf = std::fopen(argv[2], "w");
	if (!pf)
		return 2;
	std::fprintf(pf, "%d\n", (int)getpid());
	std::fclose(pf);
	FILE *fifo = std::fopen(argv[1], "r");
	if (!fifo || !read_line(fifo))
		return 2;
	pthread_t th[cx::nthreads];
	for (int i = 0; i < cx::nthreads; i++)
		pthread_create(&th[i], nullptr, thread_main, nullptr);
	while (cx::parked.load() < cx::nthreads)
		usleep(1000);
	print("phase 1");
	read_line(fifo);
	cx::gate.store(1);
	for (int i = 0; i < cx::nthreads; i++)
		pthread_join(th[i], nullptr);
	print("phase 2");
	return 4;
}
