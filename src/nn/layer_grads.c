/* layer_grads.c — a layer's parameter gradients released while a caller's
 * step never reads them (plain SGD fused into the block's backward_sgd,
 * optim/optimizers/sgd/sgd_fused.c) and allocated again, zeroed, by the next backward
 * that writes them (fn_layer_backward), so that memory is free for the
 * rest of the run and any later backward still finds its gradients. */
#include "fusenet/layer.h"

void fn_layer_release_grads(fn_layer *l)
{
    for (int i = 0; l && !l->forward_only && i < l->n_params; i++)
        fn_tensor_free(&l->params[i].grad);
}

fn_status fn_layer_restore_grads(fn_layer *l)
{
    for (int i = 0; l && !l->forward_only && i < l->n_params; i++) {
        fn_param *p = &l->params[i];
        if (!p->grad.data)
            FN_TRY(fn_tensor_alloc(&p->grad, p->value.rows, p->value.cols, p->value.device));
    }
    return FN_OK;
}
