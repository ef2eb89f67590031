/* test_train_cli.c — the `train` program as a user runs it: usage and config
 * errors exit with 1 or 2 and a "train: file:line: ..." message; bad data
 * names the file and dataset; the example trains and exports; and a run
 * interrupted by SIGINT and SIGTERM and resumed twice ends with weights
 * identical, bit for bit, to an uninterrupted run; SIGHUP stops a run like
 * SIGTERM, and a closed stdout does not kill it; --resume refuses other
 * optimiser options that lack or would drop the checkpoint's state; a
 * validation set whose rows all weigh 0 reports its loss as undefined.
 * Needs FN_BUILD_DIR (the programs) and FN_SOURCE_DIR (data/), set by ctest. */
#define _POSIX_C_SOURCE 200809L
#include <fcntl.h>
#include <math.h>
#include <hdf5.h>
#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "expect.h"
#include "fusenet/device.h"
#include "fusenet/version.h"
#include "h5_write.h"
#include "store/h5util.h"
#include "test_main.h"

typedef struct fixture {
    char dir[64];
    char train[512];  /* the train program */
    char digits[512]; /* data/digits_train.h5 */
    char valid[512];  /* data/digits_valid.h5 */
    char example[512];
} fixture;

static int setup(void **state)
{
    const char *build = getenv("FN_BUILD_DIR"), *source = getenv("FN_SOURCE_DIR");
    if (!build || !source)
        fail_msg("FN_BUILD_DIR and FN_SOURCE_DIR must be set (ctest sets them)");
    fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    snprintf(f->dir, sizeof f->dir, "/tmp/fn_cli_XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->train, sizeof f->train, "%s/train", build);
    snprintf(f->digits, sizeof f->digits, "%s/data/digits_train.h5", source);
    snprintf(f->valid, sizeof f->valid, "%s/data/digits_valid.h5", source);
    snprintf(f->example, sizeof f->example, "%s/data/example.ini", source);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", f->dir);
    free(f);
    return 0;
}

/* --- running the program ---------------------------------------------------- */

/* Starts train with argv (NULL-terminated, without the program name) in
 * the temporary directory (so a relative path never lands in the source
 * tree); its stdout and stderr go to <dir>/out.txt and <dir>/err.txt. */
static pid_t start(const fixture *f, const char *const *argv)
{
    const char *full[32] = {f->train};
    int n = 1;
    for (int i = 0; argv[i] && n < 31; i++)
        full[n++] = argv[i];
    full[n] = NULL;
    char out[128], err[128];
    snprintf(out, sizeof out, "%s/out.txt", f->dir);
    snprintf(err, sizeof err, "%s/err.txt", f->dir);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int o = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int e = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (o < 0 || e < 0 || dup2(o, 1) < 0 || dup2(e, 2) < 0 || chdir(f->dir) != 0)
            _exit(127);
        execv(f->train, (char *const *)full);
        _exit(127);
    }
    return pid;
}

static int finish(pid_t pid)
{
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (WIFSIGNALED(status))
        fail_msg("train died of signal %d", WTERMSIG(status));
    return WEXITSTATUS(status);
}

static int run(const fixture *f, const char *const *argv) { return finish(start(f, argv)); }

static char *slurp(const char *path)
{
    FILE *in = fopen(path, "r");
    if (!in)
        return calloc(1, 1);
    char *text = calloc(1, 1 << 16);
    size_t n = fread(text, 1, (1 << 16) - 1, in);
    text[n] = '\0';
    fclose(in);
    return text;
}

/* <dir>/name into buf. */
static const char *path_in_dir(const fixture *f, const char *name, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s/%s", f->dir, name);
    return buf;
}

/* Fails unless <dir>/name contains needle. */
static void expect_output(const fixture *f, const char *name, const char *needle)
{
    char path[128];
    snprintf(path, sizeof path, "%s/%s", f->dir, name);
    char *text = slurp(path);
    if (!strstr(text, needle))
        fail_msg("%s lacks '%s'; it holds:\n%s", name, needle, text);
    free(text);
}

static void write_file(const fixture *f, const char *name, const char *text)
{
    char path[192];
    snprintf(path, sizeof path, "%s/%s", f->dir, name);
    FILE *out = fopen(path, "w");
    assert_non_null(out);
    fputs(text, out);
    fclose(out);
}

/* A config in the temp dir training on the digits, output in <dir>/<out>. */
static void write_digits_config(const fixture *f, const char *name, const char *out,
                                const char *layers, const char *extra)
{
    char text[4096];
    snprintf(text, sizeof text,
             "[data]\ntrain = %s\nvalid = %s\n[model]\nlayers = %s\n"
             "[train]\nbatch_size = 16\nlr = 0.05\nmomentum = 0.9\n%s\n[run]\ndevice = cpu\n"
             "log_every = 0\n[output]\ndir = %s\n",
             f->digits, f->valid, layers, extra, out);
    write_file(f, name, text);
}

/* Fails unless the run exits with `want` (1 or 2) and stderr is "train: "
 * followed by a message containing needle. */
static void expect_failure_at(const fixture *f, const char *const *argv, int want,
                              const char *needle, int line)
{
    int got = run(f, argv);
    if (got != want)
        fail_msg("line %d: exit status %d, expected %d", line, got, want);
    assert_true(got > 0 && got < 128);
    char path[128];
    snprintf(path, sizeof path, "%s/err.txt", f->dir);
    char *text = slurp(path);
    if (strncmp(text, "train: ", 7) != 0 || !strstr(text, needle))
        fail_msg("line %d: stderr is not 'train: ...%s...'; it holds:\n%s", line, needle, text);
    free(text);
}
#define EXPECT_FAILURE(argv, status, needle) \
    expect_failure_at(*state, (argv), (status), (needle), __LINE__)

/* The string attribute `name` of the root of the HDF5 file at path. */
static char *root_string_attr(const char *path, const char *name)
{
    hid_t file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    assert_true(file >= 0);
    char *value = NULL;
    if (fn_h5_get_string(file, path, name, &value) != FN_OK)
        fail_msg("%s", fn_last_error());
    H5Fclose(file);
    return value;
}

/* The library that wrote a file is in its root attributes. */
static void expect_written_by(const char *path)
{
    char *version = root_string_attr(path, "fusenet_version");
    assert_string_equal(version, fn_version());
    char *commit = root_string_attr(path, "fusenet_commit");
    assert_string_equal(commit, fn_version_commit());
    free(version);
    free(commit);
}

/* --- usage and config errors --------------------------------------------------- */

static void test_usage_errors(void **state)
{
    const char *none[] = {NULL};
    EXPECT_FAILURE(none, 2, "no config file given");
    const char *unknown[] = {"x.ini", "--fast", NULL};
    EXPECT_FAILURE(unknown, 2, "unknown option '--fast'");
    const char *two[] = {"a.ini", "b.ini", NULL};
    EXPECT_FAILURE(two, 2, "one config file expected");
    const char *set[] = {"a.ini", "--set", NULL};
    EXPECT_FAILURE(set, 2, "--set needs section.key=value");
    const char *help[] = {"--help", NULL};
    assert_int_equal(run(*state, help), 0);
    expect_output(*state, "out.txt", "usage: train config.ini");
    const char *version[] = {"--version", NULL};
    assert_int_equal(run(*state, version), 0);
    char line[256];
    snprintf(line, sizeof line, "train (fusenet) %s\ncommit: %s\nbackends: %s\n",
             FUSENET_VERSION_STRING, fn_version_commit(), fn_build_backends());
    expect_output(*state, "out.txt", line);
    snprintf(line, sizeof line, "GPU architectures: %s\n", fn_build_cuda_archs());
    expect_output(*state, "out.txt", line);
}

