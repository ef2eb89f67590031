/* safetensors_write.c — a network as a safetensors file (export.h): an
 * 8-byte little-endian header length, a JSON header (each tensor's dtype,
 * shape and byte range in the data, and "__metadata__", text to text),
 * then the tensors' bytes, float32 little-endian. The header is padded
 * with blanks to a multiple of 8 bytes so every tensor starts aligned.
 * Tensors are named by the state_dict keys of the module
 * scripts/weights_to_torch.py builds (export_kind.c), in the net's order:
 * input_norm.mean and input_norm.std first when the network has them.
 * safetensors.c reads the files back. */
#define _POSIX_C_SOURCE 200809L
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export/export_impl.h"
#include "export/export_kind.h"

enum { NAME_CAP = FN_EXPORT_NAME_CAP };

typedef struct text {
    char *s;
    size_t len, cap;
    int failed;
} text;

static void put(text *t, const char *s, size_t n)
{
    if (t->failed)
        return;
    if (t->len + n + 1 > t->cap) {
        size_t cap = t->cap ? t->cap : 1024;
        while (cap < t->len + n + 1)
            cap *= 2;
        char *grown = realloc(t->s, cap);
        if (!grown) {
            t->failed = 1;
            return;
        }
        t->s = grown;
        t->cap = cap;
    }
    memcpy(t->s + t->len, s, n);
    t->len += n;
    t->s[t->len] = '\0';
}

static void putf(text *t, const char *fmt, ...)
{
    char buf[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    put(t, buf, n < 0 ? 0 : (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
}

/* A JSON string: quotes, backslashes and control characters escaped. */
static void put_string(text *t, const char *s)
{
    put(t, "\"", 1);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') {
            char esc[2] = {'\\', (char)*p};
            put(t, esc, 2);
        } else if (*p < 0x20) {
            putf(t, "\\u%04x", *p);
        } else {
            put(t, (const char *)p, 1);
        }
    }
    put(t, "\"", 1);
}

/* One tensor to write: its name, shape and host values. */
typedef struct out_tensor {
    char name[NAME_CAP];
    int rank;
    long long dims[2];
    const float *values; /* borrowed or owned (owned set) */
    float *owned;
} out_tensor;

static size_t count_of(const out_tensor *o)
{
    return (size_t)o->dims[0] * (size_t)(o->rank == 2 ? o->dims[1] : 1);
}

static void header_text(text *t, const out_tensor *ts, int n, const fn_export_meta *all)
{
    put(t, "{\"__metadata__\":{", 17);
    for (int i = 0; i < fn_export_meta_count(all); i++) {
        put(t, i ? "," : "", i ? 1 : 0);
        put_string(t, fn_export_meta_key(all, i));
        put(t, ":", 1);
        put_string(t, fn_export_meta_value(all, i));
    }
    put(t, "}", 1);
    size_t offset = 0;
    for (int i = 0; i < n; i++) {
        size_t bytes = count_of(&ts[i]) * 4;
        put(t, ",", 1);
        put_string(t, ts[i].name);
        putf(t, ":{\"dtype\":\"F32\",\"shape\":[%lld", ts[i].dims[0]);
        if (ts[i].rank == 2)
            putf(t, ",%lld", ts[i].dims[1]);
        putf(t, "],\"data_offsets\":[%zu,%zu]}", offset, offset + bytes);
        offset += bytes;
    }
    put(t, "}", 1);
    while (t->len % 8)
        put(t, " ", 1);
}

static fn_status collect_params(const fn_net *net, out_tensor *ts, int *n)
{
    for (int i = 0; i < fn_net_n_layers(net); i++) {
        const fn_layer *l = fn_net_layer(net, i);
        const fn_export_kind *k = NULL;
        char prefix[32];
        snprintf(prefix, sizeof prefix, "layer%d", i);
        FN_TRY(fn_export_kind_of(l, i, &k));
        for (int p = 0; p < l->n_params; p++) {
            const fn_param *param = &l->params[p];
            out_tensor *o = &ts[(*n)++];
            FN_TRY(fn_export_param_name(k, prefix, param, o->name, sizeof o->name));
            const size_t count = fn_tensor_count(&param->value);
            o->rank = strcmp(param->name, "weight") == 0 ? 2 : 1;
            o->dims[0] = o->rank == 2 ? param->value.rows : (long long)count;
            o->dims[1] = param->value.cols;
            o->owned = malloc(count * sizeof(float) + 1);
            if (!o->owned)
                return fn_fail(FN_ERR_NOMEM, "out of host memory for %s", o->name);
            o->values = o->owned;
            FN_TRY(fn_tensor_download(&param->value, o->owned, count));
        }
    }
    return FN_OK;
}

/* The tensors to write: the standardisation's (borrowed), then every
 * parameter's (downloaded); *n counts them. */
static fn_status collect(const fn_net *net, const fn_input_norm *norm, out_tensor *ts, int *n)
{
    *n = 0;
    if (norm) {
        const char *names[2] = {"input_norm.mean", "input_norm.std"};
        const float *values[2] = {fn_input_norm_mean(norm), fn_input_norm_std(norm)};
        for (int k = 0; k < 2; k++) {
            out_tensor *o = &ts[(*n)++];
            snprintf(o->name, sizeof o->name, "%s", names[k]);
            o->rank = 1;
            o->dims[0] = fn_input_norm_features(norm);
            o->values = values[k];
        }
    }
    return collect_params(net, ts, n);
}

/* The tensors' bytes, float32 little-endian, one after the other. */
static unsigned char *data_bytes(const out_tensor *ts, int n, size_t *size)
{
    size_t total = 0;
    for (int i = 0; i < n; i++)
        total += count_of(&ts[i]) * 4;
    unsigned char *data = malloc(total + 1), *p = data;
    for (int i = 0; data && i < n; i++)
        for (size_t k = 0; k < count_of(&ts[i]); k++, p += 4) {
            uint32_t bits;
            memcpy(&bits, &ts[i].values[k], 4);
            for (int b = 0; b < 4; b++)
                p[b] = (unsigned char)(bits >> (8 * b));
        }
    *size = total;
    return data;
}

static fn_status write_file(const char *path, const out_tensor *ts, int n,
                            const fn_export_meta *all, char **tmp)
{
    text header = {0};
    header_text(&header, ts, n, all);
    size_t data_size = 0;
    unsigned char *data = header.failed ? NULL : data_bytes(ts, n, &data_size);
    fn_status st = data ? FN_OK : fn_fail(FN_ERR_NOMEM, "%s: out of memory", path);
    unsigned char length[8];
    for (int b = 0; b < 8; b++)
        length[b] = (unsigned char)((uint64_t)header.len >> (8 * b));
    const void *parts[3] = {length, header.s, data};
    const size_t sizes[3] = {8, header.len, data_size};
    if (st == FN_OK)
        st = fn_export_file_stage(path, parts, sizes, 3, tmp);
    free(data);
    free(header.s);
    return st;
}

fn_status fn_export_safetensors(const fn_net *net, const fn_input_norm *norm,
                                const fn_export_meta *all, const char *path, char **tmp)
{
    const int most = fn_net_n_params(net) + 2;
    out_tensor *ts = calloc((size_t)most, sizeof *ts);
    if (!ts)
        return fn_fail(FN_ERR_NOMEM, "out of memory");
    int n = 0;
    fn_status st = collect(net, norm, ts, &n);
    if (st == FN_OK)
        st = write_file(path, ts, n, all, tmp);
    for (int i = 0; i < most; i++)
        free(ts[i].owned);
    free(ts);
    return st;
}

