/* test_multilabel.c — loss = bce_with_logits end to end, as a user runs it:
 * the digits turned into a multi-label set (each image's targets the four
 * bits of its digit, float32 [N, 4] of 0 and 1) train with ./train (on
 * the GPU where there is one: device auto) to a validation label accuracy
 * (the fraction of the N * 4 labels whose logit > 0 matches target >= 0.5)
 * of at least 0.9, the validation loss falling; pos_weight trains too; and
 * ./predict on the weights evaluates the float targets as any values
 * (the mean squared error of the logits, since a weights file does not
 * record its loss) without failing.
 * Needs FN_BUILD_DIR and FN_SOURCE_DIR, set by ctest. */
#include <hdf5.h>
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

TEST_MAIN(NULL, NULL, cmocka_unit_test_setup_teardown(test_trains_to_label_accuracy, setup, teardown),
          cmocka_unit_test_setup_teardown(test_pos_weight_trains, setup, teardown))
