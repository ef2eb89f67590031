/* safetensors.c — a network as a safetensors file, and back (export.h,
 * safetensors.h). The format: an 8-byte little-endian header length, a
 * JSON header (each tensor's dtype, shape and byte range in the data, and
 * "__metadata__", text to text), then the tensors' bytes. The header is
 * padded with blanks to a multiple of 8 bytes so every tensor starts
 * aligned. Tensors are float32, named by the state_dict keys of the module
 * scripts/weights_to_torch.py builds (export_kind.c), in the net's order:
 * input_norm.mean and input_norm.std first when the network has them. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "export/export_impl.h"
#include "export/export_kind.h"
#include "export/json.h"
#include "fusenet/layer_kind.h"
#include "fusenet/model.h"
#include "fusenet/safetensors.h"
#include "store/regular_file.h"

enum { NAME_CAP = FN_EXPORT_NAME_CAP, WHERE_CAP = 1024 };
/* A header longer than this is not one fusenet wrote (the safetensors
 * package refuses more than 100 MB too). */
#define HEADER_MAX ((uint64_t)100 << 20)

int fn_safetensors_path(const char *path)
{
    static const char ext[] = ".safetensors";
    size_t n = strlen(path), e = sizeof ext - 1;
    return n > e && strcmp(path + n - e, ext) == 0;
}

/* --- writing: the header's text ------------------------------------------------ */

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
                            const fn_export_meta *all)
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
        st = fn_export_file_write(path, parts, sizes, 3);
    free(data);
    free(header.s);
    return st;
}

fn_status fn_export_safetensors(const fn_net *net, const fn_input_norm *norm,
                                const fn_export_meta *all, const char *path)
{
    const int most = fn_net_n_params(net) + 2;
    out_tensor *ts = calloc((size_t)most, sizeof *ts);
    if (!ts)
        return fn_fail(FN_ERR_NOMEM, "out of memory");
    int n = 0;
    fn_status st = collect(net, norm, ts, &n);
    if (st == FN_OK)
        st = write_file(path, ts, n, all);
    for (int i = 0; i < most; i++)
        free(ts[i].owned);
    free(ts);
    return st;
}

/* --- reading ----------------------------------------------------------------------- */

typedef struct in_file {
    const char *path;
    unsigned char *bytes;
    size_t size;
    const unsigned char *data; /* after the header */
    size_t data_size;
    fn_json header;
    const fn_json *meta; /* __metadata__ */
} in_file;

static void close_file(in_file *f)
{
    free(f->bytes);
    fn_json_free(&f->header);
    *f = (in_file){0};
}

static fn_status read_bytes(in_file *f)
{
    int fd = -1;
    long long size = 0;
    FN_TRY(fn_open_regular_file(f->path, &fd, &size));
    f->bytes = malloc((size_t)size + 1);
    if (!f->bytes) {
        close(fd);
        return fn_fail(FN_ERR_NOMEM, "%s: out of memory for %lld bytes", f->path, size);
    }
    size_t got = 0;
    while (got < (size_t)size) {
        ssize_t n = read(fd, f->bytes + got, (size_t)size - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            int err = errno;
            close(fd);
            return fn_fail(FN_ERR_IO, "%s: cannot read: %s", f->path,
                           n < 0 ? strerror(err) : "the file shrank while read");
        }
        got += (size_t)n;
    }
    close(fd);
    f->size = got;
    return FN_OK;
}

static const char *meta_text(const in_file *f, const char *key)
{
    const fn_json *v = fn_json_get(f->meta, key);
    return v && v->type == FN_JSON_STRING ? v->text : NULL;
}

static fn_status meta_int(const in_file *f, const char *key, long long lo, long long hi,
                          long long *out)
{
    const char *s = meta_text(f, key);
    if (!s)
        return fn_fail(FN_ERR_FORMAT, "%s: metadata '%s' is missing", f->path, key);
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (end == s || *end || errno || v < lo || v > hi)
        return fn_fail(FN_ERR_FORMAT, "%s: metadata '%s' is '%s', expected an integer from %lld "
                       "to %lld", f->path, key, s, lo, hi);
    *out = v;
    return FN_OK;
}

