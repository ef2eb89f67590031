/* checkpoint.h — everything a run needs to continue exactly where it
 * stopped: the weights (in the weights.h layout, with format
 * "fusenet-checkpoint"), the optimiser's state and step count, the run's
 * state (train_state.h: its position in the data and the running sums of
 * the unfinished epoch) and the config text. Written atomically like
 * weights files.
 *
 * The optimiser's state is stored as it publishes it (optimizer.h): one
 * group per kind, named as the kind ("momentum"), holding a float32
 * dataset [rows, cols] named "layerI.name" for every parameter that has
 * one; the group is there even when empty.
 *
 * Version 2 adds the root attributes optimizer (its name: "sgd", "adam",
 * "adamw"), optimizer_steps (its step count: Adam's bias correction needs
 * it) and grad_norm (the last step's gradient norm, NaN when not
 * clipping). A version-1 file (SGD only) still loads: its optimiser is
 * "sgd", its step count global_step, its grad_norm NaN. */
#ifndef FUSENET_CHECKPOINT_H
#define FUSENET_CHECKPOINT_H

#include "fusenet/api.h"

#include "fusenet/input_norm.h"
#include "fusenet/net.h"
#include "fusenet/optimizer.h"
#include "fusenet/provenance.h"
#include "fusenet/train_state.h"

#ifdef __cplusplus
extern "C" {
#endif

#define FN_CHECKPOINT_FORMAT "fusenet-checkpoint"
#define FN_CHECKPOINT_VERSION 2 /* written; 1 and 2 are read */

/* What a checkpoint holds besides the layers, the optimiser's state and
 * the run's; every field may be NULL (zero-initialise the struct). */
typedef struct fn_checkpoint_save_options {
    /* The run's input standardisation, as the group `/input_norm` of
     * weights files (input_norm.h; read back by fn_input_norm_load). */
    const fn_input_norm *norm;
    /* The run's provenance, as the group `/provenance` (provenance.h). */
    const fn_provenance *provenance;
    const char *config_text; /* the run's config text; NULL: "" */
} fn_checkpoint_save_options;

/* Writes net, opt's state and *state to path, with what options names
 * (options NULL: none of it). opt must optimise net's parameters, in
 * net's order. */
FN_API fn_status fn_checkpoint_save(const char *path, const fn_net *net, fn_optimizer *opt,
                                    const fn_train_state *state,
                                    const fn_checkpoint_save_options *options);

/* Restores net's values, opt's state and step count, and *state. The net
 * must have the checkpoint's layers, opt the kind (name) and configuration
 * it was written with (a state kind it keeps must be in the file, and a
 * state kind in the file it must keep: FN_ERR_INVALID "... does not keep"
 * rather than dropping it). */
FN_API fn_status fn_checkpoint_load(const char *path, fn_net *net, fn_optimizer *opt,
                                    fn_train_state *state);

#ifdef __cplusplus
}
#endif
#endif
