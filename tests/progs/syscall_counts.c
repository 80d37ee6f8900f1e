/* syscall_counts.c — known numbers of system calls per function, for
 * tests/e2e/record_syscalls.sh.  Usage: syscall_counts SCALE TALLY.json.
 * Each function below calls libc's read / write / nanosleep / send / recv (or
 * the futex system call) directly a
 * number of times proportional to SCALE (0: none, so that the difference of
 * two `strace -c` runs is this program's own calls), counts them itself and
 * writes its tally (calls, bytes, and the wall time of the function around
 * its sleeps) as JSON.  A second thread makes writes of its own.  With
 * SC_WAIT=FILE it waits for FILE before its first counted call (usleep and
 * access: glibc's internal nanosleep, not the wrappers' calls). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/futex.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static int scale, pipefd[2];
struct tally { long writes, wbytes, reads, rbytes, rerrors, sleeps, sleep_ns, sends, sbytes, recvs, cbytes, futexes,
                futex_errors; };
static struct tally fill, drain, nap, worker, tail, talk, fwake, fwait;
static int futex_word;
static long worker_tid;

static long mono_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000L + t.tv_nsec;
}

/* 40 * scale writes of 1..40 bytes into the pipe */
NOINLINE static void fill_pipe(void)
{
	char buf[64];
	memset(buf, 'x', sizeof buf);
	for (int i = 0; i < 40 * scale; i++) {
		ssize_t n = write(pipefd[1], buf, (size_t)(i % 40) + 1);
		fill.writes++;
		if (n > 0)
			fill.wbytes += n;
	}
}

/* read the pipe back in reads of at most 7 bytes, after scale reads of a
 * closed descriptor (each fails: EBADF) */
NOINLINE static void drain_pipe(long total)
{
	char buf[7];
	for (int i = 0; i < scale; i++) {
		drain.reads++;
		if (read(-1, buf, sizeof buf) < 0)
			drain.rerrors++;
	}
	while (drain.rbytes < total) {
		ssize_t n = read(pipefd[0], buf, sizeof buf);
		drain.reads++;
		if (n <= 0)
			break;
		drain.rbytes += n;
	}
}

/* 5 * scale sleeps of 1 ms, and one write of its own */
NOINLINE static void nap_a_little(void)
{
	long t0 = mono_ns();
	struct timespec ts = { 0, 1000000 };
	for (int i = 0; i < 5 * scale; i++) {
		nanosleep(&ts, NULL);
		nap.sleeps++;
	}
	nap.sleep_ns = mono_ns() - t0;
	if (scale) {
		ssize_t n = write(pipefd[1], "z", 1);
		nap.writes++;
		if (n > 0)
			nap.wbytes += n;
		char c;
		if (read(pipefd[0], &c, 1) == 1)
			nap.rbytes++;
		nap.reads++;
	}
}

/* 20 * scale sends of 1..16 bytes over a socket pair, received back in
 * recvs of at most 5 bytes */
