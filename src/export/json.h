/* json.h (private) — a small JSON reader for the header of a safetensors
 * file: objects, arrays, strings (escapes and \u included, as UTF-8) and
 * numbers (integers kept exactly up to 2^53), read into a tree. The input
 * is untrusted: nesting is limited, and every error names the byte offset. */
#ifndef FUSENET_SRC_EXPORT_JSON_H
#define FUSENET_SRC_EXPORT_JSON_H

#include <stddef.h>

#include "fusenet/status.h"

typedef enum fn_json_type {
    FN_JSON_NULL,
    FN_JSON_BOOL,
    FN_JSON_NUMBER,
    FN_JSON_STRING,
    FN_JSON_ARRAY,
    FN_JSON_OBJECT
} fn_json_type;

typedef struct fn_json {
    fn_json_type type;
    double number;       /* FN_JSON_NUMBER, FN_JSON_BOOL (0 or 1) */
    int integer;         /* a number written without fraction or exponent, |n| <= 2^53 */
    char *text;          /* FN_JSON_STRING, NUL-terminated (may hold NULs before it) */
    size_t text_len;
    struct fn_json *items; /* FN_JSON_ARRAY, FN_JSON_OBJECT: [n] */
    char **keys;           /* FN_JSON_OBJECT: [n] */
    int n;
} fn_json;

/* Parses text[0, len) as one JSON value (blanks around it allowed) into
 * *out; `what` names the text in messages ("m.safetensors: header"). */
fn_status fn_json_parse(const char *text, size_t len, const char *what, fn_json *out);
void fn_json_free(fn_json *v);

/* The member `key` of an object; NULL when absent or v is no object. */
const fn_json *fn_json_get(const fn_json *v, const char *key);

#endif
