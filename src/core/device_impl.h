/* device_impl.h (private) — what a fn_context (fusenet/device.h) holds. The CUDA part is opaque to
 * host C: src/core/cuda_state.h defines it. */
#ifndef FUSENET_CORE_DEVICE_IMPL_H
#define FUSENET_CORE_DEVICE_IMPL_H

#include "fusenet/device.h"

struct fn_cuda_state;
struct fn_workers;

struct fn_context {
    fn_device device;
    fn_math math;
    int gpu;                    /* CUDA device ordinal; -1 on the CPU */
    struct fn_cuda_state *cuda; /* NULL on the CPU */
    struct fn_workers *workers; /* the CPU's threads for element-wise passes, as
                                 * many as OpenBLAS's; NULL on the GPU */
};

#endif
