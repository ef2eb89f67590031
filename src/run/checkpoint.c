/* checkpoint.c — checkpoint.h5: the weights layout, the optimiser's
 * published state (a group per kind, one float32 dataset per parameter,
 * named "layerI.name"), its name and step count, and the run's state as
 * root attributes; version 1 files (before the name and count) still load.
 *
 * A load reads the whole file into host memory (read_file: what the
 * probe's child runs, h5_probe.h; the weights through the weights format's
 * own host read, weights_impl.h) and only then, in the caller's process,
 * copies the weights and the optimiser's state to their tensors, so a
 * child never touches the device and a failed load leaves the net and the
 * optimiser as they were. */
#define _POSIX_C_SOURCE 200809L
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fusenet/checkpoint.h"
#include "store/h5util.h"
#include "data/input_norm_impl.h"
#include "run/provenance_impl.h"
#include "run/weights_impl.h"
#include "run/train_state.h"

enum { WHERE_CAP = 512, LABEL_CAP = 96 };

/* The dataset name of net's parameter `index`: "layerI.name". */
static void param_label(const fn_net *net, int index, char *buf, size_t n)
{
    for (int l = 0; l < fn_net_n_layers(net); l++) {
        const fn_layer *layer = fn_net_layer(net, l);
        if (index < layer->n_params) {
            snprintf(buf, n, "layer%d.%s", l, layer->params[index].name);
            return;
        }
        index -= layer->n_params;
    }
    snprintf(buf, n, "(none)");
}

/* The state is stored by parameter position: opt must hold net's list. */
static fn_status check_pair(const fn_net *net, const fn_optimizer *opt, const char *path)
{
    if (!net || !opt)
        return fn_fail(FN_ERR_INVALID, "%s: the net or the optimiser is NULL", path);
    int same = opt->n_params == fn_net_n_params(net);
    for (int i = 0; same && i < opt->n_params; i++)
        same = opt->params[i] == fn_net_param(net, i);
    if (!same)
        return fn_fail(FN_ERR_INVALID, "%s: the optimiser's parameters are not the net's", path);
    return FN_OK;
}

static void tensor_dims(const fn_tensor *t, long long dims[2])
{
    dims[0] = t->rows;
    dims[1] = t->cols;
}

/* --- writing --------------------------------------------------------------- */

static fn_status write_tensor(hid_t group, const char *where, const char *name,
                              const fn_tensor *t)
{
    float *host = NULL;
    FN_TRY(fn_weights_to_host(t, &host));
    long long dims[2];
    tensor_dims(t, dims);
    fn_status st = fn_h5_put_floats(group, where, name, host, 2, dims);
    free(host);
    return st;
}

