/* param.h — one trainable parameter: its PyTorch name, its value and its
 * gradient. Layers publish an array of these; SGD, zeroing, export and the
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
    fn_tensor grad;   /* same shape; backward accumulates into it (+=) */
} fn_param;

#ifdef __cplusplus
}
#endif
#endif
