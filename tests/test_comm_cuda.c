/* test_comm_cuda.c — data parallelism's GPU side without a launcher or MPI
 * (the one-GPU machine may have neither), through FN_COMM_SELF_DEVICE: NCCL
 * with a communicator of one rank, what `mpirun -np 1` runs.
 *   - the communicator is NCCL's when the build has it (else the message
 *     names the missing NCCL), its sums of one rank leave the tensors as
 *     they were, tickets are checked, settle forgets them;
 *   - fn_comm_scale on the GPU equals the CPU's, bit for bit;
 *   - two epochs of training on the digits through the data-parallel step
 *     (per-layer sums during backward, per-layer updates) equal the plain
 *     run bit for bit, with momentum and weight decay and with Adam.
 * The CPU part of each (scaling, the single backend) runs everywhere; the
 * GPU parts skip without a GPU. */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "expect.h"
#include "fusenet/comm.h"
#include "fusenet/trainer.h"
#include "program.h"
#include "test_main.h"

enum { ROWS = 5, COLS = 7 };

static void fill(float *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        v[i] = (float)((int)(i * 37 % 101) - 50) / 7.0f;
}

static void single_backend_cpu(void **state)
{
    (void)state;
    fn_context *cpu = NULL;
    EXPECT_OK(fn_context_create(&cpu, FN_CPU, -1, FN_MATH_FP32));
    fn_comm *c = NULL;
    EXPECT_OK(fn_comm_create(&c, cpu, FN_COMM_SELF_DEVICE));
    assert_true(fn_comm_is_single(c)); /* the CPU's backend needs MPI */
    assert_int_equal(fn_comm_size(c), 1);
    double v[2] = {1.5, -2};
    EXPECT_OK(fn_comm_sum_doubles(c, v, 2));
    assert_true(v[0] == 1.5 && v[1] == -2);
    int flag = 7;
    EXPECT_OK(fn_comm_any(c, &flag));
    assert_int_equal(flag, 1);
    EXPECT_FAIL(fn_comm_sum_wait(c, 0), FN_ERR_INVALID, "no ticket 0");
    fn_comm_destroy(c);
    fn_context_destroy(cpu);
}

static void scale_matches_cpu(void **state)
{
    (void)state;
    fn_context *gpu = context_or_skip(FN_CUDA), *cpu = NULL;
    EXPECT_OK(fn_context_create(&cpu, FN_CPU, -1, FN_MATH_FP32));
    float host[ROWS * COLS], want[ROWS * COLS], got[ROWS * COLS];
    fill(host, ROWS * COLS);
    memcpy(want, host, sizeof host);
    fn_tensor tc = fn_tensor_view(want, ROWS, COLS, FN_CPU), tg;
    EXPECT_OK(fn_tensor_alloc(&tg, ROWS, COLS, FN_CUDA));
    EXPECT_OK(fn_tensor_upload(&tg, host, ROWS * COLS));
    const float factor = (float)(3.0 / 7.0);
    EXPECT_OK(fn_comm_scale(cpu, &tc, factor));
    EXPECT_OK(fn_comm_scale(gpu, &tg, factor));
    EXPECT_OK(fn_tensor_download(&tg, got, ROWS * COLS));
    assert_memory_equal(got, want, sizeof got);
    fn_tensor_free(&tg);
    fn_context_destroy(cpu);
    fn_context_destroy(gpu);
}

/* The NCCL communicator of one rank, or NULL (and the test passes) when the
 * build has no NCCL and says so. */
static fn_comm *nccl_or_message(fn_context *gpu)
{
    fn_comm *c = NULL;
    fn_status st = fn_comm_create(&c, gpu, FN_COMM_SELF_DEVICE);
    if (st != FN_OK) {
        assert_non_null(strstr(fn_last_error(), "this build has no NCCL"));
        return NULL;
    }
    assert_string_equal(fn_comm_name(c), "nccl");
    return c;
}

static void one_rank_sums(void **state)
{
    (void)state;
    fn_context *gpu = context_or_skip(FN_CUDA);
    fn_comm *c = nccl_or_message(gpu);
    if (c) {
        float host[ROWS * COLS], got[ROWS * COLS];
        fill(host, ROWS * COLS);
        fn_tensor a, b;
        EXPECT_OK(fn_tensor_alloc(&a, ROWS, COLS, FN_CUDA));
        EXPECT_OK(fn_tensor_alloc(&b, 1, COLS, FN_CUDA));
        EXPECT_OK(fn_tensor_upload(&a, host, ROWS * COLS));
        EXPECT_OK(fn_tensor_upload(&b, host, COLS));
        for (int round = 0; round < 3; round++) {
            fn_tensor *first[] = {&a}, *second[] = {&b, &a};
            int t0 = -1, t1 = -1;
            EXPECT_OK(fn_comm_sum_start(c, first, 1, &t0));
            EXPECT_OK(fn_comm_sum_start(c, second, 2, &t1));
            assert_int_equal(t0, 0);
            assert_int_equal(t1, 1);
            EXPECT_OK(fn_comm_sum_wait(c, t1));
            EXPECT_OK(fn_comm_sum_wait(c, t0));
            EXPECT_FAIL(fn_comm_sum_wait(c, 2), FN_ERR_INVALID, "no ticket 2");
            EXPECT_OK(fn_comm_settle(c));
        }
        EXPECT_OK(fn_tensor_download(&a, got, ROWS * COLS));
        assert_memory_equal(got, host, sizeof got);
        fn_tensor *cpu_tensor[] = {&(fn_tensor){.data = got, .rows = 1, .cols = 1,
                                                .device = FN_CPU}};
        int t = 0;
        EXPECT_FAIL(fn_comm_sum_start(c, cpu_tensor, 1, &t), FN_ERR_INVALID, "device");
        fn_tensor_free(&a);
        fn_tensor_free(&b);
        fn_comm_destroy(c);
    }
    fn_context_destroy(gpu);
}

