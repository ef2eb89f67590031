/* loss_kind.c — the registry of losses (loss_kind.h): the one table that
 * lists them (count and lookup are the registries' own, core/kind.c). A
 * new loss adds its line to the table. */
#include "fusenet/loss_kind.h"
#include "nn/losses/bce/bce.h"
#include "nn/losses/huber/huber.h"
#include "core/option.h"

static const fn_kind *const kinds[] = {
    &fn_bce_with_logits_kind.kind,
    &fn_cross_entropy_kind.kind,
    &fn_huber_kind.kind,
    &fn_mse_kind.kind,
};
static const fn_registry registry = {kinds, sizeof kinds / sizeof kinds[0]};

const fn_registry *fn_loss_kinds(void) { return &registry; }

fn_status fn_loss_kind_find(const char *name, const fn_loss_kind **kind)
{
    const fn_kind *k = NULL;
    FN_TRY(fn_registry_find(&registry, name, &k));
    *kind = (const fn_loss_kind *)k;
    return FN_OK;
}

int fn_loss_kind_count(void) { return fn_registry_count(&registry); }

const fn_loss_kind *fn_loss_kind_at(int i)
{
    return (const fn_loss_kind *)fn_registry_at(&registry, i);
}

const char *fn_loss_kind_name(const fn_loss_kind *kind) { return kind ? kind->name : ""; }

fn_data_targets fn_loss_kind_targets(const fn_loss_kind *kind)
{
    return kind ? kind->targets : FN_DATA_NO_TARGETS;
}

int fn_loss_kind_unit_targets(const fn_loss_kind *kind) { return kind ? kind->unit_targets : 0; }

fn_status fn_loss_kind_probabilities(const fn_loss_kind *kind, float *outputs, int rows, int cols)
{
    if (!kind || rows < 0 || cols < 1 || (rows > 0 && !outputs))
        return fn_fail(FN_ERR_INVALID, "fn_loss_kind_probabilities: bad arguments");
    if (!kind->probabilities)
        return fn_fail(FN_ERR_INVALID, "loss %s: its outputs are values, not probabilities",
                       kind->name);
    kind->probabilities(outputs, rows, cols);
    return FN_OK;
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
