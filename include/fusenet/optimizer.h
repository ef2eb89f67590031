/* optimizer.h — the optimiser interface: a struct whose behaviour is a
 * static const table of function pointers, as a layer's is (layer.h). SGD
 * (sgd.h) is the first; the trainer and checkpoints see only this.
 *
 * An optimiser updates a fixed list of parameters from their gradients and
 * counts its steps. It publishes its per-parameter state as named kinds
 * ("momentum"), each a tensor shaped like the parameter's value or none:
 * checkpoint.h stores every kind as a group of one dataset per parameter
 * that has one. The table below is the whole of what a new optimiser
 * fills; the trainer's faster ways to step (the update folded into
 * backward, a step split for CUDA graphs, updates in parts) are hooks of
 * the library's own, behind the optional `paths`.
 *
 * A concrete optimiser embeds fn_optimizer as its first member, sets it up
 * with fn_optimizer_init and frees it with fn_optimizer_release in its
 * destroy. Adding one: its own header and files, and a line in the registry
 * of optimisers (optimizer_kind.h, src/optim/optimizer_kind.c). */
#ifndef FUSENET_OPTIMIZER_H
#define FUSENET_OPTIMIZER_H

#include "fusenet/api.h"

#include "fusenet/net.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fn_optimizer fn_optimizer;

/* The library's performance paths (defined where it implements them). */
struct fn_optimizer_paths;

typedef struct fn_optimizer_ops {
    const char *name; /* "sgd" */
    /* Updates every parameter from its gradient; opt->steps counts the steps
     * before this one (0: the first, whose state starts afresh). */
    fn_status (*step)(fn_optimizer *opt);
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
    /* NULL for an optimiser outside the library: its faster ways to step,
     * which only the library's own optimisers provide. */
    const struct fn_optimizer_paths *paths;
} fn_optimizer_ops;

struct fn_optimizer {
    const fn_optimizer_ops *ops;
    fn_context *ctx;   /* borrowed */
    fn_param **params; /* [n_params]; the array is the optimiser's, the parameters borrowed */
    int n_params;
    long long steps;   /* steps taken */
    int n_parts;       /* the parts of its update (the paths'); 0 before */
    int *part_first;   /* [n_parts + 1]: part k's first parameter; the last n_params */
};

/* The most steps an optimiser takes: its step count t is exact in the
 * double arithmetic of Adam's bias corrections up to 2^53, and t + 1
 * never overflows. A checkpoint with more is refused when it is read. */
#define FN_OPTIMIZER_MAX_STEPS (1LL << 53)

/* Checked entry points. A step that fails is not counted; one after
 * FN_OPTIMIZER_MAX_STEPS steps, or from a negative count, fails. */
FN_API fn_status fn_optimizer_step(fn_optimizer *opt);
FN_API void fn_optimizer_set_lr(fn_optimizer *opt, float lr);
/* Zeroes the gradients of every parameter (on the GPU, for the library's
 * optimisers, in one launch). */
FN_API fn_status fn_optimizer_zero_grad(fn_optimizer *opt);
FN_API void fn_optimizer_destroy(fn_optimizer *opt); /* NULL is fine */
FN_API const char *fn_optimizer_name(const fn_optimizer *opt);

/* The step count, for checkpoints. Setting it to 0 restarts the state. */
FN_API long long fn_optimizer_steps(const fn_optimizer *opt);
FN_API void fn_optimizer_set_steps(fn_optimizer *opt, long long steps);

/* The published state (see fn_optimizer_ops); NULL out of range. */
FN_API int fn_optimizer_n_state(const fn_optimizer *opt);
FN_API const char *fn_optimizer_state_name(const fn_optimizer *opt, int kind);
/* 1 when no value of kind `kind` can be negative (state_nonnegative). */
FN_API int fn_optimizer_state_nonnegative(const fn_optimizer *opt, int kind);
FN_API fn_tensor *fn_optimizer_state(fn_optimizer *opt, int kind, int param);
/* Where an optimiser keeps some state in another number format than the
 * float32 tensors it publishes (SGD's momentum_bf16, sgd.h): export
 * writes that state into them (widened exactly), import reads them back
 * (rounded to the kept format), each queued on the context's stream. A
 * reader of the published state (checkpoints) exports first; a writer
 * imports after. FN_OK and nothing elsewhere (the published tensors are
 * the state itself). */
FN_API fn_status fn_optimizer_state_export(fn_optimizer *opt);
FN_API fn_status fn_optimizer_state_import(fn_optimizer *opt);
/* The bytes of every state tensor it publishes, on the parameters' device. */
FN_API size_t fn_optimizer_state_bytes(fn_optimizer *opt);

/* For implementations: checks that every parameter's value and gradient
 * live on ctx's device with one shape (messages start with `who`), then
 * sets opt up with ops and a copy of the list, and keeps the bfloat16 copy
 * of each parameter that has one (param.h: fn_param_keep_bf16): its
 * update writes the copy too, in its own pass (the multi-tensor table's
 * kernels) or after it (fn_param_refresh_bf16). */
FN_API fn_status fn_optimizer_init(fn_optimizer *opt, const fn_optimizer_ops *ops, fn_context *ctx,
                                   fn_param *const *params, int n_params, const char *who);
/* Frees what fn_optimizer_init allocated (not opt itself) and gives back
 * the bfloat16 copies it kept. */
FN_API void fn_optimizer_release(fn_optimizer *opt);
/* Zeroes every parameter's gradient one tensor at a time: what
 * fn_optimizer_zero_grad does without a zero_grad hook, and what a hook
 * falls back to where it has no faster way. */
FN_API fn_status fn_optimizer_zero_each(fn_optimizer *opt);

#ifdef __cplusplus
}
#endif
#endif
