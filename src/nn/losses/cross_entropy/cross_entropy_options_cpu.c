/* cross_entropy_options_cpu.c — cross-entropy with class weights and label
 * smoothing on the CPU (cross_entropy_options.h): sums in double, rows in
 * order, the gradient scaled by 1 / W once W is known. */
#include <math.h>
#include <stddef.h>

#include "nn/losses/cross_entropy/cross_entropy_options.h"

static double weight_of(const fn_ce_smoothing *s, int c) { return s->weights ? s->weights[c] : 1.0; }

/* Row n's sample weight; 1 without (a product by 1 is exact: the bits of
 * the loss without sample weights). */
static double row_weight_of(const fn_ce_smoothing *s, int n)
{
    return s->row_weights ? (double)s->row_weights[n] : 1.0;
}

/* W = sum_n r_n w[y_n]; FN_ERR_INVALID when a label is outside [0, cols). */
static fn_status label_weight_sum(const int32_t *labels, int rows, int cols,
                                  const fn_ce_smoothing *s, double *sum)
{
    *sum = 0.0;
    for (int n = 0; n < rows; n++) {
        if (labels[n] < 0 || labels[n] >= cols)
            return fn_fail(FN_ERR_INVALID, "row %d: label %d is outside [0, %d)", n,
                           (int)labels[n], cols);
        *sum += weight_of(s, labels[n]) * row_weight_of(s, n);
    }
    return FN_OK;
}

/* Row n's loss before the division by W, and its gradient times 1 / W,
 * each times the row's sample weight r. */
static double row_loss(float *drow /* [cols] or NULL */, const float *row /* [cols] */, int cols,
                       int label, const fn_ce_smoothing *s, double r, double inv_w)
{
    double m = row[0];
    for (int c = 1; c < cols; c++)
        m = fmax(m, (double)row[c]);
    double z = 0.0, wsum = 0.0, wx = 0.0;
    for (int c = 0; c < cols; c++) {
        z += exp((double)row[c] - m);
        wsum += weight_of(s, c);
        wx += weight_of(s, c) * (double)row[c];
    }
    const double lse = m + log(z), eps = s->eps, wy = weight_of(s, label);
    for (int c = 0; drow && c < cols; c++) {
        const double p = exp((double)row[c] - lse);
        const double g = (1.0 - eps) * wy * (p - (c == label ? 1.0 : 0.0)) +
                         eps / cols * (wsum * p - weight_of(s, c));
        drow[c] = (float)(g * r * inv_w);
    }
    return ((1.0 - eps) * wy * (lse - (double)row[label]) + eps / cols * (wsum * lse - wx)) * r;
}

fn_status fn_cpu_cross_entropy_smoothed(const fn_tensor *logits, const int32_t *labels,
                                        const fn_ce_smoothing *s, fn_tensor *loss,
                                        fn_tensor *dlogits)
{
    const int rows = logits->rows, cols = logits->cols;
    double w = 0.0;
    FN_TRY(label_weight_sum(labels, rows, cols, s, &w));
    /* Rows whose sample weights sum to 0 give 0 (fn_loss_targets); class
     * weights of 0 alone keep torch's 0/0. */
    const double inv_w = s->row_weights && w == 0.0 ? 0.0 : 1.0 / w;
    double sum = 0.0;
    for (int n = 0; n < rows; n++)
        sum += row_loss(dlogits ? dlogits->data + (size_t)n * cols : NULL,
                        logits->data + (size_t)n * cols, cols, labels[n], s, row_weight_of(s, n),
                        inv_w);
    loss->data[0] = (float)(sum * inv_w);
    return FN_OK;
}
