/* sonde-cc.c — compiler launcher (like ccache): runs the real compiler with
 * sonde's instrumentation flags, and links sonde's module object into every
 * executable and shared library it links.  Installed as sonde-cc and
 * sonde-c++ (the name picks the C or C++ compiler).
 *
 * Real compiler: $SONDE_CC / $SONDE_CXX, else cc / c++.  Used as a launcher
 * prefix (`sonde-cc gcc -c x.c`, CMake's CMAKE_C_COMPILER_LAUNCHER), the
 * first argument names the real compiler, as with ccache.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Entry sleds, patched at run time (docs/INSTRUMENTATION.md): 8 bytes of
 * padding before each function (its number, written at load time) and 5 bytes
 * of nops at its entry (a call into the module's trampoline while recording).
 * Placed by the compiler's last pass, so only functions that exist in the
 * machine code get one: inlined copies are part of their caller.  `-B` puts
 * sonde's assembler filter in front of `as` (it mends the
 * __patchable_function_entries sections of COMDAT functions and inserts the
 * exit sleds, see sonde-as.c); Clang is also given -fno-integrated-as, so
 * that it runs `as` at all. */
static const char *const flags[] = { "-fpatchable-function-entry=13,8" };
#define NFLAGS (int)(sizeof flags / sizeof flags[0])

/* Options whose value is the next argument (so that value is not an input). */
static int takes_value(const char *a)
{
	static const char *const v[] = { "-o", "-I", "-L", "-D", "-U", "-include", "-imacros", "-x", "-MF", "-MT",
	                                 "-MQ", "-isystem", "-idirafter", "-iquote", "-Xlinker", "-Xassembler",
	                                 "-Xpreprocessor", "-aux-info", "-T", "-l", "-u", "-z", "--param", NULL };
	for (int i = 0; v[i]; i++)
		if (!strcmp(a, v[i]))
			return 1;
	return 0;
}

/* Is `a` a compiler to run (launcher use), rather than an input or option?
 * An executable found as given or in PATH, without a source/object suffix. */
static int is_compiler(const char *a)
{
	if (!*a || a[0] == '-')
		return 0;
	const char *dot = strrchr(a, '.');
	const char *slash = strrchr(a, '/');
	if (dot && (!slash || dot > slash))
		return 0; /* x.c, x.o, libx.so, ...: an input */
	if (slash)
		return access(a, X_OK) == 0;
	const char *path = getenv("PATH");
	for (const char *p = path ? path : "/usr/bin:/bin"; *p;) {
		const char *e = strchr(p, ':');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		char buf[PATH_MAX];
		if (n && snprintf(buf, sizeof buf, "%.*s/%s", (int)n, p, a) < (int)sizeof buf && access(buf, X_OK) == 0)
			return 1;
		p += n + (e != NULL);
	}
	return 0;
}

/* Is the real compiler Clang?  Its name, or the file it resolves to (cc and
 * c++ may be Clang through alternatives), has "clang" in its last part. */
static int is_clang(const char *real)
{
	const char *b = strrchr(real, '/');
	if (strstr(b ? b + 1 : real, "clang"))
		return 1;
	char buf[PATH_MAX], res[PATH_MAX];
	const char *path = getenv("PATH");
	for (const char *p = strchr(real, '/') ? "" : path ? path : "/usr/bin:/bin";;) {
		const char *e = strchr(p, ':');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		int ok = strchr(real, '/') ? snprintf(buf, sizeof buf, "%s", real) < (int)sizeof buf
		                          : n && snprintf(buf, sizeof buf, "%.*s/%s", (int)n, p, real) < (int)sizeof buf;
		if (ok && access(buf, X_OK) == 0) {
			if (!realpath(buf, res))
				return 0;
			b = strrchr(res, '/');
			return strstr(b ? b + 1 : res, "clang") != NULL;
		}
		if (strchr(real, '/') || !e)
			return 0;
		p = e + 1;
	}
}

int main(int argc, char **argv)
{
	const char *base = strrchr(argv[0], '/');
	base = base ? base + 1 : argv[0];
	int cxx = strstr(base, "++") != NULL || strstr(base, "cxx") != NULL;
	const char *real = getenv(cxx ? "SONDE_CXX" : "SONDE_CC");
	if (!real || !*real)
		real = cxx ? "c++" : "cc";
	if (argc > 1 && is_compiler(argv[1])) { /* launcher use: sonde-cc gcc ... */
		real = argv[1];
		argv++;
		argc--;
	}
	if (strstr(real, "sonde-c")) {
		fprintf(stderr, "sonde-cc: error: %s points at sonde-cc itself (set it to the real compiler)\n",
		        cxx ? "SONDE_CXX" : "SONDE_CC");
		return 1;
	}

	int compile_only = 0, preprocess = 0, relocatable = 0, inputs = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "-c") || !strcmp(a, "-S"))
			compile_only = 1;
		else if (!strcmp(a, "-E") || !strcmp(a, "-M") || !strcmp(a, "-MM"))
			preprocess = 1;
		else if (!strcmp(a, "-r"))
			relocatable = 1;
		else if (takes_value(a))
			i++;
		else if (a[0] != '-' || !strcmp(a, "-"))
			inputs++;
		else if (!strncmp(a, "-l", 2))
			inputs++;
	}

	char **nargv = calloc((size_t)argc + NFLAGS + 5, sizeof *nargv);
	if (!nargv)
		return 1;
	char self[PATH_MAX];
	ssize_t k = readlink("/proc/self/exe", self, sizeof self - 1);
	if (k <= 0) {
		fprintf(stderr, "sonde-cc: error: cannot find my own path (%s)\n", strerror(errno));
		return 1;
	}
	self[k] = 0;
	*strrchr(self, '/') = 0;
	static char asdir[PATH_MAX + 64];
	snprintf(asdir, sizeof asdir, "-B%s/../lib/sonde/as/", self);
	int n = 0;
	nargv[n++] = (char *)real;
	if (!preprocess) {
		for (int i = 0; i < NFLAGS; i++)
			nargv[n++] = (char *)flags[i];
		nargv[n++] = asdir;
		/* Clang assembles itself unless told not to: its assembly then goes
		 * to `as` in the -B directory too, which gives its functions exit
		 * sleds (sonde-as.c, "Clang").  The program's own options come
		 * after, so an -fintegrated-as there wins (and its build has none). */
		if (is_clang(real))
			nargv[n++] = (char *)"-fno-integrated-as";
	}
	for (int i = 1; i < argc; i++)
		nargv[n++] = argv[i];
	if (!compile_only && !preprocess && !relocatable && inputs) {
		static char mod[PATH_MAX + 64];
		snprintf(mod, sizeof mod, "%s/../lib/sonde/sonde-module.o", self);
		if (access(mod, R_OK) != 0) {
			fprintf(stderr, "sonde-cc: error: module object %s missing (is the sonde build complete?)\n", mod);
			return 1;
		}
		nargv[n++] = mod;
	}
	nargv[n] = NULL;
	execvp(real, nargv);
	fprintf(stderr, "sonde-cc: error: cannot run %s (%s)\n", real, strerror(errno));
	return 127;
}
