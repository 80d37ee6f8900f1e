/* demangle.c — C++ name demangling for the sym module, through the Itanium
 * ABI demangler of libstdc++ (__cxa_demangle), loaded with dlopen at the
 * first mangled name: linking libstdc++ made every sonde command start
 * slower, `record -p`'s time to live among them (docs/ATTACH.md).  Without
 * it, names stay mangled.
 * Only names that are mangled (start with "_Z") are handed to the demangler,
 * because __cxa_demangle would otherwise also "demangle" plain C names that
 * happen to spell a type ("i" -> "int").  A symbol version suffix
 * ("_Z3fooi@@V1") is kept and re-attached after the demangled name.
 */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "sym/sym.h"

typedef char *demangle_fn(const char *mangled, char *buf, size_t *len, int *status);

static char *cxa_demangle(const char *mangled, int *status)
{
	static demangle_fn *fn;
	static int state; /* 0 untried, 1 loaded, -1 not there */
	if (!state) {
		void *lib = dlopen("libstdc++.so.6", RTLD_NOW | RTLD_LOCAL);
		*(void **)&fn = lib ? dlsym(lib, "__cxa_demangle") : NULL;
		state = fn ? 1 : -1;
	}
	if (state < 0) {
		*status = -1;
		return NULL;
	}
	return fn(mangled, NULL, NULL, status);
}

char *sym_demangle(const char *name)
{
	if (!name || strncmp(name, "_Z", 2) != 0)
		return NULL;
	const char *at = strchr(name, '@');
	if (!at) {
		int st = 0;
		char *d = cxa_demangle(name, &st);
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
	char *d = cxa_demangle(base, &st);
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

static int ident_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '$';
}

/* After "operator" at i: the end of the operator's own spelling ("()",
 * "[]", "<<=", " new[]", " bool", "\"\" _x"), i.e. where its parameters may start. */
static size_t skip_operator(const char *s, size_t i)
{
	if (s[i] == '(' && s[i + 1] == ')')
		return i + 2;
	if (s[i] == '[' && s[i + 1] == ']')
		return i + 2;
	if (s[i] == ' ' || s[i] == '"' || ident_char(s[i])) {
		/* new, delete[], conversion operators (a type, maybe a template) */
		int angle = 0;
		while (s[i] && (angle || s[i] != '(')) {
			if (s[i] == '<')
				angle++;
			else if (s[i] == '>' && angle)
				angle--;
			i++;
		}
		return i;
	}
	while (s[i] && strchr("<>=!+-*/%^&|~,", s[i]))
		i++;
	return i;
}

const char *sym_param_list(const char *name)
{
	const char *last = NULL;
	int depth = 0; /* () <> [] {} together: only depth 0 counts */
	for (size_t i = 0; name[i];) {
		char c = name[i];
		if (!strncmp(name + i, "operator", 8) && (i == 0 || !ident_char(name[i - 1])) &&
		    !ident_char(name[i + 8])) {
			i = skip_operator(name, i + 8);
			continue;
		}
		if (c == '(' && depth == 0)
			last = name + i;
		if (c == '(' || c == '<' || c == '[' || c == '{')
			depth++;
		else if ((c == ')' || c == '>' || c == ']' || c == '}') && depth > 0)
			depth--;
		i++;
	}
	return last;
}
