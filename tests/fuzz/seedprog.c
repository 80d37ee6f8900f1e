/* seedprog.c — a small program whose recordings seed the fuzz corpus of
 * tests/fuzz/fuzz_reader.c (tests/e2e/fuzz_reader.sh records it with
 * profile, --trace, --locks, --locks=events and --locks --trace): a few
 * functions, recursion, mutual recursion, a longjmp, two threads taking a
 * mutex, a rwlock, a semaphore and a condition variable, a few calls each so
 * that the recordings stay small.  "crash" ends in SIGSEGV from a deep frame. */
#include <pthread.h>
#include <semaphore.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#define NOIPA __attribute__((noipa))

static volatile long sink;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static sem_t sem;
static int ready;
static jmp_buf jb;

NOIPA void leaf(int i) { sink += i; }
NOIPA void mid(int n) { for (int i = 0; i < n; i++) leaf(i); }
NOIPA void rec(int n) { leaf(n); if (n > 0) rec(n - 1); }
NOIPA void odd(int n);
NOIPA void even(int n) { if (n > 0) odd(n - 1); else leaf(0); }
NOIPA void odd(int n) { if (n > 0) even(n - 1); else leaf(1); }
NOIPA void jump(int n) { if (n == 0) longjmp(jb, 1); jump(n - 1); }
NOIPA void crash(int n) { if (n == 0) { volatile int *p = NULL; *p = 1; } crash(n - 1); }

NOIPA void locked(int n)
{
	for (int i = 0; i < n; i++) {
		pthread_mutex_lock(&mu);
		mid(2);
		pthread_mutex_unlock(&mu);
		pthread_rwlock_rdlock(&rw);
		leaf(i);
		pthread_rwlock_unlock(&rw);
		if (pthread_mutex_trylock(&mu) == 0)
			pthread_mutex_unlock(&mu);
	}
}

static void *worker(void *arg)
{
	long k = (long)arg;
	locked(3 + (int)k);
	pthread_rwlock_wrlock(&rw);
	leaf(2);
	pthread_rwlock_unlock(&rw);
	sem_post(&sem);
	pthread_mutex_lock(&mu);
	ready++;
	pthread_cond_signal(&cv);
	pthread_mutex_unlock(&mu);
	return NULL;
}

int main(int argc, char **argv)
{
	sem_init(&sem, 0, 0);
	mid(3);
	rec(4);
	even(5);
	if (setjmp(jb) == 0)
		jump(3);
	pthread_t t[2];
	for (long i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, worker, (void *)i);
	sem_wait(&sem);
	sem_wait(&sem);
	pthread_mutex_lock(&mu);
	while (ready < 2)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	if (argc > 1 && !strcmp(argv[1], "crash"))
		crash(3);
	printf("seedprog done\n");
	return 0;
}
