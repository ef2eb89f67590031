/* train_state.h (run) — the trainer's bookkeeping of where a run stands
 * (fusenet/train_state.h, the state it reports and checkpoints store):
 * the start, each step, the watched metric, the end of an epoch, and the
 * check of a state read from a file. */
#ifndef FUSENET_RUN_TRAIN_STATE_H
#define FUSENET_RUN_TRAIN_STATE_H

#include "fusenet/train_state.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The start of a run: epoch 0, nothing taken. */
fn_train_state fn_train_state_start(uint64_t seed, int batch_size, long long rows,
                                    long long slab_rows);
/* A step over a batch of `rows` rows with mean loss `loss`, `correct` of
 * them classified right. */
void fn_train_state_add_step(fn_train_state *s, double loss, int rows, long long correct);
/* An epoch's watched metric (monitor.h): whether it is the best yet
 * (higher is better, or lower with lower_better) by more than min_delta
 * (>= 0), updating best, best_epoch and since_best. The first epoch's is
 * the best yet. */
int fn_train_state_best(fn_train_state *s, double metric, int lower_better, double min_delta);
/* The epoch is over: the next one starts with empty sums. */
void fn_train_state_next_epoch(fn_train_state *s);
/* FN_ERR_FORMAT, naming `where`, unless every count is in range (a state
 * read from a file). */
fn_status fn_train_state_check(const fn_train_state *s, const char *where);

#ifdef __cplusplus
}
#endif
#endif
