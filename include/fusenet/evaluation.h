/* evaluation.h — a trained network's figures over a whole set, as `predict
 * --targets` prints them: for classification (integer labels) the mean
 * softmax cross-entropy and the accuracy; for regression (values [N, out])
 * the mean squared error over every element (torch.nn.MSELoss's) and, per
 * output column, the mean absolute error and R² = 1 - SS_res / SS_tot
 * (SS_tot about the column's mean over the set; NaN when the column is
 * constant). Everything is accumulated in float64 on the host from the
 * float32 outputs, batch by batch, so a set of any size is evaluated in
 * one pass. Also the row-wise softmax and argmax `predict` writes. */
#ifndef FUSENET_EVALUATION_H
#define FUSENET_EVALUATION_H

#include "fusenet/api.h"

#include <stdint.h>

#include "fusenet/data.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fn_evaluation fn_evaluation; /* opaque */

typedef struct fn_evaluation_result {
    long long rows;
    double loss;        /* cross-entropy (labels) or mse (values) */
    double accuracy;    /* labels: fraction right (ties: the lower column); else NaN */
    long long correct;  /* labels: rows right */
    int outputs;        /* columns of the outputs */
    const double *mae;  /* values: [outputs], mean absolute error per column; else NULL */
    const double *r2;   /* values: [outputs], R² per column; else NULL */
} fn_evaluation_result;

/* kind: FN_DATA_LABELS or FN_DATA_FLOATS; outputs: the network's columns. */
FN_API fn_status fn_evaluation_create(fn_evaluation **eval, fn_data_targets kind, int outputs);
FN_API void fn_evaluation_destroy(fn_evaluation *eval); /* NULL is fine */

/* n rows of the network's outputs [n, outputs] (logits, for labels) with
 * their labels [n] (each in [0, outputs)) or targets [n, outputs]. */
FN_API fn_status fn_evaluation_add(fn_evaluation *eval, int n, const float *outputs,
                                   const int32_t *labels, const float *targets);
/* The figures so far; the arrays stay valid until the next add or destroy. */
FN_API void fn_evaluation_get(const fn_evaluation *eval, fn_evaluation_result *result);

/* Row-wise softmax of x [rows, cols] in place (float64 inside, max
 * subtracted first). */
FN_API void fn_softmax_rows(float *x, int rows, int cols);
/* classes[i]: the column of row i's largest value, the lower on ties. */
FN_API void fn_argmax_rows(const float *x, int rows, int cols, int32_t *classes);

#ifdef __cplusplus
}
#endif
#endif
