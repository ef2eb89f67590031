/* safetensors.c — a network from a safetensors file that fusenet exported
 * (safetensors.h; safetensors_write.c writes them): the whole file read,
 * its JSON header parsed (json.h) and checked before anything its sizes
 * claim is allocated: no key twice, format and version in "__metadata__"
 * (text values only), every tensor's dtype, shape and byte range within
 * the data and no two ranges overlapping; the architecture built from the
 * metadata once its parameters fit in the file's data; the values read by
 * their state_dict names (export_kind.c), every one finite. Text from the
 * file reaches messages escaped (core/escape.h). */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/escape.h"
#include "export/export_impl.h"
#include "export/export_kind.h"
#include "export/json.h"
#include "fusenet/layer_kind.h"
#include "fusenet/model.h"
#include "fusenet/safetensors.h"
#include "store/regular_file.h"
#include "nn/model_memory.h"

enum { NAME_CAP = FN_EXPORT_NAME_CAP, WHERE_CAP = 1024, SHOWN_CAP = 160 };
/* A header longer than this is not one fusenet wrote (the safetensors
 * package refuses more than 100 MB too). */
#define HEADER_MAX ((uint64_t)100 << 20)

int fn_safetensors_path(const char *path)
{
    static const char ext[] = ".safetensors";
    size_t n = strlen(path), e = sizeof ext - 1;
    return n > e && strcmp(path + n - e, ext) == 0;
}

