/* init.c — seeded initialisation: uniforms from cuRAND's Philox generator
 * (host API for CPU tensors, kernels/init_cuda.cu for GPU tensors) and
 * constant fills. */
#include <curand.h>
#include <math.h>

#include "core/cuda_runtime.h"
#include "fusenet/init.h"

/* Defined in kernels/init_cuda.cu (extern "C"). */
const char *fn_curand_error_string(curandStatus_t status);

static fn_status curand_fail(curandStatus_t status, const char *what)
{
    return fn_fail(FN_ERR_CUDA, "fn_init_uniform: %s: %s", what, fn_curand_error_string(status));
}

static fn_status draw_host(curandGenerator_t gen, float *out /* [n] */, size_t n,
                           const fn_rng *rng)
{
    curandStatus_t cs = curandSetPseudoRandomGeneratorSeed(gen, rng->seed);
    if (cs != CURAND_STATUS_SUCCESS)
        return curand_fail(cs, "curandSetPseudoRandomGeneratorSeed");
    cs = curandSetGeneratorOffset(gen, rng->offset);
    if (cs != CURAND_STATUS_SUCCESS)
        return curand_fail(cs, "curandSetGeneratorOffset");
    cs = curandGenerateUniform(gen, out, n);
    if (cs != CURAND_STATUS_SUCCESS)
        return curand_fail(cs, "curandGenerateUniform");
    return FN_OK;
}

/* Same numbers as the GPU: Philox uniforms, then lo + (hi - lo) * u with
 * each operation rounded separately (C11 without FP_CONTRACT never fuses),
 * as init_cuda.cu's __fadd_rn(lo, __fmul_rn(hi - lo, u)). */
static fn_status uniform_host(float *out /* [n] */, size_t n, float lo, float hi,
                              const fn_rng *rng)
{
    curandGenerator_t gen;
    curandStatus_t cs = curandCreateGeneratorHost(&gen, CURAND_RNG_PSEUDO_PHILOX4_32_10);
    if (cs != CURAND_STATUS_SUCCESS)
        return curand_fail(cs, "curandCreateGeneratorHost");
    fn_status st = draw_host(gen, out, n, rng);
    curandDestroyGenerator(gen);
    FN_TRY(st);
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
