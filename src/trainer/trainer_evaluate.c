/* trainer_evaluate.c — the mean loss (and accuracy) of the net over every
 * batch of a set, summed over the ranks; a non-finite loss names the
 * first non-finite value. */
#include <math.h>
#include <stdio.h>

#include "trainer/trainer_impl.h"

static fn_status nonfinite_eval(fn_trainer *t, const fn_batch *b, float loss)
{
    fn_nonfinite nf;
    char first[256];
    fn_trainer_describe_nonfinite(fn_net_find_nonfinite(t->net, 0, &nf), &nf, first, sizeof first);
    return fn_fail(FN_ERR_NUMERIC,
                   "epoch %lld: validation loss is %s at row %lld; first non-finite: %s",
                   t->state.epoch + 1, fn_trainer_number_name(loss), (long long)b->index[0], first);
}

fn_status fn_trainer_evaluate(fn_trainer *t, fn_loader *set, fn_train_metrics *m)
{
    double loss_sum = 0;
    long long correct = 0, seen = 0;
    FN_TRY(fn_trainer_set_pass(t, NULL, 0)); /* dropout off */
    FN_TRY(fn_loader_start(set, 0, 0));
    for (;;) {
        fn_batch b;
        FN_TRY(fn_loader_next(set, &b));
        if (!b.batch_rows)
            break;
        if (!b.rows)
            continue; /* this rank's share of a short batch is empty */
        fn_tensor y;
        FN_TRY(fn_net_forward(t->net, &b.x, &y));
        float loss = 0;
        int ok = 0;
        FN_TRY(fn_trainer_batch_loss(t, &b, &y, NULL, &loss, &ok));
        if (!isfinite(loss))
            return nonfinite_eval(t, &b, loss);
        loss_sum += (double)loss * b.rows;
        correct += ok;
        seen += b.rows;
    }
    FN_TRY(fn_trainer_dist_sum_metrics(t, &loss_sum, &correct, &seen));
    m->loss = loss_sum / (double)seen;
    m->acc = fn_trainer_metric(t, correct, seen);
    return FN_OK;
}
