/* huber_cpu.c — the Huber loss on the CPU (huber.h): the sum in double in
 * element order, as torch.nn.HuberLoss with mean reduction. */
#include <math.h>
#include <stddef.h>

#include "nn/losses/huber/huber.h"
#include "nn/loss_backends.h"

fn_status fn_cpu_huber_loss(const fn_tensor *pred, const fn_tensor *target, float delta,
                            const float *weights, fn_tensor *loss, fn_tensor *dpred)
{
    const size_t n = fn_tensor_count(pred), cols = (size_t)pred->cols;
    const double scale = fn_loss_elementwise_scale(weights, pred->rows, pred->cols);
    const double d = (double)delta;
    double sum = 0.0;
    for (size_t i = 0; i < n; i++) {
        const double e = (double)pred->data[i] - (double)target->data[i];
        const double a = fabs(e);
        /* A weight of 1 multiplies exactly: the unweighted bits. */
        const double w = weights ? (double)weights[i / cols] : 1.0;
        sum += (a < d ? 0.5 * e * e : d * (a - 0.5 * d)) * w;
        if (dpred)
            dpred->data[i] = (float)(fmin(fmax(e, -d), d) * scale * w);
    }
    loss->data[0] = (float)(sum * scale);
    return FN_OK;
}
