/* optimizer.h — the optimiser interface: a struct whose behaviour is a
 * static const table of function pointers, as a layer's is (layer.h). SGD
 * (sgd.h) is the first; the trainer and checkpoints see only this.
 *
 * An optimiser updates a fixed list of parameters from their gradients and
 * counts its steps. It publishes its per-parameter state as named kinds
 * ("momentum"), each a tensor shaped like the parameter's value or none:
 * checkpoint.h stores every kind as a group of one dataset per parameter
 * that has one. A configuration that can take the update inside the
 * backward pass (plain SGD on the GPU) fills the optional backward_step;
 * callers check it for NULL and otherwise run fn_net_backward and
 * fn_optimizer_step (backward writes the gradients, param.h; after
 * fn_optimizer_fold never zero them: they are the optimiser's state).
 *
 * A concrete optimiser embeds fn_optimizer as its first member, sets it up
 * with fn_optimizer_init and frees it with fn_optimizer_release in its
 * destroy. Adding one: its own header and files, and a line in the registry
 * of optimisers (optimizer_kind.h, src/optim/optimizer_kind.c). */
#ifndef FUSENET_OPTIMIZER_H
#define FUSENET_OPTIMIZER_H

#include "fusenet/net.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fn_optimizer fn_optimizer;

typedef struct fn_optimizer_ops {
    const char *name; /* "sgd" */
    /* Updates every parameter from its gradient; opt->steps counts the steps
     * before this one (0: the first, whose state starts afresh). */
    fn_status (*step)(fn_optimizer *opt);
    /* Optional: the update of parameters [first, first + count) alone, as
     * step would make it in the same step (the count not advanced); a
     * step made of such calls covering every parameter once, then
     * fn_optimizer_step_done, is the same step as `step`, bit for bit. For
     * data parallelism: a layer is updated as soon as its gradient sum is
     * in (step_dist.c). */
    fn_status (*step_params)(fn_optimizer *opt, int first, int count);
    /* Optional: the backward of net's last forward from dy [batch, out],
     * with this step folded in; the same step as fn_net_zero_grad,
     * fn_net_backward and step (net.h says where rounding differs). net's
     * parameters must be the optimiser's. */
    fn_status (*backward_step)(fn_optimizer *opt, fn_net *net, const fn_tensor *dy);
    /* Optional, with backward_step: the caller takes every step on net
     * with backward_step alone from now on (one process, no clipping), so
     * the optimiser frees what that step never reads (plain SGD: the
     * gradients of the layers whose backward_sgd updates their values,
     * fn_layer_release_grads; a later fn_net_backward allocates them
     * again; destroying the optimiser allocates them, zeroed). Its step,
     * step_params, prepare, apply and apply_part then fail, naming
     * backward_step. */
    fn_status (*fuse)(fn_optimizer *opt, fn_net *net);
    /* Changes the learning rate (schedules); an invalid one fails the next step. */
    void (*set_lr)(fn_optimizer *opt, float lr);
    int n_state;                    /* kinds of per-parameter state */
    const char *const *state_names; /* [n_state]: "momentum" */
    /* Optional, [n_state]: 1 for a kind no value of which can be negative
     * (a second moment): a checkpoint holding one is refused when read. */
    const unsigned char *state_nonnegative;
    /* Parameter `param`'s state of kind `kind`, shaped like its value, or
     * NULL when this configuration keeps none. */
    fn_tensor *(*state)(fn_optimizer *opt, int kind, int param);
    void (*destroy)(fn_optimizer *opt);
    /* Optional, both or neither (SGD and Adam have them): the step in two
     * halves, for a step queued ahead of the host (the trainer's deferred
     * step, its CUDA graph). prepare is the host's half, once a step
     * before apply's work runs: it checks the options and writes the
     * step's scalars (lr, the step count's) where apply reads them,
     * queued on the context's stream. apply queues the update itself:
     * launches only, reading those scalars on the device, so a CUDA graph
     * can capture it once and replay it every step; skip: an int where
     * the kernels read it (device memory on the GPU, host memory on the
     * CPU) or NULL: while it is non-zero the update does nothing. prepare
     * followed by apply(NULL) is step, bit for bit. */
    fn_status (*prepare)(fn_optimizer *opt);
    fn_status (*apply)(fn_optimizer *opt, const int *skip);
    /* Optional: zeroes every parameter's gradient (on the GPU in one
     * launch on the context's stream, which a graph can capture). */
    fn_status (*zero_grad)(fn_optimizer *opt);
    /* Optional: folds the optimiser's running sum of gradients into
     * backward where its configuration allows (SGD: momentum > 0,
     * dampening 0, not nesterov): each parameter's .grad is made to alias
     * that state and its grad_beta (param.h) set to the sum's factor, so
     * backward itself leaves the new sum there (SGD: buf = mu buf + g, the
     * dW product with cuBLAS's beta = mu on the buffer) and the step
     * reads no separate gradient. The parameters' own gradient tensors
     * are freed (they must be fn_tensor_alloc's, as a layer's are).
     * Until the optimiser is destroyed (which gives the parameters new
     * gradients of their own, zeroed: destroy it before the net) the
     * .grad tensors hold the sum, not a plain gradient, so a
     * caller folds only where nothing else reads the gradients between
     * backward and the step (no clipping, no sums over processes), and a
     * backward not followed by its step moves the state all the same.
     * *folded: 1 when folded (now or before), 0 when this configuration
     * cannot fold (nothing changed). */
    fn_status (*fold)(fn_optimizer *opt, int *folded);
    /* Optional, both or neither, with prepare and apply: the split step's
     * device half in parts, for updates queued beside backward (a layer's
     * as soon as its gradients are final). fn_optimizer_set_parts has cut
     * the parameters, in order, into opt->n_parts runs (part k is
     * [part_first[k], part_first[k + 1])); split then makes what its
     * apply_part needs (on the GPU a multi-tensor table a part, before
     * any capture). apply_part(opt, k, skip) queues part k's update alone,
     * as apply(skip) makes it for those parameters: after prepare, every
     * part applied once, in any order, is apply(skip), bit for bit. */
    fn_status (*split)(fn_optimizer *opt);
    fn_status (*apply_part)(fn_optimizer *opt, int part, const int *skip);
    /* Optional, both or neither: where the optimiser keeps some state in
     * another number format than the float32 tensors `state` publishes
     * (SGD's momentum_bf16, sgd.h), export writes that state into them
     * (widened exactly) and import reads them back (rounded to the kept
     * format), each queued on the context's stream. A reader of the
     * published state (checkpoints) exports first; a writer imports after. */
    fn_status (*state_export)(fn_optimizer *opt);
    fn_status (*state_import)(fn_optimizer *opt);
    /* Optional: the bytes of that other-format state (what
     * fn_optimizer_state_bytes adds to the float32 tensors'). */
    size_t (*kept_state_bytes)(const fn_optimizer *opt);
} fn_optimizer_ops;

