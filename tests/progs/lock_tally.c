/* lock_tally.c — a plain-gcc program (not built with sonde) exercising every
 * kind of lock, that counts every lock operation it makes, per thread, and
 * writes its tally as JSON to the file named by argv[1], for
 * tests/e2e/locks_basic.sh.  stdout is deterministic.
 *
 * The counts use the vocabulary of `sonde locks --format=json` and mean:
 *  - acquisitions: lock calls that returned success (mutex, spinlock, C11
 *    mtx, rwlock read + write, successful trylock / timedlock, sem_wait);
 *    a condition wait is one acquisition of the condition variable, and the
 *    mutex it takes back on return is one acquisition of the mutex (also
 *    counted in cond_reacquisitions);
 *  - releases: unlock calls that returned success and sem_post calls; a
 *    condition wait releases its mutex once;
 *  - read_acquisitions / write_acquisitions (rwlock), trylock_failures
 *    (EBUSY), timeouts (ETIMEDOUT);
 *  - holds: times the program held a mutex / rwlock / spinlock / mtx (one
 *    per acquisition, from the acquisition to its release);
 *  - waits: condition waits (on the condition variable), timed locks that
 *    gave up, and gate_lock acquisitions that blocked (see gate below).
 * It also measures:
 *  - busy_lock: the time spent inside it (busy_ns) and from each lock call
 *    to its unlock's return (span_ns, an upper bound);
 *  - gate_lock: main holds it while another thread calls pthread_mutex_lock
 *    on it, and releases it GATE_HOLD_MS after it has seen (in /proc) that
 *    thread asleep on a futex: that call blocked (contended).  The wait lies
 *    between the time from main seeing it asleep to main's unlock
 *    (gate_wait_min_ns, summed) and the thread's own measure around the call
 *    (gate_wait_max_ns);
 *  - the line of the pthread_mutex_init call of the heap mutex (the lock is
 *    named after that call site: "make_queue (lock_tally.c:LINE)"). */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <threads.h>
#include <time.h>
#include <unistd.h>

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
#define GATES 5
#define GATE_HOLD_MS 20

pthread_mutex_t hot_lock = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t busy_lock = PTHREAD_MUTEX_INITIALIZER;
pthread_rwlock_t table_lock = PTHREAD_RWLOCK_INITIALIZER;
pthread_spinlock_t spin;
pthread_mutex_t cv_lock = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
sem_t items;
pthread_mutex_t try_lock = PTHREAD_MUTEX_INITIALIZER;
mtx_t c11_lock;
pthread_mutex_t gate_lock = PTHREAD_MUTEX_INITIALIZER;

enum { L_HOT, L_BUSY, L_QUEUE, L_TABLE, L_SPIN, L_CV, L_CVLOCK, L_ITEMS, L_TRY, L_C11, L_GATE, NL };
static char queue_name[64];
static const char *lname[NL] = { "hot_lock", "busy_lock", queue_name, "table_lock", "spin", "cv",
	                         "cv_lock", "items", "try_lock", "c11_lock", "gate_lock" };
static const char *lkind[NL] = { "mutex", "mutex", "mutex", "rwlock", "spinlock", "cond",
	                         "mutex", "semaphore", "mutex", "mtx", "mutex" };

struct count {
	long acq, rel, rd, wr, tryfail, tmo, reacq, holds, waits;
};
struct tally {
	long tid;
	struct count c[NL];
};
static struct tally tallies[64];
static atomic_int ntallies;
static _Thread_local struct tally *me;

static struct count *C(int lock)
{
	if (!me) {
		int i = atomic_fetch_add(&ntallies, 1);
		if (i >= 64)
			abort();
		me = &tallies[i];
		me->tid = syscall(SYS_gettid);
	}
	return &me->c[lock];
}

/* a successful acquisition that starts a hold / a release that ends it */
static void got(int lock, int rc) { if (rc == 0) C(lock)->acq++, C(lock)->holds++; }
static void put(int lock, int rc) { if (rc == 0) C(lock)->rel++; }

