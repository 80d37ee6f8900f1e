/* selfsame_stack.c — c() called by b() by a() by main, every 20 ms until
 * the file argv[1] exists (at most 3000 rounds, 60 s; without an argument
 * 150 rounds): a `stack:c` probe attached to it sees the same stack
 * recorded or not (tests/e2e/selfsame.sh), however long the attach takes. */
#include <stdio.h>
#include <unistd.h>
#include "noipa.h"

static volatile unsigned long sink;
NOIPA void c(int i) { sink += i; }
NOIPA void b(int i) { c(i); TOUCH(); }
NOIPA void a(int i) { b(i); TOUCH(); }
int main(int argc, char **argv)
{
	int rounds = argc > 1 ? 3000 : 150;
	for (int i = 0; i < rounds && (argc < 2 || access(argv[1], F_OK)); i++) {
		a(i);
		usleep(20000);
	}
	printf("done\n");
	return 0;
}