static void test_config_errors(void **state)
{
    fixture *f = *state;
    char path[128];
    snprintf(path, sizeof path, "%s/bad.ini", f->dir);
    const char *argv[] = {path, NULL};
    write_file(f, "bad.ini", "[data]\ntrain = x.h5\n[train]\nlr = fast\n");
    EXPECT_FAILURE(argv, 1, "bad.ini:4: train.lr: expected a number, got 'fast'");
    write_file(f, "bad.ini", "[data]\ntrain = x.h5\n[optimizer]\nlr = 1\n");
    EXPECT_FAILURE(argv, 1, "bad.ini:4: unknown section [optimizer]");
    write_file(f, "bad.ini", "[model]\nlayers = linear 2\n");
    EXPECT_FAILURE(argv, 1, "bad.ini: [data] train is required");
    write_file(f, "bad.ini", "[data]\ntrain = nothere.h5\n[model]\nlayers = linear 2\n");
    EXPECT_FAILURE(argv, 1, "bad.ini:2: data.train: cannot read");
    const char *nofile[] = {"/nonexistent.ini", NULL};
    EXPECT_FAILURE(nofile, 1, "/nonexistent.ini: cannot open");
    write_digits_config(f, "ok.ini", "out", "block 32, linear 10", "");
    snprintf(path, sizeof path, "%s/ok.ini", f->dir);
    const char *set[] = {path, "--set", "train.lr=x", NULL};
    EXPECT_FAILURE(set, 1, "--set train.lr=x: expected a number, got 'x'");
    const char *groups[] = {path, "--set=model.groups=5", NULL};
    EXPECT_FAILURE(groups, 1, "--set model.groups=5: groups 5 does not divide the width 32");
    const char *resume[] = {path, "--resume", NULL};
    EXPECT_FAILURE(resume, 1, "checkpoint.h5: cannot open");
    /* bfloat16 momentum buffers only where a product writes bfloat16 */
    const char *bf16[] = {path, "--set", "run.device=cpu", "--set", "train.momentum=0.9",
                          "--set", "train.momentum_bf16=true", NULL};
    EXPECT_FAILURE(bf16, 1, "momentum_bf16 needs the GPU in bf16 math (here device cpu, math "
                            "fp32): only there does the weights' dW product write a bfloat16 "
                            "buffer; set [run] device = cuda and math = bf16, or momentum_bf16 = "
                            "false");
}

static void test_data_errors(void **state)
{
    fixture *f = *state;
    char path[128];
    snprintf(path, sizeof path, "%s/ok.ini", f->dir);
    write_digits_config(f, "ok.ini", "out", "block 32, linear 10", "");
    /* 10 classes in the data, 8 outputs in the model. */
    const char *labels[] = {path, "--set", "model.layers=block 32, linear 8", NULL};
    EXPECT_FAILURE(labels, 1, "digits_train.h5: dataset 'y' row");
    expect_output(f, "err.txt", "expected 0 to 7");
    const char *name[] = {path, "--set", "data.inputs=pixels", NULL};
    EXPECT_FAILURE(name, 1, "digits_train.h5: no dataset 'pixels'");
    const char *mse[] = {path, "--set", "train.loss=mse", NULL};
    /* Integer targets are numbers to mse, but [N] is one output's, not ten. */
    EXPECT_FAILURE(mse, 1, "digits_train.h5: dataset 'y' has rank 1 ([N]), but the model has 10 "
                           "outputs: mse takes values [N, 10]");
}

/* --- training ------------------------------------------------------------------- */

static int count_lines(const char *path)
{
    char *text = slurp(path);
    int n = 0;
    for (const char *p = text; *p; p++)
        n += *p == '\n';
    free(text);
    return n;
}

static void test_example_one_epoch(void **state)
{
    fixture *f = *state;
    char out[128], set_out[160];
    snprintf(out, sizeof out, "%s/example", f->dir);
    snprintf(set_out, sizeof set_out, "output.dir=%s", out);
    const char *argv[] = {f->example, "--set", "train.epochs=1", "--set", set_out, NULL};
    int status = run(f, argv);
    if (status != 0)
        expect_output(f, "err.txt", "(the run failed)");
    expect_output(f, "out.txt", "epoch 1/1: train loss");
    expect_output(f, "out.txt", "valid loss");
    char path[192];
    snprintf(path, sizeof path, "%s/weights.h5", out);
    assert_int_equal(access(path, R_OK), 0);
    expect_written_by(path);
    snprintf(path, sizeof path, "%s/metrics.csv", out);
    assert_int_equal(count_lines(path), 2);
    char *csv = slurp(path);
    assert_non_null(strstr(csv, "epoch,train_loss,train_acc,valid_loss,valid_acc,seconds,"
                                "samples_per_s,lr,grad_norm\n1,"));
    free(csv);
}

/* data/example_adamw.ini (AdamW, warm-up and cosine, clipping) trains: two
 * epochs reach over 90 % validation accuracy (about 97 % measured), and
 * metrics.csv has the lr and grad_norm of each epoch's last step. */
static void test_example_adamw(void **state)
{
    fixture *f = *state;
    char example[512], out[128], set_out[160];
    snprintf(example, sizeof example, "%.*s/example_adamw.ini",
             (int)(strrchr(f->example, '/') - f->example), f->example);
    snprintf(out, sizeof out, "%s/example_adamw", f->dir);
    snprintf(set_out, sizeof set_out, "output.dir=%s", out);
    const char *argv[] = {example, "--set", "train.epochs=2", "--set", set_out, NULL};
    int status = run(f, argv);
    if (status != 0)
        expect_output(f, "err.txt", "(the run failed)");
    char path[192];
    snprintf(path, sizeof path, "%s/metrics.csv", out);
    assert_int_equal(count_lines(path), 3);
    char *csv = slurp(path);
    const char *line = strchr(csv, '\n') + 1;
    line = strchr(line, '\n') + 1;
    double v[9]; /* ..., seconds, samples_per_s, lr, grad_norm */
    assert_int_equal(sscanf(line, "%lf,%lf,%lf,%lf,%lf,%lf,%lf,%lf,%lf", &v[0], &v[1], &v[2],
                            &v[3], &v[4], &v[5], &v[6], &v[7], &v[8]),
                     9);
    printf("    epoch 2: valid accuracy %.1f %%, lr %g, grad_norm %g\n", 100 * v[4], v[7], v[8]);
    assert_true(v[4] > 0.9);
    /* 2 epochs of 45 steps: inside the 100-step warm-up, 3e-3 * 90 / 100. */
    assert_true(fabs(v[7] - 2.7e-3) < 1e-9);
    assert_true(isfinite(v[8]) && v[8] > 0);
    free(csv);
}

/* [model] init starts from exported weights, which must match the layers. */
static void test_init_from_weights(void **state)
{
    fixture *f = *state;
    char cfg[128], init[192], set_init[224], set_out[192];
    write_digits_config(f, "base.ini", "base", "block 32, linear 10", "epochs = 1\n");
    snprintf(cfg, sizeof cfg, "%s/base.ini", f->dir);
    const char *first[] = {cfg, NULL};
    assert_int_equal(run(f, first), 0);
    snprintf(init, sizeof init, "%s/base/weights.h5", f->dir);
    snprintf(set_init, sizeof set_init, "model.init=%s", init);
    snprintf(set_out, sizeof set_out, "output.dir=%s/tuned", f->dir);
    const char *tune[] = {cfg, "--set", set_init, "--set", set_out, NULL};
    assert_int_equal(run(f, tune), 0);
    snprintf(set_out, sizeof set_out, "output.dir=%s/other", f->dir);
    const char *wider[] = {cfg, "--set", set_init, "--set", "model.layers=block 64, linear 10",
                           "--set", set_out, NULL};
    EXPECT_FAILURE(wider, 1, "base/weights.h5: group 'layer0': out_features is 32, the model has 64");
    const char *shorter[] = {cfg, "--set", set_init, "--set", "model.layers=linear 10", "--set",
                             set_out, NULL};
    EXPECT_FAILURE(shorter, 1, "base/weights.h5: holds 2 layers, the model has 1");
}

