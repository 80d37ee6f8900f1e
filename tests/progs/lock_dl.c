/* lock_dl.c — a library loaded with dlopen after the program started: its
 * global lock is still named by its symbol. */
#include <pthread.h>

pthread_mutex_t dl_lock = PTHREAD_MUTEX_INITIALIZER;

int dl_work(int n)
{
	int s = 0;
	for (int i = 0; i < n; i++) {
		pthread_mutex_lock(&dl_lock);
		s += i;
		pthread_mutex_unlock(&dl_lock);
	}
	return s;
}
