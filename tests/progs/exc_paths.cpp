// exc_paths.cpp — the ways a C++ exception travels, each done 3 times:
//  - cleanup: a destructor run by the unwinding calls an instrumented
//    function (release) on its way;
//  - nested: a destructor run by the unwinding throws and catches an
//    exception of its own (inner_catch) before the unwinding goes on;
//  - rethrow: a handler calls note() and rethrows (`throw;`);
//  - self: caught in the function that threw it;
//  - library: thrown in libthrow.so two frames down, caught here.
// After each, the catching function calls after(): callers must be right.
// Prints the calls it made ("calls F N", "calls A->B N"), the library's as
// it counted them.
#include <cstdio>
#include <stdexcept>
#include "noipa.h"

void lib_relay(int n);
extern long lib_throw_calls, lib_relay_lib_throw_calls;

namespace {
// calls by caller -> callee, counted at each call site
long n_thrower, n_release, n_inner_catch, n_after, n_note, n_self;
long cleanup_mid_thrower, nested_mid_thrower, inner_catch_thrower, relay_thrower;
long run_cleanup_mid, run_nested_mid, run_relay, run_self, run_lib_relay, run_after;
long main_run;
}

NOIPA void thrower(int n)
{
	n_thrower++;
	TOUCH();
	if (n)
		throw std::runtime_error("x");
}
NOIPA void release() { n_release++; TOUCH(); }
NOIPA void inner_catch()
{
	n_inner_catch++;
	try {
		inner_catch_thrower++;
		thrower(1);
	} catch (const std::exception &) {
		TOUCH();
	}
}
NOIPA void after() { n_after++; TOUCH(); }
NOIPA void note() { n_note++; TOUCH(); }

struct Releaser {
	~Releaser() { release(); }
};
struct Nested {
	~Nested() { inner_catch(); }
};
NOIPA void cleanup_mid(int n)
{
	Releaser r;
	cleanup_mid_thrower++;
	thrower(n);
	TOUCH();
}
NOIPA void nested_mid(int n)
{
	Nested g;
	nested_mid_thrower++;
	thrower(n);
	TOUCH();
}
NOIPA void relay(int n)
{
	try {
		relay_thrower++;
		thrower(n);
	} catch (const std::exception &) {
		note();
		throw;
	}
}
NOIPA int self(int n)
{
	n_self++;
	try {
		TOUCH();
		if (n)
			throw 42;
	} catch (int v) {
		return v;
	}
	return 0;
}

// One way, caught here, then after().
NOIPA void run(int way)
{
	try {
		switch (way) {
		case 0: run_cleanup_mid++; cleanup_mid(1); break;
		case 1: run_nested_mid++; nested_mid(1); break;
		case 2: run_relay++; relay(1); break;
		case 3: run_self++; self(1); break;
		case 4: run_lib_relay++; lib_relay(1); break;
		}
	} catch (const std::exception &) {
		TOUCH();
	}
	run_after++;
	after();
}

int main()
{
	for (int i = 0; i < 3; i++)
		for (int way = 0; way < 5; way++) {
			main_run++;
			run(way);
		}
	std::printf("calls thrower %ld\ncalls release %ld\ncalls inner_catch %ld\ncalls after %ld\n", n_thrower, n_release,
	            n_inner_catch, n_after);
	std::printf("calls note %ld\ncalls self %ld\ncalls run %ld\n", n_note, n_self, main_run);
	std::printf("calls cleanup_mid %ld\ncalls nested_mid %ld\ncalls relay %ld\ncalls lib_relay %ld\ncalls lib_throw %ld\n",
	            run_cleanup_mid, run_nested_mid, run_relay, run_lib_relay, lib_throw_calls);
	std::printf("calls cleanup_mid->thrower %ld\ncalls nested_mid->thrower %ld\ncalls inner_catch->thrower %ld\n",
	            cleanup_mid_thrower, nested_mid_thrower, inner_catch_thrower);
	std::printf("calls relay->thrower %ld\ncalls relay->note %ld\ncalls lib_relay->lib_throw %ld\n", relay_thrower, n_note,
	            lib_relay_lib_throw_calls);
	std::printf("calls run->cleanup_mid %ld\ncalls run->nested_mid %ld\ncalls run->relay %ld\ncalls run->self %ld\n",
	            run_cleanup_mid, run_nested_mid, run_relay, run_self);
	std::printf("calls run->lib_relay %ld\ncalls run->after %ld\ncalls main->run %ld\n", run_lib_relay, run_after, main_run);
	std::printf("exc_paths done\n");
	return 0;
}
