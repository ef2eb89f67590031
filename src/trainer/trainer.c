/* trainer.c — what every part of a run shares, below its step strategies
 * and its loop: the output directory's files (their paths, the refusal of
 * another run's, the clearing of an overwritten run's and of killed runs'
 * temporaries before the first write; rank 0 alone writes them), and what a caller may read of a run.
 * A run is set up and ended in trainer_setup.c and runs in
 * trainer_loop.c. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "store/path.h"
#include "trainer/trainer_impl.h"

/* --- the output directory ------------------------------------------------------ */

/* The files a run writes in its directory, which no other run's may join. */
enum { OUT_WEIGHTS, OUT_CHECKPOINT, OUT_CSV, OUT_BEST, N_OUT };
static const char *const out_names[N_OUT] = {"weights.h5", "checkpoint.h5", "metrics.csv",
                                             "best.h5"};

fn_status fn_trainer_output_paths(fn_trainer *t)
{
    char **paths[N_OUT] = {&t->weights_path, &t->checkpoint_path, &t->csv_path, &t->best_path};
    for (int i = 0; i < N_OUT; i++)
        if (!(*paths[i] = fn_path_join(t->cfg->out_dir, out_names[i])))
            return fn_fail(FN_ERR_NOMEM, "out of memory");
    return FN_OK;
}

/* A fresh run into a directory holding another run's files: an error,
 * naming them, unless it may overwrite them (fn_trainer_prepare_output
 * removes them). A resumed run continues the run whose files they are. */
fn_status fn_trainer_check_output(fn_trainer *t)
{
    if (t->resuming)
        return FN_OK;
    const char *paths[N_OUT] = {t->weights_path, t->checkpoint_path, t->csv_path, t->best_path};
    char found[128] = ""; /* room for every name of out_names */
    for (int i = 0; i < N_OUT; i++) {
        const size_t len = strlen(found);
        if (access(paths[i], F_OK) == 0)
            snprintf(found + len, sizeof found - len, "%s%s", len ? ", " : "", out_names[i]);
    }
    if (!found[0] || t->overwrite)
        return FN_OK;
    return fn_fail(FN_ERR_INVALID,
                   "%s holds another run's %s; give --overwrite to replace them, --resume to "
                   "continue that run, or another [output] dir",
                   t->cfg->out_dir, found);
}

fn_status fn_trainer_prepare_output(fn_trainer *t)
{
    if (t->output_ready)
        return FN_OK;
    FN_TRY(fn_trainer_remove_leftovers(t)); /* the lock makes this run their only writer */
    const char *paths[N_OUT] = {t->weights_path, t->checkpoint_path, t->csv_path, t->best_path};
    for (int i = 0; t->overwrite && !t->resuming && i < N_OUT; i++)
        if (unlink(paths[i]) != 0 && errno != ENOENT)
            return fn_fail(FN_ERR_IO, "%s: cannot remove the earlier run's file: %s", paths[i],
                           strerror(errno));
    t->output_ready = 1;
    return FN_OK;
}

int fn_trainer_writes(const fn_trainer *t) { return t->rank == 0; }

/* --- what a caller may read --------------------------------------------------- */

int fn_trainer_failed_on_every_rank(const fn_trainer *t) { return t && t->failed_together; }

fn_train_outcome fn_trainer_outcome(const fn_trainer *t)
{
    return t ? t->outcome : FN_TRAIN_UNFINISHED;
}

const fn_train_state *fn_trainer_state(const fn_trainer *t) { return t ? &t->state : NULL; }

const char *fn_trainer_checkpoint_path(const fn_trainer *t)
{
    return t ? t->checkpoint_path : NULL;
}

const char *fn_trainer_weights_path(const fn_trainer *t) { return t ? t->weights_path : NULL; }

const char *fn_trainer_best_path(const fn_trainer *t) { return t ? t->best_path : NULL; }

fn_net *fn_trainer_net(const fn_trainer *t) { return t ? t->net : NULL; }

const fn_input_norm *fn_trainer_input_norm(const fn_trainer *t) { return t ? t->norm : NULL; }
const fn_input_norm *fn_trainer_target_norm(const fn_trainer *t)
{
    return t ? t->target_norm : NULL;
}

fn_optimizer *fn_trainer_optimizer(const fn_trainer *t) { return t ? t->opt : NULL; }
