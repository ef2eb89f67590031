/* shard.h (private) — an optimiser sharded over the ranks of a
 * communicator ([run] shard = optimizer; ZeRO stage 1 in the literature):
 * every rank holds the whole network and its gradients, but updates only
 * its part of each parameter (fn_comm_part: elements [count * r / N,
 * count * (r + 1) / N) of rank r of N) and keeps only that part's
 * optimiser state, a 1/N of it. A step, layer by layer:
 *   sum_start    the layer's gradients reduce-scattered: each rank
 *                receives the sum over the ranks of its part alone, in
 *                place in its gradients (the rest of them is left
 *                undefined);
 *   step_params  waits for them, updates its parts of the values with the
 *                optimiser of the run's kind (any of the library's: it
 *                runs over the parts as over whole tensors, its update
 *                being element by element), and starts the all-gather of
 *                the layer's values, which fn_comm_settle waits for.
 * Every element is updated by one rank and copied to the others, so every
 * rank holds the same bits; the values equal the all-reduce path's up to
 * the order of the sums (the reduce-scatter adds in another order than an
 * all-reduce may).
 *
 * The optimiser publishes its state as whole tensors only for checkpoints
 * (optimizer_paths.h: whole_begin and whole_end): writing, every rank's
 * parts are gathered into rank 0's host memory; reading, every rank loads
 * the whole file and keeps its part. So a checkpoint is the unsharded
 * run's, and resumes on any number of ranks, sharded or not. Its name and
 * state kinds are the inner optimiser's (a checkpoint says "sgd").
 *
 * Clipping ([train] clip_grad_norm) runs between the sums and the update
 * of every part: fn_shard_clip_create's clipper holds this rank's parts
 * and the communicator, so its norm is the whole summed gradient's (every
 * rank's parts together, clip.h) and each rank scales its own parts. */
#ifndef FUSENET_OPTIM_SHARD_H
#define FUSENET_OPTIM_SHARD_H

#include "fusenet/clip.h"
#include "fusenet/comm.h"
#include "fusenet/optimizer_kind.h"

/* The optimiser of `kind` (lr, options as its create takes them) over
 * this rank's parts of params[0..n_params) (the net's, in order), summing
 * over comm (borrowed; it must outlive the optimiser). Every rank must own
 * a part: the largest parameter needs at least as many values as there
 * are ranks. The kind's optimiser must update in parts (step_params). */
fn_status fn_shard_optimizer_create(fn_optimizer **opt, fn_comm *comm,
                                    const fn_optimizer_kind *kind, fn_context *ctx,
                                    fn_param *const *params, int n_params, float lr,
                                    const void *options);

/* A clipper to max_norm over the parts of opt (a sharded optimiser; it
 * must outlive the clipper) and its communicator: applied once every sum
 * is waited for and before opt's step, on every rank. */
fn_status fn_shard_clip_create(fn_clip **clip, fn_optimizer *opt, float max_norm);

#endif
