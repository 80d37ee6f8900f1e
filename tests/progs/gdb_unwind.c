/* gdb_unwind.c — main() calls a(), a() b(), b() c(), and c() sleeps, over and
 * over until SIGTERM: a debugger attached at any moment finds the thread in
 * c()'s sleep with c, b, a, main below it (tests/e2e/gdb_unwind.sh).
 * argv[1]: a file the program writes its pid into once it runs. */
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

static volatile sig_atomic_t stop;
static void on_term(int sig) { (void)sig; stop = 1; }

__attribute__((noinline)) int c(int x) { usleep(20000); return x + 1; }
__attribute__((noinline)) int b(int x) { return c(x) * 3; }
__attribute__((noinline)) int a(int x) { return b(x) * 5; }

int main(int argc, char **argv)
{
	signal(SIGTERM, on_term);
	long sum = 0;
	if (argc > 1) {
		FILE *f = fopen(argv[1], "w");
		if (!f)
			return 1;
		fprintf(f, "%d\n", (int)getpid());
		fclose(f);
	}
	while (!stop)
		sum += a(1);
	printf("done %d\n", sum > 0);
	return 0;
}
