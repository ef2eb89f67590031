/* device_impl.h (private) — what a fn_context (fusenet/device.h) holds. The CUDA part is opaque to
 * host C: kernels/cuda_state.h defines it. */
#ifndef FUSENET_CORE_DEVICE_IMPL_H
#define FUSENET_CORE_DEVICE_IMPL_H

#include "fusenet/device.h"

struct fn_cuda_state;

struct fn_context {
    fn_device device;
    fn_math math;
    int gpu;                    /* CUDA device ordinal; -1 on the CPU */
    struct fn_cuda_state *cuda; /* NULL on the CPU */
};

#endif
