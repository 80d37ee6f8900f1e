/* lock_basic.c — a plain-gcc program (not built with sonde) exercising every
 * kind of lock with counts known in advance, for tests/e2e/locks_basic.sh.
 * stdout is deterministic; stderr reports the condition waits the program
 * itself made (their number depends on scheduling). */
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <threads.h>
#include <time.h>
#include <errno.h>

#define HOT_THREADS 4
#define HOT_ITERS 20000
#define BUSY_ITERS 50
#define BUSY_US 200
#define Q_ITERS 1000
#define RD_THREADS 3
#define RD_ITERS 3000
#define WR_ITERS 500
#define SPIN_ITERS 5000
#define TOKENS 200
#define SEMS 300
#define TRIES 100
#define TIMEOUTS 5
#define C11_ITERS 1000

pthread_mutex_t hot_lock = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t busy_lock = PTHREAD_MUTEX_INITIALIZER;
pthread_rwlock_t table_lock = PTHREAD_RWLOCK_INITIALIZER;
pthread_spinlock_t spin;
pthread_mutex_t cv_lock = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
sem_t items;
pthread_mutex_t try_lock = PTHREAD_MUTEX_INITIALIZER;
mtx_t c11_lock;

static volatile long counter, table[16], spun, c11_count;
static int tokens, taken, cond_waits;
static double busy_us, span_us; /* time the program itself measured inside busy_lock */

struct queue { long pad; pthread_mutex_t lock; long n; };

__attribute__((noipa)) struct queue *make_queue(void)
{
	struct queue *q = calloc(1, sizeof *q);
	pthread_mutex_init(&q->lock, NULL);
	return q;
}

static double now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static pthread_barrier_t hot_start;

static void *hot(void *a)
{
	(void)a;
	pthread_barrier_wait(&hot_start);
	for (int i = 0; i < HOT_ITERS; i++) {
		pthread_mutex_lock(&hot_lock);
		counter++;
		for (volatile int k = 0; k < 20; k++)
			;
		if (i % 2000 == 0) { /* sleep holding it: the other threads must wait */
			struct timespec ts = { 0, 100000 };
			nanosleep(&ts, NULL);
		}
		pthread_mutex_unlock(&hot_lock);
	}
	return NULL;
}

static void *queue_user(void *a)
{
	struct queue *q = a;
	for (int i = 0; i < Q_ITERS; i++) {
		pthread_mutex_lock(&q->lock);
		q->n++;
		pthread_mutex_unlock(&q->lock);
	}
	return NULL;
}

static void *reader(void *a)
{
	(void)a;
	long s = 0;
	for (int i = 0; i < RD_ITERS; i++) {
		pthread_rwlock_rdlock(&table_lock);
		s += table[i & 15];
		pthread_rwlock_unlock(&table_lock);
	}
	return (void *)s;
}

static void *writer(void *a)
{
	(void)a;
	for (int i = 0; i < WR_ITERS; i++) {
		pthread_rwlock_wrlock(&table_lock);
		table[i & 15]++;
		pthread_rwlock_unlock(&table_lock);
	}
	return NULL;
}

static void *spinner(void *a)
{
	(void)a;
	for (int i = 0; i < SPIN_ITERS; i++) {
		pthread_spin_lock(&spin);
		spun++;
		pthread_spin_unlock(&spin);
	}
	return NULL;
}

static void *consumer(void *a)
{
	(void)a;
	for (int i = 0; i < TOKENS; i++) {
		pthread_mutex_lock(&cv_lock);
		while (tokens == 0) {
			cond_waits++;
			pthread_cond_wait(&cv, &cv_lock);
		}
		tokens--;
		taken++;
		pthread_mutex_unlock(&cv_lock);
	}
	return NULL;
}

static void *sem_consumer(void *a)
{
	(void)a;
	for (int i = 0; i < SEMS; i++)
		sem_wait(&items);
	return NULL;
}

