/* trainer_notices.c — what the user should know before a run that is no
 * error (fn_trainer_callbacks.on_notice): what [run] shard does to the
 * run; how a set's targets were read
 * when not as declared (fn_data_reading); a last layer of bounded outputs
 * under a loss that reads logits; outputs that no training label asks
 * for; [run] grad_sum = bf16 where nothing is summed; and, without [data] standardize, input columns whose scales differ
 * by more than SCALE_RATIO. The last two only for a training set held
 * whole in memory: a set read in slabs is not read once more for a
 * notice. */
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
             usage ? usage : "", usage ? "'" : "");
    notice(t, text);
}

/* [run] grad_sum = bf16 where no communicator sums (one process, no
 * launcher): the key is kept, and changes nothing. */
static void notice_grad_sum(const fn_trainer *t)
{
    if (t->cfg->grad_sum == FN_COMM_SUM_FLOAT32 || t->dist)
        return;
    char text[256];
    snprintf(text, sizeof text,
             "[run] grad_sum = %s changes nothing here: one process without a launcher sums "
             "no gradients (it applies under mpirun or srun)",
             fn_comm_sum_name(t->cfg->grad_sum));
    notice(t, text);
}

/* The classes c with used[c] == 0 of n, as ranges ("3, 7 to 9"), cut
 * after MAX_RANGES ranges ("and 12 more"); the count into *unused. */
enum { MAX_RANGES = 8 };
static void unused_list(const unsigned char *used, int n, char *buf, size_t cap, int *unused)
{
    size_t len = 0;
    int ranges = 0, left = 0;
    buf[0] = '\0';
    *unused = 0;
    for (int c = 0; c < n; c++) {
        if (used[c])
            continue;
        int end = c;
        while (end + 1 < n && !used[end + 1])
            end++;
        *unused += end - c + 1;
        if (ranges++ < MAX_RANGES && len < cap) {
            const int w = end == c ? snprintf(buf + len, cap - len, "%s%d", len ? ", " : "", c)
                                   : snprintf(buf + len, cap - len, "%s%d to %d",
                                              len ? ", " : "", c, end);
            len += w > 0 ? (size_t)w : 0;
        } else {
            left += end - c + 1;
        }
        c = end;
    }
    if (left && len < cap)
        snprintf(buf + len, cap - len, " and %d more", left);
}

/* A network of more outputs than the training labels use: under a loss of
 * class labels, the outputs no row is labelled with, which training only
 * pushes down. */
static fn_status notice_unused_outputs(fn_trainer *t)
{
    fn_data *d = t->train;
    if (t->cfg->loss->targets != FN_DATA_LABELS || !t->cb.on_notice ||
        fn_data_slab_rows(d) != fn_data_rows(d))
        return FN_OK;
    const int out = fn_data_out_features(d);
    unsigned char *used = malloc((size_t)out);
    if (!used)
        return fn_fail(FN_ERR_NOMEM, "out of host memory");
    fn_status st = fn_data_labels_used(d, used);
    char list[256];
    int unused = 0, top = out; /* the outputs from top on are all unused */
    if (st == FN_OK) {
        unused_list(used, out, list, sizeof list, &unused);
        while (top > 0 && !used[top - 1])
            top--;
    }
    free(used);
    FN_TRY(st);
    if (!unused)
        return FN_OK;
    char text[640], fix[160] = "";
    if (top > 0 && out - top == unused)
        snprintf(fix, sizeof fix, "; for the classes 0 to %d, end [model] layers with a width "
                 "of %d", top - 1, top);
    snprintf(text, sizeof text,
             "%s: no row is labelled %s, but the network has %d outputs (one a class): "
             "training only pushes %s down%s", fn_data_path(d), list, out,
             unused == 1 ? "that output" : "those outputs", fix);
    notice(t, text);
    return FN_OK;
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

/* What [run] shard = optimizer does to this run. */
static void notice_shard(const fn_trainer *t)
{
    if (!t->cfg->shard)
        return;
    char text[512];
    if (!t->dist)
        snprintf(text, sizeof text, "[run] shard = optimizer divides the optimiser's state among "
                 "the ranks of mpirun or srun; this run is one process, which keeps it whole");
    else
        snprintf(text, sizeof text, "optimiser sharded over %d ranks: each updates its part of "
                 "every parameter and keeps that part's state (%.1f KiB on this rank); "
                 "checkpoints gather it whole", t->ranks,
                 (double)fn_optimizer_state_bytes(t->opt) / 1024.0);
    notice(t, text);
}

fn_status fn_trainer_notices(fn_trainer *t)
{
    notice_shard(t);
    notice_readings(t);
    notice_last_layer(t);
    notice_grad_sum(t);
    FN_TRY(notice_unused_outputs(t));
    return notice_scales(t);
}
