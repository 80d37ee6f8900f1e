/* libplug.c — an instrumented shared library loaded with dlopen. */
__attribute__((noipa)) int plug_inner(int x) { return x + 7; }
int plug_fn(int x) { return plug_inner(x) * 2; }
