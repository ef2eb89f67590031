/* layer.h — the layer interface: a struct whose behaviour is a static const
 * table of function pointers, one table per (kind, device).
 *
 * Rules every layer keeps:
 *  - forward(x, y) computes y and caches what backward needs. It keeps a
 *    pointer to x, so x must stay valid and unchanged until backward.
 *  - backward(dy, dx) ASSIGNS the input gradient (dx = ...) and combines
 *    each parameter gradient by its grad_beta (param.h): grad = grad_beta
 *    grad + d loss / d param. With grad_beta 0, the default, the gradient
 *    is written and its old contents never read (no zeroing before a
 *    step); set grad_beta 1 after fn_layer_zero_grad to sum micro-batches.
 *    dx may be NULL: the input gradient is then not computed (a first layer).
 *  - every buffer a layer allocates it frees in destroy.
 *  - x, y, dy and dx have as many rows as the batch, at most the max_batch
 *    the layer was created for; layers never allocate inside a step.
 *  - what a forward pass is for (training or evaluation, the step) is the
 *    layer's fn_pass, set through fn_layer_set_pass (a net sets it on every
 *    layer, fn_net_set_pass) before the pass, never inside a step's work. 
 * A concrete layer embeds fn_layer as its first member. */
#ifndef FUSENET_LAYER_H
#define FUSENET_LAYER_H

#include "fusenet/api.h"

#include "fusenet/device.h"
#include "fusenet/param.h"
#include "fusenet/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fn_layer fn_layer;

/* What a forward pass is for. Training: a step of the trainer, in which a
 * layer that draws random numbers (dropout) draws them keyed by the step
 * and by each row's place in the whole batch, so a resumed run, a replayed
 * CUDA graph and a run over several processes (each with its share of the
 * batch) draw what one uninterrupted process draws. Not training (the
 * default, and always for a layer made forward only): evaluation and
 * prediction, where such a layer is the identity. */
typedef struct fn_pass {
    int training;   /* 1: a training step; 0: evaluation or prediction */
    long long step; /* the run's global step being taken, from 0 */
    long long row0; /* the first row of this process's share in the whole batch */
} fn_pass;

typedef struct fn_layer_ops {
    const char *kind; /* "block", "linear": its name in the registry (layer_kind.h) */
    fn_status (*forward)(fn_layer *l, const fn_tensor *x, fn_tensor *y);
    fn_status (*backward)(fn_layer *l, const fn_tensor *dy, fn_tensor *dx);
    void (*destroy)(fn_layer *l);
    /* Optional: backward with a plain SGD step folded in, theta <- theta -
     * lr * g (momentum and weight decay 0, g this batch's gradient), for a
     * kind where fusing saves work. It assigns dx (when not NULL) from the
     * values of the forward, then updates every parameter. What it may
     * skip: the parameter gradients. It never reads or writes the .grad
     * tensors, which keep whatever they held. Every value equals the
     * fallback's bit for bit, except where the kind documents otherwise
     * (the block on the GPU: its weight's update is the dW product itself,
     * one fused accumulation, which differs in the last bits); deterministic
     * run to run. Called through fn_layer_backward_sgd (arguments checked as
     * backward's, lr positive and finite). NULL: fn_sgd_fused_backward falls
     * back to backward and fn_sgd_update per parameter. */
    fn_status (*backward_sgd)(fn_layer *l, const fn_tensor *dy, fn_tensor *dx, float lr);
    /* Optional: l->pass has just changed (fn_layer_set_pass); a GPU layer
     * that reads it inside its kernels copies it to the device here, on
     * the context's stream, so a captured step reads it where it lies.
     * NULL: the layer reads l->pass on the host, or not at all. */
    fn_status (*set_pass)(fn_layer *l);
    /* Optional: forward less its output's bias, for a consumer that adds
     * the bias in its own kernel (a loss's, loss_tally.h): y = forward's
     * output without the bias, *bias the bias [out] on the layer's device,
     * which the consumer adds as y[n, c] + bias[c] (one float addition, so
     * the sum has forward's bits). Caches as forward does. NULL: forward
     * is the only one (fn_layer_forward_unbiased falls back to it). */
    fn_status (*forward_unbiased)(fn_layer *l, const fn_tensor *x, fn_tensor *y,
                                  const float **bias);
    /* Optional, bfloat16 activations between layers (a net joins two
     * layers through bfloat16 when the first has forward_bf16 and the
     * second's bf16_input gives a buffer: net.c). bf16_input: where l
     * takes its input as bfloat16, [max_batch, in] in its own memory (a
     * whole number of floats long, so an odd count of values is padded),
     * a buffer it would otherwise round a float input into itself, to
     * nearest (ties to even), so a producer that writes its output there
     * rounded once from its float values gives the same bits; NULL where l
     * reads its float input too (a residual block's skip) or rounds none
     * (not bf16 math). NULL hook: always NULL. */
    void *(*bf16_input)(fn_layer *l);
    /* Optional: forward with a bfloat16 side, for a layer whose backward
     * never reads its output. x NULL: the input, rows rows, is already in
     * bf16_input(l), written by the layer before. y_h non-NULL: the output
     * goes there as bfloat16 [rows, out], each value rounded to nearest
     * once from its float value, and y is NULL; else y as forward's. Caches
     * as forward does; called through fn_layer_forward_bf16. */
    fn_status (*forward_bf16)(fn_layer *l, const fn_tensor *x, int rows, fn_tensor *y,
                              void *y_h);
} fn_layer_ops;

