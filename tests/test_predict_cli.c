/* test_predict_cli.c — the `predict` program's evaluation and outputs,
 * run as a user runs it on a classifier trained here on the
 * digits: without --targets only 'outputs' (logits); with --targets y the
 * loss and accuracy printed and 'classes' (each row's argmax) written; with
 * --probabilities 'outputs' rows that are softmax probabilities; with
 * --report the confusion matrix (its diagonal the rows classified right)
 * and the per-class precision, recall and F1; the
 * errors (a missing targets dataset, regression targets of the wrong width,
 * --probabilities with regression targets or on a regression network,
 * --report on one, usage) exit 1 or 2 with one
 * line naming the cause and leave no output file; so do input
 * standardisation that overflows on the file's first rows (a std of
 * 1e-45, a mean of 3.4e38: each passes the statistics' own checks) and an
 * output that is not finite (an input row of 3e38), named by its row. */
#define _POSIX_C_SOURCE 200809L
#include <hdf5.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "fusenet/version.h"
#include "h5_write.h"
#include "file_bytes.h"
#include "program.h"
#include "test_main.h"

enum { ROWS = 360, CLASSES = 10, CAP = 1024 };

typedef struct fixture {
    program_files *files;
    char weights[CAP], valid[CAP], values[CAP], out[CAP];
} fixture;

static int run(const fixture *f, const char *program, const char *const *argv)
{
    return program_run(program, argv, f->files->dir, f->files->out, f->files->err);
}

/* A regression file: the digits' inputs and targets [ROWS, width]. */
static void write_values(const fixture *f, int width)
{
    hid_t in = H5Fopen(f->valid, H5F_ACC_RDONLY, H5P_DEFAULT);
    hid_t xs = H5Dopen2(in, "X", H5P_DEFAULT);
    static float x[ROWS * 64], t[ROWS * CLASSES];
    assert_true(H5Dread(xs, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, x) >= 0);
    H5Dclose(xs);
    H5Fclose(in);
    for (int i = 0; i < ROWS * width; i++)
        t[i] = (float)(i % 7);
    hid_t file = H5Fcreate(f->values, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    assert_true(file >= 0);
    h5_put(file, "X", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 2, ROWS, 64, x);
    h5_put(file, "t", H5T_IEEE_F64LE, H5T_NATIVE_FLOAT, 2, ROWS, (hsize_t)width, t);
    H5Fclose(file);
}

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    f->files = program_files_new("fn_predict_");
    snprintf(f->weights, CAP, "%s/run/weights.h5", f->files->dir);
    snprintf(f->valid, CAP, "%s", source_path("data/digits_valid.h5"));
    snprintf(f->values, CAP, "%s/values.h5", f->files->dir);
    snprintf(f->out, CAP, "%s/out.h5", f->files->dir);
    char dir[CAP + 16];
    snprintf(dir, sizeof dir, "output.dir=%s/run", f->files->dir);
    const char *argv[] = {source_path("data/example.ini"), "--set", dir, "--set", "train.epochs=2",
                          "--set", "run.device=cpu", NULL};
    assert_int_equal(run(f, "train", argv), 0);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    *state = f;
    return 0;
}

/* Dataset `name` of out.h5 read as `type` into buf; 0 when it is not there. */
static int read_out(const fixture *f, const char *name, hid_t type, void *buf)
{
    hid_t file = H5Fopen(f->out, H5F_ACC_RDONLY, H5P_DEFAULT);
    assert_true(file >= 0);
    int there = H5Lexists(file, name, H5P_DEFAULT) > 0;
    if (there) {
        hid_t set = H5Dopen2(file, name, H5P_DEFAULT);
        assert_true(H5Dread(set, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) >= 0);
        H5Dclose(set);
    }
    H5Fclose(file);
    return there;
}

static char *stdout_text(const fixture *f) { return program_slurp(f->files->out); }