static fn_status check_header(in_file *f)
{
    if (f->header.type != FN_JSON_OBJECT)
        return fn_fail(FN_ERR_FORMAT, "%s: the header is not a JSON object", f->path);
    f->meta = fn_json_get(&f->header, "__metadata__");
    const char *format = meta_text(f, "format");
    if (!f->meta || !format)
        return fn_fail(FN_ERR_FORMAT, "%s: not a fusenet export: the metadata has no 'format' "
                       "(fusenet reads the safetensors files its `export` writes)", f->path);
    if (strcmp(format, FN_EXPORT_FORMAT) != 0)
        return fn_fail(FN_ERR_FORMAT, "%s: metadata 'format' is '%s', expected '%s'", f->path,
                       format, FN_EXPORT_FORMAT);
    long long version = 0;
    FN_TRY(meta_int(f, "format_version", LLONG_MIN, LLONG_MAX, &version));
    if (version < 1 || version > FN_EXPORT_VERSION)
        return fn_fail(FN_ERR_FORMAT, "%s: format_version is %lld, this build reads %d", f->path,
                       version, FN_EXPORT_VERSION);
    return FN_OK;
}

static fn_status open_file(in_file *f, const char *path)
{
    *f = (in_file){.path = path};
    fn_status st = read_bytes(f);
    uint64_t n = 0;
    for (int b = 0; st == FN_OK && f->size >= 8 && b < 8; b++)
        n |= (uint64_t)f->bytes[b] << (8 * b);
    if (st == FN_OK && f->size < 8)
        st = fn_fail(FN_ERR_FORMAT, "%s: %zu bytes, too short for a safetensors file", path,
                     f->size);
    else if (st == FN_OK && (n > f->size - 8 || n > HEADER_MAX))
        st = fn_fail(FN_ERR_FORMAT, "%s: the header length %llu exceeds the file's %zu bytes "
                     "(not a safetensors file, or a truncated one)", path,
                     (unsigned long long)n, f->size);
    char what[WHERE_CAP];
    snprintf(what, sizeof what, "%s: header", path);
    if (st == FN_OK)
        st = fn_json_parse((const char *)f->bytes + 8, (size_t)n, what, &f->header);
    if (st == FN_OK) {
        f->data = f->bytes + 8 + n;
        f->data_size = f->size - 8 - (size_t)n;
        st = check_header(f);
    }
    if (st != FN_OK)
        close_file(f);
    return st;
}

static int json_count(const fn_json *v, long long lo, long long hi, long long *out)
{
    if (!v || v->type != FN_JSON_NUMBER || !v->integer || v->number < (double)lo ||
        v->number > (double)hi)
        return 0;
    *out = (long long)v->number;
    return 1;
}

/* The tensor's byte range, checked against its dtype, shape and the data. */
static fn_status tensor_range(const in_file *f, const char *name, const fn_json *t, int rank,
                              const long long *dims, size_t *begin)
{
    const fn_json *dtype = fn_json_get(t, "dtype"), *shape = fn_json_get(t, "shape");
    const fn_json *offsets = fn_json_get(t, "data_offsets");
    if (!dtype || dtype->type != FN_JSON_STRING || strcmp(dtype->text, "F32") != 0)
        return fn_fail(FN_ERR_FORMAT, "%s: tensor '%s': dtype is %s, expected F32", f->path,
                       name, dtype && dtype->type == FN_JSON_STRING ? dtype->text : "missing");
    int same = shape && shape->type == FN_JSON_ARRAY && shape->n == rank;
    for (int k = 0; same && k < rank; k++) {
        long long d = 0;
        same = json_count(&shape->items[k], 0, 1LL << 40, &d) && d == dims[k];
    }
    if (!same)
        return fn_fail(FN_ERR_FORMAT, "%s: tensor '%s': shape is not the model's [%lld%s%lld]",
                       f->path, name, dims[0], rank == 2 ? ", " : "", rank == 2 ? dims[1] : 0LL);
    long long b = 0, e = 0;
    const size_t bytes = (size_t)dims[0] * (size_t)(rank == 2 ? dims[1] : 1) * 4;
    if (!offsets || offsets->type != FN_JSON_ARRAY || offsets->n != 2 ||
        !json_count(&offsets->items[0], 0, (long long)f->data_size, &b) ||
        !json_count(&offsets->items[1], b, (long long)f->data_size, &e) ||
        (size_t)(e - b) != bytes)
        return fn_fail(FN_ERR_FORMAT, "%s: tensor '%s': data_offsets are not a range of %zu bytes "
                       "within the file's %zu bytes of data", f->path, name, bytes, f->data_size);
    *begin = (size_t)b;
    return FN_OK;
}