static double layer_attr(const char *path, int layer, const char *name)
{
    char group[32];
    snprintf(group, sizeof group, "layer%d", layer);
    hid_t file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    assert_true(file >= 0);
    double v = NAN;
    hid_t attr = H5Aopen_by_name(file, group, name, H5P_DEFAULT, H5P_DEFAULT);
    assert_true(attr >= 0);
    assert_true(H5Aread(attr, H5T_NATIVE_DOUBLE, &v) >= 0);
    H5Aclose(attr);
    H5Fclose(file);
    return v;
}

/* [model] init from a file whose blocks have eps 0.1 and slope 0.5: a
 * config that leaves them unset trains (and writes) the file's; one that
 * sets other values fails naming both; one that sets the same runs. */
static void test_init_takes_eps_and_slope(void **state)
{
    fixture *f = *state;
    char cfg[128], set_init[224], path[192], set_out[192];
    write_digits_config(f, "base.ini", "base", "block 32, linear 10", "epochs = 1\n");
    snprintf(cfg, sizeof cfg, "%s/base.ini", f->dir);
    const char *first[] = {cfg, "--set", "model.eps=0.1", "--set", "model.negative_slope=0.5",
                           NULL};
    assert_int_equal(run(f, first), 0);
    snprintf(set_init, sizeof set_init, "model.init=%s/base/weights.h5", f->dir);
    snprintf(set_out, sizeof set_out, "output.dir=%s/tuned", f->dir);
    const char *tune[] = {cfg, "--set", set_init, "--set", set_out, NULL};
    assert_int_equal(run(f, tune), 0);
    snprintf(path, sizeof path, "%s/tuned/weights.h5", f->dir);
    assert_float_equal(layer_attr(path, 0, "eps"), (double)0.1f, 0);
    assert_float_equal(layer_attr(path, 0, "negative_slope"), 0.5, 0);
    const char *other[] = {cfg, "--set", set_init, "--set", set_out, "--set", "model.eps=0.001",
                           "--overwrite", NULL};
    EXPECT_FAILURE(other, 1, "base.ini: [model] eps = 0.001, but layer 0 (block) of [model] init");
    expect_output(f, "err.txt", "base/weights.h5 has eps = 0.1; leave [model] eps unset");
    const char *slope[] = {cfg, "--set", set_init, "--set", set_out, "--set",
                           "model.negative_slope=0.01", "--overwrite", NULL};
    EXPECT_FAILURE(slope, 1, "[model] negative_slope = 0.01, but layer 0 (block)");
    const char *same[] = {cfg, "--set", set_init, "--set", set_out, "--set", "model.eps=0.1",
                          "--overwrite", NULL};
    assert_int_equal(run(f, same), 0);
}

/* A dropout first keeps the data's width, so the layer after it is
 * checked against the data's columns, not against 0; fine-tuning from
 * weights that hold a dropout layer takes [model] eps and negative_slope
 * (a dropout stores neither), and a dropout p other than the file's is an
 * error naming both items. Layers are numbered from 0 in the summary and
 * in every message. */
static void test_dropout_first_and_init(void **state)
{
    fixture *f = *state;
    char cfg[128], set_init[224], set_out[192];
    write_digits_config(f, "drop.ini", "drop", "dropout 0.2, residual 64, linear 10",
                        "epochs = 1\n");
    snprintf(cfg, sizeof cfg, "%s/drop.ini", f->dir);
    const char *first[] = {cfg, NULL};
    assert_int_equal(run(f, first), 0);
    expect_output(f, "out.txt", "0      dropout           64 -> 64");
    expect_output(f, "out.txt", "1      residual          64 -> 64");
    const char *narrow[] = {cfg, "--set", "model.layers=dropout 0.2, residual 8, linear 10",
                            "--set", "output.dir=narrow", NULL};
    EXPECT_FAILURE(narrow, 1, "layer 1 (residual 8): residual 8 takes inputs of 64 columns");
    const char *inner[] = {cfg, "--set", "model.layers=block 32, residual 16, linear 10", "--set",
                           "output.dir=inner", NULL};
    EXPECT_FAILURE(inner, 1, "residual 16 takes inputs of 32 columns");
    expect_output(f, "err.txt", "of layer 1 (residual 16)");

    snprintf(set_init, sizeof set_init, "model.init=%s/drop/weights.h5", f->dir);
    snprintf(set_out, sizeof set_out, "output.dir=%s/tuned", f->dir);
    const char *tune[] = {cfg, "--set", set_init, "--set", set_out, "--set", "model.eps=1e-5",
                          "--set", "model.negative_slope=0.01", NULL};
    assert_int_equal(run(f, tune), 0);
    const char *other_p[] = {cfg, "--set", set_init, "--set", set_out, "--overwrite", "--set",
                             "model.layers=dropout 0.3, residual 64, linear 10", NULL};
    EXPECT_FAILURE(other_p, 1, "drop.ini: [model] layers has 'dropout 0.3' as layer 0, but "
                               "layer 0 (dropout) of [model] init ");
    expect_output(f, "err.txt", "drop/weights.h5 is 'dropout 0.2'; set the item to "
                                "'dropout 0.2' to train with the file's value");
}

/* The float32 contents of every dataset of group layerI in a weights file. */
static size_t read_layer_values(const char *path, int layer, float *buf, size_t cap)
{
    hid_t file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (file < 0)
        fail_msg("cannot open %s", path);
    static const char *const names[] = {"weight", "bias", "gamma", "beta"};
    size_t n = 0;
    for (int i = 0; i < 4; i++) {
        char name[64];
        snprintf(name, sizeof name, "layer%d/%s", layer, names[i]);
        hid_t set = H5Dopen2(file, name, H5P_DEFAULT);
        if (set < 0)
            continue;
        hid_t space = H5Dget_space(set);
        size_t count = (size_t)H5Sget_simple_extent_npoints(space);
        assert_true(n + count <= cap);
        assert_true(H5Dread(set, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf + n) >= 0);
        n += count;
        H5Sclose(space);
        H5Dclose(set);
    }
    H5Fclose(file);
    return n;
}

static void expect_same_weights(const char *a, const char *b, int layers)
{
    enum { CAP = 1 << 16 };
    float *x = malloc(sizeof(float) * CAP), *y = malloc(sizeof(float) * CAP);
    for (int layer = 0; layer < layers; layer++) {
        size_t n = read_layer_values(a, layer, x, CAP);
        size_t m = read_layer_values(b, layer, y, CAP);
        assert_int_equal(n, m);
        assert_true(n > 0);
        for (size_t i = 0; i < n; i++)
            if (memcmp(&x[i], &y[i], sizeof(float)) != 0)
                fail_msg("layer%d value %zu: %.9g vs %.9g", layer, i, (double)x[i], (double)y[i]);
    }
    free(x);
    free(y);
}

/* Waits until <dir>/metrics.csv has at least `lines` lines, then signals. */
static int interrupt_after(const fixture *f, const char *const *argv, const char *csv, int lines,
                           int sig)
{
    pid_t pid = start(f, argv);
    const struct timespec tick = {0, 2000000};
    for (int i = 0; i < 30000 && count_lines(csv) < lines; i++) {
        int status;
        if (waitpid(pid, &status, WNOHANG) == pid)
            fail_msg("train ended (status %d) before it could be interrupted", status);
        nanosleep(&tick, NULL);
    }
    kill(pid, sig);
    return finish(pid);
}

