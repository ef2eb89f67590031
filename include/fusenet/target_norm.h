/* target_norm.h — target standardisation for regression ([data]
 * standardize_targets): the network is trained on every mse target column
 * j as (t - mean[j]) / std[j] (the transform of input_norm.h, applied by
 * the loader to each batch's targets), so targets of any scale (25 to 346)
 * train with the same learning rate as targets near 1; its outputs are
 * mapped back with y * std[j] + mean[j] (multiply, then add, each rounded
 * on its own) by `predict` and scripts/weights_to_torch.py.
 *
 * The statistics are the training set's (fn_data_target_stats: float64,
 * population standard deviation; a constant column gets std 1). weights.h5
 * and best.h5 hold them as the group `/target_norm` with float32 datasets
 * `mean` [out] and `std` [out] (docs/formats.md). The losses a run reports
 * are of the standardised targets. */
#ifndef FUSENET_TARGET_NORM_H
#define FUSENET_TARGET_NORM_H

#include "fusenet/api.h"

#include "fusenet/input_norm.h"

#ifdef __cplusplus
extern "C" {
#endif

/* From a set of values' target columns (the training set's). */
FN_API fn_status fn_target_norm_from_data(fn_input_norm **norm, fn_context *ctx, fn_data *data);

/* The `/target_norm` group of a weights file (read under the probe); *norm
 * is NULL when the file has none. features: the network's outputs. */
FN_API fn_status fn_target_norm_load(fn_input_norm **norm, fn_context *ctx, const char *path,
                                     int features);

/* y [rows, features] on the host, in place: y = y * std + mean, the
 * network's outputs in the targets' own units. */
FN_API void fn_target_norm_undo(const fn_input_norm *norm, float *y, long long rows);

#ifdef __cplusplus
}
#endif
#endif
