/* train_state.c — the arithmetic of a run's position and running sums, in
 * one place for the trainer that advances them and the checkpoint that
 * reads them back. */
#include <math.h>

#include "fusenet/train_state.h"
#include "run/train_state.h"

fn_train_state fn_train_state_start(uint64_t seed, int batch_size, long long rows,
                                    long long slab_rows)
{
    return (fn_train_state){.seed = seed, .batch_size = batch_size, .rows = rows,
                            .slab_rows = slab_rows, .grad_norm = NAN,
                            .standardize_targets = -1 /* the trainer's own run sets it */};
}

void fn_train_state_add_step(fn_train_state *s, double loss, int rows, long long correct)
{
    s->loss_sum += loss * rows;
    s->correct += correct;
    s->seen += rows;
    s->step++;
    s->global_step++;
}

int fn_train_state_best(fn_train_state *s, double metric, int lower_better, double min_delta)
{
    const int better = s->best_epoch == 0 || (lower_better ? metric < s->best - min_delta
                                                            : metric > s->best + min_delta);
    if (better) {
        s->best = metric;
        s->best_epoch = s->epoch + 1;
        s->since_best = 0;
    } else {
        s->since_best++;
    }
    return better;
}

void fn_train_state_next_epoch(fn_train_state *s)
{
    s->epoch++;
    s->step = 0;
    s->loss_sum = 0;
    s->correct = s->seen = 0;
}

fn_status fn_train_state_check(const fn_train_state *s, const char *where)
{
    if (s->epoch < 0 || s->step < 0 || s->global_step < 0 || s->batch_size < 1 || s->rows < 0 ||
        s->slab_rows < 0)
        return fn_fail(FN_ERR_FORMAT, "%s: negative epoch, step, batch size, rows or slab rows",
                       where);
    /* Step counts as a run can have them, so no count + 1 overflows. */
    const long long most = 1LL << 53;
    if (s->epoch > most || s->step > most || s->global_step > most)
        return fn_fail(FN_ERR_FORMAT, "%s: epoch %lld, step %lld or global_step %lld is beyond "
                       "2^53", where, s->epoch, s->step, s->global_step);
    if (s->best_epoch < 0 || s->best_epoch > s->epoch || s->since_best < 0)
        return fn_fail(FN_ERR_FORMAT, "%s: best_epoch %lld or since_best %lld is out of range",
                       where, s->best_epoch, s->since_best);
    return FN_OK;
}
