/* json.c — a recursive-descent JSON reader (json.h), strict (RFC 8259:
 * no trailing commas, no comments, control characters escaped in
 * strings), with its nesting depth bounded and its memory bounded by the
 * text's length: a string takes as many bytes as it has, and the tree as a
 * whole at most MEMORY_PER_BYTE times the text (a header fusenet writes
 * takes under 10; a value costs sizeof(fn_json), about 64 bytes, and the
 * shortest takes 2 bytes of text, so 32 admits any text of short strings
 * and numbers while a hostile one cannot make the reader take more). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export/json.h"

enum { MAX_DEPTH = 16, MEMORY_PER_BYTE = 32, MEMORY_BASE = 1 << 20 };

typedef struct reader {
    const char *s;
    size_t len, at;
    const char *what;
    size_t used, budget; /* bytes the tree takes, and its bound */
} reader;

static fn_status bad(const reader *r, const char *problem)
{
    return fn_fail(FN_ERR_FORMAT, "%s: invalid JSON at byte %zu: %s", r->what, r->at, problem);
}

/* Counts n more bytes of the tree against the budget. */
static fn_status charge(reader *r, size_t n)
{
    if (n > r->budget - r->used)
        return fn_fail(FN_ERR_FORMAT, "%s: the JSON of %zu bytes would take more than %zu bytes "
                       "of memory to read (%d a byte of text): not a header fusenet writes",
                       r->what, r->len, r->budget, MEMORY_PER_BYTE);
    r->used += n;
    return FN_OK;
}

/* The length of the string's source from r->at (after its opening quote)
 * to its closing quote, escapes included; the whole rest when there is
 * none (the parse then says so). */
static size_t string_span(const reader *r)
{
    size_t at = r->at;
    while (at < r->len && r->s[at] != '"')
        at += r->s[at] == '\\' ? 2 : 1;
    return (at < r->len ? at : r->len) - r->at;
}

static void blanks(reader *r)
{
    while (r->at < r->len && (r->s[r->at] == ' ' || r->s[r->at] == '\t' ||
                              r->s[r->at] == '\n' || r->s[r->at] == '\r'))
        r->at++;
}

static int peek(const reader *r)
{
    return r->at < r->len ? (unsigned char)r->s[r->at] : -1;
}

static fn_status parse_value(reader *r, fn_json *v, int depth);

static int hex4(const reader *r, size_t at, unsigned *out)
{
    unsigned v = 0;
    for (size_t k = 0; k < 4; k++) {
        if (at + k >= r->len)
            return 0;
        char c = r->s[at + k];
        unsigned d = c >= '0' && c <= '9' ? (unsigned)(c - '0')
                     : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10)
                     : c >= 'A' && c <= 'F' ? (unsigned)(c - 'A' + 10) : 16u;
        if (d == 16)
            return 0;
        v = v * 16 + d;
    }
    *out = v;
    return 1;
}

