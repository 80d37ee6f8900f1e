/* survive.c — a program whose recorder is killed while it runs (issue 15,
 * "When sonde dies, the program does not").  It makes argv[3] calls of
 * outer() (more events than a trace ring holds: the recorder drains them
 * while it lives), writes its pid to argv[1], waits until the file argv[2]
 * exists (the test kills sonde meanwhile), makes 3000000 more, and prints
 * its own count of the calls of each function, before the kill and in all,
 * for the test to compare with the recovered recording.  Exit status 7. */
#include <stdlib.h>
#include <stdio.h>
#include <unistd.h>

#include "noipa.h"

static unsigned long n_outer, n_inner_a, n_inner_b;
static volatile unsigned long sink;

NOIPA void inner_a(unsigned long i) { n_inner_a++; sink += i; }
NOIPA void inner_b(unsigned long i) { n_inner_b++; sink ^= i; }

NOIPA void outer(unsigned long i)
{
	n_outer++;
	inner_a(i);
	if (i % 3 == 0)
		inner_b(i);
}

int main(int argc, char **argv)
{
	if (argc < 4)
		return 2;
	unsigned long before = strtoul(argv[3], NULL, 10);
	for (unsigned long i = 0; i < before; i++)
		outer(i);
	unsigned long b_outer = n_outer, b_a = n_inner_a, b_b = n_inner_b;
	FILE *f = fopen(argv[1], "w");
	if (!f)
		return 2;
	fprintf(f, "%d\n", (int)getpid());
	fclose(f);
	while (access(argv[2], F_OK) != 0)
		usleep(10000);
	for (unsigned long i = 0; i < 3000000; i++)
		outer(i);
	printf("before outer %lu\nbefore inner_a %lu\nbefore inner_b %lu\n", b_outer, b_a, b_b);
	printf("outer %lu\ninner_a %lu\ninner_b %lu\n", n_outer, n_inner_a, n_inner_b);
	return 7;
}
