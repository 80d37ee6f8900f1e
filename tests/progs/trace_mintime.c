/* trace_mintime.c — a mix of 3 ms calls and sub-microsecond calls:
 *   main: slow() x3 (3 ms each, no children), medium() x2 (3 ms, calls fast()
 *   x10 inside), fast() x5000 directly. */
#include <stdio.h>
#include <time.h>

static volatile int sink;

static void spin_ms(int ms)
{
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	do
		clock_gettime(CLOCK_MONOTONIC, &b);
	while ((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec) < ms * 1000000L);
}

__attribute__((noipa)) void fast(void) { sink++; }
__attribute__((noipa)) void slow(void) { spin_ms(3); }
__attribute__((noipa)) void medium(void)
{
	for (int i = 0; i < 10; i++)
		fast();
	spin_ms(3);
}

int main(void)
{
	for (int i = 0; i < 3; i++)
		slow();
	for (int i = 0; i < 2; i++)
		medium();
	for (int i = 0; i < 5000; i++)
		fast();
	printf("trace_mintime done\n");
	return 0;
}
