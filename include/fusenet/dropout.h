/* dropout.h — dropout, as torch.nn.Dropout(p): in a training pass (layer.h,
 * fn_pass) each element is kept with probability 1 - p and scaled by
 * 1/(1 - p), else zeroed; outside training the identity. The mask is not
 * stored: forward and backward draw it from a counter-based generator
 * (Philox4x32-10, the same bits on the CPU and the GPU) keyed by the run's
 * seed, the layer, the step and the element's place in the whole batch
 * (row * width + column), so a resumed run, a replayed CUDA graph and a
 * run over several processes draw the masks of one uninterrupted process.
 * CPU code: src/nn/layers/dropout/dropout_cpu.c; CUDA code: kernels/nn/layers/dropout/dropout_cuda.cu. As a
 * layer kind, "dropout P" (0 <= P < 1): the width of its input. */
#ifndef FUSENET_DROPOUT_H
#define FUSENET_DROPOUT_H

#include "fusenet/api.h"

#include "fusenet/init.h"
#include "fusenet/layer.h"
#include "fusenet/layer_kind.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A dropout layer of `features` columns, probability p in [0, 1), for
 * batches of up to max_batch rows. Its masks are keyed by rng's seed and
 * offset, which it advances by one (so the next dropout's differ). */
FN_API fn_status fn_dropout_create(fn_layer **layer, fn_context *ctx, int features, double p,
                                   int max_batch, fn_rng *rng, int forward_only);

/* The probability of a dropout layer; FN_ERR_INVALID for another layer. */
FN_API fn_status fn_dropout_get_p(const fn_layer *l, double *p);

/* The bytes a dropout layer allocated (the pass it reads on the GPU); 0
 * for another layer. */
FN_API size_t fn_dropout_buffer_bytes(const fn_layer *l);

/* Its entry in the registry of layer kinds. */
FN_API extern const fn_layer_kind fn_dropout_kind;

#ifdef __cplusplus
}
#endif
#endif
