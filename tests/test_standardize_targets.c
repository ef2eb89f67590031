/* test_standardize_targets.c — [data] standardize_targets through the
 * trainer, in process on the CPU, on memory sets whose one target is
 * 200 + 80 (x0 - x1) (a scale like scikit-learn's diabetes targets):
 *  - the run trains on the standardised targets: its validation loss (of
 *    standardised targets) falls below 0.05, and the statistics are the
 *    training targets' mean and population std;
 *  - weights.h5 holds them as /target_norm, equal to the trainer's;
 *  - fn_infer's outputs mapped back with fn_target_norm_undo are in the
 *    targets' units: their squared error is the validation loss times
 *    std^2, and their mean absolute error under 5 (of a 66-wide spread);
 *  - the same config without the key stops at a non-finite loss. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "check.h"
#include "expect.h"
#include "fusenet/config.h"
#include "fusenet/inference.h"
#include "fusenet/memory_set.h"
#include "fusenet/target_norm.h"
#include "fusenet/trainer.h"
#include "program.h"
#include "test_main.h"

enum { ROWS = 600, VALID = 200, IN = 4, PATH_CAP = 1024 };

typedef struct sets {
    float x[ROWS * IN], t[ROWS], vx[VALID * IN], vt[VALID];
    fn_memory_set *train, *valid;
} sets;

static void fill(float *x, float *t, int rows, chk_rng *rng)
{
    for (int i = 0; i < rows; i++) {
        for (int j = 0; j < IN; j++)
            x[i * IN + j] = (float)chk_uniform(rng, -1, 1);
        t[i] = 200.0f + 80.0f * (x[i * IN] - x[i * IN + 1]);
    }
}

static sets *make_sets(void)
{
    sets *s = calloc(1, sizeof *s);
    assert_non_null(s);
    chk_rng rng = chk_rng_seed(5);
    fill(s->x, s->t, ROWS, &rng);
    fill(s->vx, s->vt, VALID, &rng);
    EXPECT_OK(fn_memory_set_values(&s->train, "train", s->x, ROWS, IN, s->t, 1));
    EXPECT_OK(fn_memory_set_values(&s->valid, "valid", s->vx, VALID, IN, s->vt, 1));
    return s;
}

static void free_sets(sets *s)
{
    fn_memory_set_destroy(s->train);
    fn_memory_set_destroy(s->valid);
    free(s);
}

static void on_epoch(void *user, const fn_train_epoch *e) { *(double *)user = e->valid.loss; }

static const fn_trainer_callbacks callbacks = {.on_epoch = on_epoch};

/* The run `name` into <f>/<name> on the memory set s->train (and
 * s->valid when `with_valid`), finished. */
static fn_config *config(const program_files *f, const sets *s, const char *name,
                         int standardize_targets, int with_valid)
{
    char text[1024];
    snprintf(text, sizeof text,
             "[data]\nstandardize_targets = %s\n[model]\nlayers = block 32, linear 1\n"
             "groups = 4\n[train]\nloss = mse\nbatch_size = 32\nepochs = 15\nlr = 0.01\n"
             "momentum = 0.9\n[run]\ndevice = cpu\nlog_every = 0\n[output]\ndir = %s/%s\n",
             standardize_targets ? "true" : "false", f->dir, name);
    fn_config *cfg = NULL;
    EXPECT_OK(fn_config_parse(&cfg, name, text));
    EXPECT_OK(fn_config_use_memory_set(cfg, "train", s->train));
    if (with_valid)
        EXPECT_OK(fn_config_use_memory_set(cfg, "valid", s->valid));
    EXPECT_OK(fn_config_finish(cfg));
    return cfg;
}