/* --- training ----------------------------------------------------------------- */

static float *train_weights(const char *ini, const char *dir, const char *optimizer,
                            fn_comm_scope scope, size_t *n)
{
    fn_config *cfg = NULL;
    EXPECT_OK(fn_config_load(&cfg, ini));
    char set[256];
    snprintf(set, sizeof set, "output.dir=%s", dir);
    EXPECT_OK(fn_config_set(cfg, set));
    snprintf(set, sizeof set, "train.optimizer=%s", optimizer);
    EXPECT_OK(fn_config_set(cfg, set));
    if (strcmp(optimizer, "sgd") == 0) {
        /* Nesterov keeps the plain run's momentum out of backward: folded
         * there (optimizer.h, fn_optimizer_fold), mu buf + g would round
         * as one product, where the data-parallel step sums plain
         * gradients first and rounds the two apart. */
        EXPECT_OK(fn_config_set(cfg, "train.momentum=0.9"));
        EXPECT_OK(fn_config_set(cfg, "train.nesterov=true"));
        EXPECT_OK(fn_config_set(cfg, "train.weight_decay=0.0001"));
    }
    EXPECT_OK(fn_config_finish(cfg));
    const fn_trainer_options opt = {.overwrite = 1, .comm = scope};
    fn_trainer *t = NULL;
    EXPECT_OK(fn_trainer_create(&t, cfg, &opt));
    EXPECT_OK(fn_trainer_run(t));
    fn_net *net = fn_trainer_net(t);
    *n = 0;
    for (int i = 0; i < fn_net_n_params(net); i++)
        *n += (size_t)fn_net_param(net, i)->value.rows * (size_t)fn_net_param(net, i)->value.cols;
    float *w = malloc(sizeof *w * *n), *p = w;
    assert_non_null(w);
    for (int i = 0; i < fn_net_n_params(net); i++) {
        const fn_tensor *v = &fn_net_param(net, i)->value;
        EXPECT_OK(fn_tensor_download(v, p, (size_t)v->rows * (size_t)v->cols));
        p += (size_t)v->rows * (size_t)v->cols;
    }
    fn_trainer_destroy(t);
    fn_config_destroy(cfg);
    return w;
}

static void training_equals_plain(void **state)
{
    (void)state;
    fn_context *gpu = context_or_skip(FN_CUDA);
    fn_comm *probe = nccl_or_message(gpu);
    fn_context_destroy(gpu);
    if (!probe)
        return;
    fn_comm_destroy(probe);
    char dir[64];
    snprintf(dir, sizeof dir, "/tmp/fn_comm_cuda_XXXXXX");
    assert_non_null(mkdtemp(dir));
    char ini[128], a[128], b[128];
    snprintf(ini, sizeof ini, "%s/c.ini", dir);
    FILE *out = fopen(ini, "w");
    assert_non_null(out);
    fprintf(out,
            "[data]\ntrain = %s\n[model]\nlayers = block 64, block 32, linear 10\ngroups = 8\n"
            "[train]\nbatch_size = 50\nepochs = 2\nlr = 0.01\nseed = 7\n"
            "[run]\ndevice = cuda\nlog_every = 0\n",
            source_path("data/digits_train.h5"));
    fclose(out);
    static const char *const optimizers[] = {"sgd", "adam"};
    for (int k = 0; k < 2; k++) {
        snprintf(a, sizeof a, "%s/plain_%s", dir, optimizers[k]);
        snprintf(b, sizeof b, "%s/nccl_%s", dir, optimizers[k]);
        size_t na = 0, nb = 0;
        float *plain = train_weights(ini, a, optimizers[k], FN_COMM_SELF, &na);
        float *nccl = train_weights(ini, b, optimizers[k], FN_COMM_SELF_DEVICE, &nb);
        assert_int_equal(na, nb);
        if (memcmp(plain, nccl, sizeof *plain * na) != 0)
            fail_msg("%s: the one-rank NCCL run's weights differ from the plain run's",
                     optimizers[k]);
        free(plain);
        free(nccl);
        char cmd[300];
        snprintf(cmd, sizeof cmd, "rm -rf %s %s", a, b);
        assert_int_equal(system(cmd), 0);
    }
    remove(ini);
    rmdir(dir);
}

GPU_TEST_MAIN(NULL, NULL, cmocka_unit_test(single_backend_cpu), cmocka_unit_test(scale_matches_cpu),
              cmocka_unit_test(one_rank_sums), cmocka_unit_test(training_equals_plain))
