/* checkpoint.c — checkpoint.h5: the weights layout plus the optimiser's
 * momentum buffers (group "momentum", one float32 dataset per parameter,
 * named "layerI.name") and the run's position as root attributes. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fusenet/checkpoint.h"
#include "io/h5util.h"
#include "io/weights_impl.h"

/* Calls visit(group, where, "layerI.name", param, buffer) for every
 * parameter that has a momentum buffer, in the net's parameter order. */
typedef fn_status (*param_visit)(hid_t group, const char *where, const char *name, fn_param *p,
                                 fn_tensor *buffer);

static fn_status each_buffer(const fn_net *net, fn_sgd *opt, hid_t group, const char *where,
                             param_visit visit)
{
    int index = 0;
    for (int l = 0; l < fn_net_n_layers(net); l++) {
        fn_layer *layer = fn_net_layer(net, l);
        for (int p = 0; p < layer->n_params; p++, index++) {
            fn_tensor *buffer = fn_sgd_momentum_buffer(opt, index);
            if (!buffer)
                continue;
            char name[96];
            snprintf(name, sizeof name, "layer%d.%s", l, layer->params[p].name);
            FN_TRY(visit(group, where, name, &layer->params[p], buffer));
        }
    }
    return FN_OK;
}

static fn_status write_buffer(hid_t group, const char *where, const char *name, fn_param *p,
                              fn_tensor *buffer)
{
    (void)p;
    float *host = NULL;
    FN_TRY(fn_weights_to_host(buffer, &host));
    long long dims[2] = {buffer->rows, buffer->cols};
    fn_status st = fn_h5_put_floats(group, where, name, host, 2, dims);
    free(host);
    return st;
}

static fn_status read_buffer(hid_t group, const char *where, const char *name, fn_param *p,
                             fn_tensor *buffer)
{
    (void)p;
    size_t n = fn_tensor_count(buffer);
    float *host = malloc(n * sizeof(float));
    if (!host)
        return fn_fail(FN_ERR_NOMEM, "out of host memory");
    long long dims[2] = {buffer->rows, buffer->cols};
    fn_status st = fn_h5_get_floats(group, where, name, host, 2, dims);
    if (st == FN_OK && !fn_h5_probe_child()) /* the probe's child leaves the device alone */
        st = fn_tensor_upload(buffer, host, n);
    free(host);
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
    return fn_h5_put_double(file, path, "seconds", s->seconds);
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
    if (s->epoch < 0 || s->step < 0 || s->global_step < 0 || batch < 1 || s->rows < 0 ||
        s->slab_rows < 0)
        return fn_fail(FN_ERR_FORMAT, "%s: negative epoch, step, batch size, rows or slab rows",
                       path);
    s->seed = (uint64_t)seed;
    s->batch_size = (int)batch;
    return FN_OK;
}

static fn_status write_all(hid_t file, const char *path, const fn_net *net, fn_sgd *opt,
                           const fn_train_state *state, const char *config_text)
{
    FN_TRY(fn_weights_write(file, path, FN_CHECKPOINT_FORMAT, net, config_text));
    FN_TRY(write_state(file, path, state));
    hid_t group = H5Gcreate2(file, "momentum", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (group < 0)
        return fn_h5_fail(FN_ERR_IO, "%s: cannot create group 'momentum'", path);
    char where[512];
    snprintf(where, sizeof where, "%s: group 'momentum'", path);
    fn_status st = each_buffer(net, opt, group, where, write_buffer);
    H5Gclose(group);
    return st;
}

fn_status fn_checkpoint_save(const char *path, const fn_net *net, fn_sgd *opt,
                             const fn_train_state *state, const char *config_text)
{
    hid_t file = -1;
    char *tmp = NULL;
    FN_TRY(fn_h5_create_tmp(&file, path, &tmp));
    fn_status st = write_all(file, path, net, opt, state, config_text);
    if (st == FN_OK)
        st = fn_h5_commit(file, tmp, path);
    else
        fn_h5_abandon(file, tmp);
    free(tmp);
    return st;
}

static fn_status read_all(hid_t file, const char *path, fn_net *net, fn_sgd *opt,
                          fn_train_state *state)
{
    FN_TRY(fn_weights_read(file, path, FN_CHECKPOINT_FORMAT, net));
    FN_TRY(read_state(file, path, state));
    if (H5Lexists(file, "momentum", H5P_DEFAULT) <= 0)
        return fn_fail(FN_ERR_FORMAT, "%s: group 'momentum' is missing", path);
    hid_t group = H5Gopen2(file, "momentum", H5P_DEFAULT);
    if (group < 0)
        return fn_h5_fail(FN_ERR_FORMAT, "%s: 'momentum' is not a group", path);
    char where[512];
    snprintf(where, sizeof where, "%s: group 'momentum'", path);
    fn_status st = each_buffer(net, opt, group, where, read_buffer);
    H5Gclose(group);
    if (st == FN_OK)
        fn_sgd_set_steps(opt, state->global_step);
    return st;
}

static fn_status load_file(const char *path, fn_net *net, fn_sgd *opt, fn_train_state *state)
{
    hid_t file = -1;
    FN_TRY(fn_h5_open_read(&file, path));
    fn_status st = read_all(file, path, net, opt, state);
    H5Fclose(file);
    return st;
}

typedef struct load_job {
    const char *path;
    fn_net *net;
    fn_sgd *opt;
} load_job;

static fn_status probe_load(fn_h5_child *probe, void *arg)
{
    (void)probe;
    const load_job *job = arg;
    fn_train_state state;
    return load_file(job->path, job->net, job->opt, &state);
}

/* Read in a child first (HDF5 may crash or hang on a corrupt file,
 * h5util.h), then again here: a checkpoint is small. */
fn_status fn_checkpoint_load(const char *path, fn_net *net, fn_sgd *opt, fn_train_state *state)
{
    load_job job = {path, net, opt};
    FN_TRY(fn_h5_probe(path, probe_load, &job, FN_H5_PROBE_SECONDS, NULL));
    return load_file(path, net, opt, state);
}