static void test_logits_classes_probabilities(void **state)
{
    fixture *f = *state;
    static float logits[ROWS * CLASSES], probs[ROWS * CLASSES];
    static int32_t classes[ROWS];
    const char *plain[] = {f->weights, f->valid, f->out, "--device", "cpu", NULL};
    assert_int_equal(run(f, "predict", plain), 0);
    char *text = stdout_text(f);
    assert_null(strstr(text, "accuracy"));
    free(text);
    assert_true(read_out(f, "outputs", H5T_NATIVE_FLOAT, logits));
    assert_false(read_out(f, "classes", H5T_NATIVE_INT32, classes));

    const char *eval[] = {f->weights, f->valid, f->out, "--device", "cpu", "--targets", "y",
                          NULL};
    assert_int_equal(run(f, "predict", eval), 0);
    text = stdout_text(f);
    assert_non_null(strstr(text, "predict: against 'y': loss "));
    double acc = 0;
    const char *at = strstr(text, "accuracy ");
    assert_non_null(at);
    assert_int_equal(sscanf(at, "accuracy %lf%%", &acc), 1);
    assert_true(acc > 80); /* two epochs on the digits */
    free(text);
    assert_true(read_out(f, "classes", H5T_NATIVE_INT32, classes));
    static float again[ROWS * CLASSES];
    assert_true(read_out(f, "outputs", H5T_NATIVE_FLOAT, again));
    assert_memory_equal(again, logits, sizeof logits); /* still the logits */
    for (int i = 0; i < ROWS; i++) {
        int best = 0;
        for (int j = 1; j < CLASSES; j++)
            best = logits[i * CLASSES + j] > logits[i * CLASSES + best] ? j : best;
        assert_int_equal(classes[i], best);
    }

    const char *p[] = {f->weights, f->valid, f->out, "--device", "cpu", "--probabilities", NULL};
    assert_int_equal(run(f, "predict", p), 0);
    assert_true(read_out(f, "outputs", H5T_NATIVE_FLOAT, probs));
    assert_true(read_out(f, "classes", H5T_NATIVE_INT32, classes));
    for (int i = 0; i < ROWS; i++) {
        double sum = 0, m = logits[i * CLASSES], z = 0;
        for (int j = 0; j < CLASSES; j++)
            m = fmax(m, logits[i * CLASSES + j]);
        for (int j = 0; j < CLASSES; j++)
            z += exp(logits[i * CLASSES + j] - m);
        for (int j = 0; j < CLASSES; j++) {
            float want = (float)(exp(logits[i * CLASSES + j] - m) / z);
            /* float64 softmax rounded once: exactly the program's. */
            assert_true(probs[i * CLASSES + j] == want);
            sum += probs[i * CLASSES + j];
        }
        assert_true(fabs(sum - 1) < 1e-5);
    }
}

static void expect_failure(const fixture *f, const char *const *argv, int status,
                           const char *needle, int line)
{
    remove(f->out);
    int got = run(f, "predict", argv);
    char *err = program_slurp(f->files->err);
    if (got != status || !strstr(err, needle))
        fail_msg("line %d: exit %d (expected %d), stderr '%s' (expected '%s')", line, got, status,
                 err, needle);
    free(err);
    assert_int_not_equal(access(f->out, F_OK), 0);
}
#define EXPECT_FAILURE(argv, status, needle) \
    expect_failure(*state, (argv), (status), (needle), __LINE__)

