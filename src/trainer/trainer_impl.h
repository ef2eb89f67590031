/* trainer_impl.h (private) — the trainer's struct and what its files share,
 * lowest first: trainer.c (the output directory, what a caller reads),
 * trainer_dist.c (data parallelism's agreements), step_common.c (what the
 * step strategies share), the strategies (step_eager.c, step_deferred.c,
 * step_graph.c, step_dist.c) and their choice (step_choice.c); above them
 * trainer_monitor.c, trainer_evaluate.c, trainer_checkpoint.c, trainer_summary.c,
 * trainer_setup.c (a run set up and ended) and trainer_loop.c (its
 * epochs). */
#ifndef FUSENET_TRAINER_TRAINER_IMPL_H
#define FUSENET_TRAINER_TRAINER_IMPL_H

#include "fusenet/clip.h"
#include "fusenet/comm.h"
#include "fusenet/data.h"
#include <time.h>

#include "nn/loss_tally.h"
#include "fusenet/provenance.h"
#include "fusenet/schedule.h"
#include "fusenet/trainer.h"
#include "optim/optimizer_paths.h"
#include "run/config_impl.h"
#include "store/dir_lock.h"
#include "trainer/metrics_csv.h"
#include "run/train_state.h"

struct fn_trainer {
    const fn_config *cfg; /* borrowed */
    fn_trainer_callbacks cb;
    void *user;
    fn_context *ctx;
    fn_data *train, *valid;
    fn_loader *loader;     /* the training set's batches, prepared ahead */
    fn_loader *valid_loader; /* the validation set's, synchronous; NULL without one */
    int valid_loss_said;     /* the notice of an undefined validation loss was given */
    fn_net *net;
    fn_input_norm *norm;   /* [data] standardize: the inputs' statistics; else NULL */
    fn_input_norm *target_norm; /* [data] standardize_targets: the targets'; else NULL */
    fn_optimizer *opt;
    fn_schedule schedule;  /* the lr of each step ([train] lr, schedule, warmup_steps, ...) */
    fn_clip *clip;         /* [train] clip_grad_norm; NULL when off */
    fn_tensor loss, dpred; /* [1, 1], [batch_size, out] on the device */
    fn_train_state state;
    int checkpoint_ours;   /* checkpoint_path holds this run's state (resumed or written) */
    long long checkpoint_step, checkpoint_epoch; /* ... as it was at this global step and epoch */
    int stop;              /* should_stop said so */
    int ran;               /* fn_trainer_run was called */
    fn_train_outcome outcome;
    fn_dir_lock *lock;     /* the output directory's, held for the run's life */
    fn_metrics_csv *csv;   /* opened with the first epoch's line */
    char *checkpoint_path, *weights_path, *csv_path, *best_path;
    int resuming, overwrite; /* the options' */
    int output_ready;      /* the directory is made (and cleared, overwriting) */
    int stopped_early;     /* [train] patience ran out */
    double epoch_started;  /* monotonic seconds */
    long long seen_before; /* state.seen when this epoch (or its resumed part) began */
    double epoch_rate;     /* samples/s of the last epoch's training */
    double epoch_seconds;  /* the last epoch's training time */
    long long run_rows;    /* rows trained by this process ... */
    double run_seconds;    /* ... in this much training time (steps, not validation) */
    /* Data parallelism (trainer_dist.c) */
    int rank, ranks;       /* this process's rank in its world, and the world's size */
    int gpu;               /* the GPU this rank opened; -1 on the CPU */
    int devices, nodes;    /* rank 0: the distinct devices and nodes the ranks train on */
    int dist;              /* steps sum gradients over comm (an MPI world, even of one rank) */
    fn_comm *comm;         /* single-process unless dist */
    int stop_agreed;       /* every rank agreed to stop */
    int failed_together;   /* the last failure was every rank's at once */

    const struct fn_step_ops *step; /* the step strategy, chosen once (step_choice.c) */
    /* Each layer's update queued as soon as its backward is done, beside
     * the backward of the layers before it (step_choice.c says when). */
    int layer_updates;
    /* step_deferred.c: the loss's sums on the device (NULL: the loss read
     * every step); step_graph.c: the step's CUDA graphs. */
    fn_loss_tally *tally;
    float last_loss;       /* the newest loss the host has seen */
    double tally_mean;     /* the epoch's mean loss as of the tally's newest sums read */
    struct fn_step_graphs *graphs;
    /* trainer_provenance.c */
    time_t started;             /* wall-clock time fn_trainer_create began */
    fn_provenance *provenance;  /* of every file the run writes */
};

/* --- a step strategy ------------------------------------------------------------
 * How a run takes its steps, one table chosen once when the run is set up
 * (step_choice.c); the loop sets each step's learning rate, then calls
 * step. Below the strategies: the shared step helpers (step_common.c), the
 * data-parallel agreements (trainer_dist.c) and the output directory
 * (trainer.c). */
