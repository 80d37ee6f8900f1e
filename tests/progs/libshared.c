/* libshared.c — an instrumented shared library linked into the test program. */
__attribute__((noipa)) int shared_inner(int x) { return x * 3; }
int shared_fn(int x) { return shared_inner(x) + 1; }
