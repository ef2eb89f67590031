/* huber_cpu.c — the Huber loss on the CPU (huber.h): the sum in double in
 * element order, as torch.nn.HuberLoss with mean reduction. */
#include <math.h>
#include <stddef.h>

#include "nn/losses/huber/huber.h"

fn_status fn_cpu_huber_loss(const fn_tensor *pred, const fn_tensor *target, float delta,
                            fn_tensor *loss, fn_tensor *dpred)
{
    const size_t n = fn_tensor_count(pred);
    const double scale = 1.0 / (double)n, d = (double)delta;
    double sum = 0.0;
    for (size_t i = 0; i < n; i++) {
        const double e = (double)pred->data[i] - (double)target->data[i];
        const double a = fabs(e);
        sum += a < d ? 0.5 * e * e : d * (a - 0.5 * d);
        if (dpred)
            dpred->data[i] = (float)(fmin(fmax(e, -d), d) * scale);
    }
    loss->data[0] = (float)(sum * scale);
    return FN_OK;
}