struct fn_optimizer {
    const fn_optimizer_ops *ops;
    fn_context *ctx;   /* borrowed */
    fn_param **params; /* [n_params]; the array is the optimiser's, the parameters borrowed */
    int n_params;
    long long steps;   /* steps taken */
    int n_parts;       /* fn_optimizer_set_parts's; 0 before */
    int *part_first;   /* [n_parts + 1]: part k's first parameter; the last n_params */
};

/* The most steps an optimiser takes: its step count t is exact in the
 * double arithmetic of Adam's bias corrections up to 2^53, and t + 1
 * never overflows. A checkpoint with more is refused when it is read. */
#define FN_OPTIMIZER_MAX_STEPS (1LL << 53)

/* Checked entry points. A step that fails is not counted; one after
 * FN_OPTIMIZER_MAX_STEPS steps, or from a negative count, fails. */
fn_status fn_optimizer_step(fn_optimizer *opt);
/* The parts of a step (ops->step_params): FN_ERR_INVALID without them or
 * for a range outside the parameters; step_done counts the step. */
fn_status fn_optimizer_step_params(fn_optimizer *opt, int first, int count);
void fn_optimizer_step_done(fn_optimizer *opt);
/* FN_ERR_INVALID when the optimiser has no backward_step. */
fn_status fn_optimizer_backward_step(fn_optimizer *opt, fn_net *net, const fn_tensor *dy);
void fn_optimizer_set_lr(fn_optimizer *opt, float lr);
/* The two halves of a step (see prepare and apply above): prepare counts
 * the step; apply may run again for the same prepared step only where the
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
/* Zeroes the gradients of every parameter, through the zero_grad hook
 * where there is one, else one fn_tensor_zero a parameter. On an SGD
 * folded into backward (fn_optimizer_fold) that zeroes the momentum
 * buffers: momentum restarts. */
