/* loss_cpu.c — the losses on the CPU: values and gradients as torch's
 * MSELoss and CrossEntropyLoss (mean reduction), sums accumulated in double
 * in a fixed order. Arguments were validated by src/nn/loss.c. */
#include <math.h>
#include <stddef.h>

#include "nn/loss_backends.h"

double fn_loss_elementwise_scale(const float *weights, int rows, int cols)
{
    if (!weights)
        return 1.0 / ((double)rows * (double)cols);
    double w = 0.0;
    for (int n = 0; n < rows; n++)
        w += weights[n];
    return w > 0.0 ? 1.0 / (w * (double)cols) : 0.0;
}

/* Row i / cols's weight; 1 without weights (a product by 1 is exact, so
 * weights of 1 give the unweighted bits). */
static double row_weight(const float *weights, size_t i, size_t cols)
{
    return weights ? (double)weights[i / cols] : 1.0;
}

fn_status fn_cpu_mse_loss(const fn_tensor *pred, const fn_tensor *target, const float *weights,
                          fn_tensor *loss, fn_tensor *dpred)
{
    const size_t n = fn_tensor_count(pred), cols = (size_t)pred->cols;
    const double scale = fn_loss_elementwise_scale(weights, pred->rows, pred->cols);
    double sum = 0.0;
    for (size_t i = 0; i < n; i++) {
        const double d = (double)pred->data[i] - (double)target->data[i];
        sum += d * d * row_weight(weights, i, cols);
    }
    if (dpred) {
        for (size_t i = 0; i < n; i++) {
            const double d = (double)pred->data[i] - (double)target->data[i];
            dpred->data[i] = (float)(2.0 * d * scale * row_weight(weights, i, cols));
        }
    }
    loss->data[0] = (float)(sum * scale);
    return FN_OK;
}

/* Every label must name a column; checked before anything is written. */
static fn_status check_labels(const int32_t *labels /* [rows] */, int rows, int cols)
{
    for (int n = 0; n < rows; n++)
        if (labels[n] < 0 || labels[n] >= cols)
            return fn_fail(FN_ERR_INVALID, "row %d: label %d is outside [0, %d)", n,
                           (int)labels[n], cols);
    return FN_OK;
}

/* log sum_c exp(row_c), stable: the row's maximum is taken out first. */
static double log_sum_exp(const float *row /* [cols] */, int cols)
{
    double m = (double)row[0];
    for (int c = 1; c < cols; c++)
        if ((double)row[c] > m)
            m = (double)row[c];
    double s = 0.0;
    for (int c = 0; c < cols; c++)
        s += exp((double)row[c] - m);
    return m + log(s);
}

/* d loss / d row = (softmax(row) - onehot(label)) / rows. */
static void cross_entropy_grad_row(float *drow /* [cols] */, const float *row /* [cols] */,
                                   int cols, int label, double lse, double scale)
{
    for (int c = 0; c < cols; c++) {
        const double p = exp((double)row[c] - lse) - (c == label ? 1.0 : 0.0);
        drow[c] = (float)(p * scale);
    }
}

fn_status fn_cpu_cross_entropy_loss(const fn_tensor *logits, const int32_t *labels,
                                    fn_tensor *loss, fn_tensor *dlogits)
{
    const int rows = logits->rows, cols = logits->cols;
    FN_TRY(check_labels(labels, rows, cols));
    const double scale = 1.0 / (double)rows;
    double sum = 0.0;
    for (int n = 0; n < rows; n++) {
        const float *row = logits->data + (size_t)n * cols; /* [cols] */
        const double lse = log_sum_exp(row, cols);
        sum += lse - (double)row[labels[n]];
        if (dlogits)
            cross_entropy_grad_row(dlogits->data + (size_t)n * cols, row, cols, labels[n], lse,
                                   scale);
    }
    loss->data[0] = (float)(sum * scale);
    return FN_OK;
}

/* The first column holding the row's maximum (ties to the lower index). */
static int argmax_row(const float *row /* [cols] */, int cols)
{
    int best = 0;
    for (int c = 1; c < cols; c++)
        if (row[c] > row[best])
            best = c;
    return best;
}

fn_status fn_cpu_count_correct(const fn_tensor *logits, const int32_t *labels, int *correct)
{
    const int rows = logits->rows, cols = logits->cols;
    FN_TRY(check_labels(labels, rows, cols));
    int count = 0;
    for (int n = 0; n < rows; n++)
        if (argmax_row(logits->data + (size_t)n * cols, cols) == labels[n])
            count++;
    *correct = count;
    return FN_OK;
}
