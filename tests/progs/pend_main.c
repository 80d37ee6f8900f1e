/* pend_main.c — target of tests/e2e/probe_pending.sh:
 *   pend_main LIB N GOFILE [reload]
 * prints "ready", waits until GOFILE exists, then dlopens LIB (whose
 * constructor calls pend_work 100 times) and calls pend_work N times
 * through dlsym.  Prints "calls pend_work T" (T: all of them, constructor
 * included) and exits 0.  With reload, it then dlcloses LIB, loads it
 * again and does the same, and prints "calls again T2" (the second load's). */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc < 4)
		return 2;
	long n = atol(argv[2]);
	printf("ready\n");
	fflush(stdout);
	while (access(argv[3], F_OK))
		usleep(2000);
	void *h = dlopen(argv[1], RTLD_NOW);
	if (!h) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return 1;
	}
	long (*work)(long) = (long (*)(long))dlsym(h, "pend_work");
	long (*ctor)(void) = (long (*)(void))dlsym(h, "pend_ctor_calls");
	if (!work || !ctor)
		return 1;
	long sum = 0;
	for (long i = 0; i < n; i++)
		sum += work(i);
	printf("calls pend_work %ld\n", n + ctor());
	printf("sum %ld\n", sum);
	if (argc > 4 && !strcmp(argv[4], "reload")) {
		dlclose(h);
		if (!(h = dlopen(argv[1], RTLD_NOW)))
			return 1;
		work = (long (*)(long))dlsym(h, "pend_work");
		ctor = (long (*)(void))dlsym(h, "pend_ctor_calls");
		if (!work || !ctor)
			return 1;
		for (long i = 0; i < n; i++)
			sum += work(i);
		printf("calls again %ld\n", n + ctor());
	}
	return 0;
}
