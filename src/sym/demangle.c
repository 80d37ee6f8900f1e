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
