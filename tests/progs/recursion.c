/* recursion.c — self recursion with all work in the deepest call, self
 * recursion with work at every level, and mutual recursion. */
#include <stdio.h>
#include "work.h"

#define W 20.0 /* ms */
__attribute__((noipa)) void deep(int n) { if (n == 0) work_ms(W); else deep(n - 1); }
__attribute__((noipa)) void every(int n) { work_ms(W / 4); if (n > 0) every(n - 1); }
__attribute__((noipa)) void odd(int n);
__attribute__((noipa)) void even(int n) { if (n == 0) work_ms(W); else odd(n - 1); }
__attribute__((noipa)) void odd(int n) { if (n == 0) work_ms(W); else even(n - 1); }

int main(void)
{
	deep(5);
	every(3);
	even(4);
	printf("recursion done\n");
	return 0;
}