/* Tensor `name` of `rank` and dims into out (float32, every value finite). */
static fn_status read_tensor(const in_file *f, const char *name, int rank, const long long *dims,
                             float *out)
{
    const fn_json *t = fn_json_get(&f->header, name);
    if (!t || t->type != FN_JSON_OBJECT)
        return fn_fail(FN_ERR_FORMAT, "%s: tensor '%s' is missing", f->path, name);
    size_t begin = 0;
    FN_TRY(tensor_range(f, name, t, rank, dims, &begin));
    const size_t n = (size_t)dims[0] * (size_t)(rank == 2 ? dims[1] : 1);
    const unsigned char *p = f->data + begin;
    for (size_t k = 0; k < n; k++, p += 4) {
        uint32_t bits = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                        (uint32_t)p[3] << 24;
        memcpy(&out[k], &bits, 4);
        if (!isfinite(out[k]))
            return fn_fail(FN_ERR_FORMAT, "%s: tensor '%s' holds %g at index %zu: a model's "
                           "values are finite", f->path, name, (double)out[k], k);
    }
    return FN_OK;
}

static fn_status load_param(const in_file *f, const fn_export_kind *k, const char *prefix,
                            fn_param *p)
{
    char name[NAME_CAP];
    FN_TRY(fn_export_param_name(k, prefix, p, name, sizeof name));
    const size_t count = fn_tensor_count(&p->value);
    const int rank = strcmp(p->name, "weight") == 0 ? 2 : 1;
    const long long dims[2] = {rank == 2 ? p->value.rows : (long long)count, p->value.cols};
    float *host = malloc(count * sizeof(float) + 1);
    if (!host)
        return fn_fail(FN_ERR_NOMEM, "out of host memory for %s", name);
    fn_status st = read_tensor(f, name, rank, dims, host);
    if (st == FN_OK)
        st = fn_tensor_upload(&p->value, host, count);
    free(host);
    return st;
}

/* Every parameter of net from the file (its shape checked). */
static fn_status load_values(const in_file *f, fn_net *net)
{
    for (int i = 0; i < fn_net_n_layers(net); i++) {
        fn_layer *l = fn_net_layer(net, i);
        const fn_export_kind *k = NULL;
        char prefix[32];
        snprintf(prefix, sizeof prefix, "layer%d", i);
        FN_TRY(fn_export_kind_of(l, i, &k));
        for (int p = 0; p < l->n_params; p++)
            FN_TRY(load_param(f, k, prefix, &l->params[p]));
    }
    return FN_OK;
}

/* --- the architecture from the metadata ------------------------------------------------ */

typedef struct layer_desc {
    fn_layer_spec spec;
    int in;
    fn_layer_hparams hp;
    fn_layer_attr_value values[FN_LAYER_ATTRS_MAX]; /* of spec.kind->attrs */
} layer_desc;

static fn_status parse_attr(const in_file *f, const char *key, const fn_layer_attr *a,
                            fn_layer_attr_value *v)
{
    if (a->type == FN_LAYER_ATTR_INT)
        return meta_int(f, key, LLONG_MIN, LLONG_MAX, &v->i);
    const char *s = meta_text(f, key);
    char *end = NULL;
    if (!s)
        return fn_fail(FN_ERR_FORMAT, "%s: metadata '%s' is missing", f->path, key);
    errno = 0;
    v->d = strtod(s, &end);
    if (end == s || *end || errno || !isfinite(v->d))
        return fn_fail(FN_ERR_FORMAT, "%s: metadata '%s' is '%s', expected a number", f->path,
                       key, s);
    return FN_OK;
}

