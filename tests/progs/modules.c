/* modules.c — calls into a linked instrumented .so (7 times) and a dlopen'ed
 * one (5 times, dlclose, dlopen again, 3 more times). */
#include <dlfcn.h>
#include <stdio.h>

int shared_fn(int x);

static int use_plugin(const char *path, int times)
{
	void *h = dlopen(path, RTLD_NOW);
	if (!h) { fprintf(stderr, "dlopen: %s\n", dlerror()); return -1; }
	int (*fn)(int) = (int (*)(int))dlsym(h, "plug_fn");
	int s = 0;
	for (int i = 0; i < times; i++)
		s += fn(i);
	dlclose(h);
	return s;
}

int main(int argc, char **argv)
{
	int s = 0;
	for (int i = 0; i < 7; i++)
		s += shared_fn(i);
	s += use_plugin(argv[1], 5);
	s += use_plugin(argv[1], 3);
	printf("modules %d\n", s);
	return 0;
}
