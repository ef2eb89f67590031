/* make_seeds.c — writes the HDF5 seed corpora of the data and weights
 * harnesses: small valid files and a few that break one rule each. Run by
 * `scripts/fuzz.sh seeds`; the output is committed, so this runs only when
 * the formats change.
 *
 *   make_seeds <corpus dir>    writes the .h5 files of <dir>/data and <dir>/weights */
#define _POSIX_C_SOURCE 200809L
#include <hdf5.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_entry.h"

enum { ROWS = 6, IN = 3, OUT = 2, CLASSES = 4, DIR_CAP = 512, PATH_CAP = 1024 };

static void die(const char *what)
{
    fprintf(stderr, "make_seeds: %s: %s\n", what, fn_last_error());
    exit(1);
}

static void check(int ok, const char *what)
{
    if (!ok)
        die(what);
}

/* --- data ------------------------------------------------------------------- */

/* A dataset of rank 1 or 2; chunked and deflated when `packed`. */
static void put(hid_t file, const char *name, hid_t type, hid_t mem, int rank, hsize_t d0,
                hsize_t d1, const void *values, int packed)
{
    hsize_t dims[2] = {d0, d1};
    hid_t space = H5Screate_simple(rank, dims, NULL);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    if (packed && d0 > 0) {
        hsize_t chunk[2] = {2, d1 > 0 ? d1 : 1};
        check(H5Pset_chunk(dcpl, rank, chunk) >= 0 && H5Pset_deflate(dcpl, 4) >= 0, "chunking");
    }
    hid_t set = H5Dcreate2(file, name, type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    check(set >= 0, name);
    if (values && d0 > 0)
        check(H5Dwrite(set, mem, H5S_ALL, H5S_ALL, H5P_DEFAULT, values) >= 0, name);
    H5Dclose(set);
    H5Pclose(dcpl);
    H5Sclose(space);
}

/* X [rows, IN] float32, y [rows] labels, t [rows, OUT] float32. */
typedef struct set_values {
    float x[ROWS * IN];
    int64_t y[ROWS];
    float t[ROWS * OUT];
} set_values;

static set_values good_values(void)
{
    set_values v;
    for (int i = 0; i < ROWS; i++) {
        v.y[i] = i % CLASSES;
        for (int j = 0; j < IN; j++)
            v.x[i * IN + j] = (float)i + (float)j / 8;
        for (int j = 0; j < OUT; j++)
            v.t[i * OUT + j] = (float)(i - j) / 4;
    }
    return v;
}

static hid_t create(const char *dir, const char *name)
{
    char path[PATH_CAP];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    hid_t file = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    check(file >= 0, path);
    return file;
}

/* The three datasets, with y stored as `label_type` and X with rows_x rows. */
static void write_set(const char *dir, const char *name, const set_values *v, hid_t label_type,
                      hsize_t rows_x, int packed)
{
    hid_t file = create(dir, name);
    put(file, "X", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 2, rows_x, IN, v->x, packed);
    put(file, "y", label_type, H5T_NATIVE_INT64, 1, ROWS, 0, v->y, packed);
    put(file, "t", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 2, ROWS, OUT, v->t, packed);
    H5Fclose(file);
}

static void write_bad_shapes(const char *dir, const set_values *v)
{
    hid_t file = create(dir, "x_rank1.h5");
    put(file, "X", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 1, ROWS * IN, 0, v->x, 0);
    put(file, "y", H5T_STD_I32LE, H5T_NATIVE_INT64, 1, ROWS, 0, v->y, 0);
    H5Fclose(file);
    file = create(dir, "x_int64.h5");
    put(file, "X", H5T_STD_I64LE, H5T_NATIVE_INT64, 2, 2, IN, v->y, 0);
    H5Fclose(file);
}

static void write_data_seeds(const char *dir)
{
    set_values v = good_values();
    write_set(dir, "good.h5", &v, H5T_STD_I32LE, ROWS, 0);
    write_set(dir, "packed_int64.h5", &v, H5T_STD_I64BE, ROWS, 1);
    write_set(dir, "rows_differ.h5", &v, H5T_STD_U8LE, ROWS - 1, 0);
    write_set(dir, "empty.h5", &v, H5T_STD_I32LE, 0, 0);
    write_bad_shapes(dir, &v);
    set_values bad = v;
    bad.x[4] = NAN;
    bad.t[3] = INFINITY;
    bad.y[2] = CLASSES + 5;
    write_set(dir, "bad_values.h5", &bad, H5T_STD_I16LE, ROWS, 0);
}

/* --- weights ---------------------------------------------------------------- */

/* A network of in -> layers, initialised from seed 1. */
static fn_net *make_net(fn_context *ctx, int in, const fn_layer_spec *layers, int n, int groups)
{
    fn_net *net = NULL;
    fn_rng rng = {.seed = 1, .offset = 0};
    check(fn_net_create(&net, ctx, 4) == FN_OK, "fn_net_create");
    const fn_layer_hparams hp = {.groups = groups, .eps = 1e-5f, .negative_slope = 0.01f};
    for (int i = 0; i < n; i++) {
        check(fn_model_add_layer(net, &layers[i], in, &hp, &rng) == FN_OK,
              "fn_model_add_layer");
        in = layers[i].width;
    }
    return net;
}

static void save_weights(fn_net *net, const char *dir, const char *name)
{
    char path[PATH_CAP];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    check(fn_weights_save(path, net,
                          &(fn_weights_save_options){
                              .config_text = "[model]\nlayers = block 4, linear 2\n"}) == FN_OK,
          path);
}

/* The fixed model of fuzz_entry.h as weights and as a checkpoint. */
static void write_model_seeds(const char *dir)
{
    fuzz_model m;
    check(fuzz_model_create(&m) == FN_OK, "fuzz_model_create");
    save_weights(m.net, dir, "weights.h5");
    fn_train_state state = {.epoch = 1, .step = 2, .global_step = 5, .seed = 1, .batch_size = 4,
                            .loss_sum = 1.5, .correct = 3, .seen = 8, .seconds = 0.25};
    char path[PATH_CAP];
    snprintf(path, sizeof path, "%s/checkpoint.h5", dir);
    check(fn_checkpoint_save(path, m.net, fn_sgd_optimizer(m.opt), &state,
                             &(fn_checkpoint_save_options){.config_text = ""}) == FN_OK,
          path);
    /* With the input standardisation group /input_norm. */
    const float mean[3] = {0.5f, -1, 2}, std[3] = {1, 0.25f, 3};
    fn_input_norm *norm = NULL;
    check(fn_input_norm_create(&norm, m.ctx, 3, mean, std) == FN_OK, "fn_input_norm_create");
    snprintf(path, sizeof path, "%s/weights_norm.h5", dir);
    check(fn_weights_save(path, m.net,
                          &(fn_weights_save_options){.norm = norm, .config_text = ""}) == FN_OK,
          path);
    snprintf(path, sizeof path, "%s/checkpoint_norm.h5", dir);
    check(fn_checkpoint_save(path, m.net, fn_sgd_optimizer(m.opt), &state,
                             &(fn_checkpoint_save_options){.norm = norm, .config_text = ""}) ==
              FN_OK,
          path);
    fn_input_norm_destroy(norm);
    fuzz_model_destroy(&m);
}

/* Rewrites the root attribute format_version of the file at path as 2. */
static void set_version_2(const char *path)
{
    hid_t file = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    check(file >= 0, path);
    check(H5Adelete(file, "format_version") >= 0, "H5Adelete");
    int32_t two = 2;
    hid_t space = H5Screate(H5S_SCALAR);
    hid_t attr = H5Acreate2(file, "format_version", H5T_STD_I32LE, space, H5P_DEFAULT, H5P_DEFAULT);
    check(attr >= 0 && H5Awrite(attr, H5T_NATIVE_INT32, &two) >= 0, "format_version");
    H5Aclose(attr);
    H5Sclose(space);
    H5Fclose(file);
}

/* Networks of other shapes, and a file of another format version. */
static void write_other_seeds(const char *dir)
{
    fn_context *ctx = NULL;
    check(fn_context_create(&ctx, FN_CPU, -1, FN_MATH_FP32) == FN_OK, "fn_context_create");
    const fn_layer_spec deep[] = {{&fn_block_kind, 8, 0}, {&fn_block_kind, 4, 0}, {&fn_linear_kind, 3, 0}};
    fn_net *net = make_net(ctx, 5, deep, 3, 2);
    save_weights(net, dir, "deep.h5");
    fn_net_destroy(net);
    net = make_net(ctx, 3, &deep[2], 1, 1);
    save_weights(net, dir, "linear_only.h5");
    save_weights(net, dir, "version2.h5");
    fn_net_destroy(net);
    fn_context_destroy(ctx);
    char path[PATH_CAP];
    snprintf(path, sizeof path, "%s/version2.h5", dir);
    set_version_2(path);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: make_seeds <corpus dir>\n");
        return 2;
    }
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    char dir[DIR_CAP];
    snprintf(dir, sizeof dir, "%s/data", argv[1]);
    write_data_seeds(dir);
    snprintf(dir, sizeof dir, "%s/weights", argv[1]);
    write_model_seeds(dir);
    write_other_seeds(dir);
    return 0;
}
