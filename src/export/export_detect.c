/* export_detect.c — fn_export_file_is (export.h): whether a file is a model
 * fusenet exported, so that `export` replaces an earlier export of its own
 * without --overwrite and nothing else. An ONNX model is read as far as
 * its top-level fields (protobuf: a varint key, then the field by its wire
 * type, the graph skipped unread), looking for the metadata entry format =
 * fusenet-export; a safetensors file by its reader's header checks
 * (safetensors.c), its data unread. And the largest value of a network,
 * which names the usual cause of outputs that overflow. */
#define _POSIX_C_SOURCE 200809L
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

/* Protobuf bytes to walk: an entry read whole into memory (p), or the
 * model file itself (fd, read a byte at a time with pread: a model is a
 * few small top-level fields, the graph, most of the file, skipped
 * unread, and the metadata entries, so a file of any size, an export or
 * not, costs a few small reads). */
typedef struct source {
    const unsigned char *p;
    int fd;
    uint64_t size, at;
} source;

enum { ENTRY_MAX = 1 << 24, FIELDS_MAX = 1 << 20 };

static int next_byte(source *s, unsigned char *b)
{
    if (s->at >= s->size)
        return 0;
    if (s->p)
        *b = s->p[s->at];
    else if (pread(s->fd, b, 1, (off_t)s->at) != 1)
        return 0;
    s->at++;
    return 1;
}

static int varint(source *s, uint64_t *v)
{
    unsigned char b = 0;
    *v = 0;
    for (int shift = 0; shift < 64 && next_byte(s, &b); shift += 7) {
        *v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return 1;
    }
    return 0;
}

/* The next field at s->at: its number and, for bytes, their length, with
 * s->at at them (*len 0 and s->at past the field for other wire types); 0
 * at a malformed field. The caller moves past the bytes. */
static int next_field(source *s, int *field, uint64_t *len)
{
    uint64_t key = 0, v = 0;
    if (!varint(s, &key))
        return 0;
    *field = (int)(key >> 3);
    *len = 0;
    switch (key & 7) {
    case WIRE_VARINT:
        return varint(s, &v);
    case WIRE_64:
    case WIRE_32:
        v = (key & 7) == WIRE_64 ? 8 : 4;
        if (v > s->size - s->at)
            return 0;
        s->at += v;
        return 1;
    case WIRE_BYTES:
        if (!varint(s, len) || *len > s->size - s->at)
            return 0;
        return 1;
    default:
        return 0;
    }
}

static int text_is(const source *s, uint64_t len, const char *want)
{
    return len == strlen(want) && memcmp(s->p + s->at, want, (size_t)len) == 0;
}

/* A metadata entry (key 1, value 2) in memory: format = fusenet-export? */
static int export_entry(const unsigned char *p, size_t n)
{
    source s = {p, -1, n, 0};
    int key = 0, value = 0, field = 0;
    uint64_t len = 0;
    while (s.at < s.size) {
        if (!next_field(&s, &field, &len))
            return 0;
        if (field == ENTRY_KEY)
            key = text_is(&s, len, "format");
        else if (field == ENTRY_VALUE)
            value = text_is(&s, len, FN_EXPORT_FORMAT);
        s.at += len;
    }
    return key && value;
}

/* The model file's metadata entry of len bytes at s->at, read whole. */
static int stream_entry(const source *s, uint64_t len)
{
    if (len > ENTRY_MAX)
        return 0;
    unsigned char *p = malloc((size_t)len + 1);
    const int is = p && pread(s->fd, p, (size_t)len, (off_t)s->at) == (ssize_t)len &&
                   export_entry(p, (size_t)len);
    free(p);
    return is;
}

static int onnx_is_export(int fd, uint64_t size)
{
    source s = {NULL, fd, size, 0};
    int found = 0, field = 0;
    uint64_t len = 0;
    for (long fields = 0; s.at < s.size; fields++) {
        if (fields > FIELDS_MAX || !next_field(&s, &field, &len))
            return 0;
        if (field == MODEL_METADATA && len > 0 && stream_entry(&s, len))
            found = 1;
        s.at += len;
    }
    return found;
}

int fn_export_file_is(const char *path, fn_export_format format)
{
    if (!path)
        return 0;
    if (format == FN_EXPORT_SAFETENSORS)
        return fn_safetensors_is_export(path);
    if (format != FN_EXPORT_ONNX)
        return 0;
    int fd = -1;
    long long size = 0;
    if (fn_open_regular_file(path, &fd, &size) != FN_OK)
        return 0;
    const int is = onnx_is_export(fd, (uint64_t)size);
    close(fd);
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
