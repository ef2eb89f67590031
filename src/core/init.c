/* init.c — seeded initialisation: uniforms from cuRAND's Philox generator
 * (host API for CPU tensors, kernels/init_cuda.cu for GPU tensors) and
 * constant fills. */
#include <curand.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>

#include "core/cuda_runtime.h"
#include "fusenet/init.h"

/* Defined in kernels/init_cuda.cu (extern "C"). */
const char *fn_curand_error_string(curandStatus_t status);

static fn_status curand_fail(curandStatus_t status, const char *what)
{
    return fn_fail(FN_ERR_CUDA, "fn_init_uniform: %s: %s", what, fn_curand_error_string(status));
}

/* cuRAND's host generator re-initialises its whole state whenever its seed
 * or offset is set, which costs milliseconds a call (7 ms measured here:
 * a net of 8000 layers spent two minutes in it), while continuing a
 * sequence costs microseconds. Networks draw their tensors one after
 * another from one stream, so the generator of the last draw is kept with
 * where it stopped, and a draw that continues there is not re-seeded; the
 * numbers are the same either way (cuRAND's offsets count values). One
 * draw at a time, under the lock; the generator lives as long as the
 * process. */
static struct {
    pthread_mutex_t lock;
    curandGenerator_t gen; /* NULL until the first draw */
    uint64_t seed, next;   /* the stream and offset where the last draw stopped */
} host_cache = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* Positions the kept generator at rng, creating or re-seeding it if needed. */
static fn_status position_host(const fn_rng *rng)
{
    curandStatus_t cs = CURAND_STATUS_SUCCESS;
    if (!host_cache.gen) {
        cs = curandCreateGeneratorHost(&host_cache.gen, CURAND_RNG_PSEUDO_PHILOX4_32_10);
        if (cs != CURAND_STATUS_SUCCESS) {
            host_cache.gen = NULL;
            return curand_fail(cs, "curandCreateGeneratorHost");
        }
    } else if (host_cache.seed == rng->seed && host_cache.next == rng->offset) {
        return FN_OK;
    }
    host_cache.next = UINT64_MAX; /* unknown until both calls succeed */
    cs = curandSetPseudoRandomGeneratorSeed(host_cache.gen, rng->seed);
    if (cs != CURAND_STATUS_SUCCESS)
        return curand_fail(cs, "curandSetPseudoRandomGeneratorSeed");
    cs = curandSetGeneratorOffset(host_cache.gen, rng->offset);
    if (cs != CURAND_STATUS_SUCCESS)
        return curand_fail(cs, "curandSetGeneratorOffset");
    host_cache.seed = rng->seed;
    host_cache.next = rng->offset;
    return FN_OK;
}

static fn_status draw_host(float *out /* [n] */, size_t n, const fn_rng *rng)
{
    pthread_mutex_lock(&host_cache.lock);
    fn_status st = position_host(rng);
    if (st == FN_OK) {
        curandStatus_t cs = curandGenerateUniform(host_cache.gen, out, n);
        /* After a failure where the generator stands is unknown. */
        host_cache.next = cs == CURAND_STATUS_SUCCESS ? rng->offset + n : UINT64_MAX;
        if (cs != CURAND_STATUS_SUCCESS)
            st = curand_fail(cs, "curandGenerateUniform");
    }
    pthread_mutex_unlock(&host_cache.lock);
    return st;
}

/* Same numbers as the GPU: Philox uniforms, then lo + (hi - lo) * u with
 * each operation rounded separately (C11 without FP_CONTRACT never fuses),
 * as init_cuda.cu's __fadd_rn(lo, __fmul_rn(hi - lo, u)). */
static fn_status uniform_host(float *out /* [n] */, size_t n, float lo, float hi,
                              const fn_rng *rng)
{
    FN_TRY(draw_host(out, n, rng));
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
