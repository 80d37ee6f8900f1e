/* leafprog.c — exec'ed by forks.c: calls leaf2() 4 times, prints the calls it
 * made ("calls F N", "calls A->B N"). */
#include <stdio.h>
#include "noipa.h"
NOIPA void leaf2(void) { TOUCH(); }
int main(void)
{
	long n = 0;
	for (int i = 0; i < 4; i++, n++) leaf2();
	printf("calls leaf2 %ld\ncalls main->leaf2 %ld\n", n, n);
	return 3;
}
