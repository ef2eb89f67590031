/* optimizer_paths.h — the optimiser's performance paths, private to the
 * library (the trainer, checkpoints' state export, bench and the white-box
 * tests include it as "optim/optimizer_paths.h"). A new optimiser needs
 * none of this: the public table (optimizer.h) is its whole contract, and
 * without paths the trainer takes the plain step (fn_optimizer_step after
 * backward). An optimiser that has faster ways points its public table's
 * `paths` at one static table of these hooks, every one optional; the
 * checked entry points below reach them, and say "not available" (or do
 * the plain thing) where a hook is missing. */
#ifndef FUSENET_OPTIM_OPTIMIZER_PATHS_H
#define FUSENET_OPTIM_OPTIMIZER_PATHS_H

#include "fusenet/optimizer.h"

/* What whole_begin publishes the state for (below). */
typedef enum fn_optimizer_whole {
    FN_WHOLE_WRITE, /* rank 0 writes it: the parts gathered there */
    FN_WHOLE_READ   /* every rank reads it in: zeroed tensors to load into */
} fn_optimizer_whole;

typedef struct fn_optimizer_paths {
    /* The update of parameters [first, first + count) alone, as step
     * would make it in the same step (the count not advanced); a step
     * made of such calls covering every parameter once, then
     * fn_optimizer_step_done, is the same step as `step`, bit for bit. For
     * data parallelism: a layer is updated as soon as its gradient sum is
     * in (step_dist.c). */
    fn_status (*step_params)(fn_optimizer *opt, int first, int count);
    /* The backward of net's last forward from dy [batch, out], with this
     * step folded in; the same step as fn_net_zero_grad, fn_net_backward
     * and step (net.h says where rounding differs). net's parameters must
     * be the optimiser's. */
    fn_status (*backward_step)(fn_optimizer *opt, fn_net *net, const fn_tensor *dy);
    /* With backward_step: the caller takes every step on net with
     * backward_step alone from now on (one process, no clipping), so the
     * optimiser frees what that step never reads (plain SGD: the
     * gradients of the layers whose backward_sgd updates their values,
     * fn_layer_release_grads; a later fn_net_backward allocates them
     * again; destroying the optimiser allocates them, zeroed). Its step,
     * step_params, prepare, apply and apply_part then fail, naming
     * backward_step. */
    fn_status (*fuse)(fn_optimizer *opt, fn_net *net);
    /* Both or neither: the step in two halves, for a step queued ahead of
     * the host (the trainer's deferred step, its CUDA graph). prepare is
     * the host's half, once a step before apply's work runs: it checks
     * the options and writes the step's scalars (lr, the step count's)
     * where apply reads them, queued on the context's stream. apply
     * queues the update itself: launches only, reading those scalars on
     * the device, so a CUDA graph can capture it once and replay it every
     * step; skip: an int where the kernels read it (device memory on the
     * GPU, host memory on the CPU) or NULL: while it is non-zero the
     * update does nothing. prepare followed by apply(NULL) is step, bit
     * for bit. */
    fn_status (*prepare)(fn_optimizer *opt);
    fn_status (*apply)(fn_optimizer *opt, const int *skip);
    /* Zeroes every parameter's gradient (on the GPU in one launch on the
     * context's stream, which a graph can capture); without it,
     * fn_optimizer_zero_grad zeroes one tensor at a time. */
    fn_status (*zero_grad)(fn_optimizer *opt);
    /* Folds the optimiser's running sum of gradients into backward where
     * its configuration allows (SGD: momentum > 0, dampening 0, not
     * nesterov): each parameter's .grad is made to alias that state and
     * its grad_beta (param.h) set to the sum's factor, so backward itself
     * leaves the new sum there (SGD: buf = mu buf + g, the dW product with
     * cuBLAS's beta = mu on the buffer) and the step reads no separate
     * gradient. The parameters' own gradient tensors are freed (they must
     * be fn_tensor_alloc's, as a layer's are). Until the optimiser is
     * destroyed (which gives the parameters new gradients of their own,
     * zeroed: destroy it before the net) the .grad tensors hold the sum,
     * not a plain gradient, so a caller folds only where nothing else
     * reads the gradients between backward and the step (no clipping, no
     * sums over processes), and a backward not followed by its step moves
     * the state all the same. *folded: 1 when folded (now or before), 0
     * when this configuration cannot fold (nothing changed). */
    fn_status (*fold)(fn_optimizer *opt, int *folded);
    /* Both or neither, with prepare and apply: the split step's device
     * half in parts, for updates queued beside backward (a layer's as soon
     * as its gradients are final). fn_optimizer_set_parts has cut the
     * parameters, in order, into opt->n_parts runs (part k is
     * [part_first[k], part_first[k + 1])); split then makes what its
     * apply_part needs (on the GPU a multi-tensor table a part, before any
     * capture). apply_part(opt, k, skip) queues part k's update alone, as
     * apply(skip) makes it for those parameters: after prepare, every part
     * applied once, in any order, is apply(skip), bit for bit. */
    fn_status (*split)(fn_optimizer *opt);
    fn_status (*apply_part)(fn_optimizer *opt, int part, const int *skip);
    /* Both or neither: where the optimiser keeps some state in another
     * number format than the float32 tensors `state` publishes (SGD's
     * momentum_bf16, sgd.h), export writes that state into them (widened
     * exactly) and import reads them back (rounded to the kept format),
     * each queued on the context's stream; fn_optimizer_state_export and
     * _import (optimizer.h) reach them. */
    fn_status (*state_export)(fn_optimizer *opt);
    fn_status (*state_import)(fn_optimizer *opt);
    /* The bytes of that other-format state (what fn_optimizer_state_bytes
     * adds to the float32 tensors'). */
    size_t (*kept_state_bytes)(const fn_optimizer *opt);
    /* An optimiser that sums the gradients over the ranks itself (the
     * sharded one, optim/shard.h): sum_start starts the sums that the
     * update of parameters [first, first + count) reads, as one ticket of
     * its communicator (a ticket even for count 0, as fn_comm_sum_start
     * takes one), and step_params waits for them. Without it the caller
     * sums the gradients (fn_comm_sum_start) before the update. */
    fn_status (*sum_start)(fn_optimizer *opt, int first, int count);
    /* Both or neither: an optimiser whose ranks keep parts of its state
     * (the sharded one) publishes it through `state` only between
     * whole_begin and whole_end, as whole tensors in host memory, every
     * rank calling both: FN_WHOLE_WRITE gathers the parts into rank 0's
     * tensors (the other ranks publish none), exported (state_export
     * then has nothing left to do); FN_WHOLE_READ gives every rank zeroed
     * ones to load, of which state_import takes the rank's part.
     * Without them the published state is whole at all times. */
    fn_status (*whole_begin)(fn_optimizer *opt, fn_optimizer_whole mode);
    void (*whole_end)(fn_optimizer *opt);
} fn_optimizer_paths;

