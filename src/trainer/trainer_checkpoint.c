/* trainer_checkpoint.c — checkpoint.h5 of a run (rank 0's), with the
 * clipper's last norm; a non-finite parameter is named and nothing is
 * written. */
#include <stdio.h>
#include <string.h>

#include "fusenet/checkpoint.h"
#include "trainer/trainer_impl.h"

fn_status fn_trainer_sync_grad_norm(fn_trainer *t)
{
    if (!fn_clip_applied(t->clip))
        return FN_OK;
    return fn_clip_last_norm(t->clip, &t->state.grad_norm);
}

static fn_status save(fn_trainer *t);

/* The library refuses to write a non-finite value (FN_ERR_NUMERIC): the
 * parameters went bad at the last step, whose loss was still finite. A
 * sharded optimiser's parts are gathered into rank 0's whole state first,
 * every rank taking part (shard.h). */
fn_status fn_trainer_save_checkpoint(fn_trainer *t)
{
    FN_TRY(fn_trainer_sync_grad_norm(t));
    FN_TRY(fn_optimizer_whole_begin(t->opt, FN_WHOLE_WRITE));
    const fn_status st = save(t);
    fn_optimizer_whole_end(t->opt);
    return st;
}

static fn_status save(fn_trainer *t)
{
    if (!fn_trainer_writes(t)) {
        t->checkpoint_ours = 1; /* rank 0's */
        t->checkpoint_step = t->state.global_step;
        t->checkpoint_epoch = t->state.epoch;
        return FN_OK;
    }
    FN_TRY(fn_trainer_prepare_output(t));
    memcpy(t->state.schedule, t->schedule.state, sizeof t->state.schedule);
    const fn_provenance *prov = NULL;
    FN_TRY(fn_trainer_provenance(t, &prov));
    const fn_checkpoint_save_options with = {.norm = t->norm, .provenance = prov,
                                             .config_text = t->cfg->text};
    fn_status st = fn_checkpoint_save(t->checkpoint_path, t->net, t->opt, &t->state, &with);
    if (st == FN_OK) {
        t->checkpoint_ours = 1;
        t->checkpoint_step = t->state.global_step;
        t->checkpoint_epoch = t->state.epoch;
    }
    if (st != FN_ERR_NUMERIC)
        return st;
    fn_nonfinite nf;
    char first[256], kept[512];
    fn_trainer_describe_nonfinite(fn_net_find_nonfinite(t->net, 0, &nf), &nf, first, sizeof first);
    fn_trainer_describe_kept(t, kept, sizeof kept);
    return fn_fail(FN_ERR_NUMERIC,
                   "after step %lld the parameters are non-finite; first non-finite: %s; "
                   "checkpoint not written: %s",
                   t->state.global_step, first, kept);
}

int fn_trainer_checkpoint_current(const fn_trainer *t)
{
    return t->checkpoint_ours && t->checkpoint_step == t->state.global_step &&
           t->checkpoint_epoch == t->state.epoch;
}