static long counter, table[16], spun, c11_count;
static int tokens, taken;
static atomic_int consumer_ready;
static double busy_ns, span_ns, gate_wait_min_ns, gate_wait_max_ns;
static long gate_contended;
static int queue_init_line;

struct queue { long pad; pthread_mutex_t lock; long n; };

__attribute__((noipa)) struct queue *make_queue(void)
{
	struct queue *q = calloc(1, sizeof *q);
	pthread_mutex_init(&q->lock, NULL); queue_init_line = __LINE__;
	return q;
}

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static pthread_barrier_t hot_start;

static void *hot(void *a)
{
	(void)a;
	pthread_barrier_wait(&hot_start);
	for (int i = 0; i < HOT_ITERS; i++) {
		got(L_HOT, pthread_mutex_lock(&hot_lock));
		counter++;
		for (volatile int k = 0; k < 20; k++)
			;
		if (i % 2000 == 0) { /* sleep holding it: the other threads must wait */
			struct timespec ts = { 0, 100000 };
			nanosleep(&ts, NULL);
		}
		put(L_HOT, pthread_mutex_unlock(&hot_lock));
	}
	return NULL;
}

static void *queue_user(void *a)
{
	struct queue *q = a;
	for (int i = 0; i < Q_ITERS; i++) {
		got(L_QUEUE, pthread_mutex_lock(&q->lock));
		q->n++;
		put(L_QUEUE, pthread_mutex_unlock(&q->lock));
	}
	return NULL;
}

static void *reader(void *a)
{
	(void)a;
	long s = 0;
	for (int i = 0; i < RD_ITERS; i++) {
		int rc = pthread_rwlock_rdlock(&table_lock);
		got(L_TABLE, rc);
		C(L_TABLE)->rd += rc == 0;
		s += table[i & 15];
		put(L_TABLE, pthread_rwlock_unlock(&table_lock));
	}
	return (void *)s;
}

static void *writer(void *a)
{
	(void)a;
	for (int i = 0; i < WR_ITERS; i++) {
		int rc = pthread_rwlock_wrlock(&table_lock);
		got(L_TABLE, rc);
		C(L_TABLE)->wr += rc == 0;
		table[i & 15]++;
		put(L_TABLE, pthread_rwlock_unlock(&table_lock));
	}
	return NULL;
}

static void *spinner(void *a)
{
	(void)a;
	for (int i = 0; i < SPIN_ITERS; i++) {
		got(L_SPIN, pthread_spin_lock(&spin));
		spun++;
		put(L_SPIN, pthread_spin_unlock(&spin));
	}
	return NULL;
}

static void *consumer(void *a)
{
	(void)a;
	for (int i = 0; i < TOKENS; i++) {
		got(L_CVLOCK, pthread_mutex_lock(&cv_lock));
		while (tokens == 0) {
			atomic_store(&consumer_ready, 1);
			C(L_CVLOCK)->rel++;   /* the wait releases the mutex... */
			C(L_CVLOCK)->holds++; /* ...and its return starts a new hold */
			if (pthread_cond_wait(&cv, &cv_lock) == 0) {
				C(L_CVLOCK)->acq++;
				C(L_CVLOCK)->reacq++;
			}
			C(L_CV)->acq++;
			C(L_CV)->waits++;
		}
		tokens--;
		taken++;
		put(L_CVLOCK, pthread_mutex_unlock(&cv_lock));
	}
	return NULL;
}

static void *sem_consumer(void *a)
{
	(void)a;
	for (int i = 0; i < SEMS; i++)
		if (sem_wait(&items) == 0)
			C(L_ITEMS)->acq++;
	return NULL;
}

static void *trier(void *a)
{
	(void)a;
	for (int i = 0; i < TRIES; i++) {
		int rc = pthread_mutex_trylock(&try_lock);
		if (rc == EBUSY)
			C(L_TRY)->tryfail++;
		else if (rc == 0) { /* cannot happen: main holds it */
			got(L_TRY, rc);
			put(L_TRY, pthread_mutex_unlock(&try_lock));
		}
	}
	for (int i = 0; i < TIMEOUTS; i++) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 1000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		int rc = pthread_mutex_timedlock(&try_lock, &ts);
		if (rc == ETIMEDOUT)
			C(L_TRY)->tmo++, C(L_TRY)->waits++;
		else if (rc == 0) {
			got(L_TRY, rc);
			put(L_TRY, pthread_mutex_unlock(&try_lock));
		}
	}
	return NULL;
}

