/* start_lib.c — one of start_slow.c's libraries, built with -DN=k: its
 * constructor does some work before main (so that the loader's part of the
 * start-up lasts), its function returns what the constructor computed. */
#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)

static volatile long v;

__attribute__((constructor)) static void init(void)
{
	for (long i = 0; i < 400000; i++)
		v += i % (N + 3);
}

long CAT(lib_fn, N)(void)
{
	return v;
}