static void test_errors(void **state)
{
    fixture *f = *state;
    const char *missing[] = {f->weights, f->valid, f->out, "--targets", "labels", NULL};
    EXPECT_FAILURE(missing, 1, "digits_valid.h5: no dataset 'labels'");
    const char *wide[] = {f->weights, f->valid, f->out, "--targets", "X", NULL};
    EXPECT_FAILURE(wide, 1,
                   "digits_valid.h5: dataset 'X' has 64 columns, expected 10 (the model's outputs)");
    write_values(f, CLASSES);
    const char *probs[] = {f->weights, f->values, f->out, "--targets", "t", "--probabilities",
                           NULL};
    EXPECT_FAILURE(probs, 1, "--probabilities: dataset 't' holds values [N, out] (regression)");
    const char *novalue[] = {f->weights, f->valid, f->out, "--targets", NULL};
    EXPECT_FAILURE(novalue, 2, "--targets needs a value");
    if (!fn_build_has_cuda()) {
        const char *cuda[] = {f->weights, f->valid, f->out, "--device", "cuda", NULL};
        EXPECT_FAILURE(cuda, 1, "this build of fusenet has no CUDA backend (it was configured "
                                "with -DFN_CUDA=OFF, or without a CUDA toolkit); rebuild with "
                                "-DFN_CUDA=ON");
    }
    /* Regression targets of the model's width evaluate (a classifier's
     * logits against made-up values: the figures exist, that is all). */
    const char *values[] = {f->weights, f->values, f->out, "--targets", "t", NULL};
    assert_int_equal(run(f, "predict", values), 0);
    char *text = stdout_text(f);
    assert_non_null(strstr(text, "loss (mse)"));
    assert_non_null(strstr(text, "predict: output 9: MAE "));
    free(text);
}

/* --report: the confusion matrix (every row counted once, its diagonal
 * the accuracy's rows) and the per-class scores; only with --targets on
 * labels. */
static void test_report(void **state)
{
    fixture *f = *state;
    const char *argv[] = {f->weights, f->valid, f->out, "--device", "cpu", "--targets", "y",
                          "--report", NULL};
    assert_int_equal(run(f, "predict", argv), 0);
    char *text = stdout_text(f);
    long long correct = 0, rows = 0;
    const char *at = strstr(text, "accuracy ");
    assert_non_null(at);
    assert_int_equal(sscanf(at, "accuracy %*f%% (%lld of %lld rows)", &correct, &rows), 2);
    const char *m = strstr(text, "predict: confusion matrix (rows: the label, columns: the "
                                 "predicted class)\n");
    assert_non_null(m);
    m = strchr(strchr(m, '\n') + 1, '\n') + 1; /* past the column numbers */
    long long total = 0, diagonal = 0;
    for (int i = 0; i < CLASSES; i++) {
        int n = 0, label = -1;
        assert_int_equal(sscanf(m, "%d%n", &label, &n), 1);
        assert_int_equal(label, i);
        m += n;
        for (int k = 0; k < CLASSES; k++) {
            long long count = -1;
            assert_int_equal(sscanf(m, "%lld%n", &count, &n), 1);
            m += n;
            total += count;
            diagonal += i == k ? count : 0;
        }
    }
    assert_int_equal(total, ROWS);
    assert_int_equal(diagonal, correct);
    assert_non_null(strstr(text, "         class precision    recall        f1   support\n"));
    assert_non_null(strstr(text, "\n     macro avg "));
    const char *weighted = strstr(text, "\n  weighted avg ");
    assert_non_null(weighted);
    double p = 0, r = 0;
    long long support = 0;
    assert_int_equal(sscanf(weighted, "\n  weighted avg %lf %lf %*f %lld", &p, &r, &support), 3);
    assert_int_equal(support, ROWS);
    /* The support-weighted recall is the accuracy. */
    assert_true(fabs(r - (double)correct / ROWS) < 1e-4);
    free(text);

    const char *alone[] = {f->weights, f->valid, f->out, "--report", NULL};
    expect_failure(f, alone, 2, "--report needs --targets NAME", __LINE__);
    write_values(f, CLASSES);
    const char *values[] = {f->weights, f->values, f->out, "--targets", "t", "--report", NULL};
    expect_failure(f, values, 1, "--report: dataset 't' holds values [N, out] (regression)",
                   __LINE__);
}

/* --version names the library's version, commit, backends and GPU
 * architectures. */
static void test_version(void **state)
{
    fixture *f = *state;
    const char *argv[] = {"--version", NULL};
    assert_int_equal(run(f, "predict", argv), 0);
    char want[512];
    snprintf(want, sizeof want,
             "predict (fusenet) %s\ncommit: %s\nbackends: %s\nGPU architectures: %s\n",
             FUSENET_VERSION_STRING, fn_version_commit(), fn_build_backends(),
             fn_build_cuda_archs());
    char *text = stdout_text(f);
    assert_string_equal(text, want);
    free(text);
}