static int c11_worker(void *a)
{
	(void)a;
	for (int i = 0; i < C11_ITERS; i++) {
		got(L_C11, mtx_lock(&c11_lock) == thrd_success ? 0 : 1);
		c11_count++;
		put(L_C11, mtx_unlock(&c11_lock) == thrd_success ? 0 : 1);
	}
	return 0;
}

static atomic_int gate_asked;
static atomic_long gate_tid;
static int gate_confirmed[GATES];  /* written by main before its unlock, read after the lock */

static void *gate_user(void *a)
{
	(void)a;
	atomic_store(&gate_tid, syscall(SYS_gettid));
	for (int i = 0; i < GATES; i++) {
		while (atomic_load(&gate_asked) != 2 * i + 1)
			;
		double t0 = now_ns();
		int rc = pthread_mutex_lock(&gate_lock);
		double t1 = now_ns();
		got(L_GATE, rc);
		if (gate_confirmed[i]) { /* main saw this call blocked */
			C(L_GATE)->waits++;
			gate_wait_max_ns += t1 - t0;
		}
		put(L_GATE, pthread_mutex_unlock(&gate_lock));
		atomic_store(&gate_asked, 2 * i + 2);
	}
	return NULL;
}

/* Is thread tid asleep in the kernel on a futex (a blocked lock call)? */
static int blocked_on_futex(long tid)
{
	char path[64], buf[512];
	snprintf(path, sizeof path, "/proc/self/task/%ld/stat", tid);
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = 0;
	char *p = strrchr(buf, ')');
	if (!p || p[1] != ' ' || p[2] != 'S')
		return 0;
	snprintf(path, sizeof path, "/proc/self/task/%ld/wchan", tid);
	if (!(f = fopen(path, "r")))
		return 1; /* no wchan here: asleep is all we know */
	n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = 0;
	return strstr(buf, "futex") != NULL || !strcmp(buf, "0") || !n;
}