/* Interrupts a run (SIGINT, then SIGTERM after resuming) and resumes it to
 * the end; its weights must equal an uninterrupted run's bit for bit. sets:
 * up to two extra --set arguments for every run (NULL: none). */
static void interrupt_and_resume(fixture *f, const char *prefix, const char *set1,
                                 const char *set2)
{
    char cfg[128], csv[160], whole[160], resumed[160], name[64], out[64];
    /* About 30 ms an epoch: the signals land well before the end. */
    static const char layers[] = "block 128, block 128, linear 10";
    static const char extra[] = "epochs = 40\ncheckpoint_every = 3\n";
    snprintf(name, sizeof name, "%s_whole.ini", prefix);
    snprintf(out, sizeof out, "%s_whole", prefix);
    write_digits_config(f, name, out, layers, extra);
    snprintf(name, sizeof name, "%s_parts.ini", prefix);
    snprintf(out, sizeof out, "%s_parts", prefix);
    write_digits_config(f, name, out, layers, extra);
    snprintf(cfg, sizeof cfg, "%s/%s_whole.ini", f->dir, prefix);
    const char *argv_whole[] = {cfg, "--set", set1 ? set1 : "run.log_every=0",
                                "--set", set2 ? set2 : "run.log_every=0", NULL};
    assert_int_equal(run(f, argv_whole), 0);
    snprintf(cfg, sizeof cfg, "%s/%s_parts.ini", f->dir, prefix);
    snprintf(csv, sizeof csv, "%s/%s_parts/metrics.csv", f->dir, prefix);
    const char *argv_first[] = {cfg, "--set", set1 ? set1 : "run.log_every=0",
                                "--set", set2 ? set2 : "run.log_every=0", NULL};
    assert_int_equal(interrupt_after(f, argv_first, csv, 3, SIGINT), 130);
    expect_output(f, "out.txt", "interrupted by SIGINT");
    const char *argv_resume[] = {cfg, "--set", set1 ? set1 : "run.log_every=0",
                                 "--set", set2 ? set2 : "run.log_every=0", "--resume", NULL};
    int lines = count_lines(csv);
    assert_int_equal(interrupt_after(f, argv_resume, csv, lines + 3, SIGTERM), 143);
    expect_output(f, "out.txt", "interrupted by SIGTERM");
    assert_int_equal(run(f, argv_resume), 0);
    expect_output(f, "out.txt", "resuming from");
    snprintf(whole, sizeof whole, "%s/%s_whole/weights.h5", f->dir, prefix);
    snprintf(resumed, sizeof resumed, "%s/%s_parts/weights.h5", f->dir, prefix);
    expect_same_weights(whole, resumed, 3);
    assert_int_equal(count_lines(csv), 41);
}

static void test_interrupt_and_resume(void **state)
{
    interrupt_and_resume(*state, "cpu", NULL, NULL);
}

/* On the GPU with momentum 0 the update is fused into backward
 * (fn_sgd_fused_backward): interrupted and resumed, still bit for bit. */
static void test_interrupt_and_resume_fused_cuda(void **state)
{
    skip_without_gpu();
    interrupt_and_resume(*state, "cuda", "run.device=cuda", "train.momentum=0");
}

/* SIGHUP (its terminal closed) stops a run as SIGTERM does: exit 129 with a
 * checkpoint. A stdout that closes (`train ... | head -1`) does not kill
 * the run: SIGPIPE is ignored, and it ends with its weights. */
static void test_hangup_and_closed_stdout(void **state)
{
    fixture *f = *state;
    char cfg[128], csv[160], path[160];
    write_digits_config(f, "hup.ini", "hup", "block 128, block 128, linear 10", "epochs = 40\n");
    snprintf(cfg, sizeof cfg, "%s/hup.ini", f->dir);
    snprintf(csv, sizeof csv, "%s/hup/metrics.csv", f->dir);
    const char *argv[] = {cfg, NULL};
    assert_int_equal(interrupt_after(f, argv, csv, 3, SIGHUP), 129);
    expect_output(f, "out.txt", "interrupted by SIGHUP");
    snprintf(path, sizeof path, "%s/hup/checkpoint.h5", f->dir);
    assert_int_equal(access(path, F_OK), 0);
    expect_written_by(path);

    write_digits_config(f, "pipe.ini", "pipe", "block 32, linear 10", "epochs = 2\n");
    snprintf(cfg, sizeof cfg, "%s/pipe.ini", f->dir);
    int p[2];
    assert_int_equal(pipe(p), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        /* Every line is flushed (log_every = 1): the first write meets the
         * closed pipe. */
        signal(SIGPIPE, SIG_DFL); /* train must ignore it itself */
        dup2(p[1], STDOUT_FILENO);
        close(p[0]);
        close(p[1]);
        execl(f->train, f->train, cfg, "--set", "run.log_every=1", (char *)NULL);
        _exit(127);
    }
    close(p[0]);
    close(p[1]);
    assert_int_equal(finish(pid), 0);
    snprintf(path, sizeof path, "%s/pipe/weights.h5", f->dir);
    assert_int_equal(access(path, F_OK), 0);
}

/* The data order depends on the training set's rows and its slab size
 * (memory_budget_mb) as well as on seed and batch_size: --resume refuses a
 * checkpoint written for another order. */
static void test_resume_needs_same_order(void **state)
{
    fixture *f = *state;
    char cfg[128], set_valid[600];
    write_digits_config(f, "order.ini", "order", "block 32, linear 10",
                        "epochs = 1\ncheckpoint_every = 1\n");
    snprintf(cfg, sizeof cfg, "%s/order.ini", f->dir);
    const char *first[] = {cfg, NULL};
    assert_int_equal(run(f, first), 0);
    const char *seed[] = {cfg, "--resume", "--set", "train.seed=2", NULL};
    EXPECT_FAILURE(seed, 1, "order/checkpoint.h5 was written by another run: seed 1 (the config: "
                            "2); --resume continues only the same run");
    const char *both[] = {cfg, "--resume", "--set", "train.seed=2", "--set",
                          "train.batch_size=8", NULL};
    EXPECT_FAILURE(both, 1, "another run: seed 1 (the config: 2); batch_size 16 (the config: 8)");
    const char *layers[] = {cfg, "--resume", "--set", "model.layers=block 64, linear 10", NULL};
    EXPECT_FAILURE(layers, 1, "--resume: ");
    expect_output(f, "err.txt", "group 'layer0': out_features is 32, the model has 64");
    const char *eps[] = {cfg, "--resume", "--set", "model.eps=0.001", NULL};
    EXPECT_FAILURE(eps, 1, "--resume: ");
    expect_output(f, "err.txt", "group 'layer0': eps is 1e-05, the model has 0.001");
    /* 0.01 MiB holds 40 of the digits' 260-byte rows: slabs of 32. */
    const char *budget[] = {cfg, "--resume", "--set", "data.memory_budget_mb=0.01", NULL};
    EXPECT_FAILURE(budget, 1, "another run: the set read in slabs of 1437 rows (memory_budget_mb makes 32)");
    snprintf(set_valid, sizeof set_valid, "data.train=%s", f->valid);
    const char *other[] = {cfg, "--resume", "--set", set_valid, NULL};
    EXPECT_FAILURE(other, 1, "order/checkpoint.h5 was written by another run: a training set of "
                             "1437 rows (this one: ");
    const char *same[] = {cfg, "--resume", "--set", "train.epochs=2", NULL};
    assert_int_equal(run(f, same), 0);
    expect_output(f, "out.txt", "resuming from");
}

