/* param.c — a parameter's bfloat16 copy (param.h): who keeps it, and the
 * refresh its writers call, rounding value into it on the context's stream
 * with the forward's own rounding kernel (fn_cuda_to_bf16), so a kept copy
 * holds the bits the forward would have made. */
#include "core/gemm_cuda.h"
#include "core/test_hooks.h"
#include "fusenet/param.h"

int fn_param_bf16_kept(const fn_param *p)
{
    return p && p->value_bf16 && p->bf16_keepers > 0;
}

/* Only a GPU context in a mode of bfloat16 operands has copies: anywhere
 * else the field is not looked at (a parameter a program filled in field
 * by field may hold anything there). */
static int has_copies(fn_context *ctx)
{
    return ctx && fn_context_device(ctx) == FN_CUDA &&
           fn_math_policy_of(fn_context_math(ctx))->bf16_operands;
}

void *fn_param_bf16_written(const fn_param *p, fn_context *ctx)
{
    return fn_param_bf16_kept(p) && has_copies(ctx) ? p->value_bf16 : NULL;
}

fn_status fn_param_keep_bf16(fn_param *p, fn_context *ctx)
{
    if (!p || !p->value_bf16 || !has_copies(ctx) || fn_test_bf16_copy_off())
        return FN_OK;
    p->bf16_keepers++;
    return fn_param_refresh_bf16(p, ctx);
}

void fn_param_release_bf16(fn_param *p)
{
    if (p && p->bf16_keepers > 0)
        p->bf16_keepers--;
}

fn_status fn_param_refresh_bf16(fn_param *p, fn_context *ctx)
{
    if (!fn_param_bf16_written(p, ctx))
        return FN_OK;
    if (p->value.device != FN_CUDA)
        return fn_fail(FN_ERR_INVALID, "parameter %s: its bfloat16 copy is refreshed on the GPU "
                       "that holds its value", p->name ? p->name : "(unnamed)");
    return fn_cuda_to_bf16(ctx, (fn_bf16 *)p->value_bf16, p->value.data,
                           fn_tensor_count(&p->value), NULL, NULL, 0);
}
