/* optim_contract.c — the optimisers' shared checks (optim_contract.h). */
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
#include "optim_contract.h"

int same_bits(const char *what, const char *name, const fn_tensor *t, const float *want, int n)
{
    float got[64];
    assert_true(n <= 64);
    must(fn_tensor_download(t, got, (size_t)n));
    for (int i = 0; i < n; i++)
        if (memcmp(&got[i], &want[i], sizeof got[i]) != 0) {
            printf("    %s, %s [%d]: got %.9g, expected %.9g\n", name, what, i, (double)got[i],
                   (double)want[i]);
            return 0;
        }
    return 1;
}

const float contract_theta0[3] = {1, -2, 0.5f};
const float contract_torch_grads[3][3] = {
    {0.5f, -1.5f, 3.5f}, {1.5f, 0.5f, -1.5f}, {-0.3f, 0.7f, 0.1f}};

int case_line(const char *name, int ok)
{
    printf("    %-14s %s\n", name, ok ? "ok" : "FAIL");
    return ok;
}

void run_cases(fn_device device, int n, int (*run)(fn_context *ctx, int i))
{
    fn_context *ctx = context_or_skip(device);
    int ok = 1;
    for (int i = 0; i < n; i++)
        ok &= run(ctx, i);
    fn_context_destroy(ctx);
    assert_true(ok);
}

void expect_optimizer_contract(fn_optimizer *opt, const char *name,
                               const char *const *state_names, int n_state)
{
    assert_string_equal(fn_optimizer_name(opt), name);
    assert_int_equal(fn_optimizer_n_state(opt), n_state);
    for (int k = 0; k < n_state; k++) {
        assert_string_equal(fn_optimizer_state_name(opt, k), state_names[k]);
        assert_non_null(fn_optimizer_state(opt, k, 0));
        assert_non_null(fn_optimizer_state(opt, k, 1));
        assert_null(fn_optimizer_state(opt, k, 2));
    }
    assert_null(fn_optimizer_state_name(opt, n_state));
    assert_null(fn_optimizer_state(opt, n_state, 0));
    const long long steps = fn_optimizer_steps(opt);
    char step[96];
    snprintf(step, sizeof step, "%s step %lld", name, steps + 1);
    fn_optimizer_set_lr(opt, NAN);
    assert_int_equal(fn_optimizer_step(opt), FN_ERR_INVALID);
    assert_non_null(strstr(fn_last_error(), step));
    assert_int_equal(fn_optimizer_steps(opt), steps);
}

void contract_params(fn_param params[2], fn_param *list[2], int n, const float *theta,
                     const float *g, fn_device device)
{
    const int cols[2] = {n, 1};
    params[0] = (fn_param){.name = "weight"};
    params[1] = (fn_param){.name = "bias"};
    for (int i = 0; i < 2; i++) {
        list[i] = &params[i];
        must(fn_tensor_alloc(&params[i].value, 1, cols[i], device));
        must(fn_tensor_alloc(&params[i].grad, 1, cols[i], device));
    }
    contract_restart(params, n, theta, g);
}

void contract_open(contract *k, fn_device device, int n, const float *theta, const float *g)
{
    k->ctx = context_or_skip(device);
    contract_params(k->params, k->list, n, theta, g, device);
}

void contract_close(contract *k)
{
    contract_params_free(k->params);
    fn_context_destroy(k->ctx);
}

void contract_restart(fn_param params[2], int n, const float *theta, const float *g)
{
    must(fn_tensor_upload(&params[0].value, theta, (size_t)n));
    must(fn_tensor_upload(&params[1].value, theta, 1));
    contract_grads(params, n, g);
}

void expect_after2(const fn_param params[2], int n, const float *want)
{
    assert_true(same_bits("weight after 2 steps", "fn_optimizer", &params[0].value, want, n));
    float bias;
    must(fn_tensor_download(&params[1].value, &bias, 1));
    assert_memory_equal(&bias, &want[0], sizeof bias);
}

void contract_two_steps(fn_optimizer *opt, fn_param params[2], int n, const float *g2,
                        const float *want)
{
    must(fn_optimizer_step(opt));
    contract_grads(params, n, g2);
    must(fn_optimizer_step(opt));
    assert_int_equal(fn_optimizer_steps(opt), 2);
    expect_after2(params, n, want);
}

void expect_cpu_gpu_same(const char *what, const fn_tensor *cpu, const fn_tensor *gpu, int count)
{
    float *a = chk_alloc_float((size_t)count), *b = chk_alloc_float((size_t)count);
    must(fn_tensor_download(cpu, a, (size_t)count));
    must(fn_tensor_download(gpu, b, (size_t)count));
    for (int i = 0; i < count; i++)
        if (memcmp(&a[i], &b[i], sizeof a[i]) != 0)
            fail_msg("%s [%d]: CPU %.9g, CUDA %.9g", what, i, (double)a[i], (double)b[i]);
    free(a);
    free(b);
}

int near_torch(const char *run, const fn_tensor *value, const double *want, int n, double tol)
{
    float got[64];
    assert_true(n <= 64);
    must(fn_tensor_download(value, got, (size_t)n));
    double worst = 0;
    for (int i = 0; i < n; i++)
        worst = fmax(worst, fabs((double)got[i] - want[i]));
    printf("    %-14s largest difference from torch %.3g (allowed %.3g)\n", run, worst, tol);
    return worst <= tol;
}

void contract_grads(fn_param params[2], int n, const float *g)
{
    must(fn_tensor_upload(&params[0].grad, g, (size_t)n));
    must(fn_tensor_upload(&params[1].grad, g, 1));
}

void contract_params_free(fn_param params[2])
{
    for (int i = 0; i < 2; i++) {
        fn_tensor_free(&params[i].value);
        fn_tensor_free(&params[i].grad);
    }
}
