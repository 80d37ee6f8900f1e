// exceptions.cpp — a C++ exception thrown three frames down and caught in
// catcher(); afterwards catcher() calls after(): callers must be right.
// mid() and top() end in tail calls at -O2: the exception passes frames that
// share one return-address slot.  Prints the calls it made ("calls F N",
// "calls A->B N").
#include <cstdio>
#include <stdexcept>
#include "noipa.h"

namespace demo {
// calls by caller -> callee, counted at each call site
static long catcher_top, top_mid, mid_thrower, catcher_after, main_catcher;
NOIPA void thrower(int n) { TOUCH(); if (n) throw std::runtime_error("x"); }
NOIPA void mid(int n) { TOUCH(); mid_thrower++; thrower(n); }
NOIPA void top(int n) { TOUCH(); top_mid++; mid(n); }
NOIPA void after() { TOUCH(); }
NOIPA void catcher()
{
	try {
		catcher_top++;
		top(1);
	} catch (const std::exception &) {
	}
	catcher_after++;
	after();
}
}
int main()
{
	using namespace demo;
	for (int i = 0; i < 4; i++) {
		main_catcher++;
		catcher();
	}
	std::printf("calls demo::thrower %ld\ncalls demo::mid %ld\ncalls demo::top %ld\n", mid_thrower, top_mid, catcher_top);
	std::printf("calls demo::after %ld\ncalls demo::catcher %ld\n", catcher_after, main_catcher);
	std::printf("calls demo::catcher->demo::top %ld\ncalls demo::top->demo::mid %ld\n", catcher_top, top_mid);
	std::printf("calls demo::mid->demo::thrower %ld\ncalls demo::catcher->demo::after %ld\n", mid_thrower, catcher_after);
	std::printf("calls main->demo::catcher %ld\n", main_catcher);
	std::printf("exceptions done\n");
	return 0;
}