static fn_status describe_layer(const in_file *f, int i, layer_desc *d)
{
    char key[NAME_CAP];
    snprintf(key, sizeof key, "layer%d.kind", i);
    const char *kind_name = meta_text(f, key);
    if (!kind_name)
        return fn_fail(FN_ERR_FORMAT, "%s: metadata '%s' is missing", f->path, key);
    const fn_layer_kind *kind = NULL;
    if (fn_layer_kind_find(kind_name, &kind) != FN_OK) {
        fn_error_prefix("%s: metadata '%s': ", f->path, key);
        return FN_ERR_FORMAT;
    }
    long long in = 0, out = 0;
    snprintf(key, sizeof key, "layer%d.in_features", i);
    FN_TRY(meta_int(f, key, 1, 1 << 24, &in));
    snprintf(key, sizeof key, "layer%d.out_features", i);
    FN_TRY(meta_int(f, key, 1, 1 << 24, &out));
    *d = (layer_desc){.spec = {kind, (int)out}, .in = (int)in};
    for (int a = 0; a < kind->n_attrs; a++) {
        snprintf(key, sizeof key, "layer%d.%s", i, kind->attrs[a].name);
        FN_TRY(parse_attr(f, key, &kind->attrs[a], &d->values[a]));
    }
    if (kind->set_attrs && kind->set_attrs(d->values, d->in, d->spec.width, &d->hp) != FN_OK) {
        fn_error_prefix("%s: layer %d: ", f->path, i);
        return FN_ERR_FORMAT;
    }
    d->hp.forward_only = 1;
    return FN_OK;
}

static fn_status describe_all(const in_file *f, layer_desc **out, int *n_out)
{
    long long n = 0;
    FN_TRY(meta_int(f, "n_layers", 1, 1 << 16, &n));
    layer_desc *d = calloc((size_t)n, sizeof *d);
    if (!d)
        return fn_fail(FN_ERR_NOMEM, "out of memory");
    fn_status st = FN_OK;
    for (int i = 0; st == FN_OK && i < n; i++)
        st = describe_layer(f, i, &d[i]);
    if (st != FN_OK) {
        free(d);
        return st;
    }
    *out = d;
    *n_out = (int)n;
    return FN_OK;
}

static fn_status build_layers(const in_file *f, fn_net *net, const layer_desc *d, int n)
{
    fn_model_memory need = {0};
    for (int i = 0; i < n; i++)
        fn_model_memory_add(&need, &d[i].spec, d[i].in, &d[i].hp, fn_net_max_batch(net), i == 0);
    if (fn_model_memory_fits(fn_net_context(net), &need, fn_net_max_batch(net)) != FN_OK) {
        fn_error_prefix("%s: ", f->path);
        return FN_ERR_NOMEM;
    }
    fn_rng rng = {0, 0}; /* the values are read right after */
    for (int i = 0; i < n; i++) {
        fn_layer *layer = NULL;
        fn_status st = fn_layer_create(&layer, fn_net_context(net), d[i].in, &d[i].spec,
                                       &d[i].hp, fn_net_max_batch(net), &rng);
        if (st == FN_OK)
            st = fn_net_add(net, layer);
        if (st != FN_OK) {
            fn_error_prefix("%s: layer %d: ", f->path, i);
            return st;
        }
    }
    return FN_OK;
}

fn_status fn_safetensors_build(fn_net **out, fn_context *ctx, const char *path, int max_batch)
{
    *out = NULL;
    in_file f;
    FN_TRY(open_file(&f, path));
    layer_desc *d = NULL;
    int n = 0;
    fn_net *net = NULL;
    fn_status st = describe_all(&f, &d, &n);
    if (st == FN_OK)
        st = fn_net_create_forward_only(&net, ctx, max_batch);
    if (st == FN_OK)
        st = build_layers(&f, net, d, n);
    if (st == FN_OK)
        st = load_values(&f, net);
    free(d);
    close_file(&f);
    if (st != FN_OK) {
        fn_net_destroy(net);
        return st;
    }
    *out = net;
    return FN_OK;
}