static void write_tally(const char *path)
{
	FILE *f = fopen(path, "w");
	if (!f) {
		perror(path);
		exit(2);
	}
	fprintf(f, "{\"busy_ns\": %.0f, \"span_ns\": %.0f,\n", busy_ns, span_ns);
	fprintf(f, " \"gate_contended\": %ld, \"gate_wait_min_ns\": %.0f, \"gate_wait_max_ns\": %.0f,\n", gate_contended,
	        gate_wait_min_ns, gate_wait_max_ns);
	fprintf(f, " \"queue_lock\": \"%s\", \"pid\": %ld,\n \"kinds\": {", queue_name, (long)getpid());
	for (int l = 0; l < NL; l++)
		fprintf(f, "%s\"%s\": \"%s\"", l ? ", " : "", lname[l], lkind[l]);
	fprintf(f, "},\n \"threads\": [\n");
	int n = atomic_load(&ntallies);
	for (int t = 0; t < n; t++) {
		fprintf(f, "  {\"tid\": %ld, \"locks\": {", tallies[t].tid);
		int first = 1;
		for (int l = 0; l < NL; l++) {
			const struct count *c = &tallies[t].c[l];
			if (!(c->acq | c->rel | c->tryfail | c->tmo | c->holds | c->waits))
				continue;
			fprintf(f,
			        "%s\"%s\": {\"acquisitions\": %ld, \"releases\": %ld, \"read_acquisitions\": %ld, "
			        "\"write_acquisitions\": %ld, \"trylock_failures\": %ld, \"timeouts\": %ld, "
			        "\"cond_reacquisitions\": %ld, \"holds\": %ld, \"waits\": %ld}",
			        first ? "" : ", ", lname[l], c->acq, c->rel, c->rd, c->wr, c->tryfail, c->tmo, c->reacq,
			        c->holds, c->waits);
			first = 0;
		}
		fprintf(f, "}}%s\n", t + 1 < n ? "," : "");
	}
	fprintf(f, " ]}\n");
	fclose(f);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s TALLY.json\n", argv[0]);
		return 2;
	}
	pthread_t th[8];
	/* 1. the hammered global mutex */
	pthread_barrier_init(&hot_start, NULL, HOT_THREADS);
	for (int i = 0; i < HOT_THREADS; i++)
		pthread_create(&th[i], NULL, hot, NULL);
	for (int i = 0; i < HOT_THREADS; i++)
		pthread_join(th[i], NULL);
	/* 2. known hold time */
	for (int i = 0; i < BUSY_ITERS; i++) {
		double s0 = now_ns();
		got(L_BUSY, pthread_mutex_lock(&busy_lock));
		double t0 = now_ns(), t1;
		while ((t1 = now_ns()) - t0 < BUSY_US * 1e3)
			;
		busy_ns += t1 - t0;
		put(L_BUSY, pthread_mutex_unlock(&busy_lock));
		span_ns += now_ns() - s0; /* lock call to unlock return: an upper bound */
	}
	/* 3. heap mutex made in make_queue() */
	struct queue *q = make_queue();
	snprintf(queue_name, sizeof queue_name, "make_queue (lock_tally.c:%d)", queue_init_line);
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
	/* 6. condition variable: one token at a time.  Tokens start once the
	 * consumer is about to wait (it says so holding cv_lock, so main's first
	 * lock returns once the consumer's wait has released it): at least one
	 * condition wait. */
	pthread_create(&th[0], NULL, consumer, NULL);
	while (!atomic_load(&consumer_ready))
		;
	for (int i = 0; i < TOKENS; i++) {
		got(L_CVLOCK, pthread_mutex_lock(&cv_lock));
		tokens++;
		pthread_cond_signal(&cv);
		put(L_CVLOCK, pthread_mutex_unlock(&cv_lock));
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
		if (sem_post(&items) == 0)
			C(L_ITEMS)->rel++;
	pthread_join(th[0], NULL);
	/* 8. trylock failures and timeouts while main holds try_lock */
	got(L_TRY, pthread_mutex_lock(&try_lock));
	pthread_create(&th[0], NULL, trier, NULL);
	pthread_join(th[0], NULL);
	put(L_TRY, pthread_mutex_unlock(&try_lock));
	/* 9. C11 */
	mtx_init(&c11_lock, mtx_plain);
	thrd_t ct[2];
	thrd_create(&ct[0], c11_worker, NULL);
	thrd_create(&ct[1], c11_worker, NULL);
	thrd_join(ct[0], NULL);
	thrd_join(ct[1], NULL);
	/* 10. gate: main holds gate_lock while the other thread asks for it, and
	 * lets it go GATE_HOLD_MS after it has seen that thread asleep on the
	 * lock's futex (at most 10 s later) */
	pthread_create(&th[0], NULL, gate_user, NULL);
	while (!atomic_load(&gate_tid))
		;
	for (int i = 0; i < GATES; i++) {
		got(L_GATE, pthread_mutex_lock(&gate_lock));
		atomic_store(&gate_asked, 2 * i + 1);
		double tb = 0, deadline = now_ns() + 10e9;
		while (!tb && now_ns() < deadline) {
			if (blocked_on_futex(atomic_load(&gate_tid)))
				tb = now_ns();
			else {
				struct timespec ts = { 0, 50000 };
				nanosleep(&ts, NULL);
			}
		}
		if (tb) {
			struct timespec ts = { 0, GATE_HOLD_MS * 1000000L };
			nanosleep(&ts, NULL);
			gate_confirmed[i] = 1;
			gate_contended++;
			gate_wait_min_ns += now_ns() - tb; /* it waited at least this long */
		}
		put(L_GATE, pthread_mutex_unlock(&gate_lock));
		while (atomic_load(&gate_asked) != 2 * i + 2)
			;
	}
	pthread_join(th[0], NULL);

	printf("done counter=%ld queue=%ld spun=%ld taken=%d c11=%ld\n", counter, q->n, spun, taken, c11_count);
	write_tally(argv[1]);
	return 0;
}
