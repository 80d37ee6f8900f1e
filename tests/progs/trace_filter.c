/* trace_filter.c — names for -F / -N / --domain tests.  Calls:
 *   main -> parse_a x2, parse_b x3 (each calls helper x2), log_x x4,
 *           log_y x1, other x5 (each calls helper x1) */
#include <stdio.h>

static volatile int sink;

__attribute__((noipa)) void helper(void) { sink++; }
__attribute__((noipa)) void parse_a(void) { sink++; }
__attribute__((noipa)) void parse_b(void) { helper(); helper(); }
__attribute__((noipa)) void log_x(void) { sink++; }
__attribute__((noipa)) void log_y(void) { sink++; }
__attribute__((noipa)) void other(void) { helper(); }

int main(void)
{
	for (int i = 0; i < 2; i++) parse_a();
	for (int i = 0; i < 3; i++) parse_b();
	for (int i = 0; i < 4; i++) log_x();
	log_y();
	for (int i = 0; i < 5; i++) other();
	printf("trace_filter done\n");
	return 0;
}