static void *trier(void *a)
{
	(void)a;
	int fails = 0, tmo = 0;
	for (int i = 0; i < TRIES; i++)
		if (pthread_mutex_trylock(&try_lock) == EBUSY)
			fails++;
	for (int i = 0; i < TIMEOUTS; i++) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 1000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		if (pthread_mutex_timedlock(&try_lock, &ts) == ETIMEDOUT)
			tmo++;
	}
	return (void *)(long)(fails * 1000 + tmo);
}

static int c11_worker(void *a)
{
	(void)a;
	for (int i = 0; i < C11_ITERS; i++) {
		mtx_lock(&c11_lock);
		c11_count++;
		mtx_unlock(&c11_lock);
	}
	return 0;
}

int main(void)
{
	pthread_t th[8];
	/* 1. the hammered global mutex */
	pthread_barrier_init(&hot_start, NULL, HOT_THREADS);
	for (int i = 0; i < HOT_THREADS; i++)
		pthread_create(&th[i], NULL, hot, NULL);
	for (int i = 0; i < HOT_THREADS; i++)
		pthread_join(th[i], NULL);
	/* 2. known hold time */
	for (int i = 0; i < BUSY_ITERS; i++) {
		double s0 = now_us();
		pthread_mutex_lock(&busy_lock);
		double t0 = now_us(), t1;
		while ((t1 = now_us()) - t0 < BUSY_US)
			;
		busy_us += t1 - t0;
		pthread_mutex_unlock(&busy_lock);
		span_us += now_us() - s0; /* lock call to unlock return: an upper bound */
	}
	/* 3. heap mutex made in make_queue() */
	struct queue *q = make_queue();
	pthread_create(&th[0], NULL, queue_user, q);
	pthread_create(&th[1], NULL, queue_user, q);
	pthread_join(th[0], NULL);
	pthread_join(th[1], NULL);
	/* 4. rwlock: readers and a writer */
	for (int i = 0; i < RD_THREADS; i++)
		pthread_create(&th[i], NULL, reader, NULL);
	pthread_create(&th[RD_THREADS], NULL, writer, NULL);
	for (int i = 0; i <= RD_THREADS; i++)
		pthread_join(th[i], NULL);
	/* 5. spinlock */
	pthread_spin_init(&spin, PTHREAD_PROCESS_PRIVATE);
	pthread_create(&th[0], NULL, spinner, NULL);
	pthread_create(&th[1], NULL, spinner, NULL);
	pthread_join(th[0], NULL);
	pthread_join(th[1], NULL);
	/* 6. condition variable: one token at a time */
	pthread_create(&th[0], NULL, consumer, NULL);
	for (int i = 0; i < TOKENS; i++) {
		pthread_mutex_lock(&cv_lock);
		tokens++;
		pthread_cond_signal(&cv);
		pthread_mutex_unlock(&cv_lock);
		if (i % 4 == 0) {
			struct timespec ts = { 0, 20000 };
			nanosleep(&ts, NULL);
		}
	}
	pthread_join(th[0], NULL);
	/* 7. semaphore */
	sem_init(&items, 0, 0);
	pthread_create(&th[0], NULL, sem_consumer, NULL);
	for (int i = 0; i < SEMS; i++)
		sem_post(&items);
	pthread_join(th[0], NULL);
	/* 8. trylock failures and timeouts while main holds try_lock */
	pthread_mutex_lock(&try_lock);
	void *r;
	pthread_create(&th[0], NULL, trier, NULL);
	pthread_join(th[0], &r);
	pthread_mutex_unlock(&try_lock);
	/* 9. C11 */
	mtx_init(&c11_lock, mtx_plain);
	thrd_t ct[2];
	thrd_create(&ct[0], c11_worker, NULL);
	thrd_create(&ct[1], c11_worker, NULL);
	thrd_join(ct[0], NULL);
	thrd_join(ct[1], NULL);

	printf("done counter=%ld queue=%ld spun=%ld taken=%d c11=%ld trier=%ld\n", counter, q->n, spun, taken,
	       c11_count, (long)r);
	fprintf(stderr, "cond_waits=%d busy_us=%.1f span_us=%.1f\n", cond_waits, busy_us, span_us);
	return 0;
}
