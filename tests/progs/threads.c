/* threads.c — four workers call leaf() a known number of times each; main
 * calls it 10 times. */
#include <pthread.h>
#include <stdio.h>

#define NT 4
#define PER 100000
static volatile long sink;
__attribute__((noipa)) void leaf(int i) { sink += i; }
__attribute__((noipa)) void middle(int n) { for (int i = 0; i < n; i++) leaf(i); }
static void *worker(void *arg) { (void)arg; middle(PER); return NULL; }

int main(void)
{
	pthread_t t[NT];
	for (int i = 0; i < NT; i++)
		pthread_create(&t[i], NULL, worker, NULL);
	for (int i = 0; i < 10; i++)
		leaf(i);
	for (int i = 0; i < NT; i++)
		pthread_join(t[i], NULL);
	printf("threads done\n");
	return 0;
}
