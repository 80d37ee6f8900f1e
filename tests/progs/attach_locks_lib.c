/* attach_locks_lib.c — libattach_locks.so, dlopen'ed by attach_locks.c
 * after sonde attached: its lock calls go through its own GOT. */
#include <pthread.h>

pthread_mutex_t lib_lock = PTHREAD_MUTEX_INITIALIZER;

long lib_work(long n)
{
	long k = 0;
	for (long i = 0; i < n; i++) {
		pthread_mutex_lock(&lib_lock);
		k++;
		pthread_mutex_unlock(&lib_lock);
	}
	return k;
}
