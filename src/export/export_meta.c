/* export_meta.c — the text entries a model file carries (export.h,
 * export_impl.h): the weights file's config and /provenance attributes
 * (fn_export_meta_read), and the architecture before them
 * (fn_export_describe): format and version, sizes, the layers' summary,
 * standardisation, and per layer its kind, sizes and the attributes its
 * kind writes to a weights file. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export/export_impl.h"
#include "export/export_kind.h"
#include "fusenet/layer_kind.h"
#include "fusenet/version.h"
#include "store/h5util.h"

static char *copy(const char *s)
{
    size_t n = strlen(s) + 1;
    char *c = malloc(n);
    if (c)
        memcpy(c, s, n);
    return c;
}

fn_status fn_export_meta_add(fn_export_meta *meta, const char *key, const char *value)
{
    if (meta->n == meta->cap) {
        int cap = meta->cap ? 2 * meta->cap : 16;
        char **keys = realloc(meta->keys, (size_t)cap * sizeof *keys);
        if (keys)
            meta->keys = keys;
        char **values = keys ? realloc(meta->values, (size_t)cap * sizeof *values) : NULL;
        if (!values)
            return fn_fail(FN_ERR_NOMEM, "out of memory for the export's metadata");
        meta->values = values;
        meta->cap = cap;
    }
    char *k = copy(key), *v = copy(value);
    if (!k || !v) {
        free(k);
        free(v);
        return fn_fail(FN_ERR_NOMEM, "out of memory for the export's metadata");
    }
    meta->keys[meta->n] = k;
    meta->values[meta->n++] = v;
    return FN_OK;
}

void fn_export_meta_clear(fn_export_meta *meta)
{
    for (int i = 0; i < meta->n; i++) {
        free(meta->keys[i]);
        free(meta->values[i]);
    }
    free(meta->keys);
    free(meta->values);
    *meta = (fn_export_meta){0};
}

void fn_export_meta_destroy(fn_export_meta *meta)
{
    if (!meta)
        return;
    fn_export_meta_clear(meta);
    free(meta);
}

int fn_export_meta_count(const fn_export_meta *meta)
{
    return meta ? meta->n : 0;
}

const char *fn_export_meta_key(const fn_export_meta *meta, int i)
{
    return meta && i >= 0 && i < meta->n ? meta->keys[i] : NULL;
}

const char *fn_export_meta_value(const fn_export_meta *meta, int i)
{
    return meta && i >= 0 && i < meta->n ? meta->values[i] : NULL;
}

/* One attribute of /provenance as text, under "provenance.<name>". */
static fn_status read_attr(hid_t group, const char *where, const char *name, fn_export_meta *meta)
{
    hid_t attr = H5Aopen(group, name, H5P_DEFAULT);
    hid_t type = attr >= 0 ? H5Aget_type(attr) : -1;
    H5T_class_t cls = type >= 0 ? H5Tget_class(type) : H5T_NO_CLASS;
    if (type >= 0)
        H5Tclose(type);
    if (attr >= 0)
        H5Aclose(attr);
    char key[512], number[64];
    snprintf(key, sizeof key, "provenance.%s", name);
    if (cls == H5T_STRING) {
        char *text = NULL;
        FN_TRY(fn_h5_get_string(group, where, name, &text));
        fn_status st = fn_export_meta_add(meta, key, text);
        free(text);
        return st;
    }
    if (cls == H5T_INTEGER) {
        long long v = 0;
        FN_TRY(fn_h5_get_int(group, where, name, &v));
        snprintf(number, sizeof number, "%lld", v);
        return fn_export_meta_add(meta, key, number);
    }
    if (cls == H5T_FLOAT) {
        double v = 0;
        FN_TRY(fn_h5_get_double(group, where, name, &v));
        snprintf(number, sizeof number, "%.17g", v);
        return fn_export_meta_add(meta, key, number);
    }
    return fn_fail(FN_ERR_FORMAT, "%s: attribute '%s' is neither a string nor a number; the "
                   "export copies provenance as text", where, name);
}

typedef struct attr_walk {
    const char *where;
    fn_export_meta *meta;
    fn_status st;
} attr_walk;

static herr_t visit_attr(hid_t group, const char *name, const H5A_info_t *info, void *arg)
{
    (void)info;
    attr_walk *w = arg;
    w->st = read_attr(group, w->where, name, w->meta);
    return w->st == FN_OK ? 0 : 1;
}

static fn_status read_provenance(hid_t file, const char *path, fn_export_meta *meta)
{
    if (H5Lexists(file, "provenance", H5P_DEFAULT) <= 0)
        return FN_OK;
    char where[1024];
    snprintf(where, sizeof where, "%s: group 'provenance'", path);
    hid_t group = H5Gopen2(file, "provenance", H5P_DEFAULT);
    if (group < 0)
        return fn_h5_fail(FN_ERR_FORMAT, "%s: 'provenance' is not a group", path);
    attr_walk w = {.where = where, .meta = meta, .st = FN_OK};
    hsize_t at = 0;
    herr_t rc = H5Aiterate2(group, H5_INDEX_NAME, H5_ITER_INC, &at, visit_attr, &w);
    H5Gclose(group);
    if (w.st != FN_OK)
        return w.st;
    return rc < 0 ? fn_h5_fail(FN_ERR_FORMAT, "%s: cannot list its attributes", where) : FN_OK;
}