/* Checked entry points (optimizer.c). A step that fails is not counted;
 * one after FN_OPTIMIZER_MAX_STEPS steps, or from a negative count, fails. */

/* The parts of a step (step_params): can_step_params is 1 when the
 * optimiser has them; FN_ERR_INVALID without them or for a range outside
 * the parameters; step_done counts the step. */
int fn_optimizer_can_step_params(const fn_optimizer *opt);
fn_status fn_optimizer_step_params(fn_optimizer *opt, int first, int count);
void fn_optimizer_step_done(fn_optimizer *opt);
/* 1 when the optimiser, as configured, has a backward_step;
 * fn_optimizer_backward_step is FN_ERR_INVALID without one. */
int fn_optimizer_can_backward_step(const fn_optimizer *opt);
fn_status fn_optimizer_backward_step(fn_optimizer *opt, fn_net *net, const fn_tensor *dy);
/* The two halves of a step (prepare and apply above): prepare counts the
 * step; apply may run again for the same prepared step only where the
 * caller replays it. FN_ERR_INVALID when the optimiser has no halves. */
int fn_optimizer_can_split(const fn_optimizer *opt);
fn_status fn_optimizer_prepare(fn_optimizer *opt);
fn_status fn_optimizer_apply(fn_optimizer *opt, const int *skip);
/* The split step's device half in parts (split and apply_part above):
 * can_apply_parts is 1 when the optimiser has them; set_parts cuts the
 * parameters into n parts of counts[k] each, in order (a count may be 0;
 * they sum to n_params), replacing an earlier cut; apply_part queues part
 * k's update of the prepared step. FN_ERR_INVALID without them, for
 * counts that do not cover the parameters or a part out of range. */
int fn_optimizer_can_apply_parts(const fn_optimizer *opt);
fn_status fn_optimizer_set_parts(fn_optimizer *opt, const int *counts, int n);
fn_status fn_optimizer_apply_part(fn_optimizer *opt, int part, const int *skip);
/* The fold hook above; *folded 0 without one. On a folded optimiser
 * fn_optimizer_zero_grad zeroes the running sums (SGD: momentum restarts),
 * and setting the step count to 0 does not restart them. */
fn_status fn_optimizer_fold(fn_optimizer *opt, int *folded);
/* The fuse hook above; FN_OK and nothing without one. */
fn_status fn_optimizer_fuse(fn_optimizer *opt, fn_net *net);
/* The sum_start hook above: sums_own is 1 where the optimiser has one;
 * sum_start is FN_ERR_INVALID without one or for a range outside the
 * parameters. */
int fn_optimizer_sums_own(const fn_optimizer *opt);
fn_status fn_optimizer_sum_start(fn_optimizer *opt, int first, int count);
/* The whole_begin and whole_end hooks above: FN_OK and nothing without
 * them. Every rank calls them, around a checkpoint's write (rank 0's) or
 * read (every rank's). */
fn_status fn_optimizer_whole_begin(fn_optimizer *opt, fn_optimizer_whole mode);
void fn_optimizer_whole_end(fn_optimizer *opt);
/* The bytes of the parameters' gradient tensors that are published state
 * tensors (a fold: SGD's momentum buffers), which fn_optimizer_state_bytes
 * counts already: a sum of the parameters' gradient bytes and the state's
 * counts these twice. 0 unfolded. */
size_t fn_optimizer_grad_state_bytes(fn_optimizer *opt);

#endif
