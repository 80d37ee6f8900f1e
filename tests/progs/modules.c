/* modules.c — calls into a linked instrumented .so (7 times) and a dlopen'ed
 * one (5 times, dlclose, dlopen again, 3 more times).  Prints the calls made
 * ("calls F N", "calls A->B N"), the libraries' as they counted them, and the
 * object that holds each library function, as the dynamic linker says
 * ("module F PATH"). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include "noipa.h"

int shared_fn(int x);
extern long shared_inner_calls, shared_fn_shared_inner_calls;
static long n_use_plugin, n_plug_fn, n_plug_inner, n_plug_fn_plug_inner;

/* The object file that holds function FN. */
static const char *object_of(void *fn)
{
	Dl_info di;
	return dladdr(fn, &di) && di.dli_fname ? di.dli_fname : "?";
}

/* The plugin's counter NAME now (it restarts if dlclose unloaded it). */
static long plug_count(void *h, const char *name) { return *(long *)dlsym(h, name); }

NOIPA static int use_plugin(const char *path, int times)
{
	n_use_plugin++;
	void *h = dlopen(path, RTLD_NOW);
	if (!h) { fprintf(stderr, "dlopen: %s\n", dlerror()); return -1; }
	int (*fn)(int) = (int (*)(int))dlsym(h, "plug_fn");
	long inner0 = plug_count(h, "plug_inner_calls"), pair0 = plug_count(h, "plug_fn_plug_inner_calls");
	int s = 0;
	for (int i = 0; i < times; i++) {
		n_plug_fn++;
		s += fn(i);
	}
	n_plug_inner += plug_count(h, "plug_inner_calls") - inner0;
	n_plug_fn_plug_inner += plug_count(h, "plug_fn_plug_inner_calls") - pair0;
	if (n_use_plugin == 1)
		printf("module plug_fn %s\n", object_of((void *)fn));
	dlclose(h);
	return s;
}

int main(int argc, char **argv)
{
	int s = 0;
	long main_shared_fn = 0;
	for (int i = 0; i < 7; i++) {
		main_shared_fn++;
		s += shared_fn(i);
	}
	s += use_plugin(argv[1], 5);
	s += use_plugin(argv[1], 3);
	printf("calls shared_fn %ld\ncalls shared_inner %ld\ncalls use_plugin %ld\n", main_shared_fn,
	       shared_inner_calls, n_use_plugin);
	printf("calls plug_fn %ld\ncalls plug_inner %ld\n", n_plug_fn, n_plug_inner);
	printf("calls main->shared_fn %ld\ncalls shared_fn->shared_inner %ld\ncalls main->use_plugin %ld\n",
	       main_shared_fn, shared_fn_shared_inner_calls, n_use_plugin);
	printf("calls use_plugin->plug_fn %ld\ncalls plug_fn->plug_inner %ld\n", n_plug_fn, n_plug_fn_plug_inner);
	/* (not &shared_fn: in a non-PIE executable that is a PLT entry of the executable) */
	void *lib = dlopen("libshared.so", RTLD_NOW | RTLD_NOLOAD);
	printf("module shared_fn %s\n", lib ? object_of(dlsym(lib, "shared_fn")) : "?");
	printf("modules %d\n", s);
	return 0;
}