/* A run's outputs are trained in standardised units or in the targets'
 * ([data] standardize_targets): --resume refuses the other, naming the
 * key and both values, either way. */
static void test_resume_needs_same_target_units(void **state)
{
    fixture *f = *state;
    char text[2048], cfg[128];
    const char *source = getenv("FN_SOURCE_DIR");
    for (int standardized = 0; standardized < 2; standardized++) {
        snprintf(text, sizeof text,
                 "[data]\ntrain = %s/tests/bad_inputs/good.h5\ntargets = t\n"
                 "standardize_targets = %s\n[model]\nlayers = block 8, linear 4\ngroups = 2\n"
                 "[train]\nloss = mse\nbatch_size = 8\nepochs = 1\ncheckpoint_every = 1\n"
                 "[run]\ndevice = cpu\nlog_every = 0\n[output]\ndir = units%d\n",
                 source, standardized ? "true" : "false", standardized);
        write_file(f, "units.ini", text);
        snprintf(cfg, sizeof cfg, "%s/units.ini", f->dir);
        const char *first[] = {cfg, NULL};
        assert_int_equal(run(f, first), 0);
        const char *other[] = {cfg, "--resume", "--set", "train.epochs=2", "--set",
                               standardized ? "data.standardize_targets=false"
                                            : "data.standardize_targets=true", NULL};
        EXPECT_FAILURE(other, 1, standardized
                                     ? "was written by another run: [data] standardize_targets "
                                       "= true (the config: false)"
                                     : "was written by another run: [data] standardize_targets "
                                       "= false (the config: true)");
        const char *same[] = {cfg, "--resume", "--set", "train.epochs=2", NULL};
        assert_int_equal(run(f, same), 0);
    }
}

/* A checkpoint lacks the optimiser state that other options keep
 * (rmsprop's centered and momentum, sgd's momentum), or holds state that
 * the config's options would drop (momentum turned off, centered off):
 * --resume names the option with the checkpoint's value and the
 * config's, not the dataset, and continues nothing. */
static void test_resume_needs_same_optimizer_options(void **state)
{
    fixture *f = *state;
    char text[2048], cfg[128];
    snprintf(text, sizeof text,
             "[data]\ntrain = %s/tests/bad_inputs/good.h5\n[model]\nlayers = block 8, linear 4\n"
             "groups = 2\n[train]\nbatch_size = 8\nepochs = 1\ncheckpoint_every = 1\n"
             "optimizer = rmsprop\n[run]\ndevice = cpu\nlog_every = 0\n[output]\ndir = opts\n",
             getenv("FN_SOURCE_DIR"));
    write_file(f, "opts.ini", text);
    snprintf(cfg, sizeof cfg, "%s/opts.ini", f->dir);
    const char *first[] = {cfg, NULL};
    assert_int_equal(run(f, first), 0);
    const char *centered[] = {cfg, "--resume", "--set", "train.epochs=2", "--set",
                              "train.centered=true", NULL};
    EXPECT_FAILURE(centered, 1, "opts/checkpoint.h5 was written with other rmsprop options, "
                                "[train] centered = false (the config: true), so it lacks the "
                                "optimiser state this config needs");
    const char *momentum[] = {cfg, "--resume", "--set", "train.epochs=2", "--set",
                              "train.momentum=0.5", NULL};
    EXPECT_FAILURE(momentum, 1, "[train] momentum = 0 (the config: 0.5)");
    const char *sgd[] = {cfg, "--overwrite", "--set", "train.optimizer=sgd", NULL};
    assert_int_equal(run(f, sgd), 0);
    const char *sgd_momentum[] = {cfg, "--resume", "--set", "train.epochs=2", "--set",
                                  "train.optimizer=sgd", "--set", "train.momentum=0.5", NULL};
    EXPECT_FAILURE(sgd_momentum, 1, "was written with other sgd options, [train] momentum = 0 "
                                    "(the config: 0.5)");
    const char *with_momentum[] = {cfg, "--overwrite", "--set", "train.optimizer=sgd", "--set",
                                   "train.momentum=0.5", NULL};
    assert_int_equal(run(f, with_momentum), 0);
    const char *momentum_off[] = {cfg, "--resume", "--set", "train.epochs=2", "--set",
                                  "train.optimizer=sgd", NULL};
    EXPECT_FAILURE(momentum_off, 1, "opts/checkpoint.h5 was written with other sgd options, "
                                    "[train] momentum = 0.5 (the config: 0), so this config "
                                    "would drop the optimiser state it holds");
    const char *centered_on[] = {cfg, "--overwrite", "--set", "train.centered=true", NULL};
    assert_int_equal(run(f, centered_on), 0);
    const char *centered_off[] = {cfg, "--resume", "--set", "train.epochs=2", NULL};
    EXPECT_FAILURE(centered_off, 1, "was written with other rmsprop options, [train] centered = "
                                    "true (the config: false), so this config would drop");
}

/* A validation set whose every row is of a class of class_weights weight 0
 * has no weighted mean loss (0/0): a notice says so once, the epoch lines
 * show its loss as '-' beside its accuracy, metrics.csv writes nan, and a
 * run whose patience or plateau schedule would compare that loss stops
 * at the first epoch naming the setting instead of comparing a NaN. */
static void test_valid_rows_all_weigh_zero(void **state)
{
    fixture *f = *state;
    double x[5 * 6];
    for (int i = 0; i < 5 * 6; i++)
        x[i] = (double)(i % 7) / 7.0;
    const int32_t y[5] = {0, 1, 0, 1, 0};
    char valid[192], text[2048], cfg[128];
    snprintf(valid, sizeof valid, "%s/valid01.h5", f->dir);
    h5_write_xy(valid, x, 5, 6, H5T_STD_I32LE, H5T_NATIVE_INT32, y);
    snprintf(text, sizeof text,
             "[data]\ntrain = %s/tests/bad_inputs/good.h5\nvalid = valid01.h5\n"
             "[model]\nlayers = block 8, linear 4\ngroups = 2\n[train]\nbatch_size = 8\n"
             "epochs = 2\nclass_weights = 0, 0, 1, 1\n[run]\ndevice = cpu\nlog_every = 0\n"
             "[output]\ndir = zero\n",
             getenv("FN_SOURCE_DIR"));
    write_file(f, "zero.ini", text);
    snprintf(cfg, sizeof cfg, "%s/zero.ini", f->dir);
    const char *plain[] = {cfg, NULL};
    assert_int_equal(run(f, plain), 0);
    char path[192];
    snprintf(path, sizeof path, "%s/out.txt", f->dir);
    char *out = slurp(path);
    const char *notice = "valid01.h5: every row weighs 0 in the mean of loss = cross_entropy as "
                         "configured, so the validation loss, sum(w l) / sum(w), is 0/0";
    const char *first = strstr(out, notice);
    if (!first || strstr(first + 1, notice))
        fail_msg("the notice is not given once:\n%s", out);
    assert_non_null(strstr(out, "epoch 1/2: train loss "));
    assert_non_null(strstr(out, ", valid loss - acc "));
    free(out);
    snprintf(path, sizeof path, "%s/zero/metrics.csv", f->dir);
    char *csv = slurp(path);
    double loss = 0, acc = 0, valid_acc = -1;
    char valid_loss[8] = "";
    const char *row = strchr(csv, '\n');
    assert_non_null(row);
    assert_int_equal(sscanf(row + 1, "1,%lf,%lf,%7[^,],%lf", &loss, &acc, valid_loss, &valid_acc),
                     4);
    assert_string_equal(valid_loss, "nan");
    assert_true(valid_acc >= 0 && valid_acc <= 1);
    free(csv);
    const char *patience[] = {cfg, "--overwrite", "--set", "train.patience=1", "--set",
                              "train.monitor=valid_loss", NULL};
    EXPECT_FAILURE(patience, 1, "epoch 1: the validation loss is undefined (every row of ");
    EXPECT_FAILURE(patience, 1, "valid01.h5 weighs 0 in the mean of loss = cross_entropy as "
                                "configured: 0/0), and [train] patience watches it");
    const char *plateau[] = {cfg, "--overwrite", "--set", "train.schedule=plateau", NULL};
    EXPECT_FAILURE(plateau, 1, "and [train] schedule = plateau follows it; give rows of the "
                               "validation set a weight above 0, or set [train] monitor = "
                               "train_loss");
}

