/* trainer_notices.c — what the user should know before a run that is no
 * error (fn_trainer_callbacks.on_notice): how a set's targets were read
 * when not as declared (fn_data_reading); a last layer of bounded outputs
 * under a loss that reads logits; and, without [data] standardize, input
 * columns whose scales differ by more than SCALE_RATIO. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "trainer/trainer_impl.h"

/* Column scales (root mean square) further apart than this slow or stall
 * plain gradient descent: the largest columns dominate the first layer. */
#define SCALE_RATIO 1000.0

static void notice(const fn_trainer *t, const char *text)
{
    if (t->cb.on_notice && text[0])
        t->cb.on_notice(t->user, text);
}

static void notice_readings(const fn_trainer *t)
{
    char text[1024];
    fn_data_reading(t->train, text, sizeof text);
    notice(t, text);
    if (t->valid) {
        fn_data_reading(t->valid, text, sizeof text);
        notice(t, text);
    }
}

/* The first kind of the registry whose outputs are not bounded, as a
 * usage ("linear N"); NULL when there is none. */
static const char *unbounded_usage(void)
{
    for (int i = 0; i < fn_layer_kind_count(); i++)
        if (!fn_layer_kind_at(i)->bounded_outputs)
            return fn_layer_kind_at(i)->usage;
    return NULL;
}

static void notice_last_layer(const fn_trainer *t)
{
    const fn_config *c = t->cfg;
    const fn_layer_spec *last = &c->layers[c->n_layers - 1];
    if (!c->loss->takes_logits || !last->kind->bounded_outputs)
        return;
    const char *usage = unbounded_usage();
    char text[512];
    snprintf(text, sizeof text,
             "[model] layers ends with '%s %d' under loss = %s: its outputs are normalised and "
             "activated, a narrow range for logits; end with %s%s%s", last->kind->name,
             last->width, c->loss->name, usage ? "'" : "a layer of unbounded outputs",
             usage ? usage : "", usage ? "' for the classes" : "");
    notice(t, text);
}

/* Without [data] standardize: the columns of smallest and largest root
 * mean square (all-zero columns aside) when they are more than
 * SCALE_RATIO apart. Only for a set held whole in memory: a set read in
 * slabs is not read once more for a notice. */
static fn_status notice_scales(fn_trainer *t)
{
    if (t->cfg->standardize || t->norm || !t->cb.on_notice ||
        fn_data_slab_rows(t->train) != fn_data_rows(t->train))
        return FN_OK;
    const int in = fn_data_in_features(t->train);
    double *mean = malloc((size_t)in * sizeof *mean), *std = malloc((size_t)in * sizeof *std);
    int *constant = malloc((size_t)in * sizeof *constant);
    fn_status st = mean && std && constant ? fn_data_column_stats(t->train, mean, std, constant)
                                           : fn_fail(FN_ERR_NOMEM, "out of host memory");
    int lo = -1, hi = -1;
    double scale_lo = 0, scale_hi = 0;
    for (int j = 0; st == FN_OK && j < in; j++) {
        const double s = sqrt(mean[j] * mean[j] + std[j] * std[j]);
        if (s == 0)
            continue;
        if (lo < 0 || s < scale_lo)
            lo = j, scale_lo = s;
        if (hi < 0 || s > scale_hi)
            hi = j, scale_hi = s;
    }
    free(mean);
    free(std);
    free(constant);
    FN_TRY(st);
    if (lo < 0 || scale_hi <= SCALE_RATIO * scale_lo)
        return FN_OK;
    char text[512];
    snprintf(text, sizeof text,
             "%s: input column scales (root mean square) differ %.0fx: column %d is about %.3g, "
             "column %d about %.3g; set [data] standardize = true to give every column mean 0 "
             "and std 1", fn_data_path(t->train), scale_hi / scale_lo, lo, scale_lo, hi, scale_hi);
    notice(t, text);
    return FN_OK;
}

fn_status fn_trainer_notices(fn_trainer *t)
{
    notice_readings(t);
    notice_last_layer(t);
    return notice_scales(t);
}
