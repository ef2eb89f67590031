/* init.c — seeded initialisation: uniforms from the Philox generator
 * (philox.c, cuRAND's numbers in plain C, for CPU tensors;
 * kernels/core/init_cuda.cu, cuRAND itself, for GPU tensors) and constant
 * fills. */
#include <math.h>
#include <stdint.h>

#include "core/cuda_runtime.h"
#include "core/philox.h"
#include "fusenet/init.h"

/* Same numbers as the GPU: Philox uniforms, then lo + (hi - lo) * u with
 * each operation rounded separately (C11 without FP_CONTRACT never fuses),
 * as init_cuda.cu's __fadd_rn(lo, __fmul_rn(hi - lo, u)). */
static fn_status uniform_host(float *out /* [n] */, size_t n, float lo, float hi,
                              const fn_rng *rng)
{
    fn_philox_uniform(out, n, rng->seed, rng->offset);
    const float range = hi - lo;
    for (size_t i = 0; i < n; i++) {
        const float scaled = range * out[i];
        out[i] = lo + scaled;
    }
    return FN_OK;
}

fn_status fn_init_uniform(fn_tensor *t, float lo, float hi, fn_rng *rng)
{
    FN_TRY(fn_tensor_check(t, "fn_init_uniform: tensor", t ? t->rows : 0, t ? t->cols : 0));
    if (!rng)
        return fn_fail(FN_ERR_INVALID, "fn_init_uniform: rng is NULL");
    if (!isfinite(lo) || !isfinite(hi) || !(lo <= hi))
        return fn_fail(FN_ERR_INVALID, "fn_init_uniform: bounds [%g, %g) are not a finite range",
                       (double)lo, (double)hi);
    const size_t n = fn_tensor_count(t);
    if (t->device == FN_CUDA)
        FN_TRY(fn_cuda_init_uniform(t->data, n, lo, hi, rng->seed, rng->offset));
    else
        FN_TRY(uniform_host(t->data, n, lo, hi, rng));
    rng->offset += n;
    return FN_OK;
}

fn_status fn_init_constant(fn_tensor *t, float value)
{
    FN_TRY(fn_tensor_check(t, "fn_init_constant: tensor", t ? t->rows : 0, t ? t->cols : 0));
    const size_t n = fn_tensor_count(t);
    if (t->device == FN_CUDA)
        return fn_cuda_fill(t->data, n, value);
    for (size_t i = 0; i < n; i++)
        t->data[i] = value;
    return FN_OK;
}
