/* gpu_params.c — the twin GPU parameter sets of gpu_params.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>

#include <cmocka.h>

#include "check.h"
#include "expect.h"
#include "gpu_params.h"

const int gpu_params_shapes[GPU_PARAMS_N][2] = {{70, 100}, {3, 1}, {130, 70}};

void gpu_params_make(gpu_params *a, gpu_params *b, uint64_t seed)
{
    chk_rng rng = chk_rng_seed(seed);
    for (int i = 0; i < GPU_PARAMS_N; i++) {
        const int r = gpu_params_shapes[i][0], c = gpu_params_shapes[i][1];
        const size_t n = (size_t)r * (size_t)c;
        float *v = chk_alloc_float(n), *g = chk_alloc_float(n);
        for (size_t k = 0; k < n; k++) {
            v[k] = (float)chk_uniform(&rng, -1, 1);
            g[k] = (float)chk_uniform(&rng, -1, 1);
        }
        gpu_params *both[2] = {a, b};
        for (int j = 0; j < 2; j++) {
            fn_param *p = &both[j]->p[i];
            *p = (fn_param){.name = "p"};
            must(fn_tensor_alloc(&p->value, r, c, FN_CUDA));
            must(fn_tensor_alloc(&p->grad, r, c, FN_CUDA));
            must(fn_tensor_upload(&p->value, v, n));
            must(fn_tensor_upload(&p->grad, g, n));
            both[j]->list[i] = p;
        }
        free(v);
        free(g);
    }
}

void gpu_params_free(gpu_params *a, gpu_params *b)
{
    gpu_params *both[2] = {a, b};
    for (int j = 0; j < 2; j++)
        for (int i = 0; i < GPU_PARAMS_N; i++) {
            fn_tensor_free(&both[j]->p[i].value);
            fn_tensor_free(&both[j]->p[i].grad);
        }
}
