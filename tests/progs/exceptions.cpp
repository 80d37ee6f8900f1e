// exceptions.cpp — a C++ exception thrown three frames down and caught in
// catcher(); afterwards catcher() calls after(): callers must be right.
#include <cstdio>
#include <stdexcept>

namespace demo {
__attribute__((noipa)) void thrower(int n) { if (n) throw std::runtime_error("x"); }
__attribute__((noipa)) void mid(int n) { thrower(n); }
__attribute__((noipa)) void top(int n) { mid(n); }
__attribute__((noipa)) void after() { }
__attribute__((noipa)) void catcher()
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
