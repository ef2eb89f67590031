/* net.h — a network: a chain of layers and the activation and gradient
 * buffers between them, sized once for max_batch rows when layers are added.
 *
 * forward feeds x through every layer; backward takes d loss / d output and
 * runs the chain in reverse, writing the parameter gradients (or adding to
 * them: each parameter's grad_beta, param.h). The first
 * layer's input gradient is never computed (it would be thrown away). */
#ifndef FUSENET_NET_H
#define FUSENET_NET_H

#include "fusenet/api.h"

#include "fusenet/layer.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fn_net fn_net; /* private to nn/net.c: read it through the accessors below */

FN_API fn_status fn_net_create(fn_net **net, fn_context *ctx, int max_batch);
/* A net for forward passes only (inference): no gradient buffers between
 * its layers, which should be made forward only too (fn_layer_hparams);
 * backward is an error. */
FN_API fn_status fn_net_create_forward_only(fn_net **net, fn_context *ctx, int max_batch);
/* Appends a layer and takes ownership of it (also on failure, when it is
 * destroyed). Its in_features must equal the previous layer's out_features. */
FN_API fn_status fn_net_add(fn_net *net, fn_layer *layer);
FN_API void fn_net_destroy(fn_net *net); /* NULL is fine */

/* y is set to a view of the last activation ([batch, out]); x must stay valid
 * until backward. */
FN_API fn_status fn_net_forward(fn_net *net, const fn_tensor *x, fn_tensor *y);
/* forward with the last layer's fn_layer_forward_unbiased: y lacks the
 * bias *bias [out] (device memory, for a loss that adds it: loss_tally.h)
 * where that layer leaves one, else y is forward's and *bias NULL. */
FN_API fn_status fn_net_forward_unbiased(fn_net *net, const fn_tensor *x, fn_tensor *y,
                                         const float **bias);
/* dy: [batch, out] of the last forward. Each parameter gradient becomes
 * grad_beta grad + its gradient (param.h): written with grad_beta 0, the
 * default, so a step needs no zeroing first. */
FN_API fn_status fn_net_backward(fn_net *net, const fn_tensor *dy);
/* Every parameter gradient to zero: for summing backwards with grad_beta 1. */
FN_API fn_status fn_net_zero_grad(fn_net *net);
/* What the following forward passes of every layer are for (layer.h,
 * fn_pass): the trainer sets a training pass before each step and a pass
 * that is not training before an evaluation. A new net is not training. */
FN_API fn_status fn_net_set_pass(fn_net *net, const fn_pass *pass);

/* The backward pass with each layer's part given by the caller:
 * backward(layer, dy, dx, arg) for every layer, last first, on the net's
 * buffers (dx NULL for the first layer). fn_net_backward passes
 * fn_layer_backward; an optimiser may fold its update in
 * (plain SGD's fused backward step does). */
typedef fn_status (*fn_net_layer_backward)(fn_layer *l, const fn_tensor *dy, fn_tensor *dx,
                                           void *arg);
FN_API fn_status fn_net_backward_each(fn_net *net, const fn_tensor *dy, fn_net_layer_backward backward,
                                      void *arg);

/* Read access for the layers above (io, the trainer). */
FN_API int fn_net_n_layers(const fn_net *net);
FN_API fn_layer *fn_net_layer(const fn_net *net, int i);  /* [0, n_layers) */
FN_API int fn_net_n_params(const fn_net *net);
FN_API fn_param *fn_net_param(const fn_net *net, int i);  /* every layer's, in layer order */
FN_API fn_param *const *fn_net_params(const fn_net *net); /* [n_params], for optimisers */
FN_API fn_context *fn_net_context(const fn_net *net);
FN_API int fn_net_max_batch(const fn_net *net);
FN_API int fn_net_in_features(const fn_net *net);  /* of the first layer; 0 while empty */
FN_API int fn_net_out_features(const fn_net *net); /* of the last layer; 0 while empty */
/* The bytes of the activation and gradient buffers between the layers,
 * allocated for max_batch rows (the layers' own are fn_layer_*_bytes). An
 * activation the net passes as bfloat16 (net.c: blocks in bf16 math on the
 * GPU) lies in the next layer's input buffer, which that layer counts. */
FN_API size_t fn_net_buffer_bytes(const fn_net *net);

/* Where a value went non-finite: the first NaN or infinity in the order the
 * values of a step are computed. */
typedef struct fn_nonfinite {
    int layer;         /* -1: every value checked is finite */
    const char *kind;  /* the layer's kind: "block", "linear" */
    const char *what;  /* "parameter", "output", "output gradient", "parameter gradient" */
    const char *param; /* the parameter's name for the parameter cases, else NULL */
    int row, col;      /* the element */
    float value;
} fn_nonfinite;

/* A diagnosis after a non-finite loss, not a per-step check: looks through,
 * layer by layer in forward order, each layer's parameter values and its
 * output (the rows of the last forward); then, when with_grads is set (a
 * backward of that batch has run), in backward order each layer's output
 * gradient and parameter gradients. GPU tensors are copied to the host. */
FN_API fn_status fn_net_find_nonfinite(const fn_net *net, int with_grads, fn_nonfinite *found);

#ifdef __cplusplus
}
#endif
#endif
