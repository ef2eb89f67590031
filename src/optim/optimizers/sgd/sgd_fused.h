/* sgd_fused.h — a net's backward pass with a plain SGD step folded in
 * (theta <- theta - lr * grad: momentum and weight decay 0), last layer
 * first: each layer's dx is computed from its values before the step, then
 * its parameters are updated with this batch's gradient.
 *
 * A layer whose ops have the backward_sgd hook (layer.h; today the block on
 * the GPU: the weight's update is the dW product itself, W += -lr dz^T x;
 * bias, gamma, beta in its column-sum kernel) fuses the update; any other
 * layer runs its backward (which writes the gradients: grad_beta 0,
 * param.h) and fn_sgd_update. Parameter gradients are NOT a result: a
 * fused layer never writes them, other layers are left holding this
 * batch's gradient. The values equal those of fn_net_backward and an SGD
 * step bit for bit,
 * except where a hook says otherwise (a fused block's weight differs in the
 * last bits: one fused accumulation instead of a product and a
 * subtraction); deterministic run to run. The caller counts the step. */
#ifndef FUSENET_OPTIM_OPTIMIZERS_SGD_SGD_FUSED_H
#define FUSENET_OPTIM_OPTIMIZERS_SGD_SGD_FUSED_H

#include "fusenet/net.h"

#ifdef __cplusplus
extern "C" {
#endif

fn_status fn_sgd_fused_backward(fn_net *net, const fn_tensor *dy, float lr);

#ifdef __cplusplus
}
#endif
#endif
