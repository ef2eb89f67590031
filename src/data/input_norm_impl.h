/* input_norm_impl.h (private) — the struct of fn_input_norm, its CUDA
 * launcher (kernels/input_norm_cuda.cu) and the HDF5 group `/input_norm`
 * that weights.c and checkpoint.c write and read (input_norm.c). */
#ifndef FUSENET_IO_INPUT_NORM_IMPL_H
#define FUSENET_IO_INPUT_NORM_IMPL_H

#include <hdf5.h>

#include "fusenet/input_norm.h"

#ifdef __cplusplus
extern "C" {
#endif

#define FN_INPUT_NORM_GROUP "input_norm"

struct fn_input_norm {
    fn_context *ctx; /* borrowed */
    int features;
    float *mean, *std;      /* host [features] */
    fn_tensor dmean, dstd;  /* [1, features] on the GPU; empty on the CPU */
};

/* x [rows, cols] on the GPU, in place, on ctx's stream. */
fn_status fn_input_norm_apply_cuda(fn_context *ctx, float *x, const float *mean,
                                   const float *std, int rows, int cols);

/* Writes the group (norm NULL: nothing). */
fn_status fn_input_norm_write(hid_t file, const char *path, const fn_input_norm *norm);

#ifdef __cplusplus
}
#endif
#endif
