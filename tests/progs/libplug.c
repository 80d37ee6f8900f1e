/* libplug.c — an instrumented shared library loaded with dlopen.  Counts its
 * own calls for the program to print. */
#include "noipa.h"
long plug_inner_calls, plug_fn_plug_inner_calls;
NOIPA int plug_inner(int x) { plug_inner_calls++; return x + 7; }
NOIPA int plug_fn(int x) { plug_fn_plug_inner_calls++; return plug_inner(x) * 2; }
