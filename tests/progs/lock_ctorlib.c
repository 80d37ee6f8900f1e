/* lock_ctorlib.c — a shared library that takes locks in its constructor,
 * before main and possibly before the sonde runtime's own constructor. */
#include <pthread.h>
#include <stdlib.h>

pthread_mutex_t lib_lock = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t *lib_heap_lock;
int lib_count;

__attribute__((noipa)) pthread_mutex_t *lib_make(void)
{
	pthread_mutex_t *m = malloc(sizeof *m);
	pthread_mutex_init(m, NULL);
	return m;
}

__attribute__((constructor)) static void lib_ctor(void)
{
	lib_heap_lock = lib_make();
	for (int i = 0; i < 10; i++) {
		pthread_mutex_lock(&lib_lock);
		lib_count++;
		pthread_mutex_unlock(&lib_lock);
	}
	for (int i = 0; i < 3; i++) {
		pthread_mutex_lock(lib_heap_lock);
		lib_count++;
		pthread_mutex_unlock(lib_heap_lock);
	}
}
