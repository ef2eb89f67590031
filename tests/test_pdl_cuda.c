/* test_pdl_cuda.c — programmatic dependent launch (src/core/kernel_launch_cuda.cuh)
 * changes when kernels start, never what they compute:
 *  - FUSENET_PDL=0 when a context is created turns PDL off for it; unset,
 *    the context uses it (on a GPU of sm_90 or later);
 *  - a launch fn_launch cannot make (an empty grid) still fails with the
 *    kernel's name, read by FN_CUDA_CHECK_LAUNCH;
 *  - a small network's training with PDL on and with it off, each replayed
 *    as CUDA graphs (the first step of each loader slot uncaptured, the
 *    later ones replays with programmatic edges) and run without graphs,
 *    ends with the same weights bit for bit and the same metrics.csv but
 *    its times: SGD with momentum on cross-entropy; AdamW with gradient
 *    clipping and dropout; mse; each with its batches gathered on the GPU.
 * Skips without a GPU. */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/cuda_runtime.h"
#include "expect.h"
#include "fusenet/status.h"
#include "fusenet/trainer.h"
#include "program.h"
#include "sets.h"
#include "test_main.h"
#include "trainer/trainer_impl.h"
#include "trainer_run.h"

enum { ROWS = 200, BATCH = 32, EPOCHS = 3, MSG_CAP = 2048, RUNS = 4 };

typedef program_files fixture;

/* The context's PDL flag with FUSENET_PDL set to value (NULL: unset). */
static int pdl_with(const char *value)
{
    if (value)
        setenv("FUSENET_PDL", value, 1);
    else
        unsetenv("FUSENET_PDL");
    fn_context *ctx = context_or_skip(FN_CUDA);
    const int pdl = fn_cuda_context_pdl(ctx);
    fn_context_destroy(ctx);
    unsetenv("FUSENET_PDL");
    return pdl;
}

static void test_switch(void **state)
{
    (void)state;
    skip_without_gpu();
    assert_int_equal(pdl_with("0"), 0);
    if (!pdl_with(NULL)) {
        print_message("this GPU is older than sm_90: PDL is never on\n");
        skip();
    }
    assert_int_equal(pdl_with("1"), 1);
}

static void test_launch_error(void **state)
{
    (void)state;
    fn_context *ctx = context_or_skip(FN_CUDA);
    void *p = NULL;
    must(fn_cuda_alloc(&p, sizeof(float)));
    assert_int_equal(fn_cuda_fill(p, 0, 1.0f), FN_ERR_CUDA);
    if (!strstr(fn_last_error(), "launch of fill_kernel"))
        fail_msg("the message does not name the launch: %s", fn_last_error());
    fn_cuda_free(p);
    fn_context_destroy(ctx);
}

/* Eight inputs; labels: three classes by two signs; t: three float
 * targets in (0, 1) (the mse run). */
static int32_t label_of(const float *x) { return (x[0] > 0) + (x[1] > 0); }
static float value_of(const float *x, int j)
{
    return x[j] * x[j + 1] > 0 ? 0.75f : 0.25f;
}

static const set_shape shape = {.cols = 8, .label = label_of, .values = 3, .value = value_of};

/* 6 batches of 32 and one of 8 an epoch; a warm-up over the first 9 steps. */
static int setup(void **state)
{
    *state = deferred_run_files("fn_pdl_cuda_", &shape, ROWS, 23, "block 32, block 32, linear 3",
                                "cuda", BATCH, EPOCHS);
    return 0;
}

/* The runs of `sets` with PDL on and off, with graphs and without, must end
 * alike. */
static void expect_pdl_same(const fixture *f, const char *name, const char *sets)
{
    skip_without_gpu();
    if (!pdl_with(NULL))
        skip();
    static const char *const pdl[RUNS] = {"1", "1", "0", "0"};
    static const int graphs[RUNS] = {1, 0, 1, 0};
    char msg[MSG_CAP], out[RUNS][64], how[RUNS][600];
    fn_config *cfg[RUNS] = {NULL};
    fn_trainer *t[RUNS];
    fn_status st;
    for (int i = 0; i < RUNS; i++) {
        snprintf(out[i], sizeof out[i], "%s_pdl%s_%s", name, pdl[i], graphs[i] ? "graph" : "plain");
        snprintf(how[i], sizeof how[i], "%s;run.data_on_device=true;run.cuda_graphs=%s", sets,
                 graphs[i] ? "true" : "false");
        setenv("FUSENET_PDL", pdl[i], 1);
        t[i] = trainer_run(f->dir, f->ini, out[i], NULL, how[i], 0, -1, &cfg[i], &st, msg, MSG_CAP);
        unsetenv("FUSENET_PDL");
        if (st != FN_OK)
            fail_msg("%s: %s", out[i], msg);
        assert_int_equal(fn_cuda_context_pdl(t[i]->ctx), strcmp(pdl[i], "1") == 0);
        if (graphs[i])
            assert_true(fn_trainer_graph_count(t[i]) > 0);
        else
            assert_int_equal(fn_trainer_graph_count(t[i]), 0);
    }
    expect_runs_same_as_first(f->dir, t, out, RUNS);
    for (int i = 0; i < RUNS; i++)
        trainer_release(t[i], cfg[i]);
}

static void test_pdl_sgd(void **state) { expect_pdl_same(*state, "sgd", "train.momentum=0.9"); }

static void test_pdl_adamw_clip_dropout(void **state)
{
    expect_pdl_same(*state, "adamw",
                    "train.optimizer=adamw;train.momentum=0;train.clip_grad_norm=0.5;"
                    "model.layers=block 32, dropout 0.25, block 32, linear 3");
}

static void test_pdl_mse(void **state)
{
    expect_pdl_same(*state, "mse", "data.targets=t;train.loss=mse");
}

#define PDL_TEST(test) cmocka_unit_test_setup_teardown(test, setup, deferred_run_teardown)

GPU_TEST_MAIN(NULL, NULL, cmocka_unit_test(test_switch), cmocka_unit_test(test_launch_error),
              PDL_TEST(test_pdl_sgd), PDL_TEST(test_pdl_adamw_clip_dropout), PDL_TEST(test_pdl_mse))
