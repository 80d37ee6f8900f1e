// exceptions.cpp — a C++ exception thrown three frames down and caught in
// catcher(); afterwards catcher() calls after(): callers must be right.
// mid() and top() end in tail calls at -O2: the exception passes frames that
// share one return-address slot.
#include <cstdio>
#include <stdexcept>
#include "noipa.h"

namespace demo {
NOIPA void thrower(int n) { TOUCH(); if (n) throw std::runtime_error("x"); }
NOIPA void mid(int n) { TOUCH(); thrower(n); }
NOIPA void top(int n) { TOUCH(); mid(n); }
NOIPA void after() { TOUCH(); }
NOIPA void catcher()
{
	try { top(1); } catch (const std::exception &) { }
	after();
}
}
int main()
{
	for (int i = 0; i < 4; i++)
		demo::catcher();
	std::printf("exceptions done\n");
	return 0;
}
