/* loss_tally.h — a training epoch's running sums kept where the loss is
 * computed, so a GPU step never waits for the host to read its loss.
 *
 * Each training step's loss goes through the tally (the same loss, value
 * and gradient, as loss.h computes): a finite loss is counted (the sum of
 * loss * rows in double, the correct count of the loss's metric, the rows, the
 * steps), a non-finite one is recorded as the first bad step with its
 * value, and from then on nothing is counted: the bad flag it raises is
 * what the optimiser's guarded update (optimizer.h, apply) checks, so the
 * parameters stay those of the last good step. The sums are those the
 * trainer adds on the host in the same order (loss_sum += (double)loss *
 * rows), bit for bit.
 *
 * The host reads the tally late: fn_loss_tally_post queues a copy of it
 * after the step's kernels, fn_loss_tally_poll takes the newest copy that
 * has arrived without waiting, fn_loss_tally_read waits for the sums as
 * they are now. At most FN_LOSS_TALLY_RING copies are in flight: a post
 * waits for the oldest beyond that, so the host runs at most that many
 * steps ahead of the device.
 *
 * On the CPU the tally is host memory and every copy arrives at once,
 * unless created with a lag (tests: a copy arrives only `lag - 1` posts
 * later, to exercise the late read's roll-back without a GPU).
 * Any registered loss (loss_kind.h) is counted through its descriptor: the
 * tally names none.
 * CPU code: src/nn/loss_tally.c; CUDA: kernels/nn/loss_tally_cuda.cu (the
 * sums, their late copies and the kernel that finishes a loss's partial
 * sums into them) and nn/loss_tally_finish_cuda.cuh (that finish, which
 * the losses' kernels share). */
#ifndef FUSENET_NN_LOSS_TALLY_H
#define FUSENET_NN_LOSS_TALLY_H

#include <stdint.h>

#include "fusenet/loss_kind.h"
#include "fusenet/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { FN_LOSS_TALLY_RING = 8 };

/* The sums since fn_loss_tally_set, as they were at a step's end. */
typedef struct fn_loss_tally_value {
    double loss_sum;     /* sum over the counted steps of (double)loss * rows */
    long long correct;   /* the loss's correct count (loss_kind.h metric); 0 without one */
    long long seen;      /* rows of the counted steps */
    long long steps;     /* steps counted */
    long long base_step; /* the global index of the first step after fn_loss_tally_set */
    long long bad_step;  /* the global index (0-based) of the first non-finite loss; -1: none */
    float bad_loss;      /* that loss (nan, inf, -inf) */
    float last_loss;     /* the last counted step's loss; NaN before the first */
    int bad;             /* non-zero once a loss was not finite */
    int pad_;
} fn_loss_tally_value;

typedef struct fn_loss_tally fn_loss_tally; /* opaque */

/* A tally on ctx's device; lag: 0 or 1 (copies arrive when they do), more
 * only on the CPU (tests). */
fn_status fn_loss_tally_create(fn_loss_tally **tally, fn_context *ctx, int lag);
void fn_loss_tally_destroy(fn_loss_tally *tally); /* NULL is fine */

/* Starts the sums from these (an epoch's start, a resumed epoch's): the
 * next step counted has global index `step`; clears the bad flag. Queued
 * on the context's stream after the steps before it. */
fn_status fn_loss_tally_set(fn_loss_tally *tally, double loss_sum, long long correct,
                            long long seen, long long step);

/* A training step's loss of kind `kind` with its options block (the value into loss [1, 1], the
 * gradient assigned to dpred, which may be NULL), counted in the tally:
 * on the CPU the kind's read, on the GPU its partials, finished by the
 * loss's own last block where the kind can (fn_loss_tally_into), else by
 * the tally's own kernel. Launches only on the GPU (no copy, no
 * synchronisation: a CUDA graph may capture it). */
fn_status fn_loss_tally_step(fn_loss_tally *tally, const fn_loss_kind *kind,
                             const void *options, const fn_tensor *pred,
                             const fn_loss_targets *targets,
                             fn_tensor *loss, fn_tensor *dpred);
/* fn_loss_tally_step of predictions that still lack a bias [pred->cols]
 * on their device (NULL: none; fn_net_forward_unbiased leaves it): pred +=
 * bias first, with the bits the layer's forward would give, by the loss's
 * own kernel where the kind takes it (loss_kind.h, takes_bias). */
fn_status fn_loss_tally_step_biased(fn_loss_tally *tally, const fn_loss_kind *kind,
                                    const void *options, const fn_tensor *pred,
                                    const float *pred_bias, const fn_loss_targets *targets,
                                    fn_tensor *loss, fn_tensor *dpred);

/* The bad flag, where the optimiser's kernels read it (device memory on
 * the GPU, host memory on the CPU): non-zero once a loss was not finite. */
const int *fn_loss_tally_bad_flag(const fn_loss_tally *tally);

/* Queues a copy of the sums as they are after the kernels queued so far. */
fn_status fn_loss_tally_post(fn_loss_tally *tally);
/* The newest posted copy that has arrived and was not taken before, in
 * *value, with *fresh = 1; *fresh = 0 when none has. Never waits. */
fn_status fn_loss_tally_poll(fn_loss_tally *tally, fn_loss_tally_value *value, int *fresh);
/* The sums after everything queued so far: waits for the device. */
fn_status fn_loss_tally_read(fn_loss_tally *tally, fn_loss_tally_value *value);

#ifdef __cplusplus
}
#endif
#endif