static fn_status read_meta(hid_t file, const char *path, fn_export_meta *meta)
{
    if (H5Aexists(file, "config") > 0) {
        char *config = NULL;
        FN_TRY(fn_h5_get_string(file, path, "config", &config));
        fn_status st = fn_export_meta_add(meta, "config", config);
        free(config);
        FN_TRY(st);
    }
    return read_provenance(file, path, meta);
}

fn_status fn_export_meta_read(fn_export_meta **out, const char *weights_path)
{
    *out = calloc(1, sizeof **out);
    if (!*out)
        return fn_fail(FN_ERR_NOMEM, "out of memory");
    hid_t file = -1;
    fn_status st = fn_h5_open_read(&file, weights_path);
    if (st == FN_OK) {
        st = read_meta(file, weights_path, *out);
        H5Fclose(file);
    }
    if (st != FN_OK) {
        fn_export_meta_destroy(*out);
        *out = NULL;
    }
    return st;
}

static fn_status add_int(fn_export_meta *all, const char *key, long long v)
{
    char text[32];
    snprintf(text, sizeof text, "%lld", v);
    return fn_export_meta_add(all, key, text);
}

/* "block 128, block 128, linear 10". */
static fn_status add_summary(const fn_net *net, fn_export_meta *all)
{
    const int n = fn_net_n_layers(net);
    size_t cap = (size_t)n * 48 + 1, len = 0;
    char *s = malloc(cap);
    if (!s)
        return fn_fail(FN_ERR_NOMEM, "out of memory");
    s[0] = '\0';
    for (int i = 0; i < n; i++) {
        const fn_layer *l = fn_net_layer(net, i);
        len += (size_t)snprintf(s + len, cap - len, "%s%.32s %d", i ? ", " : "",
                                l->ops && l->ops->kind ? l->ops->kind : "?", l->out_features);
    }
    fn_status st = fn_export_meta_add(all, "layers", s);
    free(s);
    return st;
}

static fn_status add_layer(const fn_layer *l, int i, fn_export_meta *all)
{
    const fn_export_kind *row = NULL;
    FN_TRY(fn_export_kind_of(l, i, &row));
    char key[FN_EXPORT_NAME_CAP], text[64];
    snprintf(key, sizeof key, "layer%d.kind", i);
    FN_TRY(fn_export_meta_add(all, key, row->kind));
    snprintf(key, sizeof key, "layer%d.in_features", i);
    FN_TRY(add_int(all, key, l->in_features));
    snprintf(key, sizeof key, "layer%d.out_features", i);
    FN_TRY(add_int(all, key, l->out_features));
    const fn_layer_kind *kind = fn_layer_kind_of(l);
    fn_layer_attr_value v[FN_LAYER_ATTRS_MAX];
    if (!kind || kind->n_attrs == 0)
        return FN_OK;
    FN_TRY(kind->get_attrs(l, v));
    for (int a = 0; a < kind->n_attrs; a++) {
        snprintf(key, sizeof key, "layer%d.%s", i, kind->attrs[a].name);
        if (kind->attrs[a].type == FN_LAYER_ATTR_INT)
            snprintf(text, sizeof text, "%lld", v[a].i);
        else
            snprintf(text, sizeof text, "%.17g", v[a].d);
        FN_TRY(fn_export_meta_add(all, key, text));
    }
    return FN_OK;
}

static fn_status describe(const fn_net *net, const fn_input_norm *norm, const fn_export_meta *meta,
                          fn_export_meta *all)
{
    const int n = fn_net_n_layers(net);
    if (n < 1)
        return fn_fail(FN_ERR_INVALID, "export: the network has no layers");
    FN_TRY(fn_export_meta_add(all, "format", FN_EXPORT_FORMAT));
    FN_TRY(add_int(all, "format_version", FN_EXPORT_VERSION));
    FN_TRY(fn_export_meta_add(all, "fusenet_version", fn_version()));
    FN_TRY(add_int(all, "in_features", fn_net_in_features(net)));
    FN_TRY(add_int(all, "out_features", fn_net_out_features(net)));
    FN_TRY(add_int(all, "n_layers", n));
    FN_TRY(add_summary(net, all));
    FN_TRY(fn_export_meta_add(all, "standardize", norm ? "true" : "false"));
    for (int i = 0; i < n; i++)
        FN_TRY(add_layer(fn_net_layer(net, i), i, all));
    for (int i = 0; i < fn_export_meta_count(meta); i++)
        FN_TRY(fn_export_meta_add(all, meta->keys[i], meta->values[i]));
    return FN_OK;
}

fn_status fn_export_describe(const fn_net *net, const fn_input_norm *norm,
                             const fn_export_meta *meta, fn_export_meta *all)
{
    *all = (fn_export_meta){0};
    fn_status st = describe(net, norm, meta, all);
    if (st != FN_OK)
        fn_export_meta_clear(all);
    return st;
}

