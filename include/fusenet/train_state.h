/* train_state.h — where a training run stands: its position in the data
 * (epoch and step within it; with the seed, the batch size, the set's rows
 * and its slab size these fix the shuffle, see data.h), the steps taken and
 * the running sums of the unfinished epoch. The trainer keeps it and
 * checkpoints store it. */
#ifndef FUSENET_TRAIN_STATE_H
#define FUSENET_TRAIN_STATE_H

#include "fusenet/api.h"

#include <stdint.h>

#include "fusenet/schedule.h"
#include "fusenet/status.h"

#ifdef __cplusplus
extern "C" {
#endif

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
    double grad_norm;      /* the last step's gradient norm before clipping; NaN when
                            * not clipping (clip.h) */
    /* [train] keep_best and patience: the best value so far of the metric
     * [train] monitor names, its epoch (1-based; 0: none yet) and the
     * epochs since it. */
    double best;
    long long best_epoch;
    long long since_best;
    /* The learning-rate schedule's state (schedule.h: a kind that reacts
     * to the run keeps it; zeros for the others and before the first
     * epoch's end). */
    double schedule[FN_SCHEDULE_STATE_MAX];
    /* [data] standardize_targets of the run (1 or 0): a run resumed with
     * the other would train its outputs in other units. -1: unknown (from
     * fn_train_state_start, or a checkpoint that does not record it). */
    int standardize_targets;
} fn_train_state;

#ifdef __cplusplus
}
#endif
#endif