static void test_trains_and_maps_back(void **state)
{
    (void)state;
    program_files *f = program_files_new("fn_std_targets_");
    sets *s = make_sets();
    fn_config *cfg = config(f, s, "std", 1, 1);
    double valid_loss = NAN;
    fn_trainer_options opt = {.callbacks = &callbacks, .user = &valid_loss};
    fn_trainer *t = NULL;
    EXPECT_OK(fn_trainer_create(&t, cfg, &opt));
    EXPECT_OK(fn_trainer_run(t));
    printf("validation loss of the standardised targets: %.4f\n", valid_loss);
    assert_true(valid_loss < 0.05);

    const fn_input_norm *norm = fn_trainer_target_norm(t);
    assert_non_null(norm);
    double mean = 0, var = 0;
    for (int i = 0; i < ROWS; i++)
        mean += s->t[i];
    mean /= ROWS;
    for (int i = 0; i < ROWS; i++)
        var += (s->t[i] - mean) * (s->t[i] - mean);
    const double sd = sqrt(var / ROWS);
    printf("statistics: mean %.4f (targets %.4f), std %.4f (%.4f)\n",
           (double)fn_input_norm_mean(norm)[0], mean, (double)fn_input_norm_std(norm)[0], sd);
    assert_true(fabs(fn_input_norm_mean(norm)[0] - mean) < 1e-3);
    assert_true(fabs(fn_input_norm_std(norm)[0] - sd) < 1e-3);

    char path[PATH_CAP];
    snprintf(path, sizeof path, "%s/std/weights.h5", f->dir);
    fn_context *cpu = NULL;
    EXPECT_OK(fn_context_create(&cpu, FN_CPU, -1, FN_MATH_FP32));
    fn_input_norm *saved = NULL;
    EXPECT_OK(fn_target_norm_load(&saved, cpu, path, 1));
    assert_non_null(saved);
    assert_memory_equal(fn_input_norm_mean(saved), fn_input_norm_mean(norm), sizeof(float));
    assert_memory_equal(fn_input_norm_std(saved), fn_input_norm_std(norm), sizeof(float));

    static float out[VALID];
    fn_memory_set *inputs = NULL;
    EXPECT_OK(fn_memory_set_inputs(&inputs, "valid inputs", s->vx, VALID, IN));
    EXPECT_OK(fn_infer(fn_trainer_net(t), NULL, inputs, out));
    fn_target_norm_undo(saved, out, VALID);
    double mae = 0, mse = 0;
    for (int i = 0; i < VALID; i++) {
        mae += fabs(out[i] - s->vt[i]);
        mse += (out[i] - s->vt[i]) * (out[i] - s->vt[i]);
    }
    mae /= VALID;
    mse /= VALID;
    /* The squared error in the targets' units is the standardised one
     * times std^2, up to float32 rounding of outputs near 200 (about 1e-5
     * of a residual near 5). */
    const double s2 = (double)fn_input_norm_std(norm)[0] * fn_input_norm_std(norm)[0];
    printf("outputs mapped back: mean absolute error %.3f, mse %.4f = %.4f std^2\n", mae, mse,
           mse / s2);
    assert_true(fabs(mse / (valid_loss * s2) - 1) < 1e-3);
    assert_true(mae < 5.0);

    fn_memory_set_destroy(inputs);
    fn_input_norm_destroy(saved);
    fn_context_destroy(cpu);
    fn_trainer_destroy(t);
    fn_config_destroy(cfg);
    free_sets(s);
    program_files_free(f);
}

static void test_raw_targets_diverge(void **state)
{
    (void)state;
    program_files *f = program_files_new("fn_raw_targets_");
    sets *s = make_sets();
    fn_config *cfg = config(f, s, "raw", 0, 0);
    fn_trainer *t = NULL;
    EXPECT_OK(fn_trainer_create(&t, cfg, NULL));
    const fn_status st = fn_trainer_run(t);
    printf("raw targets: %s\n", fn_last_error());
    assert_int_equal(st, FN_ERR_NUMERIC);
    fn_trainer_destroy(t);
    fn_config_destroy(cfg);
    free_sets(s);
    program_files_free(f);
}

TEST_MAIN(NULL, NULL, cmocka_unit_test(test_trains_and_maps_back),
          cmocka_unit_test(test_raw_targets_diverge))
