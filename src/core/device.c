/* device.c — the device context (fusenet/device.h): creating and naming
 * contexts and math modes; the GPU half lives in
 * kernels/core/device_cuda.cu. */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/device_impl.h"
#include "core/name_list.h"
#include "core/cuda_runtime.h"
#include "core/side_stream.h"
#include "core/workers.h"

int fn_cuda_device_count(void) { return fn_cuda_count_devices(); }

fn_status fn_context_create(fn_context **out, fn_device device, int gpu, fn_math math)
{
    if (!out)
        return fn_fail(FN_ERR_INVALID, "fn_context_create: out is NULL");
    *out = NULL;
    if (device != FN_CPU && device != FN_CUDA)
        return fn_fail(FN_ERR_INVALID, "fn_context_create: unknown device %d", (int)device);
    if (!fn_math_policy_of(math))
        return fn_fail(FN_ERR_INVALID, "fn_context_create: unknown math mode %d", (int)math);
    fn_context *ctx = calloc(1, sizeof *ctx);
    if (!ctx)
        return fn_fail(FN_ERR_NOMEM, "out of host memory for a context");
    ctx->device = device;
    ctx->math = math;
    ctx->gpu = -1;
    /* The element-wise passes take as many threads as the products
     * (OPENBLAS_NUM_THREADS, else the cores), so one setting steers both. */
    fn_status st = device == FN_CUDA ? fn_cuda_context_init(ctx, gpu)
                                     : fn_workers_create(&ctx->workers, openblas_get_num_threads());
    if (st != FN_OK) {
        free(ctx);
        return st;
    }
    *out = ctx;
    return FN_OK;
}

void fn_context_destroy(fn_context *ctx)
{
    if (!ctx)
        return;
    if (ctx->device == FN_CUDA)
        fn_cuda_context_release(ctx);
    fn_workers_destroy(ctx->workers);
    free(ctx);
}

fn_device fn_context_device(const fn_context *ctx) { return ctx->device; }
fn_math fn_context_math(const fn_context *ctx) { return ctx->math; }

fn_status fn_context_sync(fn_context *ctx)
{
    return ctx->device == FN_CUDA ? fn_cuda_context_sync(ctx) : FN_OK;
}

fn_status fn_context_side_begin(fn_context *ctx)
{
    return ctx->device == FN_CUDA ? fn_cuda_side_begin(ctx) : FN_OK;
}

void fn_context_side_end(fn_context *ctx)
{
    if (ctx->device == FN_CUDA)
        fn_cuda_side_end(ctx);
}

fn_status fn_context_join(fn_context *ctx)
{
    return ctx->device == FN_CUDA ? fn_cuda_join(ctx) : FN_OK;
}

fn_status fn_context_use_stream(fn_context *ctx, void *stream)
{
    if (!ctx || ctx->device != FN_CUDA)
        return fn_fail(FN_ERR_INVALID, "fn_context_use_stream: the context is not on a GPU");
    return fn_cuda_context_use_stream(ctx, stream, 0);
}

fn_status fn_context_own_stream(fn_context *ctx)
{
    if (!ctx || ctx->device != FN_CUDA)
        return fn_fail(FN_ERR_INVALID, "fn_context_own_stream: the context is not on a GPU");
    return fn_cuda_context_use_stream(ctx, NULL, 1);
}

const char *fn_device_name(fn_device device) { return device == FN_CUDA ? "cuda" : "cpu"; }

/* --- math modes: one row each ------------------------------------------------------ */

static const fn_math_policy policies[] = {
    [FN_MATH_FP32] = {.name = "fp32"},
    [FN_MATH_TF32] = {.name = "tf32", .tensor_cores = 1, .transposed_dweight = 1},
    [FN_MATH_TF32X3] = {.name = "tf32x3", .tensor_cores = 1, .split = 1, .transposed_dweight = 1},
    [FN_MATH_BF16] = {.name = "bf16", .bf16_operands = 1},
};
_Static_assert(sizeof policies / sizeof *policies == FN_MATH_MODES,
               "every math mode has its row");

const fn_math_policy *fn_math_policy_of(fn_math math)
{
    return (unsigned)math < FN_MATH_MODES ? &policies[math] : NULL;
}

const char *fn_math_list(char *buf, size_t cap)
{
    const char *names[FN_MATH_MODES];
    for (int i = 0; i < FN_MATH_MODES; i++)
        names[i] = policies[i].name;
    return fn_name_list(buf, cap, names, FN_MATH_MODES);
}

const char *fn_math_name(fn_math math)
{
    return (unsigned)math < FN_MATH_MODES ? policies[math].name : "unknown";
}

fn_status fn_math_parse(const char *text, fn_math *math)
{
    for (int i = 0; i < FN_MATH_MODES; i++) {
        if (text && strcmp(text, policies[i].name) == 0) {
            *math = (fn_math)i;
            return FN_OK;
        }
    }
    char known[64];
    return fn_fail(FN_ERR_INVALID, "unknown math mode '%s' (expected %s)", text ? text : "(null)",
                   fn_math_list(known, sizeof known));
}

void fn_context_describe(const fn_context *ctx, char *buf, size_t cap)
{
    if (!buf || cap == 0)
        return;
    if (!ctx || ctx->device != FN_CUDA)
        snprintf(buf, cap, "cpu");
    else
        fn_cuda_device_label(ctx->gpu, buf, cap);
}
