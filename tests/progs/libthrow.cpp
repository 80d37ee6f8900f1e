// libthrow.cpp — an instrumented -fPIC shared library whose functions throw
// (for exc_paths.cpp); counts its own calls for the program to print.
#include <stdexcept>
#include "noipa.h"

long lib_throw_calls, lib_relay_lib_throw_calls;
NOIPA void lib_throw(int n)
{
	lib_throw_calls++;
	TOUCH();
	if (n)
		throw std::runtime_error("from the library");
}
NOIPA void lib_relay(int n)
{
	lib_relay_lib_throw_calls++;
	lib_throw(n);
	TOUCH();
}
