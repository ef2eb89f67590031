/* param.h — one trainable parameter: its PyTorch name, its value, its
 * gradient and how backward combines a new gradient with the tensor's old
 * contents. Layers publish an array of these; SGD, zeroing, export and the
 * gradient checks iterate that one list.
 *
 * A weight that a layer's GPU products read as bfloat16 (bf16 math mode:
 * a block's weight) has a bfloat16 copy, value_bf16, in the layer's
 * memory. Who reads it depends on whether an owner keeps it:
 *  - kept (bf16_keepers > 0, fn_param_keep_bf16): every optimiser update
 *    and every loader refreshes the copy at once, on the context's stream
 *    (the optimisers' updates in their own pass, plain SGD folded into the
 *    backward after its product, loading weights, resuming a checkpoint),
 *    so the forward reads the copy as it is and never rounds value. The
 *    optimisers keep the copies of the parameters they are given, from
 *    creation to destroy; so `train` and `bench` keep them.
 *  - not kept: the forward rounds value into the copy every time, so value
 *    may be written by anyone (a C API user writing value.data directly,
 *    the Python FusedBlock, whose tensors come from torch each call).
 * Whoever writes value of a kept parameter outside fusenet's writers calls
 * fn_param_refresh_bf16 after it. Both ways give the same bits: the copy is
 * value rounded to the nearest bfloat16 (ties to even) either way.
 * A parameter made outside a layer starts zeroed (designated initialisers,
 * calloc): no copy, no keepers. */
#ifndef FUSENET_PARAM_H
#define FUSENET_PARAM_H

#include "fusenet/api.h"

#include "fusenet/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fn_param {
    const char *name;  /* "weight", "bias", "gamma", "beta" */
    fn_tensor value;   /* weight [out, in]; the others [1, out] */
    fn_tensor grad;    /* same shape; backward: grad = grad_beta * grad + d loss / d value */
    /* How backward combines: 0 (the default, set where a layer makes its
     * parameters) WRITES the gradient and never reads the old contents,
     * so whatever grad held (garbage, NaN) cannot leak in and no zeroing
     * pass is needed before a step; 1 accumulates (grad += ...), for
     * summing micro-batches after fn_net_zero_grad; another factor scales
     * the old contents first (an optimiser that keeps a running sum, such
     * as SGD's momentum buffer, folds it into backward so). Each
     * parameter has one writer, its layer's backward, so a layer honours
     * it in every product and column sum that makes a gradient. */
    float grad_beta;
    /* Device bfloat16 [count], or NULL (the default): where set, backward
     * writes this parameter's gradient there instead of into grad, by the
     * same rule (grad_bf16 = grad_beta * grad_bf16 + d loss / d value,
     * the sum in fp32, rounded once to the nearest bfloat16). Only a
     * weight with a bfloat16 copy (value_bf16: its layer's products read it
     * in bfloat16) honours it, in its dW product; an optimiser that keeps
     * its running sum in bfloat16 sets it on such weights alone (SGD's
     * momentum_bf16, sgd.h). */
    void *grad_bf16;
    void *value_bf16;  /* device [out * in] bfloat16 copy of value, the layer's memory (bf16
                        * math on the GPU, a weight a product reads), or NULL: none */
    int bf16_keepers;  /* owners keeping value_bf16 current (see above); 0: the forward
                        * rounds value itself */
} fn_param;

/* 1 when p has a bfloat16 copy that its writers keep current. */
FN_API int fn_param_bf16_kept(const fn_param *p);
/* The copy that a writer of p's value on ctx writes as well: p's copy
 * where it is kept and ctx is a GPU context in bf16 math, else NULL. */
FN_API void *fn_param_bf16_written(const fn_param *p, fn_context *ctx);
/* Declares one more owner that keeps p's copy current, and makes it
 * current now (a kernel on ctx's stream). Nothing where p has no copy or
 * ctx is not a GPU context in bf16 math (value_bf16 is not read there). */
FN_API fn_status fn_param_keep_bf16(fn_param *p, fn_context *ctx);
/* The owner's end of keeping it (fn_param_keep_bf16's other half): with no
 * owner left, the forward rounds value again. */
FN_API void fn_param_release_bf16(fn_param *p);
/* value rounded into the copy on ctx's stream, where it is kept (and ctx
 * a GPU context in bf16 math); nothing otherwise. Every writer of a kept
 * parameter's value calls it. */
FN_API fn_status fn_param_refresh_bf16(fn_param *p, fn_context *ctx);

#ifdef __cplusplus
}
#endif
#endif
