/* trace_kill.c — threads killed mid-call.  Three workers each complete
 * short_call() 1000 times, then enter blocked() and never return; main
 * enters wait_forever().  When all are inside, the program writes its pid
 * to the file named by argv[1]; the test then sends SIGKILL.
 * Expected: 3000 complete short_call slices; worker, blocked (x3) and main,
 * wait_forever open at the kill, closed there. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

static volatile int sink;
static atomic_int inside;

__attribute__((noipa)) void short_call(void) { sink++; }
__attribute__((noipa)) void blocked(void)
{
	atomic_fetch_add(&inside, 1);
	for (;;)
		pause();
}

__attribute__((noipa)) void *worker(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "killed-worker");
	for (int i = 0; i < 1000; i++)
		short_call();
	blocked();
	return NULL;
}

__attribute__((noipa)) void wait_forever(const char *path)
{
	while (atomic_load(&inside) < 3)
		usleep(1000);
	usleep(20000);
	FILE *f = fopen(path, "w");
	fprintf(f, "%d\n", getpid());
	fclose(f);
	for (;;)
		pause();
}

int main(int argc, char **argv)
{
	pthread_t t[3];
	for (int i = 0; i < 3; i++)
		pthread_create(&t[i], NULL, worker, NULL);
	wait_forever(argc > 1 ? argv[1] : "ready");
	return 0;
}
