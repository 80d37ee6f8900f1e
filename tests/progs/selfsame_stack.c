/* selfsame_stack.c — c() called by b() by a() by main, every 20 ms for
 * about 3 s: a `stack:c` probe attached to it sees the same stack recorded
 * or not (tests/e2e/selfsame.sh). */
#include <stdio.h>
#include <unistd.h>
#include "noipa.h"

static volatile unsigned long sink;
NOIPA void c(int i) { sink += i; }
NOIPA void b(int i) { c(i); TOUCH(); }
NOIPA void a(int i) { b(i); TOUCH(); }
int main(void)
{
	for (int i = 0; i < 150; i++) {
		a(i);
		usleep(20000);
	}
	printf("done\n");
	return 0;
}