typedef struct in_file {
    const char *path;
    unsigned char *bytes;
    size_t size;               /* the file's */
    int header_only;           /* bytes: the length and header alone; data is NULL */
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

/* The header's length (the first 8 bytes, little-endian) against the
 * 100 MiB cap and the file's size, before the file is read. */
static fn_status check_length(const in_file *f, int fd, long long size, uint64_t *length)
{
    unsigned char head[8];
    if (size < 8 || pread(fd, head, 8, 0) != 8)
        return fn_fail(FN_ERR_FORMAT, "%s: %lld bytes, too short for a safetensors file", f->path,
                       size);
    uint64_t n = 0;
    for (int b = 0; b < 8; b++)
        n |= (uint64_t)head[b] << (8 * b);
    if (n > HEADER_MAX)
        return fn_fail(FN_ERR_FORMAT, "%s: the header length %llu is over the %llu bytes (100 "
                       "MiB) a safetensors header may take (the safetensors package's limit "
                       "too): not a file fusenet wrote", f->path, (unsigned long long)n,
                       (unsigned long long)HEADER_MAX);
    if (n > (uint64_t)size - 8)
        return fn_fail(FN_ERR_FORMAT, "%s: the header length %llu exceeds the file's %lld bytes "
                       "(not a safetensors file, or a truncated one)", f->path,
                       (unsigned long long)n, size);
    *length = n;
    return FN_OK;
}

static fn_status read_bytes(in_file *f)
{
    int fd = -1;
    long long size = 0;
    FN_TRY(fn_open_regular_file(f->path, &fd, &size));
    uint64_t length = 0;
    fn_status checked = check_length(f, fd, size, &length);
    if (checked != FN_OK) {
        close(fd);
        return checked;
    }
    const size_t want = f->header_only ? 8 + (size_t)length : (size_t)size;
    f->bytes = malloc(want + 1);
    if (!f->bytes) {
        close(fd);
        return fn_fail(FN_ERR_NOMEM, "%s: out of memory for %zu bytes", f->path, want);
    }
    size_t got = 0;
    while (got < want) {
        ssize_t n = read(fd, f->bytes + got, want - got);
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
    f->size = (size_t)size;
    return FN_OK;
}

static const char *json_type_name(fn_json_type t)
{
    static const char *const names[] = {"null", "boolean", "number", "string", "array",
                                        "object"};
    return t >= 0 && t <= FN_JSON_OBJECT ? names[t] : "?";
}

/* The text of metadata `key`: missing, or a value other than a string
 * (safetensors metadata maps text to text), is named as what it is. */
static fn_status need_text(const in_file *f, const char *key, const char **out)
{
    const fn_json *v = fn_json_get(f->meta, key);
    if (!v)
        return fn_fail(FN_ERR_FORMAT, "%s: metadata '%s' is missing", f->path, key);
    if (v->type != FN_JSON_STRING)
        return fn_fail(FN_ERR_FORMAT, "%s: metadata '%s' is a JSON %s, expected a string: "
                       "safetensors metadata values are text (\"1\", not 1)", f->path, key,
                       json_type_name(v->type));
    *out = v->text;
    return FN_OK;
}

static fn_status meta_int(const in_file *f, const char *key, long long lo, long long hi,
                          long long *out)
{
    const char *s = NULL;
    FN_TRY(need_text(f, key, &s));
    char *end = NULL, shown[SHOWN_CAP];
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (end == s || *end || errno || v < lo || v > hi)
        return fn_fail(FN_ERR_FORMAT, "%s: metadata '%s' is '%s', expected an integer from %lld "
                       "to %lld", f->path, key, fn_escape_str(s, shown, sizeof shown), lo, hi);
    *out = v;
    return FN_OK;
}

/* --- the header's own checks: keys, tensors and their byte ranges ------------------------ */

static int compare_text(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* No key twice in object v (`what` in the message): readers differ on
 * which of two they take. */
static fn_status unique_keys(const in_file *f, const fn_json *v, const char *what)
{
    if (v->n < 2)
        return FN_OK;
    char **keys = malloc((size_t)v->n * sizeof *keys);
    if (!keys)
        return fn_fail(FN_ERR_NOMEM, "%s: out of memory", f->path);
    memcpy(keys, v->keys, (size_t)v->n * sizeof *keys);
    qsort(keys, (size_t)v->n, sizeof *keys, compare_text);
    fn_status st = FN_OK;
    for (int i = 1; st == FN_OK && i < v->n; i++)
        if (strcmp(keys[i - 1], keys[i]) == 0) {
            char shown[SHOWN_CAP];
            st = fn_fail(FN_ERR_FORMAT, "%s: %s holds the key '%s' twice (readers differ on "
                         "which they take): not a file fusenet wrote", f->path, what,
                         fn_escape_str(keys[i], shown, sizeof shown));
        }
    free(keys);
    return st;
}

/* The bytes of one element of a safetensors dtype; 0 for an unknown one. */
static size_t dtype_size(const char *dtype)
{
    static const struct {
        const char *name;
        size_t size;
    } sizes[] = {{"F64", 8}, {"F32", 4}, {"F16", 2},  {"BF16", 2}, {"I64", 8}, {"I32", 4},
                 {"I16", 2}, {"I8", 1},  {"U64", 8},  {"U32", 4},  {"U16", 2}, {"U8", 1},
                 {"BOOL", 1}, {"F8_E4M3", 1}, {"F8_E5M2", 1}};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        if (strcmp(dtype, sizes[i].name) == 0)
            return sizes[i].size;
    return 0;
}

static int json_count(const fn_json *v, long long lo, long long hi, long long *out)
{
    if (!v || v->type != FN_JSON_NUMBER || !v->integer || v->number < (double)lo ||
        v->number > (double)hi)
        return 0;
    *out = (long long)v->number;
    return 1;
}

/* One tensor's range [begin, end) of the data. */
typedef struct range {
    size_t begin, end;
    const char *name;
} range;

/* Entry t of the header, named name: its dtype known, its shape's bytes
 * (without overflow) those of its data_offsets, which lie in the data. */
static fn_status tensor_entry(const in_file *f, const char *name, const fn_json *t, range *r)
{
    char shown[SHOWN_CAP];
    fn_escape_str(name, shown, sizeof shown);
    if (t->type != FN_JSON_OBJECT)
        return fn_fail(FN_ERR_FORMAT, "%s: tensor '%s' is a JSON %s, expected an object with "
                       "dtype, shape and data_offsets", f->path, shown, json_type_name(t->type));
    const fn_json *dtype = fn_json_get(t, "dtype"), *shape = fn_json_get(t, "shape");
    const fn_json *offsets = fn_json_get(t, "data_offsets");
    size_t bytes = dtype && dtype->type == FN_JSON_STRING ? dtype_size(dtype->text) : 0;
    if (!bytes) {
        char d[SHOWN_CAP];
        return fn_fail(FN_ERR_FORMAT, "%s: tensor '%s': dtype %s is not a safetensors dtype",
                       f->path, shown, dtype && dtype->type == FN_JSON_STRING
                                           ? fn_escape_str(dtype->text, d, sizeof d) : "missing");
    }
    int ok = shape && shape->type == FN_JSON_ARRAY;
    for (int k = 0; ok && k < shape->n; k++) {
        long long d = 0;
        ok = json_count(&shape->items[k], 0, 1LL << 53, &d) &&
             (d == 0 || bytes <= f->data_size / (size_t)d);
        bytes = ok ? bytes * (size_t)d : 0;
    }
    if (!ok)
        return fn_fail(FN_ERR_FORMAT, "%s: tensor '%s': its shape is not a list of sizes whose "
                       "values fit in the file's %zu bytes of data", f->path, shown,
                       f->data_size);
    long long b = 0, e = 0;
    if (!offsets || offsets->type != FN_JSON_ARRAY || offsets->n != 2 ||
        !json_count(&offsets->items[0], 0, (long long)f->data_size, &b) ||
        !json_count(&offsets->items[1], b, (long long)f->data_size, &e) ||
        (size_t)(e - b) != bytes)
        return fn_fail(FN_ERR_FORMAT, "%s: tensor '%s': data_offsets are not a range of %zu bytes "
                       "(its shape and dtype) within the file's %zu bytes of data", f->path,
                       shown, bytes, f->data_size);
    *r = (range){(size_t)b, (size_t)e, name};
    return FN_OK;
}

static int compare_range(const void *a, const void *b)
{
    const range *x = a, *y = b;
    if (x->begin != y->begin)
        return x->begin < y->begin ? -1 : 1;
    return (x->end > y->end) - (x->end < y->end);
}

/* Every tensor of the header checked, and no two sharing a byte: another
 * reader would read one tensor's bytes as another's. */
static fn_status check_tensors(const in_file *f)
{
    range *r = malloc(((size_t)f->header.n + 1) * sizeof *r);
    if (!r)
        return fn_fail(FN_ERR_NOMEM, "%s: out of memory", f->path);
    fn_status st = FN_OK;
    int n = 0;
    for (int i = 0; st == FN_OK && i < f->header.n; i++)
        if (strcmp(f->header.keys[i], "__metadata__") != 0)
            st = tensor_entry(f, f->header.keys[i], &f->header.items[i], &r[n++]);
    if (st == FN_OK)
        qsort(r, (size_t)n, sizeof *r, compare_range);
    /* last: of the non-empty ranges so far, the one that ends last. */
    const range *last = NULL;
    for (int i = 0; st == FN_OK && i < n; i++) {
        if (r[i].end == r[i].begin)
            continue;
        if (last && r[i].begin < last->end) {
            char a[SHOWN_CAP], b[SHOWN_CAP];
            st = fn_fail(FN_ERR_FORMAT, "%s: tensors '%s' [%zu, %zu) and '%s' [%zu, %zu) share "
                         "bytes of the data: each tensor has its own range", f->path,
                         fn_escape_str(last->name, a, sizeof a), last->begin, last->end,
                         fn_escape_str(r[i].name, b, sizeof b), r[i].begin, r[i].end);
        }
        if (!last || r[i].end > last->end)
            last = &r[i];
    }
    free(r);
    return st;
}

static fn_status check_header(in_file *f)
{
    if (f->header.type != FN_JSON_OBJECT)
        return fn_fail(FN_ERR_FORMAT, "%s: the header is not a JSON object", f->path);
    FN_TRY(unique_keys(f, &f->header, "the header"));
    f->meta = fn_json_get(&f->header, "__metadata__");
    if (f->meta && f->meta->type != FN_JSON_OBJECT)
        return fn_fail(FN_ERR_FORMAT, "%s: __metadata__ is a JSON %s, expected an object of "
                       "texts", f->path, json_type_name(f->meta->type));
    if (f->meta)
        FN_TRY(unique_keys(f, f->meta, "__metadata__"));
    FN_TRY(check_tensors(f));
    const fn_json *format_value = fn_json_get(f->meta, "format");
    if (!format_value)
        return fn_fail(FN_ERR_FORMAT, "%s: not a fusenet export: the metadata has no 'format' "
                       "(fusenet reads the safetensors files its `export` writes)", f->path);
    const char *format = NULL;
    FN_TRY(need_text(f, "format", &format));
    char shown[SHOWN_CAP];
    if (strcmp(format, FN_EXPORT_FORMAT) != 0)
        return fn_fail(FN_ERR_FORMAT, "%s: metadata 'format' is '%s', expected '%s'", f->path,
                       fn_escape_str(format, shown, sizeof shown), FN_EXPORT_FORMAT);
    long long version = 0;
    FN_TRY(meta_int(f, "format_version", LLONG_MIN, LLONG_MAX, &version));
    if (version < 1 || version > FN_EXPORT_VERSION)
        return fn_fail(FN_ERR_FORMAT, "%s: format_version is %lld, this build reads %d", f->path,
                       version, FN_EXPORT_VERSION);
    return FN_OK;
}

/* header_only: the header is read and checked, the data is not read (a
 * look at what the file is). */
static fn_status open_file(in_file *f, const char *path, int header_only)
{
    *f = (in_file){.path = path, .header_only = header_only};
    fn_status st = read_bytes(f); /* checked the length against the size */
    uint64_t n = 0;
    for (int b = 0; st == FN_OK && b < 8; b++)
        n |= (uint64_t)f->bytes[b] << (8 * b);
    char what[WHERE_CAP];
    snprintf(what, sizeof what, "%s: header", path);
    if (st == FN_OK)
        st = fn_json_parse((const char *)f->bytes + 8, (size_t)n, what, &f->header);
    if (st == FN_OK) {
        f->data = header_only ? NULL : f->bytes + 8 + n;
        f->data_size = f->size - 8 - (size_t)n;
        st = check_header(f);
    }
    if (st != FN_OK)
        close_file(f);
    return st;
}

/* The tensor's byte range, checked against its dtype, shape and the data
 * (check_tensors saw the range lie in the data). */
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
    if (!same) {
        char held[64] = "?";
        size_t len = 0;
        for (int k = 0; shape && shape->type == FN_JSON_ARRAY && k < shape->n && len < 40; k++)
            len += (size_t)snprintf(held + len, sizeof held - len, "%s%.0f", k ? ", " : "",
                                    shape->items[k].number);
        return fn_fail(FN_ERR_FORMAT, "%s: tensor '%s' is [%s], but the layer's sizes (the "
                       "metadata's in_features and out_features, or the model it loads into) "
                       "make it [%lld%s%lld]: the sizes and the tensors disagree", f->path, name,
                       held, dims[0], rank == 2 ? ", " : "", rank == 2 ? dims[1] : 0LL);
    }
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
        FN_TRY(fn_layer_refresh_bf16(l));
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
    const char *s = NULL;
    char *end = NULL, shown[SHOWN_CAP];
    FN_TRY(need_text(f, key, &s));
    errno = 0;
    v->d = strtod(s, &end);
    if (end == s || *end || errno || !isfinite(v->d))
        return fn_fail(FN_ERR_FORMAT, "%s: metadata '%s' is '%s', expected a finite number",
                       f->path, key, fn_escape_str(s, shown, sizeof shown));
    return FN_OK;
}

static fn_status describe_layer(const in_file *f, int i, layer_desc *d)
{
    char key[NAME_CAP];
    snprintf(key, sizeof key, "layer%d.kind", i);
    const char *kind_name = NULL;
    FN_TRY(need_text(f, key, &kind_name));
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
        fn_error_prefix("%s: layer %d (metadata 'layer%d.*'): ", f->path, i, i);
        return FN_ERR_FORMAT;
    }
    if (kind->spec_value)
        d->spec.value = kind->spec_value(d->values);
    d->hp.forward_only = 1;
    return FN_OK;
}

/* The layers' sizes chain (each takes what the one before gives) from the
 * metadata's in_features to its out_features. */
static fn_status check_chain(const in_file *f, const layer_desc *d, int n)
{
    long long in = 0, out = 0;
    FN_TRY(meta_int(f, "in_features", 1, 1 << 24, &in));
    FN_TRY(meta_int(f, "out_features", 1, 1 << 24, &out));
    long long gives = in;
    for (int i = 0; i < n; i++) {
        if (d[i].in != gives)
            return fn_fail(FN_ERR_FORMAT, "%s: metadata 'layer%d.in_features' is %d, but %s "
                           "%lld: the metadata's sizes disagree", f->path, i, d[i].in,
                           i ? "the layer before gives" : "'in_features' is", gives);
        gives = fn_layer_spec_out(&d[i].spec, d[i].in);
    }
    if (gives != out)
        return fn_fail(FN_ERR_FORMAT, "%s: metadata 'out_features' is %lld, but the last layer "
                       "gives %lld: the metadata's sizes disagree", f->path, out, gives);
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
    if (st == FN_OK)
        st = check_chain(f, d, (int)n);
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
    fn_model_memory need;
    fn_context *ctx = fn_net_context(net);
    fn_model_memory_start(&need, fn_context_device(ctx), fn_context_math(ctx));
    for (int i = 0; i < n; i++)
        fn_model_memory_add(&need, &d[i].spec, d[i].in, &d[i].hp, fn_net_max_batch(net), i == 0);
    /* Every parameter is a float32 tensor of the data, so a header that
     * claims more than the file holds is refused before it is allocated. */
    if (need.params > (double)f->data_size)
        return fn_fail(FN_ERR_FORMAT, "%s: the metadata's layers have %.0f parameters (%.0f "
                       "bytes as float32), but the file holds %zu bytes of tensors: the sizes "
                       "claim more than the file has", f->path, need.params / 4, need.params,
                       f->data_size);
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
    FN_TRY(open_file(&f, path, 0));
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
    FN_TRY(open_file(&f, path, 0));
    fn_status st = check_layers(&f, net);
    if (st == FN_OK)
        st = load_values(&f, net);
    close_file(&f);
    return st;
}

static fn_status read_norm(const in_file *f, fn_input_norm **norm, fn_context *ctx, int features)
{
    const char *standardize = NULL;
    FN_TRY(need_text(f, "standardize", &standardize));
    const int has = fn_json_get(&f->header, "input_norm.mean") != NULL;
    char shown[SHOWN_CAP];
    if (strcmp(standardize, has ? "true" : "false") != 0)
        return fn_fail(FN_ERR_FORMAT, "%s: metadata 'standardize' is '%s' but the file %s the "
                       "tensor input_norm.mean", f->path,
                       fn_escape_str(standardize, shown, sizeof shown), has ? "holds" : "lacks");
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
    FN_TRY(open_file(&f, path, 0));
    fn_status st = read_norm(&f, norm, ctx, features);
    close_file(&f);
    return st;
}

int fn_safetensors_is_export(const char *path)
{
    in_file f;
    if (open_file(&f, path, 1) != FN_OK)
        return 0;
    close_file(&f);
    return 1;
}
