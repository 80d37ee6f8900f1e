/* libshared.c — an instrumented shared library linked into the test program.
 * Counts its own calls for the program to print. */
#include "noipa.h"
long shared_inner_calls, shared_fn_shared_inner_calls;
NOIPA int shared_inner(int x) { shared_inner_calls++; return x * 3; }
NOIPA int shared_fn(int x) { shared_fn_shared_inner_calls++; return shared_inner(x) + 1; }
