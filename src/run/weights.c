/* weights.c — export and import of a network's weights in the HDF5 layout
 * of weights.h, and building a network from such a file (predict, init).
 * What a layer group holds beyond kind and sizes its kind describes
 * (layer_kind.h); this file does the HDF5 part. Files are read first in a
 * probe's child process (h5util.h), which reads the values into host
 * buffers only: the upload to the net's tensors is the real load's. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/escape.h"
#include "fusenet/checkpoint.h"
#include "fusenet/layer_kind.h"
#include "fusenet/model.h"
#include "fusenet/safetensors.h"
#include "fusenet/version.h"
#include "fusenet/weights.h"
#include "store/h5util.h"
#include "data/input_norm_impl.h"
#include "run/provenance_impl.h"
#include "run/weights_impl.h"
#include "nn/model_memory.h"

enum { WHERE_CAP = 512 };

fn_status fn_weights_to_host(const fn_tensor *t, float **host)
{
    size_t n = fn_tensor_count(t);
    *host = malloc(n * sizeof(float));
    if (!*host)
        return fn_fail(FN_ERR_NOMEM, "out of host memory for %zu values", n);
    fn_status st = fn_tensor_download(t, *host, n);
    if (st != FN_OK) {
        free(*host);
        *host = NULL;
    }
    return st;
}

static const char *layer_kind(const fn_layer *l)
{
    return l->ops && l->ops->kind ? l->ops->kind : "layer";
}

/* weight is [out, in]; every other parameter is stored as [out]. */
static void param_dims(const fn_param *p, int *rank, long long *dims)
{
    int is_matrix = strcmp(p->name, "weight") == 0;
    *rank = is_matrix ? 2 : 1;
    dims[0] = is_matrix ? p->value.rows : (long long)fn_tensor_count(&p->value);
    dims[1] = is_matrix ? p->value.cols : 0;
}

/* The values of the attributes l's kind describes; *kind NULL when it
 * has none (or l is of no registered kind). */
static fn_status kind_attrs(const fn_layer *l, const fn_layer_kind **kind,
                            fn_layer_attr_value *values)
{
    *kind = fn_layer_kind_of(l);
    if (*kind && (*kind)->n_attrs > 0)
        return (*kind)->get_attrs(l, values);
    *kind = NULL;
    return FN_OK;
}

/* --- writing --------------------------------------------------------------- */

static fn_status put_attr(hid_t group, const char *where, const fn_layer_attr *a,
                          fn_layer_attr_value v)
{
    if (a->type == FN_LAYER_ATTR_INT)
        return fn_h5_put_int(group, where, a->name, v.i);
    return fn_h5_put_double(group, where, a->name, v.d);
}

static fn_status write_layer_attrs(hid_t group, const char *where, const fn_layer *l)
{
    FN_TRY(fn_h5_put_string(group, where, "kind", layer_kind(l)));
    FN_TRY(fn_h5_put_int(group, where, "in_features", l->in_features));
    FN_TRY(fn_h5_put_int(group, where, "out_features", l->out_features));
    const fn_layer_kind *kind = NULL;
    fn_layer_attr_value values[FN_LAYER_ATTRS_MAX];
    FN_TRY(kind_attrs(l, &kind, values));
    for (int i = 0; kind && i < kind->n_attrs; i++)
        FN_TRY(put_attr(group, where, &kind->attrs[i], values[i]));
    return FN_OK;
}

static fn_status write_param(hid_t group, const char *where, const fn_param *p)
{
    float *host = NULL;
    FN_TRY(fn_weights_to_host(&p->value, &host));
    int rank = 0;
    long long dims[2];
    param_dims(p, &rank, dims);
    fn_status st = fn_h5_put_floats(group, where, p->name, host, rank, dims);
    free(host);
    return st;
}