NOINLINE static void talk_socket(void)
{
	int sv[2];
	if (!scale || socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		return;
	char buf[16];
	memset(buf, 's', sizeof buf);
	for (int i = 0; i < 20 * scale; i++) {
		ssize_t n = send(sv[0], buf, (size_t)(i % 16) + 1, 0);
		talk.sends++;
		if (n > 0)
			talk.sbytes += n;
	}
	while (talk.cbytes < talk.sbytes) {
		ssize_t n = recv(sv[1], buf, 5, 0);
		talk.recvs++;
		if (n <= 0)
			break;
		talk.cbytes += n;
	}
	close(sv[0]);
	close(sv[1]);
}

/* 30 * scale futex wakes of a word nobody waits on (each returns 0): the
 * raw system call, as glibc's pthread functions make it */
NOINLINE static void futex_wake_some(void)
{
	for (int i = 0; i < 30 * scale; i++) {
		long r = syscall(SYS_futex, &futex_word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
		fwake.futexes++;
		if (r < 0)
			fwake.futex_errors++;
	}
}

/* 7 * scale futex waits for a value the word does not hold: each fails at
 * once (EAGAIN) */
NOINLINE static void futex_wait_stale(void)
{
	for (int i = 0; i < 7 * scale; i++) {
		long r = syscall(SYS_futex, &futex_word, FUTEX_WAIT_PRIVATE, futex_word + 1, NULL, NULL, 0);
		fwait.futexes++;
		if (r < 0)
			fwait.futex_errors++;
	}
}

/* its write is a tail call (gcc -O2: `jmp write`): its return address is the
 * caller's, or, in a hooked function, the exit trampoline's */
NOINLINE static ssize_t tail_write(void)
{
	tail.writes++;
	return write(pipefd[1], "t", 1);
}

/* The worker says it started, main waits for it: a condition variable,
 * whose futex calls glibc makes when it must (the program cannot count
 * them; strace and the kernel can) */
static pthread_mutex_t hello_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t hello_cv = PTHREAD_COND_INITIALIZER;
static int hello_said;
NOINLINE static void hello(void)
{
	pthread_mutex_lock(&hello_mu);
	hello_said = 1;
	pthread_cond_signal(&hello_cv);
	pthread_mutex_unlock(&hello_mu);
}

NOINLINE static void *worker_main(void *arg)
{
	(void)arg;
	worker_tid = syscall(SYS_gettid);
	hello();
	FILE *f = fopen("/dev/null", "w");
	int fd = fileno(f);
	char buf[100] = { 0 };
	for (int i = 0; i < 30 * scale; i++) {
		ssize_t n = write(fd, buf, 100);
		worker.writes++;
		if (n > 0)
			worker.wbytes += n;
	}
	fclose(f);
	return NULL;
}

static void put(FILE *f, const char *name, const char *sep, const struct tally *t)
{
	fprintf(f, "  \"%s\": {\"write\": %ld, \"write_bytes\": %ld, \"read\": %ld, \"read_bytes\": %ld, "
	        "\"read_errors\": %ld, \"nanosleep\": %ld, \"sleep_wall_ns\": %ld, \"send\": %ld, \"send_bytes\": %ld, "
	        "\"recv\": %ld, \"recv_bytes\": %ld, \"futex\": %ld, \"futex_errors\": %ld}%s\n", name, t->writes,
	        t->wbytes, t->reads, t->rbytes, t->rerrors, t->sleeps, t->sleep_ns, t->sends, t->sbytes, t->recvs, t->cbytes,
	        t->futexes, t->futex_errors, sep);
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: syscall_counts SCALE TALLY.json\n");
		return 2;
	}
	scale = atoi(argv[1]);
	/* SC_WAIT=FILE: "waiting" on stdout, then no call of the tally until
	 * FILE exists (a sonde attaches meanwhile: record --syscalls -p) */
	const char *go = getenv("SC_WAIT");
	if (go) {
		printf("waiting\n");
		fflush(stdout);
		while (access(go, F_OK) != 0)
			usleep(10000);
	}
	if (pipe(pipefd))
		return 1;
	pthread_t th;
	pthread_create(&th, NULL, worker_main, NULL);
	pthread_mutex_lock(&hello_mu);
	while (!hello_said)
		pthread_cond_wait(&hello_cv, &hello_mu);
	pthread_mutex_unlock(&hello_mu);
	fill_pipe();
	drain_pipe(fill.wbytes);
	nap_a_little();
	talk_socket();
	futex_wake_some();
	futex_wait_stale();
	for (int i = 0; i < scale; i++) {
		ssize_t n = tail_write();
		if (n > 0)
			tail.wbytes += n;
	}
	pthread_join(th, NULL);
	FILE *f = fopen(argv[2], "w");
	if (!f)
		return 1;
	fprintf(f, "{\n");
	put(f, "fill_pipe", ",", &fill);
	put(f, "drain_pipe", ",", &drain);
	put(f, "nap_a_little", ",", &nap);
	put(f, "talk_socket", ",", &talk);
	put(f, "tail_write", ",", &tail);
	put(f, "futex_wake_some", ",", &fwake);
	put(f, "futex_wait_stale", ",", &fwait);
	put(f, "worker_main", "", &worker);
	/* the threads, for a strace of this run (its futex calls by thread id) */
	fprintf(f, ", \"tids\": [%ld, %ld]}\n", (long)getpid(), worker_tid);
	fclose(f);
	printf("wrote %ld bytes, read %ld, slept %ld times\n", fill.wbytes + nap.wbytes + worker.wbytes + tail.wbytes,
	       drain.rbytes + nap.rbytes, nap.sleeps);
	return 0;
}
