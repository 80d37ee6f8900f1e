/* masked_calls.c — a program that calls its functions with every signal
 * blocked, as dash does around each wait (tests/e2e/attach_sigmask.sh):
 * `masked_calls STOPFILE` prints its pid, then until STOPFILE exists blocks
 * every signal, calls burst() (1000 calls of work()) and puts its mask back;
 * then prints "done" and exits 0.  `masked_calls STOPFILE hold`: every signal
 * blocked once, before the loop, for the whole run (a sonde attaching finds
 * it inside the masked section, always). */
#include <signal.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

static volatile unsigned long n;

__attribute__((noinline)) void work(void)
{
	n++;
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void burst(void)
{
	for (int i = 0; i < 1000; i++)
		work();
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	sigset_t all, old;
	sigfillset(&all);
	struct stat st;
	int hold = argc > 2;
	if (hold)
		sigprocmask(SIG_BLOCK, &all, &old);
	printf("%d\n", (int)getpid());
	fflush(stdout);
	while (stat(argv[1], &st) != 0) {
		if (!hold)
			sigprocmask(SIG_BLOCK, &all, &old);
		burst();
		if (!hold)
			sigprocmask(SIG_SETMASK, &old, NULL);
	}
	printf("done\n");
	return 0;
}
