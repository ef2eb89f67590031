/* param.h — one trainable parameter: its PyTorch name, its value, its
 * gradient and how backward combines a new gradient with the tensor's old
 * contents. Layers publish an array of these; SGD, zeroing, export and the
 * gradient checks iterate that one list. */
#ifndef FUSENET_PARAM_H
#define FUSENET_PARAM_H

#include "fusenet/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fn_param {
    const char *name; /* "weight", "bias", "gamma", "beta" */
    fn_tensor value;  /* weight [out, in]; the others [1, out] */
    fn_tensor grad;   /* same shape; backward: grad = grad_beta * grad + d loss / d value */
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
} fn_param;

#ifdef __cplusplus
}
#endif
#endif
