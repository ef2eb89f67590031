/* input_norm_impl.h (private) — the struct of fn_input_norm, its CUDA
 * launcher (kernels/data/input_norm_cuda.cu) and the HDF5 group `/input_norm`
 * that weights.c and checkpoint.c write and read (input_norm.c). */
#ifndef FUSENET_IO_INPUT_NORM_IMPL_H
#define FUSENET_IO_INPUT_NORM_IMPL_H

#include <hdf5.h>

#include "fusenet/input_norm.h"

#ifdef __cplusplus
extern "C" {
#endif

#define FN_INPUT_NORM_GROUP "input_norm"
#define FN_TARGET_NORM_GROUP "target_norm" /* target_norm.h */

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
/* The same statistics under another group name (target_norm.h's). */
fn_status fn_input_norm_write_group(hid_t file, const char *path, const fn_input_norm *norm,
                                    const char *group);
fn_status fn_input_norm_load_group(fn_input_norm **norm, fn_context *ctx, const char *path,
                                   int features, const char *group);
/* From float64 statistics: a constant column (or std 0) gets std 1; how
 * many did into *n_constant (may be NULL), the first of them into list. */
fn_status fn_input_norm_from_stats(fn_input_norm **norm, fn_context *ctx, int features,
                                   const double *mean, const double *std, const int *constant,
                                   int *n_constant, int *list, int cap);

#ifdef __cplusplus
}
#endif
#endif
