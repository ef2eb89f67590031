/* checkpoint.h — everything a run needs to continue exactly where it
 * stopped: the weights (in the weights.h layout, with format
 * "fusenet-checkpoint"), the SGD momentum buffers and step count, the
 * position in the data (epoch and step within it; with the seed, the batch
 * size, the set's rows and its slab size these fix the shuffle, see
 * data.h), the running sums of the unfinished epoch and the
 * config text. Written atomically like weights files. */
#ifndef FUSENET_CHECKPOINT_H
#define FUSENET_CHECKPOINT_H

#include <stdint.h>

#include "fusenet/net.h"
#include "fusenet/sgd.h"

#ifdef __cplusplus
extern "C" {
#endif

#define FN_CHECKPOINT_FORMAT "fusenet-checkpoint"

typedef struct fn_train_state {
    long long epoch;       /* the epoch to continue (0-based) */
    long long step;        /* batches of that epoch already taken */
    long long global_step; /* optimiser steps since the start */
    uint64_t seed;         /* [train] seed: with epoch and step, the data order */
    int batch_size;
    long long rows;        /* the training set's rows and its slab size (data.h): */
    long long slab_rows;   /* with seed and batch_size, they fix the data order */
    double loss_sum;       /* the epoch so far: sum of batch loss * rows */
    long long correct;     /* the epoch so far: correctly classified rows */
    long long seen;        /* the epoch so far: rows */
    double seconds;        /* training time so far */
} fn_train_state;

fn_status fn_checkpoint_save(const char *path, const fn_net *net, fn_sgd *opt,
                             const fn_train_state *state, const char *config_text);

/* Restores net's values, opt's buffers and step count, and *state. The net
 * must have the checkpoint's layers. */
fn_status fn_checkpoint_load(const char *path, fn_net *net, fn_sgd *opt, fn_train_state *state);

#ifdef __cplusplus
}
#endif
#endif
