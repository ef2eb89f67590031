/* clip_backends.h (private) — the clipper's struct and its two backends,
 * optim/clip_cpu.c and kernels/optim/clip_cuda.cu, as static const tables that
 * optim/clip.c picks once by device. One process: apply, the whole of it
 * (on the GPU without a wait). Over the ranks: sum_squares, the rank's
 * part on the host, then clip.c's sum over the ranks and root, then scale
 * by the factor from the total. */
#ifndef FUSENET_OPTIM_CLIP_BACKENDS_H
#define FUSENET_OPTIM_CLIP_BACKENDS_H

#include "fusenet/clip.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fn_clip_backend fn_clip_backend;

struct fn_clip {
    const fn_clip_backend *backend;
    fn_context *ctx;   /* borrowed */
    fn_param **params; /* [n_params]; the array is the clipper's */
    int n_params;
    double max_norm;
    int applied;       /* fn_clip_apply has run */
    double norm;       /* CPU, or over the ranks: the last norm */
    fn_comm *comm;     /* borrowed; NULL: this process alone */
    void *workspace;   /* GPU: partial sums and the result, kernels/optim/clip_cuda.cu */
    int *blocks;       /* GPU: [n_params] blocks of each tensor's partial sums */
    double *host_sum;  /* GPU over the ranks: pinned, the rank's sum of squares */
};

struct fn_clip_backend {
    fn_device device;
    fn_status (*create)(fn_clip *clip);     /* optional: the workspace */
    fn_status (*apply)(fn_clip *clip);      /* the norm and the scaling */
    fn_status (*last_norm)(fn_clip *clip, double *norm);
    /* Over the ranks: this rank's sum of squares, in double on the host,
     * summed as apply sums; then every gradient times (float)coef. */
    fn_status (*sum_squares)(fn_clip *clip, double *sum);
    fn_status (*scale)(fn_clip *clip, double coef);
    void (*release)(fn_clip *clip);         /* optional: what create made */
};

extern const fn_clip_backend fn_clip_cpu_backend;  /* optim/clip_cpu.c */
extern const fn_clip_backend fn_clip_cuda_backend; /* kernels/optim/clip_cuda.cu */

#ifdef __cplusplus
}
#endif
#endif