static size_t utf8(unsigned cp, char *out)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xc0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xe0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        out[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    out[0] = (char)(0xf0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
    out[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

/* \uXXXX (a surrogate pair as one code point) at r->at (after the 'u'). */
static fn_status unicode_escape(reader *r, char *out, size_t *n)
{
    unsigned cp = 0, low = 0;
    if (!hex4(r, r->at, &cp))
        return bad(r, "\\u needs four hex digits");
    r->at += 4;
    if (cp >= 0xd800 && cp < 0xdc00) {
        if (r->at + 6 > r->len || r->s[r->at] != '\\' || r->s[r->at + 1] != 'u' ||
            !hex4(r, r->at + 2, &low) || low < 0xdc00 || low >= 0xe000)
            return bad(r, "a high surrogate without its low one");
        r->at += 6;
        cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
    } else if (cp >= 0xdc00 && cp < 0xe000) {
        return bad(r, "a low surrogate alone");
    }
    *n = utf8(cp, out);
    return FN_OK;
}

static fn_status escape(reader *r, char *out, size_t *n)
{
    static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
    if (r->at >= r->len)
        return bad(r, "an escape at the end");
    char c = r->s[r->at++];
    if (c == 'u')
        return unicode_escape(r, out, n);
    const char *p = strchr(from, c);
    if (!p || !c)
        return bad(r, "an unknown escape");
    out[0] = to[p - from];
    *n = 1;
    return FN_OK;
}

/* A string at r->at (its opening quote); its text is at most as long as
 * its source (an escape is never shorter than what it stands for), so one
 * allocation of the source's length holds it. */
static fn_status parse_string(reader *r, char **text, size_t *text_len)
{
    r->at++;
    const size_t span = string_span(r);
    FN_TRY(charge(r, span + 1));
    char *out = malloc(span + 1);
    if (!out)
        return fn_fail(FN_ERR_NOMEM, "%s: out of memory", r->what);
    size_t n = 0;
    for (;;) {
        if (r->at >= r->len) {
            free(out);
            return bad(r, "a string without its closing quote");
        }
        unsigned char c = (unsigned char)r->s[r->at];
        if (c == '"')
            break;
        if (c < 0x20) {
            free(out);
            return bad(r, "a control character in a string");
        }
        r->at++;
        if (c != '\\') {
            out[n++] = (char)c;
            continue;
        }
        size_t k = 0;
        fn_status st = escape(r, out + n, &k);
        if (st != FN_OK) {
            free(out);
            return st;
        }
        n += k;
    }
    r->at++;
    out[n] = '\0';
    *text = out;
    *text_len = n;
    return FN_OK;
}

static fn_status parse_number(reader *r, fn_json *v)
{
    size_t start = r->at;
    int integer = 1;
    while (r->at < r->len && strchr("+-0123456789.eE", r->s[r->at])) {
        if (strchr(".eE", r->s[r->at]))
            integer = 0;
        r->at++;
    }
    char buf[64];
    size_t n = r->at - start;
    if (n == 0 || n >= sizeof buf)
        return bad(r, "a malformed number");
    memcpy(buf, r->s + start, n);
    buf[n] = '\0';
    char *end = NULL;
    v->number = strtod(buf, &end);
    if (*end || (buf[0] == '0' && buf[1] >= '0' && buf[1] <= '9') || buf[0] == '+' ||
        (buf[0] == '-' && !(buf[1] >= '0' && buf[1] <= '9')))
        return bad(r, "a malformed number");
    v->type = FN_JSON_NUMBER;
    v->integer = integer && v->number >= -9007199254740992.0 && v->number <= 9007199254740992.0;
    return FN_OK;
}

static int word(reader *r, const char *w)
{
    size_t n = strlen(w);
    if (r->len - r->at < n || memcmp(r->s + r->at, w, n) != 0)
        return 0;
    r->at += n;
    return 1;
}

static fn_status add_item(reader *r, fn_json *v, int *cap)
{
    if (v->n < *cap)
        return FN_OK;
    int grown = *cap ? 2 * *cap : 2;
    const size_t more = (size_t)(grown - *cap) *
                        (sizeof(fn_json) + (v->type == FN_JSON_OBJECT ? sizeof(char *) : 0));
    FN_TRY(charge(r, more));
    fn_json *items = realloc(v->items, (size_t)grown * sizeof *items);
    if (items)
        v->items = items;
    char **keys = items && v->type == FN_JSON_OBJECT
                      ? realloc(v->keys, (size_t)grown * sizeof *keys) : NULL;
    if (keys)
        v->keys = keys;
    if (!items || (v->type == FN_JSON_OBJECT && !keys))
        return fn_fail(FN_ERR_NOMEM, "%s: out of memory", r->what);
    *cap = grown;
    return FN_OK;
}

/* An array or object at r->at (its opening bracket). */
static fn_status parse_list(reader *r, fn_json *v, int depth)
{
    const int object = r->s[r->at] == '{';
    const char close = object ? '}' : ']';
    v->type = object ? FN_JSON_OBJECT : FN_JSON_ARRAY;
    r->at++;
    blanks(r);
    if (peek(r) == close) {
        r->at++;
        return FN_OK;
    }
    int cap = 0;
    for (;;) {
        FN_TRY(add_item(r, v, &cap));
        fn_json *item = &v->items[v->n];
        *item = (fn_json){0};
        if (object) {
            blanks(r);
            if (peek(r) != '"')
                return bad(r, "expected a member's name");
            size_t klen = 0;
            FN_TRY(parse_string(r, &v->keys[v->n], &klen));
            blanks(r);
            if (peek(r) != ':') {
                free(v->keys[v->n]);
                return bad(r, "expected ':'");
            }
            r->at++;
        }
        v->n++;
        FN_TRY(parse_value(r, item, depth + 1));
        blanks(r);
        int c = peek(r);
        r->at += c >= 0;
        if (c == close)
            return FN_OK;
        if (c != ',')
            return bad(r, object ? "expected ',' or '}'" : "expected ',' or ']'");
    }
}

static fn_status parse_value(reader *r, fn_json *v, int depth)
{
    *v = (fn_json){0};
    if (depth > MAX_DEPTH)
        return bad(r, "nested too deeply");
    blanks(r);
    int c = peek(r);
    if (c == '{' || c == '[')
        return parse_list(r, v, depth);
    if (c == '"') {
        v->type = FN_JSON_STRING;
        return parse_string(r, &v->text, &v->text_len);
    }
    if (c == '-' || (c >= '0' && c <= '9'))
        return parse_number(r, v);
    if (word(r, "true") || word(r, "false")) {
        v->type = FN_JSON_BOOL;
        v->number = r->s[r->at - 1] == 'e' && r->s[r->at - 2] == 'u';
        return FN_OK;
    }
    if (word(r, "null"))
        return FN_OK;
    return bad(r, c < 0 ? "unexpected end" : "unexpected character");
}

fn_status fn_json_parse(const char *text, size_t len, const char *what, fn_json *out)
{
    reader r = {.s = text, .len = len, .at = 0, .what = what, .used = 0,
                .budget = MEMORY_BASE + (len < ((size_t)-1 - MEMORY_BASE) / MEMORY_PER_BYTE
                                             ? len * MEMORY_PER_BYTE
                                             : (size_t)-1 / 2)};
    fn_status st = parse_value(&r, out, 0);
    if (st == FN_OK) {
        blanks(&r);
        if (r.at != r.len)
            st = bad(&r, "text after the value");
    }
    if (st != FN_OK)
        fn_json_free(out);
    return st;
}

void fn_json_free(fn_json *v)
{
    for (int i = 0; i < v->n; i++) {
        fn_json_free(&v->items[i]);
        if (v->keys)
            free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
    free(v->text);
    *v = (fn_json){0};
}

const fn_json *fn_json_get(const fn_json *v, const char *key)
{
    if (!v || v->type != FN_JSON_OBJECT)
        return NULL;
    for (int i = 0; i < v->n; i++)
        if (strcmp(v->keys[i], key) == 0)
            return &v->items[i];
    return NULL;
}
