/* expect.c — the shared FN_OK checks and GPU skips of expect.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "expect.h"
#include "core/test_hooks.h"

void must(fn_status st)
{
    if (st != FN_OK)
        fail_msg("%s: %s", fn_status_name(st), fn_last_error());
}

static int gpu_skips; /* the tests of this process skipped for want of a GPU */

void skip_without_gpu(void)
{
    if (fn_cuda_device_count() == 0) {
        printf("skipped: no CUDA GPU on this machine\n");
        gpu_skips++;
        skip();
    }
}

static int hook_skips; /* the tests of this process skipped for want of the test hooks */

void skip_without_test_hooks(void)
{
    if (!fn_test_hooks_enabled()) {
        printf("skipped: the library was built without FN_TEST_HOOKS (cmake -DFN_TEST_HOOKS=ON)\n");
        hook_skips++;
        skip();
    }
}

int test_program_status(int failed)
{
    if (failed)
        return failed;
    if (hook_skips)
        printf("%d test%s skipped without the test hooks: exit status %d, which ctest shows as "
               "skipped\n", hook_skips, hook_skips == 1 ? "" : "s", GPU_TESTS_SKIPPED);
    return hook_skips ? GPU_TESTS_SKIPPED : 0;
}

int gpu_program_status(int failed)
{
    if (failed)
        return failed;
    if (gpu_skips)
        printf("%d test%s skipped without a GPU: exit status %d, which ctest shows as skipped\n",
               gpu_skips, gpu_skips == 1 ? "" : "s", GPU_TESTS_SKIPPED);
    return gpu_skips ? GPU_TESTS_SKIPPED : test_program_status(0);
}

fn_context *context_or_skip(fn_device device)
{
    if (device == FN_CUDA)
        skip_without_gpu();
    fn_context *ctx = NULL;
    if (fn_context_create(&ctx, device, 0, FN_MATH_FP32) != FN_OK)
        fail_msg("context: %s", fn_last_error());
    return ctx;
}

void expect_fail_at(fn_status got, fn_status want, const char *needle, const char *file,
                    int line)
{
    if (got != want)
        fail_msg("%s:%d: status '%s', expected '%s' (message: '%s')", file, line,
                 fn_status_name(got), fn_status_name(want), fn_last_error());
    if (!strstr(fn_last_error(), needle))
        fail_msg("%s:%d: message '%s' does not contain '%s'", file, line, fn_last_error(),
                 needle);
}

int setup_cpu_context(void **state)
{
    fn_context *ctx = NULL;
    if (fn_context_create(&ctx, FN_CPU, 0, FN_MATH_FP32) != FN_OK) {
        printf("cpu context: %s\n", fn_last_error());
        return -1;
    }
    *state = ctx;
    return 0;
}

int teardown_context(void **state)
{
    fn_context_destroy(*state);
    return 0;
}

float *tensor_to_host(const fn_tensor *t)
{
    const size_t n = fn_tensor_count(t);
    float *h = malloc(n * sizeof *h);
    assert_non_null(h);
    EXPECT_OK(fn_tensor_download(t, h, n));
    return h;
}

void expect_tensors_equal(const fn_tensor *a, const fn_tensor *b, const char *what)
{
    const size_t n = fn_tensor_count(a);
    assert_int_equal(n, fn_tensor_count(b));
    float *x = tensor_to_host(a), *y = tensor_to_host(b);
    if (memcmp(x, y, n * sizeof *x) != 0)
        fail_msg("%s differs", what);
    free(x);
    free(y);
}

fn_nonfinite expect_nonfinite(const fn_net *net, int with_grads, int layer, const char *kind,
                              const char *what)
{
    fn_nonfinite found;
    EXPECT_OK(fn_net_find_nonfinite(net, with_grads, &found));
    assert_int_equal(found.layer, layer);
    if (kind)
        assert_string_equal(found.kind, kind);
    if (what)
        assert_string_equal(found.what, what);
    return found;
}
