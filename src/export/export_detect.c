/* export_detect.c — fn_export_file_is (export.h): whether a file is a model
 * fusenet exported, so that `export` replaces an earlier export of its own
 * without --overwrite and nothing else. An ONNX model is read as far as
 * its top-level fields (protobuf: a varint key, then the field by its wire
 * type), looking for the metadata entry format = fusenet-export; a
 * safetensors file by its reader's header checks (safetensors.c). And the
 * largest value of a network, which names the usual cause of outputs that
 * overflow. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "export/export_impl.h"
#include "store/regular_file.h"

enum { MODEL_METADATA = 14, ENTRY_KEY = 1, ENTRY_VALUE = 2 };
enum { WIRE_VARINT = 0, WIRE_64 = 1, WIRE_BYTES = 2, WIRE_32 = 5 };

static int varint(const unsigned char *p, size_t n, size_t *at, uint64_t *v)
{
    *v = 0;
    for (int shift = 0; shift < 64 && *at < n; shift += 7) {
        const unsigned char b = p[(*at)++];
        *v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return 1;
    }
    return 0;
}

/* The next field at *at: its number, wire type and, for bytes, where they
 * are; 0 at a malformed field. *at moves past it. */
static int next_field(const unsigned char *p, size_t n, size_t *at, int *field,
                      const unsigned char **bytes, size_t *len)
{
    uint64_t key = 0, v = 0;
    if (!varint(p, n, at, &key))
        return 0;
    *field = (int)(key >> 3);
    *bytes = NULL;
    switch (key & 7) {
    case WIRE_VARINT:
        return varint(p, n, at, &v);
    case WIRE_64:
    case WIRE_32: {
        const size_t size = (key & 7) == WIRE_64 ? 8 : 4;
        if (n - *at < size)
            return 0;
        *at += size;
        return 1;
    }
    case WIRE_BYTES:
        if (!varint(p, n, at, &v) || v > n - *at)
            return 0;
        *bytes = p + *at;
        *len = (size_t)v;
        *at += (size_t)v;
        return 1;
    default:
        return 0;
    }
}

static int text_is(const unsigned char *bytes, size_t len, const char *want)
{
    return bytes && len == strlen(want) && memcmp(bytes, want, len) == 0;
}

/* A metadata entry (key 1, value 2) of format = fusenet-export. */
static int export_entry(const unsigned char *p, size_t n)
{
    int key = 0, value = 0, field = 0;
    const unsigned char *bytes = NULL;
    size_t at = 0, len = 0;
    while (at < n) {
        if (!next_field(p, n, &at, &field, &bytes, &len))
            return 0;
        if (field == ENTRY_KEY)
            key = text_is(bytes, len, "format");
        else if (field == ENTRY_VALUE)
            value = text_is(bytes, len, FN_EXPORT_FORMAT);
    }
    return key && value;
}

static int onnx_is_export(const unsigned char *p, size_t n)
{
    int field = 0, found = 0;
    const unsigned char *bytes = NULL;
    size_t at = 0, len = 0;
    while (at < n) {
        if (!next_field(p, n, &at, &field, &bytes, &len))
            return 0;
        if (field == MODEL_METADATA && bytes && export_entry(bytes, len))
            found = 1;
    }
    return found;
}

/* The whole file, or NULL (not a regular file, unreadable, out of memory). */
static unsigned char *slurp(const char *path, size_t *n)
{
    int fd = -1;
    long long size = 0;
    if (fn_open_regular_file(path, &fd, &size) != FN_OK)
        return NULL;
    unsigned char *p = malloc((size_t)size + 1);
    size_t got = 0;
    while (p && got < (size_t)size) {
        const ssize_t r = read(fd, p + got, (size_t)size - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    if (p && got != (size_t)size) {
        free(p);
        return NULL;
    }
    *n = got;
    return p;
}

int fn_export_file_is(const char *path, fn_export_format format)
{
    if (!path)
        return 0;
    if (format == FN_EXPORT_SAFETENSORS)
        return fn_safetensors_is_export(path);
    if (format != FN_EXPORT_ONNX)
        return 0;
    size_t n = 0;
    unsigned char *p = slurp(path, &n);
    const int is = p && onnx_is_export(p, n);
    free(p);
    return is;
}

fn_status fn_export_largest_value(const fn_net *net, char *text, size_t cap)
{
    double largest = -1;
    for (int i = 0; i < fn_net_n_layers(net); i++) {
        const fn_layer *l = fn_net_layer(net, i);
        for (int p = 0; p < l->n_params; p++) {
            const size_t n = fn_tensor_count(&l->params[p].value);
            float *host = malloc(n * sizeof *host + 1);
            if (!host)
                return fn_fail(FN_ERR_NOMEM, "out of memory");
            fn_status st = fn_tensor_download(&l->params[p].value, host, n);
            for (size_t k = 0; st == FN_OK && k < n; k++)
                if (fabs((double)host[k]) > largest) {
                    largest = fabs((double)host[k]);
                    snprintf(text, cap, "%g (layer %d's %s)", (double)host[k], i,
                             l->params[p].name);
                }
            free(host);
            FN_TRY(st);
        }
    }
    if (largest < 0)
        snprintf(text, cap, "none (no parameters)");
    return FN_OK;
}