/* --- output folders ------------------------------------------------------------- */

static int exists_in(const fixture *f, const char *name)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", f->dir, name);
    return access(path, F_OK) == 0;
}

/* A fresh run refuses a folder holding another run's files (they stay as
 * they were); --overwrite replaces them, the checkpoint included; --resume
 * and --overwrite together are a usage error. */
static void test_output_folder_is_one_run(void **state)
{
    fixture *f = *state;
    char cfg[128];
    write_digits_config(f, "one.ini", "one", "block 32, linear 10",
                        "epochs = 2\ncheckpoint_every = 1\n");
    snprintf(cfg, sizeof cfg, "%s/one.ini", f->dir);
    const char *first[] = {cfg, NULL};
    assert_int_equal(run(f, first), 0);
    char csv[192];
    snprintf(csv, sizeof csv, "%s/one/metrics.csv", f->dir);
    char *before = slurp(csv);
    EXPECT_FAILURE(first, 1, "/one holds another run's weights.h5, checkpoint.h5, metrics.csv; "
                             "give --overwrite to replace them, --resume to continue that run");
    char *after = slurp(csv);
    assert_string_equal(before, after);
    free(before);
    free(after);
    const char *over[] = {cfg, "--overwrite", "--set", "train.checkpoint_every=0", "--set",
                          "train.epochs=1", NULL};
    assert_int_equal(run(f, over), 0);
    assert_true(exists_in(f, "one/weights.h5"));
    assert_int_equal(count_lines(csv), 2);
    /* The checkpoint there is the new run's, written at its end (epoch 1),
     * not the replaced run's (epoch 2). */
    const char *again[] = {cfg, "--resume", "--set", "train.epochs=1", NULL};
    assert_int_equal(run(f, again), 0);
    expect_output(f, "out.txt", "one/checkpoint.h5: epoch 2, step 0\n");
    const char *both[] = {cfg, "--overwrite", "--resume", NULL};
    EXPECT_FAILURE(both, 2, "give one of them");
}

/* A run that fails before its first step leaves no folder; one whose
 * [output] dir is unset writes to runs/<config name> beside the config;
 * --set paths are relative to the current directory, the file's to the
 * file; printed paths are normalised. */
static void test_output_paths(void **state)
{
    fixture *f = *state;
    char text[2048], cfg[160], path[256];
    assert_int_equal(mkdir(path_in_dir(f, "sub", path, sizeof path), 0777), 0);
    snprintf(text, sizeof text,
             "[data]\ntrain = %s\nvalid = %s\n[model]\nlayers = block 32, linear 10\n"
             "[train]\nepochs = 1\n[run]\ndevice = cpu\nlog_every = 0\n",
             f->digits, f->valid);
    write_file(f, "sub/named.ini", text);
    snprintf(cfg, sizeof cfg, "%s/sub/named.ini", f->dir);
    const char *bad[] = {cfg, "--set", "model.layers=block 32, linear 8", NULL};
    EXPECT_FAILURE(bad, 1, "digits_train.h5: dataset 'y' row");
    assert_false(exists_in(f, "sub/runs"));
    const char *plain[] = {cfg, NULL};
    assert_int_equal(run(f, plain), 0);
    assert_true(exists_in(f, "sub/runs/named/weights.h5"));
    const char *here[] = {cfg, "--set", "output.dir=here", NULL};
    assert_int_equal(run(f, here), 0);
    assert_true(exists_in(f, "here/weights.h5"));
    assert_false(exists_in(f, "sub/here"));
    const char *up[] = {cfg, "--set", "output.dir=./sub/../up//x", NULL};
    assert_int_equal(run(f, up), 0);
    expect_output(f, "out.txt", "weights written to up/x/weights.h5\n");
    /* In the file: relative to the file, "sub/../norm/x" printed "norm/x". */
    size_t len = strlen(text);
    snprintf(text + len, sizeof text - len, "[output]\ndir = ../norm/./x\n");
    write_file(f, "sub/dots.ini", text);
    const char *dots[] = {"sub/dots.ini", NULL};
    assert_int_equal(run(f, dots), 0);
    expect_output(f, "out.txt", "weights written to norm/x/weights.h5\n");
}

/* --- what a run prints -------------------------------------------------------------- */

/* Fails unless `after` is followed in line by a time with three decimals
 * and " s, ". */
static void expect_milliseconds(const char *line, const char *after)
{
    assert_non_null(line);
    const char *at = strstr(line, after), *end = strchr(line, '\n');
    assert_true(at && (!end || at < end));
    at += strlen(after);
    unsigned whole = 0, frac = 0;
    int n = 0;
    if (sscanf(at, "%u.%u s, %n", &whole, &frac, &n) != 2 || n == 0 ||
        strspn(strchr(at, '.') + 1, "0123456789") != 3)
        fail_msg("no time to the millisecond after '%s' in: %.80s", after, line);
}

/* The summary table, the memory, samples/s in the epoch and end lines and
 * metrics.csv; "1 epoch"; a notice for math = tf32 on the CPU. */
