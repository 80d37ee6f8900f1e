/* json.c — streaming JSON writer. */
#include "common/json.h"

#include <math.h>

void json_init(struct json *j, FILE *f, int pretty)
{
	j->f = f;
	j->depth = 0;
	j->first[0] = 1;
	j->pretty = pretty;
}

void json_write_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		switch (*p) {
		case '"': fputs("\\\"", f); break;
		case '\\': fputs("\\\\", f); break;
		case '\n': fputs("\\n", f); break;
		case '\r': fputs("\\r", f); break;
		case '\t': fputs("\\t", f); break;
		default:
			if (*p < 0x20)
				fprintf(f, "\\u%04x", *p);
			else
				fputc(*p, f);
		}
	}
	fputc('"', f);
}

static void indent(struct json *j)
{
	if (!j->pretty)
		return;
	fputc('\n', j->f);
	for (int i = 0; i < j->depth; i++)
		fputs("  ", j->f);
}

static void member(struct json *j, const char *key)
{
	if (!j->first[j->depth])
		fputc(',', j->f);
	j->first[j->depth] = 0;
	if (j->depth > 0)
		indent(j);
	if (key) {
		json_write_string(j->f, key);
		fputs(j->pretty ? ": " : ":", j->f);
	}
}

static void open(struct json *j, const char *key, char c)
{
	member(j, key);
	fputc(c, j->f);
	if (j->depth + 1 < JSON_MAX_DEPTH)
		j->depth++;
	j->first[j->depth] = 1;
}

static void close_(struct json *j, char c)
{
	int empty = j->first[j->depth];
	if (j->depth > 0)
		j->depth--;
	if (!empty)
		indent(j);
	fputc(c, j->f);
}

void json_obj_begin(struct json *j, const char *key) { open(j, key, '{'); }
void json_obj_end(struct json *j) { close_(j, '}'); }
void json_arr_begin(struct json *j, const char *key) { open(j, key, '['); }
void json_arr_end(struct json *j) { close_(j, ']'); }

void json_str(struct json *j, const char *key, const char *val)
{
	member(j, key);
	if (val)
		json_write_string(j->f, val);
	else
		fputs("null", j->f);
}

void json_int(struct json *j, const char *key, int64_t val)
{
	member(j, key);
	fprintf(j->f, "%lld", (long long)val);
}

void json_uint(struct json *j, const char *key, uint64_t val)
{
	member(j, key);
	fprintf(j->f, "%llu", (unsigned long long)val);
}

void json_double(struct json *j, const char *key, double val)
{
	member(j, key);
	if (isfinite(val))
		fprintf(j->f, "%.17g", val);
	else
		fputs("null", j->f);
}

void json_bool(struct json *j, const char *key, int val)
{
	member(j, key);
	fputs(val ? "true" : "false", j->f);
}

void json_null(struct json *j, const char *key)
{
	member(j, key);
	fputs("null", j->f);
}

void json_end(struct json *j)
{
	fputc('\n', j->f);
}
