/*
 * analyze/cmd/json.h: the one JSON writer of the analyzer's --json output.
 * Compact (no spaces), one document per json_init: objects and arrays are
 * opened with a key inside an object and without one inside an array or at
 * the top, and the writer puts the commas. Closing the top-level value
 * ends the line, so a command that prints one document per event gets
 * JSON lines.
 *
 *	json_init(&j, stdout);
 *	json_begin(&j, NULL);
 *	json_str(&j, "trace", path);
 *	json_begin_array(&j, "stacks");
 *	...
 *	json_end(&j);		// ]
 *	json_end(&j);		// }\n
 */
#ifndef MEMSIGHT_JSON_H
#define MEMSIGHT_JSON_H

#include <stdint.h>
#include <stdio.h>

#define JSON_MAX_DEPTH 16

struct json {
	FILE *f;
	int depth;
	char close[JSON_MAX_DEPTH]; /* '}' or ']' of each open value */
	unsigned char empty[JSON_MAX_DEPTH]; /* nothing written in it yet */
};

void json_init(struct json *j, FILE *f);
/* An object or array: key inside an object, NULL elsewhere. */
void json_begin(struct json *j, const char *key);
void json_begin_array(struct json *j, const char *key);
void json_end(struct json *j);
/* A string with JSON's escapes; NULL is written as "". */
void json_str(struct json *j, const char *key, const char *v);
void json_u64(struct json *j, const char *key, uint64_t v);
void json_i64(struct json *j, const char *key, int64_t v);
/* A number as printf's fmt makes it ("%.6f"); a value that is not finite
 * is written as null, which JSON has instead. */
void json_double(struct json *j, const char *key, const char *fmt, double v);
void json_bool(struct json *j, const char *key, int v);
void json_null(struct json *j, const char *key);

#endif
