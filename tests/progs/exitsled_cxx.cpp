// exitsled_cxx.cpp — C++ exceptions through functions with exit sleds
// (tests/e2e/exitsled.sh): thrown 6 frames below the catch, every frame
// with a destructor to run; then calls again.  Prints its own counts.
#include <cstdio>
#include <stdexcept>

#define NOINLINE __attribute__((noinline, noclone))
static long n_deep, n_dtor, n_after, n_caught;
static volatile int sink;

struct guard {
	int v;
	explicit guard(int x) : v(x) {}
	~guard() { n_dtor++; sink = v; }
};

NOINLINE int deep(int d)
{
	n_deep++;
	guard g(d);
	if (d == 0)
		throw std::runtime_error("bottom");
	int r = deep(d - 1);
	sink = r;
	return r + 1;
}
NOINLINE int after(int x) { n_after++; sink = x; return x * 3; }
NOINLINE int catcher(int k)
{
	try {
		return deep(6 + (k & 1));
	} catch (const std::exception &e) {
		n_caught++;
		return after(k);
	}
}

int main()
{
	long s = 0;
	for (int k = 0; k < 10; k++)
		s += catcher(k) + after(k);
	std::printf("sum %ld caught %ld\n", s, n_caught);
	std::printf("calls deep %ld\ncalls after %ld\ncalls catcher 10\ndestructors %ld\n", n_deep, n_after, n_dtor);
	return 0;
}