typedef struct fn_step_ops {
    const char *name; /* "eager", "deferred", "graph", "data-parallel" */
    /* An epoch's (or its resumed part's) start. */
    fn_status (*begin)(fn_trainer *t);
    /* Forward, loss, and backward with the optimiser's update, for one
     * batch; the state counts it. A non-finite loss: FN_ERR_NUMERIC, with
     * the diagnosis, nothing updated. *loss: the newest loss known. */
    fn_status (*step)(fn_trainer *t, const fn_batch *b, float *loss);
    /* The epoch's steps are done: their sums read, a late non-finite stop. */
    fn_status (*drain)(fn_trainer *t);
    void (*release)(fn_trainer *t); /* what the strategy holds */
} fn_step_ops;

extern const fn_step_ops fn_step_eager;    /* step_eager.c */
extern const fn_step_ops fn_step_deferred; /* step_deferred.c */
extern const fn_step_ops fn_step_graph;    /* step_graph.c */
extern const fn_step_ops fn_step_dist;     /* step_dist.c */

/* step_choice.c: t->step (and the loss tally a deferred step keeps). */
fn_status fn_trainer_choose_step(fn_trainer *t);

/* step_deferred.c: the deferred strategy's parts, which the graphed one
 * shares; queue puts the step's device work on the stream. */
fn_status fn_trainer_defer_begin(fn_trainer *t);
fn_status fn_trainer_defer_step(fn_trainer *t, const fn_batch *b, float *loss,
                                fn_status (*queue)(fn_trainer *t, const fn_batch *b));
fn_status fn_trainer_defer_drain(fn_trainer *t);
void fn_trainer_defer_release(fn_trainer *t);

/* step_graph.c (tests): graphs captured so far. */
int fn_trainer_graph_count(const fn_trainer *t);

/* --- step_common.c: what the strategies share ----------------------------------- */

/* The loss's metric (loss_kind.h) of `correct` over `rows` rows of the
 * net's outputs; NaN when the loss has none or no rows were seen. */
double fn_trainer_metric(const fn_trainer *t, long long correct, long long rows);
/* The batch's mean loss in *loss, and *correct its metric's count (0
 * without a metric), read back now; dy (NULL: none) the loss's
 * gradient. */
fn_status fn_trainer_batch_loss(fn_trainer *t, const fn_batch *b, const fn_tensor *y, fn_tensor *dy,
                                float *loss, int *correct);
/* What the net's next forward passes are for (fn_net_set_pass): a
 * training step of batch b at the state's global step, with this rank's
 * first row in the whole batch, or (training 0, b may be NULL) an
 * evaluation. Set before a step's work, outside any capture. */
fn_status fn_trainer_set_pass(fn_trainer *t, const fn_batch *b, int training);

/* The step's gradients from dy: zeroed, the backward, clipping; the one
 * place every strategy takes them. */
fn_status fn_trainer_gradients(fn_trainer *t, const fn_tensor *dy);
/* The backward from dy and the optimiser's update of its prepared step
 * (fn_optimizer_prepare), skipped while *skip (NULL: never): with
 * layer_updates each layer's part (fn_optimizer_apply_part) on the
 * context's side stream right after the layer's backward, the side stream
 * joined before it returns; else the gradients (fn_trainer_gradients),
 * then one fn_optimizer_apply. The same bits either way. */
fn_status fn_trainer_backward_update(fn_trainer *t, const fn_tensor *dy, const int *skip);
/* A deferred step's device work, queued without reading the loss:
 * forward, the loss counted in the tally, the gradients, the optimiser's
 * split update (skipped on the device once a loss was not finite). */
fn_status fn_trainer_queue_step(fn_trainer *t, const fn_batch *b);
/* After a non-finite loss of batch b, whose loss gradient dy is: the
 * error naming the first non-finite value (a non-finite input, as
 * standardisation made it, first), and, before the run's first update,
 * saying the learning rate is not the cause. */
fn_status fn_trainer_stop_nonfinite(fn_trainer *t, const fn_batch *b, const fn_tensor *dy,
                                    float loss);
/* The batch's forward and loss read back: FN_ERR_NUMERIC with the
 * diagnosis of a non-finite loss (the step's own); FN_ERR_NUMERIC too,
 * saying so, when the loss the device found non-finite comes out finite. */
fn_status fn_trainer_recheck(fn_trainer *t, const fn_batch *b, float device_loss);
/* "nan", "inf", "-inf". */
const char *fn_trainer_number_name(float v);
/* "layer 1 (block) output, row 0 column 3: nan", or why there is none. */
void fn_trainer_describe_nonfinite(fn_status st, const fn_nonfinite *nf, char *buf, size_t n);
/* What a stop leaves behind (this run's checkpoint, or no weights). */
void fn_trainer_describe_kept(const fn_trainer *t, char *buf, size_t n);

/* --- trainer.c: the output directory ---------------------------------------------- */

/* The paths of the run's files in [output] dir. */
fn_status fn_trainer_output_paths(fn_trainer *t);
/* A fresh run into a directory of another run's files: an error naming
 * them, unless overwriting. */