static void test_summary_and_throughput(void **state)
{
    fixture *f = *state;
    char cfg[128];
    write_digits_config(f, "sum.ini", "sum", "block 32, linear 10", "epochs = 1\n");
    snprintf(cfg, sizeof cfg, "%s/sum.ini", f->dir);
    const char *argv[] = {cfg, "--set", "run.math=tf32", "--set", "run.log_every=10", NULL};
    assert_int_equal(run(f, argv), 0);
    expect_output(f, "out.txt", "note: [run] math = tf32 has no effect on the CPU");
    expect_output(f, "out.txt", "layer  kind             in -> out  groups   parameters\n");
    /* 64 * 32 + 32 * 3 = 2144; 32 * 10 + 10 = 330. */
    expect_output(f, "out.txt", "0      block             64 -> 32       8         2144\n");
    expect_output(f, "out.txt", "1      linear            32 -> 10       -          330\n");
    expect_output(f, "out.txt", "total: 2474 parameters\n");
    /* Weights and the momentum buffer: 2474 floats each; the momentum is
     * folded into backward, so the buffers are the gradients and the
     * parameters' own gradient tensors are freed. */
    expect_output(f, "out.txt", "memory on the cpu: ");
    expect_output(f, "out.txt", "(weights 9.7 KiB, gradients 0 B, optimiser state 9.7 KiB, ");
    expect_output(f, "out.txt", ", 1 epoch, 2 layers\n");
    expect_output(f, "out.txt", "step 10/90 loss ");
    expect_output(f, "out.txt", " samples/s)\n");
    expect_output(f, "out.txt", "done: 1 epoch, 90 steps, ");
    char *out = slurp(path_in_dir(f, "out.txt", (char[256]){0}, 256));
    const char *done = strstr(out, "done: ");
    assert_non_null(done);
    assert_non_null(strstr(done, " samples/s; weights written to "));
    /* Times to the millisecond, each named: "(epoch 0.012 s, total
     * 0.012 s, " and "steps, 0.013 s, ". */
    expect_milliseconds(strstr(out, "epoch 1/1: "), " (epoch ");
    expect_milliseconds(strstr(out, "epoch 1/1: "), ", total ");
    expect_milliseconds(done, " steps, ");
    free(out);
    /* Dampening keeps the momentum out of backward: gradients of their own. */
    const char *damped[] = {cfg, "--set", "train.dampening=0.5", "--overwrite", NULL};
    assert_int_equal(run(f, damped), 0);
    expect_output(f, "out.txt", "(weights 9.7 KiB, gradients 9.7 KiB, optimiser state 9.7 KiB, ");
    if (fn_cuda_device_count() > 0) {
        /* On the GPU: the same parameters, the memory on cuda:0 with the
         * loader's batches, the data in host memory. */
        const char *gpu[] = {cfg, "--set", "run.device=cuda", "--overwrite", NULL};
        assert_int_equal(run(f, gpu), 0);
        expect_output(f, "out.txt", "total: 2474 parameters\n");
        expect_output(f, "out.txt", "memory on cuda:0: ");
        expect_output(f, "out.txt", "(weights 9.7 KiB, gradients 0 B, optimiser state 9.7 KiB, ");
        expect_output(f, "out.txt", ", batches ");
        expect_output(f, "out.txt", "); host: data ");
        /* Plain SGD fused into the block's backward: its gradients freed, the
         * linear layer's 330 floats kept; no momentum buffers. */
        const char *fused[] = {cfg, "--set", "run.device=cuda", "--set", "train.momentum=0",
                               "--overwrite", NULL};
        assert_int_equal(run(f, fused), 0);
        expect_output(f, "out.txt", "(weights 9.7 KiB, gradients 1.3 KiB, optimiser state 0 B, ");
    }
}

/* Limits print as integers; --set without '=' is a usage error as a bare
 * --set is; device = cuda without a GPU fails before printing a device, and
 * in a build without CUDA says so, naming the build option. */
static void test_small_things(void **state)
{
    fixture *f = *state;
    char cfg[128];
    write_digits_config(f, "small.ini", "small", "block 32, linear 10", "epochs = 1\n");
    snprintf(cfg, sizeof cfg, "%s/small.ini", f->dir);
    const char *batch[] = {cfg, "--set", "train.batch_size=0", NULL};
    EXPECT_FAILURE(batch, 1, "0 is out of range: expected >= 1 and <= 1048576");
    const char *budget[] = {cfg, "--set", "data.memory_budget_mb=0", NULL};
    EXPECT_FAILURE(budget, 1, "0 is out of range: expected > 0 and <= 16777216");
    const char *noeq[] = {cfg, "--set", "train.lr", NULL};
    EXPECT_FAILURE(noeq, 2, "--set train.lr: expected section.key=value");
    const char *nodot[] = {cfg, "--set=lr=1", NULL};
    EXPECT_FAILURE(nodot, 2, "--set lr=1: expected section.key=value");
    if (fn_cuda_device_count() == 0) {
        const char *cuda[] = {cfg, "--set", "run.device=cuda", NULL};
        if (fn_build_has_cuda())
            EXPECT_FAILURE(cuda, 1, "[run] device = cuda:0, but no usable GPU was found; use "
                                    "device = auto (a GPU when there is one, else the CPU) or "
                                    "device = cpu");
        else
            EXPECT_FAILURE(cuda, 1, "[run] device = cuda, but this build of fusenet has no CUDA "
                                    "backend (configured with -DFN_CUDA=OFF or without a CUDA "
                                    "toolkit); rebuild with -DFN_CUDA=ON, or use device = auto "
                                    "or device = cpu");
        char *out = slurp(path_in_dir(f, "out.txt", (char[256]){0}, 256));
        assert_null(strstr(out, "cuda:0"));
        free(out);
        assert_false(exists_in(f, "small"));
    }
}

/* --- the best model and early stopping ------------------------------------------------ */

/* The epoch of the first line that says the metric did not improve. */
static int first_without_improvement(const fixture *f)
{
    char *out = slurp(path_in_dir(f, "out.txt", (char[256]){0}, 256));
    const char *p = strstr(out, " since the best)");
    int epoch = 0;
    if (p) {
        while (p > out && p[-1] != '\n')
            p--;
        sscanf(p, "epoch %d/", &epoch);
    }
    free(out);
    return epoch;
}

/* keep_best writes best.h5 at the best validation accuracy, patience stops
 * the run, and both carry through --resume: a run cut where the metric had
 * stopped improving and resumed ends as the whole run, bit for bit. */
static void test_keep_best_and_patience(void **state)
{
    fixture *f = *state;
    char cfg[128], a[192], b[192];
    static const char extra[] = "epochs = 60\ncheckpoint_every = 1\nkeep_best = true\n"
                                "patience = 3\n";
    write_digits_config(f, "whole.ini", "whole", "block 32, linear 10", extra);
    write_digits_config(f, "parts.ini", "parts", "block 32, linear 10", extra);
    snprintf(cfg, sizeof cfg, "%s/whole.ini", f->dir);
    const char *whole[] = {cfg, NULL};
    assert_int_equal(run(f, whole), 0);
    expect_output(f, "out.txt", "stopped early: no improvement in the last 3 epochs");
    expect_output(f, "out.txt", "whole/best.h5\n");
    char csv[192];
    snprintf(csv, sizeof csv, "%s/whole/metrics.csv", f->dir);
    const int lines = count_lines(csv);
    assert_true(lines > 4 && lines < 61);
    const int cut = first_without_improvement(f);
    assert_true(cut > 1 && cut < lines - 1);

    snprintf(cfg, sizeof cfg, "%s/parts.ini", f->dir);
    char epochs[32];
    snprintf(epochs, sizeof epochs, "train.epochs=%d", cut);
    const char *part[] = {cfg, "--set", epochs, NULL};
    assert_int_equal(run(f, part), 0);
    const char *rest[] = {cfg, "--resume", NULL};
    assert_int_equal(run(f, rest), 0);
    expect_output(f, "out.txt", "stopped early: no improvement in the last 3 epochs");
    snprintf(a, sizeof a, "%s/whole/best.h5", f->dir);
    snprintf(b, sizeof b, "%s/parts/best.h5", f->dir);
    expect_same_weights(a, b, 2);
    snprintf(a, sizeof a, "%s/whole/weights.h5", f->dir);
    snprintf(b, sizeof b, "%s/parts/weights.h5", f->dir);
    expect_same_weights(a, b, 2);
    snprintf(b, sizeof b, "%s/parts/metrics.csv", f->dir);
    assert_int_equal(count_lines(b), lines);
    /* Resumed again, the stopped run stays stopped: no epoch more... */
    assert_int_equal(run(f, rest), 0);
    expect_output(f, "out.txt", "stopped early: no improvement in the last 3 epochs");
    assert_int_equal(count_lines(b), lines);
    /* ... unless patience grows. */
    const char *more[] = {cfg, "--resume", "--set", "train.patience=4", NULL};
    assert_int_equal(run(f, more), 0);
    assert_true(count_lines(b) > lines);
}

/* A finished run leaves its checkpoint: resumed with more epochs it
 * continues, and 30 epochs then 30 more end with the weights and metrics
 * of one 60-epoch run, bit for bit. */