/* Layer i's attributes that must match (groups) against l's. */
static fn_status check_attrs(const in_file *f, int i, const fn_layer *l, const layer_desc *d)
{
    const fn_layer_kind *kind = d->spec.kind;
    fn_layer_attr_value mine[FN_LAYER_ATTRS_MAX];
    if (kind->n_attrs == 0)
        return FN_OK;
    FN_TRY(kind->get_attrs(l, mine));
    for (int a = 0; a < kind->n_attrs; a++) {
        const fn_layer_attr *at = &kind->attrs[a];
        const int is_int = at->type == FN_LAYER_ATTR_INT;
        if (!at->must_match || (is_int ? mine[a].i == d->values[a].i
                                       : mine[a].d == d->values[a].d))
            continue;
        return fn_fail(FN_ERR_FORMAT, "%s: layer %d: %s is %g, the model has %g", f->path, i,
                       at->name, is_int ? (double)d->values[a].i : d->values[a].d,
                       is_int ? (double)mine[a].i : mine[a].d);
    }
    return FN_OK;
}

/* The file's layers against net's: count, kind, sizes, and the attributes
 * a weights file loaded into a net must repeat (must_match: groups). */
static fn_status check_layers(const in_file *f, const fn_net *net)
{
    layer_desc *d = NULL;
    int n = 0;
    FN_TRY(describe_all(f, &d, &n));
    fn_status st = n == fn_net_n_layers(net)
                       ? FN_OK
                       : fn_fail(FN_ERR_FORMAT, "%s: holds %d layers, the model has %d", f->path,
                                 n, fn_net_n_layers(net));
    for (int i = 0; st == FN_OK && i < n; i++) {
        const fn_layer *l = fn_net_layer(net, i);
        const fn_layer_kind *kind = fn_layer_kind_of(l);
        if (kind != d[i].spec.kind || l->in_features != d[i].in ||
            l->out_features != d[i].spec.width)
            st = fn_fail(FN_ERR_FORMAT, "%s: layer %d is %s %d -> %d, the model has %s %d -> %d",
                         f->path, i, d[i].spec.kind->name, d[i].in, d[i].spec.width,
                         kind ? kind->name : "?", l->in_features, l->out_features);
        else
            st = check_attrs(f, i, l, &d[i]);
    }
    free(d);
    return st;
}

fn_status fn_safetensors_load(fn_net *net, const char *path)
{
    in_file f;
    FN_TRY(open_file(&f, path));
    fn_status st = check_layers(&f, net);
    if (st == FN_OK)
        st = load_values(&f, net);
    close_file(&f);
    return st;
}

static fn_status read_norm(const in_file *f, fn_input_norm **norm, fn_context *ctx, int features)
{
    const char *standardize = meta_text(f, "standardize");
    const int has = fn_json_get(&f->header, "input_norm.mean") != NULL;
    if (!standardize || strcmp(standardize, has ? "true" : "false") != 0)
        return fn_fail(FN_ERR_FORMAT, "%s: metadata 'standardize' is %s%s%s but the file %s the "
                       "tensor input_norm.mean", f->path, standardize ? "'" : "",
                       standardize ? standardize : "missing", standardize ? "'" : "",
                       has ? "holds" : "lacks");
    if (!has)
        return FN_OK;
    long long in = 0;
    FN_TRY(meta_int(f, "in_features", 1, 1 << 24, &in));
    if (features > 0 && in != features)
        return fn_fail(FN_ERR_FORMAT, "%s: standardises %lld inputs, the data has %d", f->path,
                       in, features);
    float *mean = malloc(2 * (size_t)in * sizeof(float));
    if (!mean)
        return fn_fail(FN_ERR_NOMEM, "out of memory");
    const long long dims[1] = {in};
    fn_status st = read_tensor(f, "input_norm.mean", 1, dims, mean);
    if (st == FN_OK)
        st = read_tensor(f, "input_norm.std", 1, dims, mean + in);
    if (st == FN_OK)
        st = fn_input_norm_create(norm, ctx, (int)in, mean, mean + in);
    if (st != FN_OK && !strstr(fn_last_error(), f->path))
        fn_error_prefix("%s: ", f->path);
    free(mean);
    return st;
}

fn_status fn_safetensors_input_norm(fn_input_norm **norm, fn_context *ctx, const char *path,
                                    int features)
{
    *norm = NULL;
    in_file f;
    FN_TRY(open_file(&f, path));
    fn_status st = read_norm(&f, norm, ctx, features);
    close_file(&f);
    return st;
}