struct fn_layer {
    const fn_layer_ops *ops;
    fn_context *ctx;
    fn_device device;
    int in_features, out_features;
    int max_batch;
    int batch;        /* rows of the last forward through fn_layer_forward; 0 before any */
    int forward_only; /* made without gradients and backward caches: backward is an error */
    fn_pass pass;     /* what the next forward is for (fn_layer_set_pass); zero: not training */
    fn_param *params; /* [n_params] */
    int n_params;
};

/* Checked entry points: they validate shapes, devices and the call order
 * (backward after a forward of the same batch size), then dispatch. */
FN_API fn_status fn_layer_forward(fn_layer *l, const fn_tensor *x, fn_tensor *y);
/* ops->forward_unbiased with forward's checks, or forward with *bias =
 * NULL where the kind has none. */
FN_API fn_status fn_layer_forward_unbiased(fn_layer *l, const fn_tensor *x, fn_tensor *y,
                                           const float **bias);
FN_API fn_status fn_layer_backward(fn_layer *l, const fn_tensor *dy, fn_tensor *dx);
/* ops->bf16_input(l) where the hook exists, else NULL. */
FN_API void *fn_layer_bf16_input(fn_layer *l);
/* ops->forward_bf16 with forward's checks (x NULL: rows from 1 to
 * max_batch and a bf16_input; y_h NULL: y [rows, out]); FN_ERR_INVALID
 * where l's ops have none. */
FN_API fn_status fn_layer_forward_bf16(fn_layer *l, const fn_tensor *x, int rows, fn_tensor *y,
                                       void *y_h);
FN_API void fn_layer_destroy(fn_layer *l); /* NULL is fine */
/* The layer's fused backward and plain SGD step (ops->backward_sgd, above),
 * with backward's checks; FN_ERR_INVALID when its ops have none. */
FN_API fn_status fn_layer_backward_sgd(fn_layer *l, const fn_tensor *dy, fn_tensor *dx, float lr);
/* fn_param_refresh_bf16 for each of l's parameters (param.h): what every
 * writer of their values calls after writing them; fn_layer_backward_sgd
 * does, after the updates. */
FN_API fn_status fn_layer_refresh_bf16(fn_layer *l);

/* What the following forward passes are for (fn_pass); a layer made
 * forward only is never training. Not during a CUDA graph's capture. */
FN_API fn_status fn_layer_set_pass(fn_layer *l, const fn_pass *pass);

/* Sets every parameter gradient to zero: for summing several backwards
 * with grad_beta 1; a step whose backward writes the gradients (grad_beta
 * 0, the default) needs no zeroing. */
FN_API fn_status fn_layer_zero_grad(fn_layer *l);
/* Frees the gradients of l's parameters (layer_grads.c), for a caller
 * whose steps never read them (plain SGD fused into backward_sgd,
 * sgd_fused.h): fn_layer_grad_bytes then counts none. fn_layer_backward
 * restores them (allocated again, zeroed) before it writes them, so a
 * backward after a release (the search for a non-finite value) works as
 * before; fn_layer_zero_grad leaves a released gradient as it is, zero
 * once restored. Not inside a CUDA graph's capture (restoring allocates). */
FN_API void fn_layer_release_grads(fn_layer *l);
FN_API fn_status fn_layer_restore_grads(fn_layer *l);
/* The parameter called `name`, or NULL. */
FN_API fn_param *fn_layer_param(fn_layer *l, const char *name);
/* Values in the parameters (weight, bias, ...), and the bytes their values
 * and their gradients take on the layer's device. */
FN_API long long fn_layer_param_count(const fn_layer *l);
FN_API size_t fn_layer_param_bytes(const fn_layer *l);
FN_API size_t fn_layer_grad_bytes(const fn_layer *l);

#ifdef __cplusplus
}
#endif
#endif
