/* gpu_params.h — two sets of three GPU parameters holding the same values
 * and gradients, drawn from a seed: what the GPU optimiser tests run one
 * update on and compare another against (test_step_graph_cuda.c,
 * test_layer_updates_cuda.c). Include after <cmocka.h>. */
#ifndef FN_TEST_GPU_PARAMS_H
#define FN_TEST_GPU_PARAMS_H

#include <stdint.h>

#include "fusenet/param.h"

enum { GPU_PARAMS_N = 3 };

/* The parameters' shapes: 70 x 100, 3 x 1 and 130 x 70, so the
 * multi-tensor tables cut them into several chunks, one, and several. */
extern const int gpu_params_shapes[GPU_PARAMS_N][2];

typedef struct gpu_params {
    fn_param p[GPU_PARAMS_N];
    fn_param *list[GPU_PARAMS_N]; /* &p[i], as the optimisers take them */
} gpu_params;

/* a and b: the same values and gradients, uniform in [-1, 1) from seed. */
void gpu_params_make(gpu_params *a, gpu_params *b, uint64_t seed);
void gpu_params_free(gpu_params *a, gpu_params *b);

#endif
