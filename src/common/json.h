/* json.h — a small streaming JSON writer (no tree in memory), used by every
 * --format=json output.  Commas and nesting are tracked for the caller. */
#ifndef SONDE_COMMON_JSON_H
#define SONDE_COMMON_JSON_H

#include <stdint.h>
#include <stdio.h>

#define JSON_MAX_DEPTH 32

struct json {
	FILE *f;
	int depth;
	int first[JSON_MAX_DEPTH]; /* 1 until the first member at that level */
	int pretty;
};

void json_init(struct json *j, FILE *f, int pretty);
void json_obj_begin(struct json *j, const char *key);   /* key NULL inside arrays / at top */
void json_obj_end(struct json *j);
void json_arr_begin(struct json *j, const char *key);
void json_arr_end(struct json *j);
void json_str(struct json *j, const char *key, const char *val); /* NULL -> null */
void json_int(struct json *j, const char *key, int64_t val);
void json_uint(struct json *j, const char *key, uint64_t val);
void json_double(struct json *j, const char *key, double val);
void json_bool(struct json *j, const char *key, int val);
void json_null(struct json *j, const char *key);
/* Finish the document (newline). */
void json_end(struct json *j);
/* Write s as a JSON string literal (quoted, escaped). */
void json_write_string(FILE *f, const char *s);

#endif