static fn_status write_layer(hid_t file, const char *path, int i, const fn_layer *l)
{
    char name[32], where[WHERE_CAP];
    snprintf(name, sizeof name, "layer%d", i);
    snprintf(where, sizeof where, "%s: group '%s'", path, name);
    hid_t group = H5Gcreate2(file, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (group < 0)
        return fn_h5_fail(FN_ERR_IO, "%s: cannot create", where);
    fn_status st = write_layer_attrs(group, where, l);
    for (int p = 0; st == FN_OK && p < l->n_params; p++)
        st = write_param(group, where, &l->params[p]);
    H5Gclose(group);
    return st;
}

static char *layer_list(int n)
{
    size_t cap = (size_t)n * 16 + 1;
    char *s = malloc(cap);
    if (!s)
        return NULL;
    size_t len = 0;
    s[0] = '\0';
    for (int i = 0; i < n; i++)
        len += (size_t)snprintf(s + len, cap - len, "%slayer%d", i ? "," : "", i);
    return s;
}

/* The newest format version of `format` this build reads (and reads every
 * one before). Checkpoints are at version 2 (the optimiser's name and step
 * count, the last gradient norm; checkpoint.c reads version 1 too); a
 * weights file is at 2 when it holds input_norm, else at 1 (weights.h). */
static int newest_version(const char *format)
{
    return strcmp(format, FN_CHECKPOINT_FORMAT) == 0 ? FN_CHECKPOINT_VERSION : FN_WEIGHTS_VERSION;
}

fn_status fn_weights_write(hid_t file, const char *path, const char *format, int version,
                           const fn_net *net, const char *config_text)
{
    const int n = fn_net_n_layers(net);
    char *layers = layer_list(n);
    if (!layers)
        return fn_fail(FN_ERR_NOMEM, "out of memory");
    fn_status st = fn_h5_put_string(file, path, "format", format);
    if (st == FN_OK)
        st = fn_h5_put_int(file, path, "format_version", version);
    if (st == FN_OK)
        st = fn_h5_put_string(file, path, "config", config_text ? config_text : "");
    if (st == FN_OK)
        st = fn_h5_put_string(file, path, "layers", layers);
    /* Which library wrote the file: read by people, never by the readers. */
    if (st == FN_OK)
        st = fn_h5_put_string(file, path, "fusenet_version", fn_version());
    if (st == FN_OK)
        st = fn_h5_put_string(file, path, "fusenet_commit", fn_version_commit());
    free(layers);
    for (int i = 0; st == FN_OK && i < n; i++)
        st = write_layer(file, path, i, fn_net_layer(net, i));
    return st;
}

fn_status fn_weights_save(const char *path, const fn_net *net,
                          const fn_weights_save_options *options)
{
    const fn_weights_save_options none = {0};
    const fn_weights_save_options *o = options ? options : &none;
    hid_t file = -1;
    char *tmp = NULL;
    FN_TRY(fn_h5_create_tmp(&file, path, &tmp));
    const int version = o->target ? 3 : o->norm ? 2 : 1;
    fn_status st = fn_weights_write(file, path, FN_WEIGHTS_FORMAT, version, net, o->config_text);
    if (st == FN_OK)
        st = fn_input_norm_write(file, path, o->norm);
    if (st == FN_OK)
        st = fn_input_norm_write_group(file, path, o->target, FN_TARGET_NORM_GROUP);
    if (st == FN_OK)
        st = fn_provenance_write(file, path, o->provenance);
    return fn_h5_finish(file, tmp, path, st);
}

/* --- reading --------------------------------------------------------------- */

fn_status fn_weights_check_format(hid_t file, const char *path, const char *format)
{
    char *got = NULL;
    if (H5Aexists(file, "format") <= 0)
        return fn_fail(FN_ERR_FORMAT, "%s: not a %s file: the root attribute 'format' is missing",
                       path, format);
    FN_TRY(fn_h5_get_string(file, path, "format", &got));
    int same = strcmp(got, format) == 0;
    char shown[160]; /* the file's bytes, escaped for the terminal */
    fn_status st = same ? FN_OK
                        : fn_fail(FN_ERR_FORMAT, "%s: format is '%s', expected '%s'", path,
                                  fn_escape_str(got, shown, sizeof shown), format);
    free(got);
    FN_TRY(st);
    long long version = 0;
    FN_TRY(fn_h5_get_int(file, path, "format_version", &version));
    const int newest = newest_version(format);
    if (version < 1 || version > newest)
        return fn_fail(FN_ERR_FORMAT, "%s: format_version is %lld, this build reads %s%d", path,
                       version, newest > 1 ? "1 to " : "", newest);
    if (strcmp(format, FN_WEIGHTS_FORMAT) != 0)
        return FN_OK;
    const int has_norm = H5Lexists(file, "input_norm", H5P_DEFAULT) > 0;
    const int has_target = H5Lexists(file, FN_TARGET_NORM_GROUP, H5P_DEFAULT) > 0;
    if (version == 3 && !has_target)
        return fn_fail(FN_ERR_FORMAT, "%s: format_version is 3 but the group 'target_norm' is "
                       "missing", path);
    if (version < 3 && has_target)
        return fn_fail(FN_ERR_FORMAT, "%s: format_version is %lld but the file holds the group "
                       "'target_norm' (version 3's)", path, version);
    if (version == 2 && !has_norm)
        return fn_fail(FN_ERR_FORMAT, "%s: format_version is 2 but the group 'input_norm' is "
                       "missing", path);
    if (version == 1 && has_norm)
        return fn_fail(FN_ERR_FORMAT, "%s: format_version is 1 but the file holds the group "
                       "'input_norm' (version 2's)", path);
    return FN_OK;
}

/* The group names of the root attribute `layers`; *names and its strings
 * share one allocation, freed with free(*names). */
static fn_status read_layer_names(hid_t file, const char *path, char ***names, int *n)
{
    char *list = NULL;
    FN_TRY(fn_h5_get_string(file, path, "layers", &list));
    int count = list[0] ? 1 : 0;
    for (const char *p = list; *p; p++)
        count += *p == ',';
    size_t len = strlen(list) + 1;
    char **out = malloc((size_t)(count + 1) * sizeof(char *) + len);
    if (!out) {
        free(list);
        return fn_fail(FN_ERR_NOMEM, "out of memory");
    }
    char *text = (char *)(out + count + 1);
    memcpy(text, list, len);
    free(list);
    for (int i = 0; i < count; i++) {
        out[i] = text;
        char *comma = strchr(text, ',');
        if (comma)
            *comma = '\0';
        text = comma ? comma + 1 : text + strlen(text);
    }
    *names = out;
    *n = count;
    return FN_OK;
}

static fn_status open_group(hid_t file, const char *path, const char *name, hid_t *group)
{
    if (H5Lexists(file, name, H5P_DEFAULT) <= 0)
        return fn_fail(FN_ERR_FORMAT, "%s: group '%s' is missing", path, name);
    *group = H5Gopen2(file, name, H5P_DEFAULT);
    if (*group < 0)
        return fn_h5_fail(FN_ERR_FORMAT, "%s: '%s' is not a group", path, name);
    return FN_OK;
}

static fn_status expect_int(hid_t group, const char *where, const char *name, long long want)
{
    long long got = 0;
    FN_TRY(fn_h5_get_int(group, where, name, &got));
    if (got != want)
        return fn_fail(FN_ERR_FORMAT, "%s: %s is %lld, the model has %lld", where, name, got, want);
    return FN_OK;
}

static fn_status get_attr(hid_t group, const char *where, const fn_layer_attr *a,
                          fn_layer_attr_value *v)
{
    if (a->type == FN_LAYER_ATTR_INT)
        return fn_h5_get_int(group, where, a->name, &v->i);
    return fn_h5_get_double(group, where, a->name, &v->d);
}

/* The attributes of l's kind that a file loaded into l must repeat: those
 * marked must_match, or with `all` every one (a checkpoint continues the
 * same layers, eps and slope included). */
static fn_status expect_kind_attrs(hid_t group, const char *where, const fn_layer *l, int all)
{
    const fn_layer_kind *kind = NULL;
    fn_layer_attr_value want[FN_LAYER_ATTRS_MAX];
    FN_TRY(kind_attrs(l, &kind, want));
    for (int i = 0; kind && i < kind->n_attrs; i++) {
        const fn_layer_attr *a = &kind->attrs[i];
        if (!a->must_match && !all)
            continue;
        if (a->type == FN_LAYER_ATTR_INT) {
            FN_TRY(expect_int(group, where, a->name, want[i].i));
            continue;
        }
        fn_layer_attr_value got;
        FN_TRY(get_attr(group, where, a, &got));
        if (got.d != want[i].d)
            return fn_fail(FN_ERR_FORMAT, "%s: %s is %g, the model has %g", where, a->name,
                           got.d, want[i].d);
    }
    return FN_OK;
}

static fn_status check_layer(hid_t group, const char *where, const fn_layer *l, int all)
{
    char *kind = NULL;
    FN_TRY(fn_h5_get_string(group, where, "kind", &kind));
    int same = strcmp(kind, layer_kind(l)) == 0;
    char shown[160]; /* the file's bytes, escaped for the terminal */
    fn_status st = same ? FN_OK
                        : fn_fail(FN_ERR_FORMAT, "%s: kind is '%s', the model has '%s'", where,
                                  fn_escape_str(kind, shown, sizeof shown), layer_kind(l));
    free(kind);
    FN_TRY(st);
    FN_TRY(expect_int(group, where, "in_features", l->in_features));
    FN_TRY(expect_int(group, where, "out_features", l->out_features));
    return expect_kind_attrs(group, where, l, all);
}

/* p's dataset into *host (malloc'ed). */
static fn_status read_param(hid_t group, const char *where, const fn_param *p, float **host)
{
    *host = malloc(fn_tensor_count(&p->value) * sizeof(float));
    if (!*host)
        return fn_fail(FN_ERR_NOMEM, "out of host memory");
    int rank = 0;
    long long dims[2];
    param_dims(p, &rank, dims);
    return fn_h5_get_floats(group, where, p->name, *host, rank, dims);
}

/* Layer l's values into values[0 .. l->n_params). */
static fn_status read_layer(hid_t file, const char *path, const char *name, const fn_layer *l,
                            int all, float **values)
{
    char where[WHERE_CAP];
    snprintf(where, sizeof where, "%s: group '%s'", path, name);
    hid_t group = -1;
    FN_TRY(open_group(file, path, name, &group));
    fn_status st = check_layer(group, where, l, all);
    for (int p = 0; st == FN_OK && p < l->n_params; p++)
        st = read_param(group, where, &l->params[p], &values[p]);
    H5Gclose(group);
    return st;
}

static fn_status read_layers(hid_t file, const char *path, char **names, int n,
                             const fn_net *net, int all, fn_weights_host *host)
{
    if (n != fn_net_n_layers(net))
        return fn_fail(FN_ERR_FORMAT, "%s: holds %d layers, the model has %d", path, n,
                       fn_net_n_layers(net));
    host->n_params = fn_net_n_params(net);
    host->values = calloc((size_t)(host->n_params > 0 ? host->n_params : 1), sizeof(float *));
    if (!host->values)
        return fn_fail(FN_ERR_NOMEM, "out of host memory");
    for (int i = 0, first = 0; i < n; i++) {
        const fn_layer *l = fn_net_layer(net, i);
        FN_TRY(read_layer(file, path, names[i], l, all, &host->values[first]));
        first += l->n_params;
    }
    return FN_OK;
}

fn_status fn_weights_read_host(hid_t file, const char *path, const char *format,
                               const fn_net *net, fn_weights_host *host)
{
    *host = (fn_weights_host){0};
    FN_TRY(fn_weights_check_format(file, path, format));
    char **names = NULL;
    int n = 0;
    FN_TRY(read_layer_names(file, path, &names, &n));
    /* A weights file may start a net of other eps and slope (predict
     * builds from the file; [model] init takes the file's, config_model.c);
     * a checkpoint continues the same layers, every attribute alike. */
    const int all = strcmp(format, FN_WEIGHTS_FORMAT) != 0;
    fn_status st = read_layers(file, path, names, n, net, all, host);
    free(names);
    if (st != FN_OK)
        fn_weights_host_free(host);
    return st;
}

fn_status fn_weights_upload(fn_net *net, const fn_weights_host *host)
{
    if (host->n_params != fn_net_n_params(net))
        return fn_fail(FN_ERR_INVALID, "weights: %d values for %d parameters", host->n_params,
                       fn_net_n_params(net));
    for (int i = 0; i < host->n_params; i++) {
        fn_param *p = fn_net_param(net, i);
        FN_TRY(fn_tensor_upload(&p->value, host->values[i], fn_tensor_count(&p->value)));
        FN_TRY(fn_param_refresh_bf16(p, fn_net_context(net)));
    }
    return FN_OK;
}

void fn_weights_host_free(fn_weights_host *host)
{
    for (int i = 0; host->values && i < host->n_params; i++)
        free(host->values[i]);
    free(host->values);
    *host = (fn_weights_host){0};
}

fn_status fn_weights_read(hid_t file, const char *path, const char *format, fn_net *net)
{
    fn_weights_host host;
    FN_TRY(fn_weights_read_host(file, path, format, net, &host));
    fn_status st = fn_weights_upload(net, &host);
    fn_weights_host_free(&host);
    return st;
}

static fn_status read_file(const fn_net *net, const char *path, fn_weights_host *host)
{
    *host = (fn_weights_host){0};
    hid_t file = -1;
    FN_TRY(fn_h5_open_read(&file, path));
    fn_status st = fn_weights_read_host(file, path, FN_WEIGHTS_FORMAT, net, host);
    H5Fclose(file);
    return st;
}

typedef struct load_job {
    const fn_net *net;
    const char *path;
} load_job;

/* The probe's child reads the file and drops what it read. */
static fn_status probe_load(fn_h5_child *probe, void *arg)
{
    (void)probe;
    const load_job *job = arg;
    fn_weights_host host;
    fn_status st = read_file(job->net, job->path, &host);
    fn_weights_host_free(&host);
    return st;
}

/* The file is read in a child first (h5util.h), then again here: weights
 * are small. */
fn_status fn_weights_load(fn_net *net, const char *path)
{
    if (fn_safetensors_path(path))
        return fn_safetensors_load(net, path);
    load_job job = {.net = net, .path = path};
    FN_TRY(fn_h5_probe(path, probe_load, &job, FN_H5_PROBE_SECONDS, NULL));
    fn_weights_host host;
    FN_TRY(read_file(net, path, &host));
    fn_status st = fn_weights_upload(net, &host);
    fn_weights_host_free(&host);
    return st;
}

/* --- building a network from a file --------------------------------------- */

typedef struct layer_desc {
    fn_layer_spec spec;
    int in;
    fn_layer_hparams hp;
} layer_desc;

static fn_status find_kind(hid_t group, const char *where, const fn_layer_kind **kind)
{
    char *name = NULL;
    FN_TRY(fn_h5_get_string(group, where, "kind", &name));
    fn_status st = fn_layer_kind_find(name, kind);
    free(name);
    if (st == FN_OK)
        return FN_OK;
    fn_error_prefix("%s: ", where);
    return FN_ERR_FORMAT;
}

static fn_status describe_layer(hid_t group, const char *where, layer_desc *d)
{
    const fn_layer_kind *kind = NULL;
    long long in = 0, out = 0;
    FN_TRY(find_kind(group, where, &kind));
    FN_TRY(fn_h5_get_int(group, where, "in_features", &in));
    FN_TRY(fn_h5_get_int(group, where, "out_features", &out));
    fn_layer_attr_value values[FN_LAYER_ATTRS_MAX];
    for (int i = 0; i < kind->n_attrs; i++)
        FN_TRY(get_attr(group, where, &kind->attrs[i], &values[i]));
    if (in < 1 || out < 1 || in > (1 << 24) || out > (1 << 24))
        return fn_fail(FN_ERR_FORMAT, "%s: sizes in %lld, out %lld are not valid", where, in, out);
    *d = (layer_desc){.spec = {kind, (int)out}, .in = (int)in};
    if (!kind->set_attrs)
        return FN_OK;
    fn_status st = kind->set_attrs(values, d->in, d->spec.width, &d->hp);
    if (st != FN_OK) {
        fn_error_prefix("%s: ", where);
        return st;
    }
    if (kind->spec_value)
        d->spec.value = kind->spec_value(values);
    return FN_OK;
}

static fn_status describe_named(hid_t file, const char *path, const char *name, layer_desc *d)
{
    char where[WHERE_CAP];
    snprintf(where, sizeof where, "%s: group '%s'", path, name);
    hid_t group = -1;
    FN_TRY(open_group(file, path, name, &group));
    fn_status st = describe_layer(group, where, d);
    H5Gclose(group);
    return st;
}

static fn_status add_described_layer(const char *path, const char *name, const layer_desc *d,
                                     fn_net *net, fn_rng *rng)
{
    fn_layer *layer = NULL;
    fn_status st = fn_layer_create(&layer, fn_net_context(net), d->in, &d->spec, &d->hp,
                                   fn_net_max_batch(net), rng);
    if (st == FN_OK)
        st = fn_net_add(net, layer);
    if (st != FN_OK)
        fn_error_prefix("%s: group '%s': ", path, name);
    return st;
}

/* Every parameter dataset a described layer needs is there, of the shape
 * its group claims ("weight" [out, in], every other [out]), and stored in
 * full: a few KB of file claiming a 65536 x 65536 layer is refused here,
 * before a layer of that size is allocated. */
static fn_status check_stored(hid_t file, const char *path, const char *name,
                              const layer_desc *d)
{
    const char *const *params = d->spec.kind->param_names;
    if (!params)
        return FN_OK;
    char where[WHERE_CAP];
    snprintf(where, sizeof where, "%s: group '%s'", path, name);
    hid_t group = -1;
    FN_TRY(open_group(file, path, name, &group));
    fn_status st = FN_OK;
    const long long out = fn_layer_spec_out(&d->spec, d->in);
    for (int p = 0; st == FN_OK && params[p]; p++) {
        const int is_matrix = strcmp(params[p], "weight") == 0;
        const long long dims[2] = {out, is_matrix ? d->in : 0};
        st = fn_h5_check_floats(group, where, params[p], is_matrix ? 2 : 1, dims);
    }
    H5Gclose(group);
    return st;
}

/* The sizes a file claims are checked against the memory before anything
 * is allocated: a 13 KB file may claim a 65536 x 65536 layer. Each layer
 * has the settings of its own group. */
static fn_status check_described(const char *path, const fn_net *net, const layer_desc *d, int n)
{
    fn_model_memory need;
    fn_context *ctx = fn_net_context(net);
    fn_model_memory_start(&need, fn_context_device(ctx), fn_context_math(ctx));
    for (int i = 0; i < n; i++)
        fn_model_memory_add(&need, &d[i].spec, d[i].in, &d[i].hp, fn_net_max_batch(net), i == 0);
    fn_status st = fn_model_memory_fits(fn_net_context(net), &need, fn_net_max_batch(net));
    if (st != FN_OK)
        fn_error_prefix("%s: ", path);
    return st;
}

static fn_status build_layers(hid_t file, const char *path, fn_net *net)
{
    FN_TRY(fn_weights_check_format(file, path, FN_WEIGHTS_FORMAT));
    char **names = NULL;
    int n = 0;
    FN_TRY(read_layer_names(file, path, &names, &n));
    fn_status st = n > 0 ? FN_OK : fn_fail(FN_ERR_FORMAT, "%s: holds no layers", path);
    layer_desc *d = st == FN_OK && n > 0 ? calloc((size_t)n, sizeof *d) : NULL;
    if (st == FN_OK && !d)
        st = fn_fail(FN_ERR_NOMEM, "out of host memory");
    for (int i = 0; st == FN_OK && i < n; i++) {
        st = describe_named(file, path, names[i], &d[i]);
        d[i].hp.forward_only = 1; /* counted and made without gradients */
    }
    if (st == FN_OK)
        st = check_described(path, net, d, n);
    for (int i = 0; st == FN_OK && i < n; i++)
        st = check_stored(file, path, names[i], &d[i]);
    /* The values are read right after, so the generator's numbers are
     * unused; one stream continued layer after layer is the cheap way to
     * draw them (init.c). */
    fn_rng rng = {0, 0};
    for (int i = 0; st == FN_OK && i < n; i++)
        st = add_described_layer(path, names[i], &d[i], net, &rng);
    free(d);
    free(names);
    if (st == FN_OK)
        st = fn_weights_read(file, path, FN_WEIGHTS_FORMAT, net);
    return st;
}

static fn_status build_file(fn_net **out, fn_context *ctx, const char *path, int max_batch)
{
    *out = NULL;
    hid_t file = -1;
    FN_TRY(fn_h5_open_read(&file, path));
    fn_net *net = NULL;
    fn_status st = fn_net_create_forward_only(&net, ctx, max_batch);
    if (st == FN_OK)
        st = build_layers(file, path, net);
    H5Fclose(file);
    if (st != FN_OK) {
        fn_net_destroy(net);
        return st;
    }
    *out = net;
    return FN_OK;
}

/* The probe's child builds the network on the host, for batches of one row:
 * the same reads of the file, without the device or large activations. */
static fn_status probe_build(fn_h5_child *probe, void *arg)
{
    (void)probe;
    const load_job *job = arg;
    fn_context *cpu = NULL;
    FN_TRY(fn_context_create(&cpu, FN_CPU, -1, FN_MATH_FP32));
    fn_net *net = NULL;
    fn_status st = build_file(&net, cpu, job->path, 1);
    fn_net_destroy(net);
    fn_context_destroy(cpu);
    return st;
}

fn_status fn_weights_build(fn_net **out, fn_context *ctx, const char *path, int max_batch)
{
    *out = NULL;
    if (fn_safetensors_path(path))
        return fn_safetensors_build(out, ctx, path, max_batch);
    load_job job = {.path = path};
    FN_TRY(fn_h5_probe(path, probe_build, &job, FN_H5_PROBE_SECONDS, NULL));
    return build_file(out, ctx, path, max_batch);
}

fn_status fn_weights_input_norm(fn_input_norm **norm, fn_context *ctx, const char *path,
                                int features)
{
    if (fn_safetensors_path(path))
        return fn_safetensors_input_norm(norm, ctx, path, features);
    return fn_input_norm_load(norm, ctx, path, features);
}