/* The digits' inputs, row `bad` set to 3e38 in every column (finite, so
 * the set opens), as dataset X of `path`. */
static void write_big_row(const fixture *f, const char *path, int bad)
{
    hid_t in = H5Fopen(f->valid, H5F_ACC_RDONLY, H5P_DEFAULT);
    hid_t xs = H5Dopen2(in, "X", H5P_DEFAULT);
    static float x[ROWS * 64];
    assert_true(H5Dread(xs, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, x) >= 0);
    H5Dclose(xs);
    H5Fclose(in);
    for (int j = 0; j < 64; j++)
        x[bad * 64 + j] = 3e38f;
    hid_t file = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    h5_put(file, "X", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 2, ROWS, 64, x);
    H5Fclose(file);
}

/* A copy of the trained weights with /input_norm: every column's mean and
 * std as given. */
static void write_norm_weights(const fixture *f, const char *path, float mean, float std)
{
    file_bytes_copy(f->weights, path);
    float m[64], s[64];
    for (int j = 0; j < 64; j++)
        m[j] = mean, s[j] = std;
    hid_t file = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    assert_true(file >= 0);
    /* The group is format version 2's. */
    const long long version = 2;
    hid_t attr = H5Aopen(file, "format_version", H5P_DEFAULT);
    assert_true(attr >= 0 && H5Awrite(attr, H5T_NATIVE_LLONG, &version) >= 0);
    H5Aclose(attr);
    hid_t group = H5Gcreate2(file, "input_norm", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    assert_true(group >= 0);
    h5_put(group, "mean", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 1, 64, 0, m);
    h5_put(group, "std", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 1, 64, 0, s);
    H5Gclose(group);
    H5Fclose(file);
}

static void test_nonfinite(void **state)
{
    fixture *f = *state;
    char tiny[CAP + 16], big[CAP + 16];
    snprintf(tiny, sizeof tiny, "%s/tiny_std.h5", f->files->dir);
    write_norm_weights(f, tiny, 3.4e38f, 1e-45f);
    const char *overflow[] = {tiny, f->valid, f->out, NULL};
    EXPECT_FAILURE(overflow, 1, "tiny_std.h5's input standardisation (group 'input_norm') "
                                "turn");
    char *err = program_slurp(f->files->err);
    assert_non_null(strstr(err, "digits_valid.h5 row 0 column 0"));
    free(err);
    /* Row 40 of 3e38 makes every output of that row non-finite; the
     * first batch (16 rows) is fine. */
    snprintf(big, sizeof big, "%s/big_row.h5", f->files->dir);
    write_big_row(f, big, 40);
    const char *outputs[] = {f->weights, big, f->out, "--batch", "16", NULL};
    EXPECT_FAILURE(outputs, 1, "out.h5: output row 40 column 0 is");
    char *text = stdout_text(f);
    assert_null(strstr(text, "rows written"));
    free(text);
}

/* Arguments of the wrong kind say what they are: the weights and inputs
 * swapped, a checkpoint for the weights, a CSV file, a dataset name the
 * file lacks (with the names it holds and the option that sets it), and
 * inputs of another width (the weights' expectation). */
static void test_wrong_files(void **state)
{
    fixture *f = *state;
    const char *swapped[] = {f->valid, f->weights, f->out, NULL};
    EXPECT_FAILURE(swapped, 1, "weights.h5 a weights file: the arguments are swapped");
    const char *both[] = {f->weights, f->weights, f->out, NULL};
    EXPECT_FAILURE(both, 1, "weights.h5 is a weights file, not inputs");
    char dir[CAP + 16], checkpoint[CAP + 32];
    snprintf(dir, sizeof dir, "output.dir=%s/ck", f->files->dir);
    const char *train[] = {source_path("data/example.ini"), "--set", dir, "--set",
                           "train.epochs=1", "--set", "train.checkpoint_every=1", "--set",
                           "run.device=cpu", NULL};
    assert_int_equal(run(f, "train", train), 0);
    snprintf(checkpoint, sizeof checkpoint, "%s/ck/checkpoint.h5", f->files->dir);
    const char *resumable[] = {checkpoint, f->valid, f->out, NULL};
    EXPECT_FAILURE(resumable, 1, "checkpoint.h5 is a checkpoint (what train --resume continues), "
                                 "not a weights file");
    char csv[CAP + 16];
    snprintf(csv, sizeof csv, "%s/inputs.csv", f->files->dir);
    FILE *c = fopen(csv, "w");
    assert_non_null(c);
    fputs("a,b\n1,2\n", c);
    fclose(c);
    const char *text[] = {f->weights, csv, f->out, NULL};
    EXPECT_FAILURE(text, 1, "inputs.csv is a text file (a CSV?), not HDF5");
    const char *name[] = {f->weights, f->valid, f->out, "--inputs", "data", NULL};
    EXPECT_FAILURE(name, 1, "no dataset 'data' (the file holds 'X', 'y'); set --inputs to the "
                            "name of the inputs");
    const char *targets[] = {f->weights, f->valid, f->out, "--targets", "label", NULL};
    EXPECT_FAILURE(targets, 1, "set --targets to the name of the targets");
    write_values(f, CLASSES);
    const char *narrow[] = {f->weights, f->values, f->out, "--inputs", "t", NULL};
    EXPECT_FAILURE(narrow, 1, "dataset 't' has 10 columns, expected 64 (the input columns the "
                              "network of");
}

/* A regression network, as its file says (loss = mse in its provenance,
 * or /target_norm), is refused by --probabilities and --report, naming
 * the option and the task, before the inputs are read. */
static void test_regression_network(void **state)
{
    fixture *f = *state;
    write_values(f, 1);
    char weights[2][CAP];
    for (int standardized = 0; standardized < 2; standardized++) {
        char dir[CAP + 16], data[CAP + 16];
        snprintf(dir, sizeof dir, "output.dir=%s/reg%d", f->files->dir, standardized);
        snprintf(data, sizeof data, "data.train=%s", f->values);
        snprintf(weights[standardized], CAP, "%s/reg%d/weights.h5", f->files->dir, standardized);
        const char *argv[] = {source_path("data/example.ini"), "--set", dir, "--set", data,
                              "--set", "data.valid=", "--set", "data.targets=t", "--set",
                              "train.loss=mse", "--set", "model.layers=block 16, linear 1",
                              "--set", standardized ? "data.standardize_targets=true"
                                                    : "data.standardize_targets=false",
                              "--set", "train.epochs=1", "--set", "run.device=cpu", NULL};
        assert_int_equal(run(f, "train", argv), 0);
    }
    const char *probs[] = {weights[0], f->valid, f->out, "--probabilities", NULL};
    EXPECT_FAILURE(probs, 1, "--probabilities: ");
    expect_failure(f, probs, 1, "reg0/weights.h5 is a regression network (trained with loss = "
                   "mse): its outputs are values, not class scores", __LINE__);
    const char *report[] = {weights[0], f->valid, f->out, "--targets", "y", "--report", NULL};
    expect_failure(f, report, 1, "--report: ", __LINE__);
    expect_failure(f, report, 1, "reg0/weights.h5 is a regression network (trained with loss = "
                   "mse); the report is for a classifier", __LINE__);
    const char *scaled[] = {weights[1], f->valid, f->out, "--probabilities", NULL};
    expect_failure(f, scaled, 1, "reg1/weights.h5 is a regression network", __LINE__);
    /* Without either option the network predicts. */
    const char *plain[] = {weights[0], f->valid, f->out, NULL};
    assert_int_equal(run(f, "predict", plain), 0);
}

TEST_MAIN_EACH(setup, program_files_teardown, cmocka_unit_test(test_logits_classes_probabilities),
               cmocka_unit_test(test_errors), cmocka_unit_test(test_report),
               cmocka_unit_test(test_regression_network), cmocka_unit_test(test_version),
               cmocka_unit_test(test_nonfinite), cmocka_unit_test(test_wrong_files))
