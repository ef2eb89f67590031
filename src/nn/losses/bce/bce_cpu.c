/* bce_cpu.c — binary cross-entropy on logits on the CPU (bce.h): the sum
 * in double in element order, as torch.nn.BCEWithLogitsLoss with mean
 * reduction. */
#include <math.h>
#include <stddef.h>

#include "nn/losses/bce/bce.h"
#include "nn/loss_backends.h"

fn_status fn_cpu_bce_loss(const fn_tensor *pred, const fn_tensor *target,
                          const float *pos_weight, const float *weights, fn_tensor *loss,
                          fn_tensor *dpred, int *correct)
{
    const size_t n = fn_tensor_count(pred), cols = (size_t)pred->cols;
    const double scale = fn_loss_elementwise_scale(weights, pred->rows, pred->cols);
    double sum = 0.0;
    int right = 0;
    for (size_t i = 0; i < n; i++) {
        const double x = (double)pred->data[i], y = (double)target->data[i];
        const double w = pos_weight ? 1.0 + ((double)pos_weight[i % cols] - 1.0) * y : 1.0;
        /* log(1 + exp(-x)) = -log sigmoid(x), stable for either sign */
        const double softplus_neg = log1p(exp(-fabs(x))) + fmax(-x, 0.0);
        /* The row's sample weight; 1 multiplies exactly (the unweighted bits). */
        const double r = weights ? (double)weights[i / cols] : 1.0;
        sum += ((1.0 - y) * x + w * softplus_neg) * r;
        if (dpred)
            dpred->data[i] = (float)(((1.0 - y) - w / (1.0 + exp(x))) * scale * r);
        right += (x > 0.0) == (y >= 0.5);
    }
    loss->data[0] = (float)(sum * scale);
    if (correct)
        *correct = right;
    return FN_OK;
}
