/* cantell_dl.c — a library that tests/progs/cantell.c opens with dlopen,
 * found through the program's RUNPATH only (tests/e2e/record_cantell.sh
 * puts it in lib/ beside the program, built with -rpath '$ORIGIN/lib'). */
int cantell_dl_value(void)
{
	return 42;
}
