/* test_train_bf16_cuda.c — the README's example (data/example.ini: two
 * blocks and a linear head on the handwritten digits, 20 epochs) trained on
 * the GPU in bf16 reaches the fp32 run's validation accuracy within one
 * point, with the example's SGD momentum 0.9 (backward, then the
 * optimiser) and again with momentum 0 (the fused plain-SGD step, whose
 * weight update is the bf16 dW product itself). Each run's summary of
 * device memory is printed beside the accuracies, and the bf16 run's
 * weights must count the blocks' bfloat16 weight copies exactly. Skips
 * without a GPU. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "expect.h"
#include "fusenet/config.h"
#include "fusenet/trainer.h"
#include "program.h"
#include "test_main.h"

typedef struct outcome {
    double valid_acc; /* after the last epoch */
    int epochs;
    fn_train_memory memory;
} outcome;

static void on_model(void *user, const fn_train_model *model)
{
    ((outcome *)user)->memory = model->memory;
}

static void on_epoch(void *user, const fn_train_epoch *e)
{
    outcome *o = user;
    o->valid_acc = e->valid.acc;
    o->epochs++;
}

static const fn_trainer_callbacks callbacks = {.on_model = on_model, .on_epoch = on_epoch};

/* data/example.ini on cuda:0 in `math` with [train] momentum `momentum`,
 * its output in <dir>/<math>_<momentum>. */
static outcome train_example(const char *dir, const char *math, const char *momentum)
{
    outcome o = {.valid_acc = NAN};
    char set[3][256];
    snprintf(set[0], sizeof set[0], "output.dir=%s/%s_%s", dir, math, momentum);
    snprintf(set[1], sizeof set[1], "run.math=%s", math);
    snprintf(set[2], sizeof set[2], "train.momentum=%s", momentum);
    fn_config *cfg = NULL;
    EXPECT_OK(fn_config_load(&cfg, source_path("data/example.ini")));
    EXPECT_OK(fn_config_set(cfg, "run.device=cuda:0"));
    for (int i = 0; i < 3; i++)
        EXPECT_OK(fn_config_set(cfg, set[i]));
    EXPECT_OK(fn_config_finish(cfg));
    const fn_trainer_options options = {.callbacks = &callbacks, .user = &o};
    fn_trainer *t = NULL;
    EXPECT_OK(fn_trainer_create(&t, cfg, &options));
    EXPECT_OK(fn_trainer_run(t));
    fn_trainer_destroy(t);
    fn_config_destroy(cfg);
    return o;
}

static void compare(const char *dir, const char *momentum)
{
    const outcome fp32 = train_example(dir, "fp32", momentum);
    const outcome bf16 = train_example(dir, "bf16", momentum);
    printf("momentum %s: validation accuracy fp32 %.2f %%, bf16 %.2f %% after %d epochs; "
           "activations fp32 %zu bytes, bf16 %zu bytes; weights fp32 %zu, bf16 %zu\n",
           momentum, 100 * fp32.valid_acc, 100 * bf16.valid_acc, bf16.epochs,
           fp32.memory.activations, bf16.memory.activations, fp32.memory.weights,
           bf16.memory.weights);
    assert_int_equal(fp32.epochs, bf16.epochs);
    /* The summary counts each block's bfloat16 weight copy with the
     * weights: 64 x 128 and 128 x 128 values of 2 bytes, each copy padded
     * to 64 floats (both already are): 16 KiB + 32 KiB. */
    assert_true(bf16.memory.weights == fp32.memory.weights + 2 * (64 * 128 + 128 * 128));
    assert_true(fp32.epochs > 0);
    /* The example reaches about 99 % in fp32; a broken bf16 path would not
     * come near, so the comparison cannot pass by both failing. */
    assert_true(fp32.valid_acc > 0.9);
    if (!(bf16.valid_acc >= fp32.valid_acc - 0.01))
        fail_msg("momentum %s: bf16 validation accuracy %.4f is more than 1 point below "
                 "fp32's %.4f",
                 momentum, bf16.valid_acc, fp32.valid_acc);
}

static void test_example_bf16_momentum(void **state)
{
    skip_without_gpu();
    compare(*state, "0.9");
}

static void test_example_bf16_fused_sgd(void **state)
{
    skip_without_gpu();
    compare(*state, "0");
}

static int setup(void **state)
{
    static char dir[64];
    program_temp_dir(dir, sizeof dir, "fn_train_bf16_");
    *state = dir;
    return 0;
}

static int teardown(void **state)
{
    program_remove_dir(*state);
    return 0;
}

GPU_TEST_MAIN(setup, teardown, cmocka_unit_test(test_example_bf16_momentum),
              cmocka_unit_test(test_example_bf16_fused_sgd))
