/* test_multilabel.c — loss = bce_with_logits end to end, as a user runs it:
 * the digits turned into a multi-label set (each image's targets the four
 * bits of its digit, float32 [N, 4] of 0 and 1) train with ./train (on
 * the GPU where there is one: device auto) to a validation label accuracy
 * (the fraction of the N * 4 labels whose logit > 0 matches target >= 0.5)
 * of at least 0.9, the validation loss falling; pos_weight trains too; a
 * block last gets the notice a loss of logits gives; and
 * ./predict on the weights evaluates the float targets as any values
 * (the mean squared error of the logits) without failing, and with
 * --probabilities writes each output's sigmoid (the labels are
 * independent), not a softmax across them, and no argmax 'classes'.
 * Needs FN_BUILD_DIR and FN_SOURCE_DIR, set by ctest. */
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

#include "h5_write.h"
#include "program.h"
#include "test_main.h"

enum { IN = 64, BITS = 4, MAX_ROWS = 2048 };

/* `to`: the digits file `from`'s inputs X and the bits of its labels y. */
static void write_bits(const char *from, const char *to)
{
    static float x[MAX_ROWS * IN], bits[MAX_ROWS * BITS];
    static int32_t y[MAX_ROWS];
    hid_t in = H5Fopen(from, H5F_ACC_RDONLY, H5P_DEFAULT);
    assert_true(in >= 0);
    hid_t xs = H5Dopen2(in, "X", H5P_DEFAULT), ys = H5Dopen2(in, "y", H5P_DEFAULT);
    hid_t space = H5Dget_space(ys);
    const hssize_t rows = H5Sget_simple_extent_npoints(space);
    assert_true(rows > 0 && rows <= MAX_ROWS);
    assert_true(H5Dread(xs, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, x) >= 0);
    assert_true(H5Dread(ys, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, y) >= 0);
    H5Sclose(space), H5Dclose(xs), H5Dclose(ys), H5Fclose(in);
    for (hssize_t i = 0; i < rows; i++)
        for (int b = 0; b < BITS; b++)
            bits[i * BITS + b] = (float)((y[i] >> b) & 1);
    hid_t out = H5Fcreate(to, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    assert_true(out >= 0);
    h5_put(out, "X", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 2, (hsize_t)rows, IN, x);
    h5_put(out, "bits", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 2, (hsize_t)rows, BITS, bits);
    H5Fclose(out);
}

static int setup(void **state)
{
    program_files *f = program_files_new("fn_multilabel_");
    char from[PROGRAM_PATH_CAP];
    snprintf(from, sizeof from, "%s", source_path("data/digits_train.h5"));
    write_bits(from, program_files_at(f, "train.h5"));
    snprintf(from, sizeof from, "%s", source_path("data/digits_valid.h5"));
    write_bits(from, program_files_at(f, "valid.h5"));
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    program_files_free(*state);
    return 0;
}

static void write_config(const program_files *f, int epochs, const char *extra)
{
    program_files_ini(f,
                      "[data]\ntrain = train.h5\nvalid = valid.h5\ninputs = X\ntargets = bits\n"
                      "[model]\nlayers = block 64, linear 4\ngroups = 8\n"
                      "[train]\nloss = bce_with_logits\nbatch_size = 32\nepochs = %d\n"
                      "lr = 0.05\nmomentum = 0.9\nseed = 1\n%s"
                      "[run]\ndevice = auto\nlog_every = 0\n[output]\ndir = out\n",
                      epochs, extra);
}

static int train(const program_files *f)
{
    const char *argv[] = {f->ini, NULL};
    int status = program_run("train", argv, f->dir, f->out, f->err);
    if (status != 0) {
        char *err = program_slurp(f->err);
        fail_msg("train exited %d:\n%s", status, err);
    }
    return status;
}

/* metrics.csv row `epoch` (1-based): its valid_loss and valid_acc. */
static void metrics_row(const program_files *f, int epoch, double *loss, double *acc)
{
    char *csv = program_slurp(program_files_at(f, "out/metrics.csv"));
    const char *line = csv;
    for (int i = 0; i < epoch && line; i++) {
        line = strchr(line, '\n');
        line = line ? line + 1 : NULL;
    }
    assert_non_null(line);
    int got = 0;
    double train_loss, train_acc;
    assert_int_equal(sscanf(line, "%d,%lf,%lf,%lf,%lf", &got, &train_loss, &train_acc, loss, acc),
                     5);
    assert_int_equal(got, epoch);
    free(csv);
}

static void test_trains_to_label_accuracy(void **state)
{
    program_files *f = *state;
    write_config(f, 4, "");
    train(f);
    double first_loss, first_acc, last_loss, last_acc;
    metrics_row(f, 1, &first_loss, &first_acc);
    metrics_row(f, 4, &last_loss, &last_acc);
    printf("valid loss %.4f -> %.4f, label accuracy %.4f -> %.4f\n", first_loss, last_loss,
           first_acc, last_acc);
    assert_true(last_loss < first_loss);
    assert_true(last_acc >= 0.9 && last_acc <= 1.0);
    char *out = program_slurp(f->out);
    assert_non_null(strstr(out, "valid loss"));
    free(out);

    /* predict: the float targets evaluated as values, the logits written */
    char weights[PROGRAM_PATH_CAP], valid[PROGRAM_PATH_CAP], pred[PROGRAM_PATH_CAP];
    program_files_path(f, "out/weights.h5", weights, sizeof weights);
    program_files_path(f, "valid.h5", valid, sizeof valid);
    program_files_path(f, "pred.h5", pred, sizeof pred);
    const char *argv[] = {weights, valid, pred, "--targets", "bits", "--device", "cpu", NULL};
    assert_int_equal(program_run("predict", argv, f->dir, f->out, f->err), 0);
    out = program_slurp(f->out);
    assert_non_null(strstr(out, "against 'bits': loss (mse)"));
    assert_non_null(strstr(out, "output 3: MAE"));
    free(out);
    assert_int_equal(access(pred, R_OK), 0);
}

static void test_pos_weight_trains(void **state)
{
    program_files *f = *state;
    write_config(f, 2, "pos_weight = 1, 2, 0.5, 3\n");
    train(f);
    double loss, acc;
    metrics_row(f, 2, &loss, &acc);
    assert_true(loss > 0 && acc >= 0.5 && acc <= 1.0);
}

/* A block, whose outputs are normalised and activated, last under this
 * loss of logits: the run says so, as under cross_entropy; a linear layer
 * last gets no notice. */
static void test_block_last_gets_notice(void **state)
{
    program_files *f = *state;
    write_config(f, 1, "");
    const char *argv[] = {f->ini, "--set", "model.layers=block 16, block 4", "--set",
                          "model.groups=4", NULL};
    assert_int_equal(program_run("train", argv, f->dir, f->out, f->err), 0);
    char *out = program_slurp(f->out);
    if (!strstr(out, "notice: [model] layers ends with 'block 4' under loss = bce_with_logits: "
                     "its outputs are normalised and activated, a narrow range for logits; end "
                     "with 'linear N'\n"))
        fail_msg("no notice of the block last; stdout:\n%s", out);
    free(out);
    const char *linear[] = {f->ini, "--overwrite", NULL};
    assert_int_equal(program_run("train", linear, f->dir, f->out, f->err), 0);
    out = program_slurp(f->out);
    assert_null(strstr(out, "notice: [model] layers ends with"));
    free(out);
}

/* Dataset `name` of the HDF5 file at path into out (float32, at most
 * cap values); the count read, or -1 when the file has no such dataset. */
static long read_floats(const char *path, const char *name, float *out, long cap)
{
    hid_t file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    assert_true(file >= 0);
    long n = -1;
    if (H5Lexists(file, name, H5P_DEFAULT) > 0) {
        hid_t set = H5Dopen2(file, name, H5P_DEFAULT), space = H5Dget_space(set);
        n = (long)H5Sget_simple_extent_npoints(space);
        assert_true(n <= cap);
        assert_true(H5Dread(set, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, out) >= 0);
        H5Sclose(space), H5Dclose(set);
    }
    H5Fclose(file);
    return n;
}

/* predict --probabilities on a multi-label network: each output's
 * sigmoid, as torch.sigmoid gives it, not the softmax of a classifier. */
static void test_predict_probabilities_are_sigmoids(void **state)
{
    program_files *f = *state;
    write_config(f, 1, "");
    train(f);
    char weights[PROGRAM_PATH_CAP], valid[PROGRAM_PATH_CAP], pred[PROGRAM_PATH_CAP];
    program_files_path(f, "out/weights.h5", weights, sizeof weights);
    program_files_path(f, "valid.h5", valid, sizeof valid);
    program_files_path(f, "pred.h5", pred, sizeof pred);
    static float logits[MAX_ROWS * BITS], probs[MAX_ROWS * BITS];
    const char *plain[] = {weights, valid, pred, "--device", "cpu", NULL};
    assert_int_equal(program_run("predict", plain, f->dir, f->out, f->err), 0);
    const long n = read_floats(pred, "outputs", logits, MAX_ROWS * BITS);
    assert_true(n >= BITS);
    const char *proba[] = {weights, valid, pred, "--device", "cpu", "--probabilities", NULL};
    assert_int_equal(program_run("predict", proba, f->dir, f->out, f->err), 0);
    assert_int_equal(read_floats(pred, "outputs", probs, MAX_ROWS * BITS), n);
    assert_int_equal(read_floats(pred, "classes", probs + n, 0), -1); /* no argmax */
    int sums_differ = 0;
    for (long r = 0; r < n / BITS; r++) {
        double sum = 0;
        for (int b = 0; b < BITS; b++) {
            const long k = r * BITS + b;
            const double want = 1.0 / (1.0 + exp(-(double)logits[k]));
            /* float32 rounding of a value in (0, 1]: half an ulp, at most
             * 2^-25 (about 3e-8); the float64 sigmoid's own error is far
             * below that. */
            if (fabs((double)probs[k] - want) > 0x1p-25)
                fail_msg("row %ld output %d: logit %g, probability %.9g, sigmoid %.9g", r, b,
                         (double)logits[k], (double)probs[k], want);
            sum += probs[k];
        }
        sums_differ += fabs(sum - 1.0) > 0.01;
    }
    assert_true(sums_differ > 0); /* not a softmax across the row */
    /* with its float targets: evaluated as values, written as probabilities */
    const char *with[] = {weights, valid, pred, "--device", "cpu", "--probabilities",
                          "--targets", "bits", NULL};
    assert_int_equal(program_run("predict", with, f->dir, f->out, f->err), 0);
    static float again[MAX_ROWS * BITS];
    assert_int_equal(read_floats(pred, "outputs", again, MAX_ROWS * BITS), n);
    assert_memory_equal(again, probs, (size_t)n * sizeof(float));
}

TEST_MAIN(NULL, NULL, cmocka_unit_test_setup_teardown(test_trains_to_label_accuracy, setup, teardown),
          cmocka_unit_test_setup_teardown(test_pos_weight_trains, setup, teardown),
          cmocka_unit_test_setup_teardown(test_block_last_gets_notice, setup, teardown),
          cmocka_unit_test_setup_teardown(test_predict_probabilities_are_sigmoids, setup,
                                          teardown))