fn_status fn_optimizer_zero_grad(fn_optimizer *opt);
/* The fold hook above; *folded 0 without one. */
fn_status fn_optimizer_fold(fn_optimizer *opt, int *folded);
/* The fuse hook above; FN_OK and nothing without one. */
fn_status fn_optimizer_fuse(fn_optimizer *opt, fn_net *net);
void fn_optimizer_destroy(fn_optimizer *opt); /* NULL is fine */
const char *fn_optimizer_name(const fn_optimizer *opt);

/* The step count, for checkpoints. Setting it to 0 restarts the state,
 * except a folded SGD's momentum (fn_optimizer_fold), which backward
 * keeps adding to: fn_optimizer_zero_grad restarts that. */
long long fn_optimizer_steps(const fn_optimizer *opt);
void fn_optimizer_set_steps(fn_optimizer *opt, long long steps);

/* The published state (see fn_optimizer_ops); NULL out of range. */
int fn_optimizer_n_state(const fn_optimizer *opt);
const char *fn_optimizer_state_name(const fn_optimizer *opt, int kind);
/* 1 when no value of kind `kind` can be negative (state_nonnegative). */
int fn_optimizer_state_nonnegative(const fn_optimizer *opt, int kind);
fn_tensor *fn_optimizer_state(fn_optimizer *opt, int kind, int param);
/* The state_export and state_import hooks above; FN_OK without them (the
 * published tensors are the state itself). */
fn_status fn_optimizer_state_export(fn_optimizer *opt);
fn_status fn_optimizer_state_import(fn_optimizer *opt);
/* The bytes of every state tensor it publishes, on the parameters' device. */
size_t fn_optimizer_state_bytes(fn_optimizer *opt);
/* The bytes of the parameters' gradient tensors that are published state
 * tensors (a fold, fn_optimizer_fold: SGD's momentum buffers), which
 * fn_optimizer_state_bytes counts already: a sum of the parameters'
 * gradient bytes and the state's counts these twice. 0 unfolded. */
size_t fn_optimizer_grad_state_bytes(fn_optimizer *opt);

/* For implementations: checks that every parameter's value and gradient
 * live on ctx's device with one shape (messages start with `who`), then
 * sets opt up with ops and a copy of the list, and keeps the bfloat16 copy
 * of each parameter that has one (param.h: fn_param_keep_bf16): its
 * update writes the copy too, in its own pass (the multi-tensor table's
 * kernels) or after it (fn_param_refresh_bf16). */
fn_status fn_optimizer_init(fn_optimizer *opt, const fn_optimizer_ops *ops, fn_context *ctx,
                            fn_param *const *params, int n_params, const char *who);
/* Frees what fn_optimizer_init allocated (not opt itself) and gives back
 * the bfloat16 copies it kept. */
void fn_optimizer_release(fn_optimizer *opt);
/* Zeroes every parameter's gradient one tensor at a time: what
 * fn_optimizer_zero_grad does without a zero_grad hook, and what a hook
 * falls back to where it has no faster way. */
fn_status fn_optimizer_zero_each(fn_optimizer *opt);

#ifdef __cplusplus
}
#endif
#endif
