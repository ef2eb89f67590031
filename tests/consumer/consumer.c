/* consumer.c — a program that uses an installed fusenet through its public
 * API only (fusenet/fusenet.h): it trains a block and a linear head on the
 * digits for two epochs with the library's trainer, then loads the weights
 * it wrote into a network of its own and predicts the validation set,
 * printing the accuracy. Exits 0 when that accuracy is above 80 %.
 *
 *   consumer digits_train.h5 digits_valid.h5 output_dir
 *
 * The trainer reads its settings from an INI config, written here into
 * output_dir (which must exist); the run's files (weights.h5, metrics.csv)
 * land beside it. */
#define _XOPEN_SOURCE 700 /* realpath */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "fusenet/fusenet.h"

enum { BATCH = 64, CLASSES = 10 };

static int failed(const char *what)
{
    fprintf(stderr, "consumer: %s: %s\n", what, fn_last_error());
    return 1;
}

static void on_epoch(void *user, const fn_train_epoch *e)
{
    (void)user;
    printf("epoch %lld/%d: train loss %.4f, valid accuracy %.1f %%\n", e->epoch + 1, e->epochs,
           e->train.loss, 100.0 * e->valid.acc);
}

static int write_config(const char *path, const char *train, const char *valid, const char *dir)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return 0;
    fprintf(f,
            "[data]\ntrain = %s\nvalid = %s\n"
            "[model]\nlayers = block 64, linear %d\ngroups = 8\n"
            "[train]\nbatch_size = 32\nepochs = 2\nlr = 0.05\nmomentum = 0.9\nseed = 1\n"
            "[run]\ndevice = auto\nlog_every = 0\n"
            "[output]\ndir = %s\n",
            train, valid, CLASSES, dir);
    return fclose(f) == 0;
}

/* Trains with the config at path; *weights is the weights file written. */
static int train(const char *path, char *weights, size_t size)
{
    fn_config *cfg = NULL;
    if (fn_config_load(&cfg, path) != FN_OK)
        return failed("config");
    if (fn_config_finish(cfg) != FN_OK) {
        fn_config_destroy(cfg);
        return failed("config");
    }
    const fn_trainer_callbacks cb = {.on_epoch = on_epoch};
    const fn_trainer_options opt = {.overwrite = 1, .callbacks = &cb, .comm = FN_COMM_SELF};
    fn_trainer *t = NULL;
    int bad = fn_trainer_create(&t, cfg, &opt) != FN_OK || fn_trainer_run(t) != FN_OK ||
              fn_trainer_outcome(t) != FN_TRAIN_DONE;
    if (bad)
        failed("training");
    else
        snprintf(weights, size, "%s", fn_trainer_weights_path(t));
    fn_trainer_destroy(t);
    fn_config_destroy(cfg);
    return bad;
}

/* The fraction of the set's rows whose largest output is their label. */
static int accuracy(fn_net *net, fn_data *set, double *acc)
{
    float *x = malloc(sizeof(float) * BATCH * (size_t)fn_data_in_features(set));
    int32_t labels[BATCH];
    int64_t index[BATCH]; /* the rows' numbers in the file */
    fn_tensor y = {0};
    long long right = 0, seen = 0;
    fn_status st = x ? fn_tensor_alloc(&y, BATCH, CLASSES, FN_CPU) : FN_ERR_NOMEM;
    fn_batch_rows rows = {0};
    while (st == FN_OK && (st = fn_data_next_rows(set, &rows)) == FN_OK && rows.rows > 0) {
        fn_batch_rows_gather(&rows, 0, rows.rows, x, labels, NULL, index);
        fn_tensor in = fn_tensor_view(x, rows.rows, rows.in, FN_CPU);
        fn_tensor out = fn_tensor_rows(&y, 0, rows.rows);
        st = fn_net_forward(net, &in, &out);
        for (int r = 0; st == FN_OK && r < rows.rows; r++) {
            int best = 0;
            for (int c = 1; c < CLASSES; c++)
                if (out.data[r * CLASSES + c] > out.data[r * CLASSES + best])
                    best = c;
            right += best == labels[r];
            seen++;
        }
    }
    fn_tensor_free(&y);
    free(x);
    *acc = seen ? (double)right / (double)seen : NAN;
    return st == FN_OK ? 0 : failed("prediction");
}

/* Builds the network of the weights file on the CPU and predicts the set. */
static int predict(const char *weights, const char *valid, double *acc)
{
    fn_context *ctx = NULL;
    fn_net *net = NULL;
    fn_data *set = NULL;
    const fn_data_options opt = {.inputs = "X", .targets = "y", .target_kind = FN_DATA_LABELS,
                                 .out_features = CLASSES, .batch_size = BATCH,
                                 .memory_budget = 64u << 20};
    int bad = 1;
    if (fn_context_create(&ctx, FN_CPU, -1, FN_MATH_FP32) != FN_OK)
        failed("context");
    else if (fn_weights_build(&net, ctx, weights, BATCH) != FN_OK)
        failed(weights);
    else if (fn_data_open(&set, valid, &opt) != FN_OK)
        failed(valid);
    else
        bad = accuracy(net, set, acc);
    fn_data_close(set);
    fn_net_destroy(net);
    fn_context_destroy(ctx);
    return bad;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: consumer digits_train.h5 digits_valid.h5 output_dir\n");
        return 2;
    }
    printf("fusenet %s (commit %s, backends: %s), compiled against %s\n", fn_version(),
           fn_version_commit(), fn_build_backends(), FUSENET_VERSION_STRING);
    /* A config's paths are relative to the config's folder: absolute here. */
    char paths[3][PATH_MAX], config[PATH_MAX + 16], weights[PATH_MAX + 16];
    for (int i = 0; i < 3; i++) {
        if (!realpath(argv[i + 1], paths[i])) {
            perror(argv[i + 1]);
            return 1;
        }
    }
    snprintf(config, sizeof config, "%s/consumer.ini", paths[2]);
    if (!write_config(config, paths[0], paths[1], paths[2])) {
        perror(config);
        return 1;
    }
    double acc = NAN;
    if (train(config, weights, sizeof weights) || predict(weights, paths[1], &acc))
        return 1;
    printf("predicted %s with %s: accuracy %.1f %%\n", paths[1], weights, 100.0 * acc);
    return acc > 0.8 ? 0 : 1;
}
