/* loss_kind.c — the registry of losses (loss_kind.h): the one table that
 * lists them, and lookup by name. A new loss adds its line to the table. */
#include <stdio.h>
#include <string.h>

#include "fusenet/loss_kind.h"
#include "nn/losses/bce/bce.h"
#include "nn/losses/huber/huber.h"

static const fn_loss_kind *const kinds[] = {
    &fn_bce_with_logits_kind,
    &fn_cross_entropy_kind,
    &fn_huber_kind,
    &fn_mse_kind,
};
enum { N_KINDS = sizeof kinds / sizeof kinds[0] };

fn_status fn_loss_kind_find(const char *name, const fn_loss_kind **kind)
{
    for (int i = 0; name && i < N_KINDS; i++)
        if (strcmp(kinds[i]->name, name) == 0)
            return *kind = kinds[i], FN_OK;
    char known[256];
    return fn_fail(FN_ERR_INVALID, "expected %s, got '%s'", fn_loss_kind_list(known, sizeof known),
                   name ? name : "");
}

int fn_loss_kind_count(void) { return N_KINDS; }

const fn_loss_kind *fn_loss_kind_at(int i) { return i >= 0 && i < N_KINDS ? kinds[i] : NULL; }

const char *fn_loss_kind_name(const fn_loss_kind *kind) { return kind ? kind->name : ""; }

fn_data_targets fn_loss_kind_targets(const fn_loss_kind *kind)
{
    return kind ? kind->targets : FN_DATA_NO_TARGETS;
}

int fn_loss_kind_unit_targets(const fn_loss_kind *kind) { return kind ? kind->unit_targets : 0; }

const fn_option *fn_loss_option(const fn_loss_kind *kind, const char *name)
{
    return kind ? fn_option_find(kind->options, kind->n_options, name) : NULL;
}

const char *fn_loss_kind_list(char *buf, size_t cap)
{
    size_t len = 0;
    buf[0] = '\0';
    for (int i = 0; i < N_KINDS && len < cap; i++) {
        const char *sep = i == 0 ? "" : i == N_KINDS - 1 ? " or " : ", ";
        int n = snprintf(buf + len, cap - len, "%s%s", sep, kinds[i]->name);
        len += n > 0 ? (size_t)n : 0;
    }
    return buf;
}

double fn_loss_mean_weight(const fn_loss_kind *kind, const void *options,
                           const int32_t *host_labels, const float *host_weights, int rows)
{
    if (kind && kind->mean_weight)
        return kind->mean_weight(options, host_labels, host_weights, rows);
    if (!host_weights)
        return rows;
    double w = 0.0;
    for (int n = 0; n < rows; n++)
        w += host_weights[n];
    return w;
}

double fn_loss_row_accuracy(long long correct, long long rows, int outputs)
{
    (void)outputs;
    return (double)correct / (double)rows;
}
