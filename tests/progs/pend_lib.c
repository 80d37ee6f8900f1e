/* pend_lib.c — the library tests/progs/pend_main.c loads with dlopen once
 * sonde runs (tests/e2e/probe_pending.sh): its constructor already calls
 * pend_work, so a probe placed when the library loads must see those calls
 * too.  Built as libpend.so. */
#include <stdio.h>

static unsigned long acc;
static long ctor_calls;

__attribute__((noipa)) long pend_work(long i)
{
	acc += (unsigned long)i * 7 + 1; /* MARK_PEND_LINE */
	return (long)(acc & 0xff);
}

__attribute__((constructor)) static void pend_init(void)
{
	for (long i = 0; i < 100; i++)
		pend_work(i);
	ctor_calls = 100;
}

long pend_ctor_calls(void)
{
	return ctor_calls;
}
