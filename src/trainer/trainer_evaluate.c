/* trainer_evaluate.c — the mean loss (and accuracy) of the net over every
 * batch of a set, summed over the ranks; a non-finite loss names the
 * first non-finite value. The set's loss is its batches' values weighted
 * by their mean's divisor (fn_loss_mean_weight: the rows, or with
 * class weights the rows' label weights, times the rows' sample weights
 * when the set has them), so it is the loss of the whole
 * set as one batch, whatever the batch size (PyTorch's
 * CrossEntropyLoss(weight=) over the set: sum(w l) / sum(w)). When every
 * row of the set weighs 0 that is 0/0: the loss is NaN, said once in a
 * notice, and what would compare it refuses it (trainer_loop.c). */
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

/* The weight of batch b's loss in the set's mean (its mean's divisor:
 * with sample weights, theirs). */
static double batch_weight(const fn_trainer *t, const fn_batch *b)
{
    return fn_loss_mean_weight(t->cfg->loss, t->cfg->loss_options, b->host_labels,
                               b->host_weights, b->rows);
}

fn_status fn_trainer_evaluate(fn_trainer *t, fn_loader *set, fn_train_metrics *m)
{
    double loss_sum = 0, weight_sum = 0;
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
        /* Rows that all weigh 0 have no mean (0 / 0) and add nothing to
         * the set's; their predictions still count in the accuracy. */
        const double w = batch_weight(t, &b);
        if (w != 0 && !isfinite(loss))
            return nonfinite_eval(t, &b, loss);
        if (w != 0) {
            loss_sum += (double)loss * w;
            weight_sum += w;
        }
        correct += ok;
        seen += b.rows;
    }
    FN_TRY(fn_trainer_dist_sum_metrics(t, &loss_sum, &weight_sum, &correct, &seen));
    m->loss = weight_sum != 0 ? loss_sum / weight_sum : NAN;
    if (weight_sum == 0 && !t->valid_loss_said && t->cb.on_notice) {
        char text[768];
        snprintf(text, sizeof text,
                 "%s: every row weighs 0 in the mean of loss = %s as configured, so the "
                 "validation loss, sum(w l) / sum(w), is 0/0: it is reported as '-' (nan in "
                 "metrics.csv) every epoch; the validation accuracy counts every row",
                 fn_data_path(t->valid), t->cfg->loss->name);
        t->cb.on_notice(t->user, text);
    }
    t->valid_loss_said |= weight_sum == 0;
    m->acc = fn_trainer_metric(t, correct, seen);
    return FN_OK;
}