static void test_extend_finished_run(void **state)
{
    fixture *f = *state;
    char cfg[128], a[192], b[192];
    write_digits_config(f, "long.ini", "long", "block 32, linear 10", "epochs = 60\n");
    write_digits_config(f, "short.ini", "short", "block 32, linear 10", "epochs = 30\n");
    snprintf(cfg, sizeof cfg, "%s/long.ini", f->dir);
    const char *whole[] = {cfg, NULL};
    assert_int_equal(run(f, whole), 0);
    snprintf(cfg, sizeof cfg, "%s/short.ini", f->dir);
    const char *first[] = {cfg, NULL};
    assert_int_equal(run(f, first), 0);
    assert_true(exists_in(f, "short/checkpoint.h5"));
    const char *more[] = {cfg, "--resume", "--set", "train.epochs=60", NULL};
    assert_int_equal(run(f, more), 0);
    expect_output(f, "out.txt", "short/checkpoint.h5: epoch 31, step 0\n");
    expect_output(f, "out.txt", "epoch 60/60: ");
    snprintf(a, sizeof a, "%s/long/weights.h5", f->dir);
    snprintf(b, sizeof b, "%s/short/weights.h5", f->dir);
    expect_same_weights(a, b, 2);
    snprintf(b, sizeof b, "%s/short/metrics.csv", f->dir);
    assert_int_equal(count_lines(b), 61);
}

/* [train] monitor and min_delta steer patience: the training loss,
 * watched with a min_delta larger than any gain, improves only at the
 * first epoch, so patience 2 stops the run after epoch 3 and names the
 * metric. */
static void test_monitor_and_min_delta(void **state)
{
    fixture *f = *state;
    char cfg[128];
    write_digits_config(f, "mon.ini", "mon", "block 32, linear 10",
                        "epochs = 10\npatience = 2\nkeep_best = true\n");
    snprintf(cfg, sizeof cfg, "%s/mon.ini", f->dir);
    const char *argv[] = {cfg, "--set", "train.monitor=train_loss", "--set", "train.min_delta=1",
                          NULL};
    assert_int_equal(run(f, argv), 0);
    expect_output(f, "out.txt", "epoch 1/10: ");
    expect_output(f, "out.txt", "epoch 3/10: ");
    expect_output(f, "out.txt", "stopped early: no improvement in the last 2 epochs (the best "
                                "train_loss, ");
    expect_output(f, "out.txt", ", at epoch 1)\n");
    expect_output(f, "out.txt", "best: epoch 1, train_loss ");
    char csv[192];
    snprintf(csv, sizeof csv, "%s/mon/metrics.csv", f->dir);
    assert_int_equal(count_lines(csv), 4);
}

/* --set train.optimizer=adam over a file written for SGD runs in one step:
 * the file's momentum becomes a notice. */
static void test_optimizer_by_set(void **state)
{
    fixture *f = *state;
    char cfg[128];
    write_digits_config(f, "opt.ini", "opt", "block 32, linear 10", "epochs = 1\n");
    snprintf(cfg, sizeof cfg, "%s/opt.ini", f->dir);
    const char *argv[] = {cfg, "--set", "train.optimizer=adam", "--set", "train.lr=0.001", NULL};
    assert_int_equal(run(f, argv), 0);
    expect_output(f, "out.txt", "opt.ini:9: [train] momentum applies to optimizer = sgd or rmsprop only; "
                                "ignored, as --set train.optimizer=adam chose adam\n");
}

/* Without a validation set the epoch line has no "valid loss" part; a
 * network of 12 outputs for the digits' labels 0 to 9 trains with a
 * notice naming the two outputs no row asks for. */
static void test_epoch_line_and_unused_outputs(void **state)
{
    fixture *f = *state;
    char text[1024], cfg[128];
    snprintf(text, sizeof text,
             "[data]\ntrain = %s\n[model]\nlayers = block 32, linear 12\n[train]\n"
             "batch_size = 64\nepochs = 1\n[run]\ndevice = cpu\nlog_every = 0\n"
             "[output]\ndir = wide\n", f->digits);
    write_file(f, "wide.ini", text);
    snprintf(cfg, sizeof cfg, "%s/wide.ini", f->dir);
    const char *argv[] = {cfg, NULL};
    assert_int_equal(run(f, argv), 0);
    expect_output(f, "out.txt", "digits_train.h5: no row is labelled 10 to 11, but the network "
                                "has 12 outputs (one a class): training only pushes those "
                                "outputs down; for the classes 0 to 9, end [model] layers with "
                                "a width of 10\n");
    expect_output(f, "out.txt", "epoch 1/1: train loss ");
    char *out = slurp(path_in_dir(f, "out.txt", (char[256]){0}, 256));
    const char *line = strstr(out, "epoch 1/1: ");
    assert_non_null(line);
    if (strncmp(strstr(line, "%") + 1, " (epoch ", 8) != 0)
        fail_msg("the epoch line goes on after the training figures: %.120s", line);
    assert_null(strstr(out, "valid loss"));
    free(out);
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
/* --- notices ---------------------------------------------------------------------- */

/* What is no error but a user should know comes as "notice: " lines on
 * stdout: a block as the last layer under cross_entropy, and targets read
 * other than as declared (one-hot rows, here). The example says neither. */
static void test_notices(void **state)
{
    fixture *f = *state;
    char cfg[128], dir[256], hot[600], corpus[600];
    write_digits_config(f, "notes.ini", "notes", "block 32, block 16", "epochs = 1\n");
    snprintf(cfg, sizeof cfg, "%s/notes.ini", f->dir);
    const char *last[] = {cfg, NULL};
    assert_int_equal(run(f, last), 0);
    expect_output(f, "out.txt", "notice: [model] layers ends with 'block 16' under loss = "
                                "cross_entropy: its outputs are normalised and activated, a "
                                "narrow range for logits; end with 'linear N'\n");
    snprintf(corpus, sizeof corpus, "%s/tests/bad_inputs/train.ini", getenv("FN_SOURCE_DIR"));
    snprintf(hot, sizeof hot, "data.train=%s/tests/bad_inputs/y_one_hot.h5",
             getenv("FN_SOURCE_DIR"));
    snprintf(dir, sizeof dir, "output.dir=%s/hot", f->dir);
    const char *one_hot[] = {corpus, "--set", hot, "--set", dir, NULL};
    assert_int_equal(run(f, one_hot), 0);
    expect_output(f, "out.txt", "y_one_hot.h5: dataset 'y' [24, 4] float32 read as class labels "
                                "[24] (every row is one-hot)");
    const char *example[] = {f->example, "--set", "train.epochs=1", "--set", "run.device=cpu",
                             "--set", "output.dir=ex", NULL};
    assert_int_equal(run(f, example), 0);
    char *out = slurp(path_in_dir(f, "out.txt", (char[256]){0}, 256));
    assert_null(strstr(out, "notice:"));
    free(out);
}

TEST_MAIN(NULL, NULL, T(test_usage_errors), T(test_config_errors), T(test_data_errors),
          T(test_example_one_epoch), T(test_example_adamw), T(test_init_from_weights),
          T(test_interrupt_and_resume), T(test_interrupt_and_resume_fused_cuda),
          T(test_resume_needs_same_order), T(test_resume_needs_same_target_units),
          T(test_resume_needs_same_optimizer_options), T(test_valid_rows_all_weigh_zero),
          T(test_hangup_and_closed_stdout),
          T(test_init_takes_eps_and_slope), T(test_output_folder_is_one_run), T(test_output_paths),
          T(test_summary_and_throughput), T(test_small_things), T(test_keep_best_and_patience),
          T(test_extend_finished_run), T(test_monitor_and_min_delta), T(test_optimizer_by_set),
          T(test_notices), T(test_dropout_first_and_init), T(test_epoch_line_and_unused_outputs))