fn_status fn_trainer_check_output(fn_trainer *t);
/* The notices of trainer_notices.c, through on_notice: how the sets'
 * targets were read, a last layer of bounded outputs under a loss of
 * logits, input columns of scales far apart without [data] standardize.
 * Call after setup_norm (the norm is known). */
fn_status fn_trainer_notices(fn_trainer *t);
/* Once, before the first file is written: removes the temporaries killed
 * runs left for the run's files and, overwriting, the earlier run's
 * files. */
fn_status fn_trainer_prepare_output(fn_trainer *t);
/* Rank 0 writes the run's files and holds the directory's lock. */
int fn_trainer_writes(const fn_trainer *t);

/* --- above the strategies --------------------------------------------------------- */

/* trainer_summary.c: on_model, when the caller has it. */
void fn_trainer_report_model(fn_trainer *t);
/* trainer_monitor.c: the epoch's value of the metric [train] monitor
 * names (valid_loss, valid_accuracy, train_loss), and whether lower is
 * better; what keep_best and patience watch. */
double fn_trainer_monitored(const fn_trainer *t, fn_train_metrics train, fn_train_metrics valid);
int fn_trainer_monitor_lower_better(const fn_trainer *t);
/* trainer_evaluate.c: mean loss (and accuracy) of the net over every batch
 * of a set. */
fn_status fn_trainer_evaluate(fn_trainer *t, fn_loader *set, fn_train_metrics *m);
/* trainer_checkpoint.c: the state's grad_norm from the clipper's last step
 * (NaN without clipping; kept as it is when no step ran since the
 * checkpoint). */
fn_status fn_trainer_sync_grad_norm(fn_trainer *t);
/* trainer_checkpoint.c: writes checkpoint.h5 (rank 0; the others do
 * nothing); a non-finite parameter is named in the message. */
fn_status fn_trainer_save_checkpoint(fn_trainer *t);
/* trainer_checkpoint.c: checkpoint.h5 holds the state as it is now (written
 * at this step and epoch, or resumed from). */
int fn_trainer_checkpoint_current(const fn_trainer *t);

/* trainer_provenance.c: t->provenance, once the run is set up; and that
 * provenance, its end time set to now, for a file about to be written. */
fn_status fn_trainer_make_provenance(fn_trainer *t);
fn_status fn_trainer_provenance(fn_trainer *t, const fn_provenance **prov);

/* trainer_inputs.c: FN_ERR_INVALID, naming both, when a file the run
 * writes or removes in its directory is one it reads (compared by device
 * and inode). */
fn_status fn_trainer_check_inputs_kept(const fn_trainer *t);
/* trainer_inputs.c: removes the temporaries killed runs left for the run's
 * files (fn_atomic_remove_leftovers), never one that is an input. */
fn_status fn_trainer_remove_leftovers(const fn_trainer *t);

/* trainer_ranks.c: in a world of several ranks, the distinct devices and
 * nodes its ranks train on, counted on rank 0 (t->devices, t->nodes; 1 and
 * 1 elsewhere and in a world of one). A collective of the set-up. */
fn_status fn_trainer_count_devices(fn_trainer *t);

/* trainer_agree.c: in a world of several ranks, before the communicator
 * and the loaders exist, every rank's config, device and data compared on
 * rank 0; a difference fails every rank with one message
 * (FN_ERR_RANKS_DIFFER). Nothing happens in a world of one. */
fn_status fn_trainer_agree(fn_trainer *t);

/* --- trainer_dist.c: data parallelism over the ranks of an MPI world ---------------- */

/* The communicator for the context, and whether steps use it. */
fn_status fn_trainer_dist_setup(fn_trainer *t, fn_comm_scope scope);
/* The GPU of a rank under device = auto or cuda (not cuda:K): its rank
 * on its node modulo the node's GPUs; `configured` on one process. */
int fn_trainer_dist_gpu(const fn_trainer *t, int configured, int found);
/* The most rows a rank's share of a batch has: the batch size on one
 * process, ceil(batch / ranks) on several (the net's buffers). */
int fn_trainer_dist_rows(const fn_trainer *t);
/* The stop every rank agrees on (any rank asked for one). */
int fn_trainer_dist_stop(fn_trainer *t);
/* A validation's sums, over every rank's share. */
fn_status fn_trainer_dist_sum_metrics(fn_trainer *t, double *loss_sum, double *weight_sum,
                                      long long *correct, long long *seen);
/* After rank 0 wrote a file (its status st; the others' FN_OK): every rank
 * waits for it and returns its failure, so no rank ends (and, exiting
 * non-zero, has the launcher kill the job) while rank 0 still writes. */
fn_status fn_trainer_dist_written(fn_trainer *t, fn_status st);
/* Fails on every rank when the ranks' parameters differ in any bit. */
fn_status fn_trainer_dist_check_same(fn_trainer *t, const char *when);

#endif
