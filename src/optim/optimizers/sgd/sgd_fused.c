/* sgd_fused.c — plain SGD folded into a net's backward pass (sgd_fused.h):
 * per layer, its ops' backward_sgd hook where it has one, else backward
 * (which writes the gradients, param.h) and the one-tensor update. */
#include "fusenet/sgd.h"
#include "optim/optimizers/sgd/sgd_fused.h"

/* After dx has used the old values, the layer's parameters take the step. */
static fn_status layer_backward_sgd(fn_layer *l, const fn_tensor *dy, fn_tensor *dx, void *arg)
{
    const fn_sgd_config *plain = arg;
    if (l->ops && l->ops->backward_sgd)
        return fn_layer_backward_sgd(l, dy, dx, plain->lr);
    FN_TRY(fn_layer_backward(l, dy, dx)); /* writes the gradients (param.h) */
    for (int p = 0; p < l->n_params; p++) {
        fn_param *q = &l->params[p];
        fn_status st = fn_sgd_update(l->ctx, &q->value, &q->grad, NULL, plain, 0);
        if (st != FN_OK) {
            fn_error_prefix("parameter %s: ", q->name ? q->name : "(unnamed)");
            return st;
        }
    }
    return fn_layer_refresh_bf16(l);
}

fn_status fn_sgd_fused_backward(fn_net *net, const fn_tensor *dy, float lr)
{
    if (!net)
        return fn_fail(FN_ERR_INVALID, "fn_sgd_fused_backward: net is NULL");
    fn_sgd_config plain = fn_sgd_config_default(lr);
    FN_TRY(fn_sgd_config_check(&plain));
    return fn_net_backward_each(net, dy, layer_backward_sgd, &plain);
}
