/* demangle.c — C++ name demangling for the sym module, through the Itanium
 * ABI demangler of libstdc++ (__cxa_demangle; the build links -lstdc++).
 * Only names that are mangled (start with "_Z") are handed to the demangler,
 * because __cxa_demangle would otherwise also "demangle" plain C names that
 * happen to spell a type ("i" -> "int").  A symbol version suffix
 * ("_Z3fooi@@V1") is kept and re-attached after the demangled name.
 */
#include <stdlib.h>
#include <string.h>

#include "sym/sym.h"

extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

char *sym_demangle(const char *name)
{
	if (!name || strncmp(name, "_Z", 2) != 0)
		return NULL;
	const char *at = strchr(name, '@');
	if (!at) {
		int st = 0;
		char *d = __cxa_demangle(name, NULL, NULL, &st);
		if (st != 0) {
			free(d);
			return NULL;
		}
		return d;
	}
	/* Versioned name: demangle the part before '@'. */
	size_t n = (size_t)(at - name);
	char *base = malloc(n + 1);
	if (!base)
		return NULL;
	memcpy(base, name, n);
	base[n] = 0;
	int st = 0;
	char *d = __cxa_demangle(base, NULL, NULL, &st);
	free(base);
	if (st != 0 || !d) {
		free(d);
		return NULL;
	}
	size_t dl = strlen(d), vl = strlen(at);
	char *r = malloc(dl + vl + 1);
	if (!r) {
		free(d);
		return NULL;
	}
	memcpy(r, d, dl);
	memcpy(r + dl, at, vl + 1);
	free(d);
	return r;
}
