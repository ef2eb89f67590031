/* target_norm.c — target standardisation (target_norm.h): the statistics
 * of a set's mse targets kept as an fn_input_norm (the same transform on
 * the targets), the group `/target_norm`, and the map back. */
#include <stdlib.h>

#include "fusenet/target_norm.h"
#include "data/input_norm_impl.h"

fn_status fn_target_norm_from_data(fn_input_norm **out, fn_context *ctx, fn_data *data)
{
    *out = NULL;
    const int n = fn_data_out_features(data);
    double *mean = malloc((size_t)n * sizeof(double)), *std = malloc((size_t)n * sizeof(double));
    int *constant = malloc((size_t)n * sizeof(int));
    fn_status st = mean && std && constant ? FN_OK : fn_fail(FN_ERR_NOMEM, "out of host memory");
    if (st == FN_OK)
        st = fn_data_target_stats(data, mean, std, constant);
    if (st == FN_OK)
        st = fn_input_norm_from_stats(out, ctx, n, mean, std, constant, NULL, NULL, 0);
    free(mean);
    free(std);
    free(constant);
    return st;
}

fn_status fn_target_norm_load(fn_input_norm **norm, fn_context *ctx, const char *path,
                              int features)
{
    return fn_input_norm_load_group(norm, ctx, path, features, FN_TARGET_NORM_GROUP);
}

void fn_target_norm_undo(const fn_input_norm *norm, float *y, long long rows)
{
    const int f = norm->features;
    for (long long i = 0; i < rows; i++)
        for (int j = 0; j < f; j++) {
            const float scaled = y[i * f + j] * norm->std[j];
            y[i * f + j] = scaled + norm->mean[j];
        }
}
