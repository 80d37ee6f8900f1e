/* sys_lib.c — a shared library for `sonde probe --system` (tests/e2e/
 * probe_system.sh): sys_work is what the probes count in every process
 * that maps the library; the line marked "odd" runs for each odd x; it
 * returns 3x + 1, minus x / 2 for an odd x, negated when x % 10 is 5. */
int sys_work(int x);
int sys_odd_calls;

int sys_work(int x)
{
	int r = 3 * x + 1;
	if (x & 1) {
		sys_odd_calls++; /* odd */
		r -= x / 2;
	}
	if (x % 10 == 5) /* negative: the int's sign, from the library's DWARF */
		r = -r;
	return r;
}
