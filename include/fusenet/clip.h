/* clip.h — gradient clipping by the global norm, as
 * torch.nn.utils.clip_grad_norm_: the L2 norm over every parameter's
 * gradient together, norm = sqrt(sum over all elements of g^2), and, when
 * coef = max_norm / (norm + 1e-6) is below 1, every gradient multiplied by
 * coef (so a norm within 1e-6 of max_norm is scaled slightly too, as in
 * PyTorch). The sum is taken in double, in a fixed order on both devices
 * (on the GPU: per-block partial sums, then one block adds them in order;
 * no atomics), so a run is deterministic. On the GPU the decision and the
 * scaling stay on the device: applying never waits for the host, and the
 * norm is read back only when asked for.
 *
 * Over the ranks of a communicator (fn_clip_set_comm), where each rank's
 * parameters hold its own share of the summed gradients (a sharded
 * optimiser's parts), the norm is that of every rank's shares together:
 * each rank's sum of squares (in double, in the order above) added over
 * the ranks in rank order (fn_comm_sum_doubles, so every rank holds the
 * same bits), then the root; every rank scales its share by the same
 * factor. On the GPU the rank's sum is brought to the host for that, once
 * an apply. */
#ifndef FUSENET_CLIP_H
#define FUSENET_CLIP_H

#include "fusenet/api.h"

#include "fusenet/comm.h"
#include "fusenet/param.h"
#include "fusenet/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

#define FN_CLIP_EPS 1e-6 /* torch's clip_grad_norm_: max_norm / (norm + 1e-6) */

typedef struct fn_clip fn_clip; /* opaque: the parameters, max_norm, the device's workspace */

/* A clipper of params' gradients (borrowed; they must outlive it) to
 * max_norm > 0, on ctx's device. */
FN_API fn_status fn_clip_create(fn_clip **clip, fn_context *ctx, fn_param *const *params, int n_params,
                                float max_norm);
/* The global norm of the gradients as they are now, and the scaling. */
FN_API fn_status fn_clip_apply(fn_clip *clip);
/* The norm, before scaling, of the last fn_clip_apply (on the GPU this
 * waits for it); NaN before the first. */
FN_API fn_status fn_clip_last_norm(fn_clip *clip, double *norm);
FN_API int fn_clip_applied(const fn_clip *clip); /* fn_clip_apply has run */
/* From now on the norm is over the ranks of comm (borrowed; it must
 * outlive the clipper; on ctx's device), every rank applying together;
 * NULL: this process alone, as created. */
FN_API fn_status fn_clip_set_comm(fn_clip *clip, fn_comm *comm);
FN_API void fn_clip_destroy(fn_clip *clip);      /* NULL is fine */

/* All of it in one call: clips params' gradients to max_norm and gives the
 * norm before clipping. */
FN_API fn_status fn_clip_grad_norm(fn_context *ctx, fn_param *const *params, int n_params,
                                   float max_norm, double *norm);

#ifdef __cplusplus
}
#endif
#endif