static fn_status write_kind(hid_t file, const char *path, const fn_net *net, fn_optimizer *opt,
                            int kind)
{
    const char *name = fn_optimizer_state_name(opt, kind);
    hid_t group = H5Gcreate2(file, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (group < 0)
        return fn_h5_fail(FN_ERR_IO, "%s: cannot create group '%s'", path, name);
    char where[WHERE_CAP], label[LABEL_CAP];
    snprintf(where, sizeof where, "%s: group '%s'", path, name);
    fn_status st = FN_OK;
    for (int i = 0; st == FN_OK && i < opt->n_params; i++) {
        const fn_tensor *t = fn_optimizer_state(opt, kind, i);
        if (!t)
            continue;
        param_label(net, i, label, sizeof label);
        st = write_tensor(group, where, label, t);
    }
    H5Gclose(group);
    return st;
}

static fn_status write_state(hid_t file, const char *path, const fn_train_state *s)
{
    FN_TRY(fn_h5_put_int(file, path, "epoch", s->epoch));
    FN_TRY(fn_h5_put_int(file, path, "step", s->step));
    FN_TRY(fn_h5_put_int(file, path, "global_step", s->global_step));
    FN_TRY(fn_h5_put_int(file, path, "seed", (long long)s->seed));
    FN_TRY(fn_h5_put_int(file, path, "batch_size", s->batch_size));
    FN_TRY(fn_h5_put_int(file, path, "rows", s->rows));
    FN_TRY(fn_h5_put_int(file, path, "slab_rows", s->slab_rows));
    FN_TRY(fn_h5_put_double(file, path, "loss_sum", s->loss_sum));
    FN_TRY(fn_h5_put_int(file, path, "correct", s->correct));
    FN_TRY(fn_h5_put_int(file, path, "seen", s->seen));
    FN_TRY(fn_h5_put_double(file, path, "best", s->best));
    FN_TRY(fn_h5_put_int(file, path, "best_epoch", s->best_epoch));
    FN_TRY(fn_h5_put_int(file, path, "since_best", s->since_best));
    FN_TRY(fn_h5_put_doubles(file, path, "schedule_state", s->schedule, FN_SCHEDULE_STATE_MAX));
    if (s->standardize_targets >= 0)
        FN_TRY(fn_h5_put_int(file, path, "standardize_targets", s->standardize_targets));
    return fn_h5_put_double(file, path, "seconds", s->seconds);
}

/* Version 2's attributes; grad_norm is NaN when there is none (no
 * clipping, or no step yet): an attribute, not a parameter value. */
static fn_status write_optimizer(hid_t file, const char *path, const fn_optimizer *opt,
                                 const fn_train_state *s)
{
    FN_TRY(fn_h5_put_string(file, path, "optimizer", fn_optimizer_name(opt)));
    FN_TRY(fn_h5_put_int(file, path, "optimizer_steps", fn_optimizer_steps(opt)));
    return fn_h5_put_double(file, path, "grad_norm", isfinite(s->grad_norm) ? s->grad_norm : NAN);
}

static fn_status write_all(hid_t file, const char *path, const fn_net *net, fn_optimizer *opt,
                           const fn_train_state *state, const fn_input_norm *norm,
                           const fn_provenance *prov, const char *config_text)
{
    FN_TRY(fn_weights_write(file, path, FN_CHECKPOINT_FORMAT, FN_CHECKPOINT_VERSION, net,
                            config_text));
    FN_TRY(fn_input_norm_write(file, path, norm));
    FN_TRY(fn_provenance_write(file, path, prov));
    FN_TRY(write_state(file, path, state));
    FN_TRY(write_optimizer(file, path, opt, state));
    FN_TRY(fn_optimizer_state_export(opt)); /* float32, as the file stores it */
    for (int k = 0; k < fn_optimizer_n_state(opt); k++)
        FN_TRY(write_kind(file, path, net, opt, k));
    return FN_OK;
}

fn_status fn_checkpoint_save(const char *path, const fn_net *net, fn_optimizer *opt,
                             const fn_train_state *state,
                             const fn_checkpoint_save_options *options)
{
    const fn_checkpoint_save_options none = {0};
    const fn_checkpoint_save_options *o = options ? options : &none;
    FN_TRY(check_pair(net, opt, path));
    hid_t file = -1;
    char *tmp = NULL;
    FN_TRY(fn_h5_create_tmp(&file, path, &tmp));
    return fn_h5_finish(file, tmp, path,
                        write_all(file, path, net, opt, state, o->norm, o->provenance,
                                  o->config_text));
}

/* --- reading into host memory ----------------------------------------------- */

/* What a checkpoint holds, in host memory. */
typedef struct host_copy {
    fn_weights_host weights;
    fn_train_state state;
    long long optimizer_steps;
    float **values; /* [n_state * n_params]: kind k's values of parameter i at
                     * k * n_params + i; NULL where the optimiser keeps none */
    int count;
} host_copy;

static void host_copy_free(host_copy *c)
{
    fn_weights_host_free(&c->weights);
    for (int i = 0; i < c->count; i++)
        free(c->values[i]);
    free(c->values);
    *c = (host_copy){0};
}

static fn_status read_state(hid_t file, const char *path, fn_train_state *s)
{
    long long seed = 0, batch = 0;
    FN_TRY(fn_h5_get_int(file, path, "epoch", &s->epoch));
    FN_TRY(fn_h5_get_int(file, path, "step", &s->step));
    FN_TRY(fn_h5_get_int(file, path, "global_step", &s->global_step));
    FN_TRY(fn_h5_get_int(file, path, "seed", &seed));
    FN_TRY(fn_h5_get_int(file, path, "batch_size", &batch));
    FN_TRY(fn_h5_get_int(file, path, "rows", &s->rows));
    FN_TRY(fn_h5_get_int(file, path, "slab_rows", &s->slab_rows));
    FN_TRY(fn_h5_get_double(file, path, "loss_sum", &s->loss_sum));
    FN_TRY(fn_h5_get_int(file, path, "correct", &s->correct));
    FN_TRY(fn_h5_get_int(file, path, "seen", &s->seen));
    FN_TRY(fn_h5_get_double(file, path, "seconds", &s->seconds));
    /* keep_best and patience's state; a checkpoint written before they
     * existed has none: no best yet. */
    if (H5Aexists(file, "best_epoch") > 0) {
        FN_TRY(fn_h5_get_double(file, path, "best", &s->best));
        FN_TRY(fn_h5_get_int(file, path, "best_epoch", &s->best_epoch));
        FN_TRY(fn_h5_get_int(file, path, "since_best", &s->since_best));
    }
    /* The schedule's state; none before it existed: a fresh one. */
    if (H5Aexists(file, "schedule_state") > 0)
        FN_TRY(fn_h5_get_doubles(file, path, "schedule_state", s->schedule,
                                 FN_SCHEDULE_STATE_MAX));
    /* Whether the run standardised its targets; unknown in a checkpoint
     * written before it was recorded. */
    long long targets = -1;
    if (H5Aexists(file, "standardize_targets") > 0)
        FN_TRY(fn_h5_get_int(file, path, "standardize_targets", &targets));
    if (targets < -1 || targets > 1)
        return fn_fail(FN_ERR_FORMAT, "%s: standardize_targets is %lld, expected 0 or 1", path,
                       targets);
    s->standardize_targets = (int)targets;
    s->seed = (uint64_t)seed;
    s->batch_size = batch >= 1 && batch <= INT_MAX ? (int)batch : 0;
    return fn_train_state_check(s, path);
}

/* Version 2's attributes, or what a version-1 file (SGD's) implies; the
 * file's optimiser must be opt's kind. */
static fn_status read_optimizer(hid_t file, const char *path, const fn_optimizer *opt,
                                host_copy *c)
{
    long long version = 0;
    FN_TRY(fn_h5_get_int(file, path, "format_version", &version));
    char *name = NULL;
    c->optimizer_steps = c->state.global_step;
    c->state.grad_norm = NAN;
    if (version >= 2) {
        FN_TRY(fn_h5_get_int(file, path, "optimizer_steps", &c->optimizer_steps));
        FN_TRY(fn_h5_get_double(file, path, "grad_norm", &c->state.grad_norm));
        FN_TRY(fn_h5_get_string(file, path, "optimizer", &name));
    }
    const char *got = name ? name : "sgd";
    fn_status st = FN_OK;
    if (strcmp(got, fn_optimizer_name(opt)) != 0)
        st = fn_fail(FN_ERR_INVALID,
                     "%s was written by optimizer %s; the config has optimizer %s, whose state "
                     "it does not hold",
                     path, got, fn_optimizer_name(opt));
    else if (c->optimizer_steps < 0 || c->optimizer_steps > FN_OPTIMIZER_MAX_STEPS)
        st = fn_fail(FN_ERR_FORMAT,
                     "%s: attribute 'optimizer_steps' is %lld, expected 0 to 2^53 (the steps a "
                     "run can have taken)",
                     path, c->optimizer_steps);
    free(name);
    return st;
}

static fn_status read_tensor(hid_t group, const char *where, const char *name,
                             const fn_tensor *like, float **values)
{
    *values = malloc(fn_tensor_count(like) * sizeof(float));
    if (!*values)
        return fn_fail(FN_ERR_NOMEM, "out of host memory");
    long long dims[2];
    tensor_dims(like, dims);
    return fn_h5_get_floats(group, where, name, *values, 2, dims);
}

/* A kind no value of which can be negative (a second moment) holding one:
 * a damaged file, refused naming the dataset and the place. */
static fn_status check_nonnegative(const char *where, const char *label, const fn_tensor *like,
                                   const float *values)
{
    const size_t n = fn_tensor_count(like);
    for (size_t i = 0; i < n; i++)
        if (values[i] < 0)
            return fn_fail(FN_ERR_FORMAT,
                           "%s: dataset '%s' holds %g at [%zu, %zu]: this state cannot be "
                           "negative (the file is damaged)",
                           where, label, (double)values[i], i / (size_t)like->cols,
                           i % (size_t)like->cols);
    return FN_OK;
}

/* Kind `kind`'s group: a dataset for every parameter opt keeps it for. */
static fn_status read_kind(hid_t file, const char *path, const fn_net *net, fn_optimizer *opt,
                           int kind, float **values)
{
    const char *name = fn_optimizer_state_name(opt, kind);
    if (H5Lexists(file, name, H5P_DEFAULT) <= 0)
        return fn_fail(FN_ERR_FORMAT, "%s: group '%s' is missing", path, name);
    hid_t group = H5Gopen2(file, name, H5P_DEFAULT);
    if (group < 0)
        return fn_h5_fail(FN_ERR_FORMAT, "%s: '%s' is not a group", path, name);
    char where[WHERE_CAP], label[LABEL_CAP];
    snprintf(where, sizeof where, "%s: group '%s'", path, name);
    fn_status st = FN_OK;
    for (int i = 0; st == FN_OK && i < opt->n_params; i++) {
        const fn_tensor *t = fn_optimizer_state(opt, kind, i);
        if (!t)
            continue;
        param_label(net, i, label, sizeof label);
        st = read_tensor(group, where, label, t, &values[i]);
        if (st == FN_OK && fn_optimizer_state_nonnegative(opt, kind))
            st = check_nonnegative(where, label, t, values[i]);
    }
    H5Gclose(group);
    return st;
}

/* Whether root group `name` holds optimiser state that opt does not keep:
 * a dataset named after one of net's parameters ("layer0.weight"), as
 * write_kind names them, where opt keeps no tensor of state kind `kind`
 * (-1: a group of no kind of opt's) for that parameter. The weights'
 * groups ("layer0") and /provenance hold no such dataset. */
static int holds_unkept(hid_t file, const char *name, const fn_net *net, fn_optimizer *opt,
                        int kind)
{
    hid_t group = H5Gopen2(file, name, H5P_DEFAULT);
    if (group < 0) {
        H5Eclear2(H5E_DEFAULT); /* a dataset at the root: no state */
        return 0;
    }
    char label[LABEL_CAP];
    int found = 0;
    for (int i = 0; !found && i < opt->n_params; i++) {
        if (kind >= 0 && fn_optimizer_state(opt, kind, i))
            continue; /* kept, and read by read_kind */
        param_label(net, i, label, sizeof label);
        found = H5Lexists(group, label, H5P_DEFAULT) > 0;
    }
    H5Gclose(group);
    return found;
}

typedef struct unread_job {
    const fn_net *net;
    fn_optimizer *opt;
    char name[LABEL_CAP]; /* the first group of state opt does not keep; "" when none */
} unread_job;

static herr_t find_unread(hid_t file, const char *name, const H5L_info_t *info, void *arg)
{
    unread_job *job = arg;
    if (info->type != H5L_TYPE_HARD)
        return 0;
    int kind = -1;
    for (int k = 0; k < fn_optimizer_n_state(job->opt); k++)
        if (strcmp(name, fn_optimizer_state_name(job->opt, k)) == 0)
            kind = k;
    if (!holds_unkept(file, name, job->net, job->opt, kind))
        return 0;
    snprintf(job->name, sizeof job->name, "%s", name);
    return 1; /* stop at the first */
}

/* A state kind in the file that opt, as configured, does not keep (SGD's
 * momentum under momentum = 0, RMSprop's grad_avg without centered):
 * loading would drop it without a word, so it is refused, naming it. */
static fn_status check_unread_state(hid_t file, const char *path, const fn_net *net,
                                    fn_optimizer *opt)
{
    unread_job job = {net, opt, ""};
    hsize_t at = 0;
    if (H5Literate(file, H5_INDEX_NAME, H5_ITER_INC, &at, find_unread, &job) < 0)
        return fn_h5_fail(FN_ERR_FORMAT, "%s: cannot list its groups", path);
    if (!job.name[0])
        return FN_OK;
    return fn_fail(FN_ERR_INVALID, "%s: group '%s' holds optimiser state that optimizer %s, "
                   "as configured, does not keep: it would be dropped", path, job.name,
                   fn_optimizer_name(opt));
}

static fn_status read_all(hid_t file, const char *path, fn_net *net, fn_optimizer *opt,
                          host_copy *c)
{
    FN_TRY(fn_weights_read_host(file, path, FN_CHECKPOINT_FORMAT, net, &c->weights));
    FN_TRY(read_state(file, path, &c->state));
    FN_TRY(read_optimizer(file, path, opt, c));
    const int n = opt->n_params;
    for (int k = 0; k < fn_optimizer_n_state(opt); k++)
        FN_TRY(read_kind(file, path, net, opt, k, c->values + (size_t)k * n));
    return check_unread_state(file, path, net, opt);
}

/* The file's content into *c (host_copy_free it, also on failure). */
static fn_status read_file(const char *path, fn_net *net, fn_optimizer *opt, host_copy *c)
{
    const int count = fn_optimizer_n_state(opt) * opt->n_params;
    *c = (host_copy){.values = calloc((size_t)count + 1, sizeof *c->values)};
    if (!c->values)
        return fn_fail(FN_ERR_NOMEM, "out of host memory");
    c->count = count;
    hid_t file = -1;
    FN_TRY(fn_h5_open_read(&file, path));
    fn_status st = read_all(file, path, net, opt, c);
    H5Fclose(file);
    return st;
}

/* --- loading ----------------------------------------------------------------- */

static fn_status upload(fn_net *net, fn_optimizer *opt, const host_copy *c)
{
    FN_TRY(fn_weights_upload(net, &c->weights));
    const int n = opt->n_params;
    for (int k = 0; k < fn_optimizer_n_state(opt); k++)
        for (int i = 0; i < n; i++) {
            fn_tensor *t = fn_optimizer_state(opt, k, i);
            const float *values = c->values[(size_t)k * n + i];
            if (t && values)
                FN_TRY(fn_tensor_upload(t, values, fn_tensor_count(t)));
        }
    return fn_optimizer_state_import(opt); /* into a state kept in another format */
}

typedef struct load_job {
    const char *path;
    fn_net *net;
    fn_optimizer *opt;
} load_job;

static fn_status probe_read(fn_h5_child *probe, void *arg)
{
    (void)probe;
    const load_job *job = arg;
    host_copy c;
    fn_status st = read_file(job->path, job->net, job->opt, &c);
    host_copy_free(&c);
    return st;
}

/* Read in a child first (HDF5 may crash or hang on a corrupt file,
 * h5util.h), then again here: a checkpoint is small. */
fn_status fn_checkpoint_load(const char *path, fn_net *net, fn_optimizer *opt,
                             fn_train_state *state)
{
    FN_TRY(check_pair(net, opt, path));
    load_job job = {path, net, opt};
    FN_TRY(fn_h5_probe(path, probe_read, &job, FN_H5_PROBE_SECONDS, NULL));
    host_copy c;
    fn_status st = read_file(path, net, opt, &c);
    if (st == FN_OK)
        st = upload(net, opt, &c);
    if (st == FN_OK) {
        *state = c.state;
        fn_optimizer_set_steps(opt, c.optimizer_steps);
    }
    host_copy_free(&c);
    return st;
}
