/* multi_tensor.h (private) — every parameter of an optimiser in one table
 * on the device, so that one launch updates (or zeroes the gradients of)
 * all of them instead of one launch a tensor, and a small buffer of the
 * step's scalars (learning rate, step count's) the update reads on the
 * device: the host writes them before each step, so the launch itself
 * never changes and a CUDA graph can replay it. GPU only
 * (kernels/optim/multi_tensor_cuda.cu); the kernels that use the table are
 * SGD's and Adam's (multi_tensor_cuda.cuh). */
#ifndef FUSENET_OPTIM_MULTI_TENSOR_H
#define FUSENET_OPTIM_MULTI_TENSOR_H

#include <stddef.h>

#include "fusenet/param.h"
#include "fusenet/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fn_multi_tensor {
    fn_context *ctx;     /* borrowed */
    void *table;         /* device: [n] fn_mt_entry (multi_tensor_cuda.cuh) */
    void *scalars;       /* device: the step's scalars, scalar_bytes */
    void *sent;          /* host: the scalars last queued to the device */
    int sent_valid;      /* sent holds them (a step with the same ones sends nothing) */
    size_t scalar_bytes;
    int n;
    long long chunks;    /* kMtChunk-element pieces of all the tensors together */
    void *host_table;    /* host: the table's [n] entries as sent (parts are cut from it) */
    struct fn_multi_tensor *parts; /* [n_parts] (fn_multi_tensor_split), or NULL */
    int n_parts;
} fn_multi_tensor;

/* The table of params' values and gradients, their bfloat16 copies where
 * kept when it is made (param.h; the update kernels write them beside the
 * values), and, per parameter, up to two state tensors (state1, state2:
 * [n] arrays shaped like the values, or NULL), all on ctx's GPU. */
fn_status fn_multi_tensor_create(fn_multi_tensor *mt, fn_context *ctx, fn_param *const *params,
                                 int n, const fn_tensor *state1, const fn_tensor *state2,
                                 size_t scalar_bytes);
void fn_multi_tensor_release(fn_multi_tensor *mt); /* a zeroed one is fine */
/* Entry i's state1 kept in bfloat16 at state1_bf16 (device, [n]; NULL:
 * float32 again): the kernels that read it so (SGD's) read and write it
 * there, rounding each store once. */
fn_status fn_multi_tensor_set_state1_bf16(fn_multi_tensor *mt, int i, void *state1_bf16);
/* Entry i's gradient is grad (device, [n]) from now on (SGD's fold: the
 * momentum buffer, its own gradient freed), or none (NULL: SGD's fuse
 * freed it; the zeroing skips it, an unfolded update must not run). */
fn_status fn_multi_tensor_set_grad(fn_multi_tensor *mt, int i, float *grad);
/* Queues the copy of the step's scalars (scalar_bytes; pageable host
 * memory, reusable at once) on the context's stream; nothing when they are
 * the ones queued last (SGD at a constant lr: one copy a run). */
fn_status fn_multi_tensor_set_scalars(fn_multi_tensor *mt, const void *scalars);
/* Cuts the table into n parts, part k the entries [first[k], first[k +
 * 1]) (first: [n + 1], non-decreasing, from 0 to the table's n), each a
 * table of its own on the device that reads the whole's scalars (set
 * them through the whole), so an update kernel launched on mt->parts[k]
 * updates those tensors alone, each element as the whole's launch would.
 * An empty part has no table (n 0). Replaces an earlier cut; released
 * with the whole. Allocates and copies: not inside a capture. */
fn_status fn_multi_tensor_split(fn_multi_tensor *mt, const int *first, int n);
/* Zeroes every gradient in the table (none where NULL): one launch on the
 * context's stream. */
fn_status fn_multi_tensor_zero_grad(const fn_multi_tensor *mt);

#ifdef __cplusplus
}
#endif
#endif
