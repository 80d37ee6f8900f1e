// cxx_names.cpp — C++ names that are hard to select: a functor's
// operator(), function templates whose demangled names hold template
// arguments with spaces ("int pick<int, double>(int, double)"), a namespace.
// Prints how many times each ran.  The functor is made with new, so the
// program links libstdc++ (whose __cxa_demangle sonde's runtime uses to match
// -F / -N globs against demangled names).
#include <cstdio>
#include <cstdlib>

#include "noipa.h"

static int n_call, n_pick_id, n_pick_c;

namespace shapes {
struct Adder {
	int k;
	NOIPA int operator()(int x) const
	{
		TOUCH();
		n_call++;
		return x + k;
	}
};
}

template <typename A, typename B> NOIPA A pick(A a, B b)
{
	TOUCH();
	if (sizeof(B) == sizeof(double)) /* pick<int, double> */
		n_pick_id++;
	else
		n_pick_c++;
	return a + (A)b;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 5;
	shapes::Adder *add = new shapes::Adder{ 2 };
	long s = 0;
	for (int i = 0; i < n; i++)
		s += (*add)(i);
	delete add;
	for (int i = 0; i < n + 3; i++)
		s += pick<int, double>(i, 0.5);
	for (int i = 0; i < n + 6; i++)
		s += pick<int, char>(i, 1);
	printf("operator() %d\npick<int, double> %d\npick<int, char> %d\nsum %ld\n", n_call, n_pick_id,
	       n_pick_c, s);
	return 0;
}
