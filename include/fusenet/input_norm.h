/* input_norm.h — input standardisation ([data] standardize): every input
 * column j is mapped to (x - mean[j]) / std[j] in float32, subtract then
 * divide, each rounded on its own (no FMA): the same bits on the CPU, the
 * GPU and in PyTorch's `(x - mean) / std` (scripts/weights_to_torch.py).
 *
 * The statistics are the training set's (fn_data_column_stats: float64
 * over every row, the population standard deviation; a constant column
 * gets std 1, so it maps to 0). They travel with the network: weights.h5
 * and checkpoint.h5 hold them as the group `/input_norm` with float32
 * datasets `mean` [in] and `std` [in] (docs/formats.md); a file
 * without the group has no standardisation. The loader applies them to
 * every batch on the device after its upload (fn_loader_set_norm), and
 * `predict` does the same with the weights file's. */
#ifndef FUSENET_INPUT_NORM_H
#define FUSENET_INPUT_NORM_H

#include "fusenet/api.h"

#include "fusenet/data.h"
#include "fusenet/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fn_input_norm fn_input_norm; /* opaque */

/* From host arrays of `features` values: every mean finite, every std
 * finite and > 0. The values are copied (to the context's device too);
 * ctx is borrowed and must outlive the norm. */
FN_API fn_status fn_input_norm_create(fn_input_norm **norm, fn_context *ctx, int features,
                                      const float *mean, const float *std);

/* From a set's column statistics (the training set's). *constant (may be
 * NULL) gets how many columns are constant and so got std 1;
 * constant_list (may be NULL) the first of them, up to list_cap. */
FN_API fn_status fn_input_norm_from_data(fn_input_norm **norm, fn_context *ctx, fn_data *data,
                                         int *constant, int *constant_list, int list_cap);

/* The `/input_norm` group of a weights file or checkpoint (read under the
 * probe, like every loader); *norm is NULL when the file has none.
 * features > 0: the datasets must have that many entries. */
FN_API fn_status fn_input_norm_load(fn_input_norm **norm, fn_context *ctx, const char *path,
                                    int features);

/* The statistics checked for what they do: data's first batch of rows
 * (fn_data_next_rows from the start: the file's first rows, or the first
 * epoch's first batch of a shuffled set) standardised as
 * fn_input_norm_apply does, on the host; every value must come out finite
 * (a mean of 3.4e38 or a std of 1e-45 passes fn_input_norm_create's checks
 * but overflows). The failure names `source` (where the statistics came
 * from; NULL: the training set's), the data's file, the row, the column,
 * the value and the statistics. The set is back at its start. */
FN_API fn_status fn_input_norm_check_data(const fn_input_norm *norm, fn_data *data, const char *source);

FN_API void fn_input_norm_destroy(fn_input_norm *norm); /* NULL is fine */

FN_API int fn_input_norm_features(const fn_input_norm *norm);
FN_API const float *fn_input_norm_mean(const fn_input_norm *norm); /* host [features] */
FN_API const float *fn_input_norm_std(const fn_input_norm *norm);  /* host [features] */

/* x [rows, features] in place, on the norm's device (x's must be it):
 * x = (x - mean) / std. On the GPU a kernel queued on the context's
 * stream. */
FN_API fn_status fn_input_norm_apply(const fn_input_norm *norm, fn_tensor *x);

#ifdef __cplusplus
}
#endif
#endif
