/* loss_tally_cuda.h (private) — the GPU half of a loss tally
 * (kernels/nn/loss_tally_cuda.cu) that nn/loss_tally.c drives: the sums in
 * device memory, a ring of pinned copies of them, one event a copy, and
 * the kernel that counts a loss's partial sums in them. */
#ifndef FUSENET_NN_LOSS_TALLY_CUDA_H
#define FUSENET_NN_LOSS_TALLY_CUDA_H

#include "nn/loss_tally.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fn_cuda_tally fn_cuda_tally;

fn_status fn_cuda_tally_create(fn_cuda_tally **t, fn_context *ctx);
void fn_cuda_tally_destroy(fn_cuda_tally *t); /* NULL is fine; waits for its copies */
/* The sums on the device, for the losses' kernels. */
fn_loss_tally_value *fn_cuda_tally_sums(fn_cuda_tally *t);
/* Finishes a loss's partial sums p: the value into loss [1, 1] (as the
 * losses' own finish rounds it), counted in the sums for a step of `rows`
 * rows as the CPU's count_step does, bit for bit. Launches only. */
fn_status fn_cuda_tally_finish(fn_cuda_tally *t, fn_tensor *loss, const fn_loss_partials *p,
                               int rows);
/* Where a loss's kernel finishes a step of `rows` rows into this tally
 * (loss_kind.h): the value into loss [1, 1], counted in the sums. */
void fn_cuda_tally_into(fn_cuda_tally *t, fn_tensor *loss, int rows, fn_loss_tally_into *into);
/* Queues v as the sums, on the context's stream (v may be reused at once). */
fn_status fn_cuda_tally_set(fn_cuda_tally *t, const fn_loss_tally_value *v);
/* Queues a copy of the sums into ring slot `slot`, after waiting for that
 * slot's previous copy to have arrived. */
fn_status fn_cuda_tally_post(fn_cuda_tally *t, int slot);
/* Whether the last copy into `slot` has arrived; if so, *v is it. */
fn_status fn_cuda_tally_arrived(fn_cuda_tally *t, int slot, int *arrived, fn_loss_tally_value *v);
/* The sums after everything queued: waits for the context's stream. */
fn_status fn_cuda_tally_read(fn_cuda_tally *t, fn_loss_tally_value *v);

#ifdef __cplusplus
}
#endif
#endif
