/* test_sample_weight_cuda.c — per-row sample weights on the GPU are
 * refused, not ignored (the losses' kernels take no per-row weights):
 *  - every registered loss's read on CUDA tensors with weights fails,
 *    naming sample_weight and device="cpu", where without weights it
 *    runs;
 *  - a loss tally's step (the deferred and graphed steps' path) refuses
 *    them the same way;
 *  - a trainer on the GPU with a weighted memory set fails at set-up,
 *    before any step, naming the set, sample_weight and device="cpu".
 * Skips without a GPU. */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "check.h"
#include "core/cuda_runtime.h"
#include "expect.h"
#include "fusenet/config.h"
#include "fusenet/loss_kind.h"
#include "nn/loss_tally.h"
#include "fusenet/memory_set.h"
#include "fusenet/trainer.h"
#include "program.h"
#include "test_main.h"

enum { ROWS = 8, COLS = 3 };

static const char *const refused = "per-row sample weights (sample_weight) are supported on "
                                   "the CPU only; train on device=\"cpu\"";

static void loss_read_refuses_weights(void **state)
{
    (void)state;
    fn_context *ctx = context_or_skip(FN_CUDA);
    float host[ROWS * COLS], w[ROWS];
    int32_t labels[ROWS];
    for (int i = 0; i < ROWS * COLS; i++)
        host[i] = (float)(i % 5) * 0.1f;
    for (int n = 0; n < ROWS; n++) {
        labels[n] = n % COLS;
        w[n] = 1.0f + (float)n;
    }
    fn_tensor pred = {0}, target = {0}, dpred = {0}, loss = {0};
    int32_t *dlabels = NULL;
    EXPECT_OK(fn_tensor_alloc(&pred, ROWS, COLS, FN_CUDA));
    EXPECT_OK(fn_tensor_alloc(&target, ROWS, COLS, FN_CUDA));
    EXPECT_OK(fn_tensor_alloc(&dpred, ROWS, COLS, FN_CUDA));
    EXPECT_OK(fn_tensor_alloc(&loss, 1, 1, FN_CUDA));
    EXPECT_OK(fn_tensor_upload(&pred, host, ROWS * COLS));
    EXPECT_OK(fn_tensor_upload(&target, host, ROWS * COLS));
    EXPECT_OK(fn_cuda_alloc((void **)&dlabels, sizeof labels));
    EXPECT_OK(fn_cuda_copy(dlabels, FN_CUDA, labels, FN_CPU, sizeof labels));
    for (int i = 0; i < fn_loss_kind_count(); i++) {
        const fn_loss_kind *kind = fn_loss_kind_at(i);
        void *options = kind->options_size ? calloc(1, kind->options_size) : NULL;
        if (kind->options_size) {
            /* The keys' defaults: huber's delta 1, the others' 0 or empty. */
            for (int k = 0; k < kind->n_options; k++)
                if (kind->options[k].type == FN_OPTION_FLOAT && kind->options[k].fallback)
                    *(float *)((char *)options + kind->options[k].offset) =
                        (float)strtod(kind->options[k].fallback, NULL);
        }
        fn_loss_targets t = {.labels = dlabels, .values = &target};
        float value = 0;
        int correct = 0;
        EXPECT_OK(kind->read(ctx, options, &pred, &t, &loss, &dpred, &value, &correct));
        t.weights = w;
        EXPECT_FAIL(kind->read(ctx, options, &pred, &t, &loss, &dpred, &value, &correct),
                    FN_ERR_INVALID, refused);
        fn_loss_tally *tally = NULL;
        EXPECT_OK(fn_loss_tally_create(&tally, ctx, 1));
        EXPECT_FAIL(fn_loss_tally_step(tally, kind, options, &pred, &t, &loss, &dpred),
                    FN_ERR_INVALID, refused);
        fn_loss_tally_destroy(tally);
        free(options);
    }
    fn_cuda_free(dlabels);
    fn_tensor_free(&pred);
    fn_tensor_free(&target);
    fn_tensor_free(&dpred);
    fn_tensor_free(&loss);
    fn_context_destroy(ctx);
}

static void trainer_refuses_weighted_set(void **state)
{
    (void)state;
    skip_without_gpu();
    char dir[64];
    program_temp_dir(dir, sizeof dir, "fn_sample_weight_cuda_");
    float x[ROWS * COLS], w[ROWS];
    int32_t y[ROWS];
    for (int i = 0; i < ROWS * COLS; i++)
        x[i] = (float)(i % 7) * 0.3f;
    for (int n = 0; n < ROWS; n++) {
        y[n] = n % 2;
        w[n] = 0.5f * (float)(n + 1);
    }
    fn_memory_set *m = NULL;
    EXPECT_OK(fn_memory_set_labels(&m, "train", x, ROWS, COLS, y));
    EXPECT_OK(fn_memory_set_weights(m, w));
    char text[512];
    snprintf(text, sizeof text,
             "[model]\nlayers = linear 2\n[train]\nepochs = 1\nbatch_size = 4\n"
             "[run]\ndevice = cuda\nlog_every = 0\n[output]\ndir = %s/out\n", dir);
    fn_config *cfg = NULL;
    EXPECT_OK(fn_config_parse(&cfg, "sw.ini", text));
    EXPECT_OK(fn_config_use_memory_set(cfg, "train", m));
    EXPECT_OK(fn_config_finish(cfg));
    fn_trainer *t = NULL;
    EXPECT_FAIL(fn_trainer_create(&t, cfg, NULL), FN_ERR_INVALID,
                "memory set 'train' has sample weights (sample_weight), which are supported on "
                "the CPU only; train on device=\"cpu\"");
    fn_trainer_destroy(t);
    fn_config_destroy(cfg);
    fn_memory_set_destroy(m);
    program_remove_dir(dir);
}

GPU_TEST_MAIN(NULL, NULL, cmocka_unit_test(loss_read_refuses_weights),
              cmocka_unit_test(trainer_refuses_weighted_set))
