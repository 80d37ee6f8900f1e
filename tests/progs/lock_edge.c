/* lock_edge.c — hard cases for the lock wrappers: fork inside a locked
 * section, locks taken in another library's constructor (lock_ctorlib.c),
 * a dlopen'd library's lock, and lock addresses freed and reused (with init
 * and with a static initializer), heap semaphores made by sem_init at a reused
 * address, a named semaphore (sem_open / sem_close).  Plain gcc; for
 * tests/e2e/locks_edge.sh. */
#include <dlfcn.h>
#include <fcntl.h>
#include <semaphore.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern int lib_count;
pthread_mutex_t fork_lock = PTHREAD_MUTEX_INITIALIZER;

__attribute__((noipa)) pthread_mutex_t *make_lock(void)
{
	pthread_mutex_t *m = malloc(sizeof *m);
	pthread_mutex_init(m, NULL);
	return m;
}

__attribute__((noipa)) sem_t *make_sem(void)
{
	sem_t *s = malloc(sizeof *s);
	sem_init(s, 0, 0);
	return s;
}

__attribute__((noipa)) void use_static_heap(pthread_mutex_t *m, int n)
{
	for (int i = 0; i < n; i++) {
		pthread_mutex_lock(m);
		pthread_mutex_unlock(m);
	}
}

static void *holder(void *a)
{
	(void)a;
	for (int i = 0; i < 1000; i++) {
		pthread_mutex_lock(&fork_lock);
		pthread_mutex_unlock(&fork_lock);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	/* 1. reuse after destroy + free, with init */
	void *addrs[3];
	for (int round = 0; round < 3; round++) {
		pthread_mutex_t *m = make_lock();
		addrs[round] = m;
		for (int i = 0; i < (round + 1) * 10; i++) {
			pthread_mutex_lock(m);
			pthread_mutex_unlock(m);
		}
		pthread_mutex_destroy(m);
		free(m);
	}
	/* 2. reuse with a static initializer (no init call) */
	void *saddr[2];
	for (int round = 0; round < 2; round++) {
		pthread_mutex_t *m = malloc(sizeof *m);
		pthread_mutex_t init = PTHREAD_MUTEX_INITIALIZER;
		memcpy(m, &init, sizeof init);
		saddr[round] = m;
		use_static_heap(m, 5 + round);
		pthread_mutex_destroy(m);
		free(m);
	}
	/* 3. a dlopen'd library */
	char path[4096];
	snprintf(path, sizeof path, "%s", argv[0]);
	char *slash = strrchr(path, '/');
	snprintf(slash ? slash + 1 : path, sizeof path - (slash ? (size_t)(slash + 1 - path) : 0), "lock_dl.so");
	void *h = dlopen(path, RTLD_NOW);
	int (*dl_work)(int) = h ? (int (*)(int))dlsym(h, "dl_work") : NULL;
	int dl = dl_work ? dl_work(7) : -1;
	/* 4. fork inside a locked section, with another thread using the lock */
	pthread_t th;
	pthread_create(&th, NULL, holder, NULL);
	pthread_join(th, NULL);
	pthread_mutex_lock(&fork_lock);
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		pthread_mutex_unlock(&fork_lock);
		for (int i = 0; i < 3; i++) {
			pthread_mutex_lock(&fork_lock);
			pthread_mutex_unlock(&fork_lock);
		}
		exit(0);
	}
	pthread_mutex_unlock(&fork_lock);
	int st;
	waitpid(pid, &st, 0);
	/* 5. heap semaphores from make_sem(), the address freed and reused: 4, then 8 waits */
	void *semaddr[2];
	for (int round = 0; round < 2; round++) {
		sem_t *s = make_sem();
		semaddr[round] = s;
		for (int i = 0; i < (round + 1) * 4; i++) {
			sem_post(s);
			sem_wait(s);
		}
		sem_destroy(s);
		free(s);
	}
	/* 6. a named semaphore: sem_open / sem_close pass through; 3 waits */
	char sname[64];
	snprintf(sname, sizeof sname, "/sonde-edge-%d", (int)getpid());
	sem_t *ns = sem_open(sname, O_CREAT | O_EXCL, 0600, 3);
	int named = 0;
	if (ns != SEM_FAILED) {
		for (int i = 0; i < 3; i++)
			named += sem_wait(ns) == 0;
		sem_close(ns);
		sem_unlink(sname);
	}
	printf("edge done lib_count=%d dl=%d child=%d named_sem=%d\n", lib_count, dl, WIFEXITED(st) ? WEXITSTATUS(st) : -1,
	       named);
	fprintf(stderr, "reused=%d static_reused=%d sem_reused=%d sem_open=%d\n", addrs[0] == addrs[1] && addrs[1] == addrs[2],
	        saddr[0] == saddr[1], semaddr[0] == semaddr[1], ns != SEM_FAILED);
	return 0;
}
