/* protobuf.c — Protocol Buffers' wire format, the encoding side only
 * (protobuf.h): tags, varints, fixed 32-bit floats and length-delimited
 * fields, little-endian whatever the host. */
#include <stdlib.h>
#include <string.h>

#include "export/protobuf.h"

enum { WIRE_VARINT = 0, WIRE_LEN = 2, WIRE_32BIT = 5 };

void fn_pb_free(fn_pb *b)
{
    free(b->data);
    *b = (fn_pb){0};
}

fn_status fn_pb_status(const fn_pb *b, const char *what)
{
    if (b->failed)
        return fn_fail(FN_ERR_NOMEM, "%s: out of memory for the encoded model", what);
    return FN_OK;
}

static int reserve(fn_pb *b, size_t more)
{
    if (b->failed)
        return 0;
    if (b->len + more <= b->cap)
        return 1;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + more)
        cap *= 2;
    unsigned char *grown = realloc(b->data, cap);
    if (!grown) {
        b->failed = 1;
        return 0;
    }
    b->data = grown;
    b->cap = cap;
    return 1;
}

static void append(fn_pb *b, const void *data, size_t n)
{
    if (n && reserve(b, n)) {
        memcpy(b->data + b->len, data, n);
        b->len += n;
    }
}

static void varint(fn_pb *b, uint64_t v)
{
    unsigned char bytes[10];
    size_t n = 0;
    do {
        bytes[n] = (unsigned char)(v & 0x7f);
        v >>= 7;
        bytes[n++] |= v ? 0x80 : 0;
    } while (v);
    append(b, bytes, n);
}

static void tag(fn_pb *b, int field, int wire)
{
    varint(b, ((uint64_t)field << 3) | (uint64_t)wire);
}

void fn_pb_int(fn_pb *b, int field, int64_t value)
{
    tag(b, field, WIRE_VARINT);
    varint(b, (uint64_t)value);
}

void fn_pb_float(fn_pb *b, int field, float value)
{
    uint32_t bits;
    memcpy(&bits, &value, sizeof bits);
    unsigned char bytes[4] = {(unsigned char)bits, (unsigned char)(bits >> 8),
                              (unsigned char)(bits >> 16), (unsigned char)(bits >> 24)};
    tag(b, field, WIRE_32BIT);
    append(b, bytes, sizeof bytes);
}

void fn_pb_bytes(fn_pb *b, int field, const void *data, size_t n)
{
    tag(b, field, WIRE_LEN);
    varint(b, (uint64_t)n);
    append(b, data, n);
}

void fn_pb_string(fn_pb *b, int field, const char *s)
{
    fn_pb_bytes(b, field, s, strlen(s));
}

void fn_pb_message(fn_pb *b, int field, fn_pb *sub)
{
    if (sub->failed)
        b->failed = 1;
    else
        fn_pb_bytes(b, field, sub->data, sub->len);
    fn_pb_free(sub);
}

void fn_pb_fields(fn_pb *b, fn_pb *fields)
{
    if (fields->failed)
        b->failed = 1;
    else
        append(b, fields->data, fields->len);
    fn_pb_free(fields);
}
