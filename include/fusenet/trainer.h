/* trainer.h — a training run of a config, as `train` makes it: the device
 * (auto: a GPU when there is one), the training and validation sets, the
 * network ([model], from [model] init when given), the optimiser ([train]
 * optimizer, each step's learning rate from [train] schedule, clipping
 * with [train] clip_grad_norm), the
 * epochs of steps over batches the loader prepares ahead, validation after
 * each epoch, metrics.csv, checkpoint.h5 (every [train] checkpoint_every
 * epochs and when stopped), resuming from it, and weights.h5 at the end,
 * all in [output] dir; with [train] keep_best, best.h5 whenever the
 * validation metric improves, and with [train] patience, an early stop.
 *
 * Output folders never mix two runs: a fresh run refuses a folder holding
 * another run's weights.h5, checkpoint.h5, metrics.csv or best.h5 unless
 * told to overwrite (then it removes them before it writes its first
 * file), and nothing is created in it before the run has something to
 * write: a run that fails before its first step leaves nothing behind.
 *
 * The trainer never prints: it reports through callbacks, and it asks
 * should_stop after every step and at an epoch's end, so the caller decides
 * (a signal handler's flag) when a run stops. A step whose loss is not
 * finite stops the run with FN_ERR_NUMERIC and a message naming the first
 * non-finite value; the checkpoint written last stays as it was. */
#ifndef FUSENET_TRAINER_H
#define FUSENET_TRAINER_H

#include "fusenet/api.h"

#include "fusenet/comm.h"
#include "fusenet/config.h"
#include "fusenet/loader.h"
#include "fusenet/net.h"
#include "fusenet/optimizer.h"
#include "fusenet/train_state.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The device the run chose. */
typedef struct fn_train_device {
    fn_device device;
    int gpu;        /* cuda:N; -1 on the CPU */
    int automatic;  /* [run] device = auto */
    int gpus_found; /* automatic: the usable GPUs seen */
    fn_math math;   /* [run] math */
    int math_unused; /* tf32, tf32x3 or bf16 on the CPU, whose products are always fp32 */
} fn_train_device;

/* A layer of the network, for the summary. */
typedef struct fn_train_layer {
    const char *kind; /* "block", "linear" */
    int in, out;
    int groups;       /* 0: the kind has none */
    long long params; /* values in its parameters */
} fn_train_layer;

/* The memory the run takes, from the sizes its parts allocated with
 * (fn_layer_*_bytes, fn_net_buffer_bytes, fn_optimizer_state_bytes,
 * fn_loader_bytes, fn_data_host_bytes); not counted: the CUDA context,
 * cuBLAS' own workspace, the HDF5 library's caches. */
typedef struct fn_train_memory {
    /* On the run's device (host memory on the CPU): */
    size_t weights, gradients, optimizer; /* weights: with copies in another
                                           * precision (bf16 mode's); gradients:
                                           * those that are not the optimiser's
                                           * state (a fold's, counted there) */
    size_t activations; /* the layers' caches and the buffers between them, at batch_size */
    size_t batches;     /* the loaders' batches on the GPU; 0 on the CPU */
    size_t device;      /* the sum of the five */
    /* In host memory, on either device: */
    size_t data;        /* the sets' slabs and orders, and the loaders' host batches */
} fn_train_memory;

/* The network and what the run will hold, before the first step. */
typedef struct fn_train_model {
    const fn_train_layer *layers; /* [n_layers] */
    int n_layers;
    long long params;
    fn_device device;
    int gpu;
    fn_train_memory memory;
} fn_train_model;

/* What the run is about to do. */
typedef struct fn_train_plan {
    long long rows;    /* of the training set */
    long long batches; /* per epoch */
    int batch_size, epochs, layers;
    /* Data parallelism: the ranks that train together (1: alone), and the
     * distinct devices (a node's CPU counts once) and nodes they train on,
     * as rank 0 counted them. */
    int ranks, devices, nodes;
    fn_device device;  /* this rank's */
    /* The type the gradients are summed over the ranks in ([run] grad_sum):
     * float32 whenever there is nothing to sum (one process, no launcher). */
    fn_comm_sum grad_sum;
} fn_train_plan;

/* After a step. */
typedef struct fn_train_progress {
    long long epoch;      /* 0-based */
    int epochs;
    long long step;       /* batches of this epoch taken */
    long long steps;      /* batches per epoch */
    double loss;          /* the epoch's running mean loss: over its rows trained so far
                           * (a resumed epoch's included); on the GPU (deferred steps,
                           * docs/gpus.md) as of the newest sums the host has read, a few
                           * steps older */
    double samples_per_s; /* since this epoch, or its resumed part, began */
    long long rows_left;  /* rows still to train before the last epoch ends */
    double batch_loss;    /* of this step's batch (on the GPU, the newest read) */
} fn_train_progress;

typedef struct fn_train_metrics {
    double loss; /* mean over the rows; NaN when no row was seen */
    double acc;  /* fraction classified right; NaN when not classifying */
} fn_train_metrics;

/* An epoch's end, after validation. */
typedef struct fn_train_epoch {
    long long epoch;        /* 0-based */
    int epochs;
    fn_train_metrics train; /* over this epoch's steps (and, resumed, those before) */
    fn_train_metrics valid; /* NaN without a validation set */
    double seconds;         /* the run's time so far (every epoch's training and the earlier
                             * epochs' validation; metrics.csv's seconds) */
    double samples_per_s;   /* this epoch's rows (its resumed part's) over its training time */
    int improved;           /* keep_best or patience: the watched metric ([train] monitor) is
                             * the best yet */
    long long since_best;   /* keep_best or patience: epochs since the best */
    double epoch_seconds;   /* this epoch's training time (its resumed part's) */
} fn_train_epoch;

/* The run's end. */
typedef struct fn_train_summary {
    fn_loader_stats loader;
    int epochs;            /* run: [train] epochs, or fewer after an early stop */
    long long steps;
    double seconds;
    const char *weights_path;
    double samples_per_s;  /* rows trained by this process over its training time */
    int stopped_early;     /* [train] patience ran out: epochs < [train] epochs */
    long long best_epoch;  /* 1-based; 0 without keep_best and patience */
    double best;           /* the best value of the watched metric (monitor below) */
    const char *best_path; /* best.h5 with keep_best, else NULL */
    const char *monitor;   /* the watched metric's name ([train] monitor: "valid_accuracy", ...) */
} fn_train_summary;

/* Every callback is optional; `user` is the options' user pointer. */
typedef struct fn_trainer_callbacks {
    void (*on_device)(void *user, const fn_train_device *device); /* before it is opened */
    void (*on_resume)(void *user, const char *checkpoint, const fn_train_state *state);
    void (*on_model)(void *user, const fn_train_model *model); /* before on_start */
    void (*on_start)(void *user, const fn_train_plan *plan);
    void (*on_step)(void *user, const fn_train_progress *progress);
    void (*on_epoch)(void *user, const fn_train_epoch *epoch);
    void (*on_done)(void *user, const fn_train_summary *summary); /* weights.h5 written */
    /* Nonzero: stop the run (before the next step, or instead of the next
     * epoch's checkpoint). Asked again until it says so once; then the
     * run stops. */
    int (*should_stop)(void *user);
    /* Something the user should know that is no error (a constant input
     * column under [data] standardize); one line, no newline. */
    void (*on_notice)(void *user, const char *text);
} fn_trainer_callbacks;

typedef struct fn_trainer_options {
    int resume;                            /* continue from <dir>/checkpoint.h5 */
    int overwrite;                         /* a fresh run may replace another run's files */
    const fn_trainer_callbacks *callbacks; /* NULL: none; copied */
    void *user;
    /* Data parallelism (docs/many-processes.md, comm.h): FN_COMM_WORLD (0), in
     * an MPI world the trainer sums gradients over every rank (each takes
     * its share of every global batch; rank 0 alone writes the output
     * directory's files), else it trains alone; FN_COMM_SELF: alone even
     * inside a world (tests' references); FN_COMM_SELF_DEVICE: alone, its
     * step the data-parallel one through the device's backend (NCCL of one
     * rank on a GPU; tests without MPI). */
    fn_comm_scope comm;
} fn_trainer_options;

/* How fn_trainer_run ended. */
typedef enum fn_train_outcome {
    FN_TRAIN_UNFINISHED = 0, /* not run, or failed */
    FN_TRAIN_DONE,           /* every epoch, or patience ran out: weights.h5 written */
    FN_TRAIN_STOPPED,        /* stopped after a step: the run's status says
                              * whether checkpoint.h5 was written */
    FN_TRAIN_STOPPED_AT_START /* stopped before the first step: nothing written */
} fn_train_outcome;

typedef struct fn_trainer fn_trainer; /* opaque */

/* Sets the run up: the device (on_device), the sets, the network and
 * optimiser, the output directory, the checkpoint when resuming
 * (on_resume; it must match the config's layers, seed, batch size and
 * training set, and the message names each that differs). Nothing is
 * written yet: the output directory is checked (another run's files: an
 * error unless options->overwrite) and made with the first file written.
 * cfg is borrowed and must outlive the trainer. */
FN_API fn_status fn_trainer_create(fn_trainer **trainer, const fn_config *cfg,
                                   const fn_trainer_options *options);
/* Runs the epochs left (on_model, on_start, on_step, on_epoch, on_done);
 * metrics.csv is kept up to the checkpoint's epoch when resuming. FN_OK when
 * done or stopped (fn_trainer_outcome says which). Once only. */
FN_API fn_status fn_trainer_run(fn_trainer *trainer);
/* After fn_trainer_run failed: 1 when every rank of its world failed at the
 * same step with it (a non-finite loss, weights that differ between ranks),
 * so the program may end normally; 0 when the failure may be this rank's
 * alone, which must end the others (fn_world_abort). */
FN_API int fn_trainer_failed_on_every_rank(const fn_trainer *trainer);
FN_API void fn_trainer_destroy(fn_trainer *trainer); /* NULL is fine */

FN_API fn_train_outcome fn_trainer_outcome(const fn_trainer *trainer);
FN_API const fn_train_state *fn_trainer_state(const fn_trainer *trainer);
FN_API const char *fn_trainer_checkpoint_path(const fn_trainer *trainer);
FN_API const char *fn_trainer_weights_path(const fn_trainer *trainer);
FN_API const char *fn_trainer_best_path(const fn_trainer *trainer);
FN_API fn_net *fn_trainer_net(const fn_trainer *trainer);
/* The input standardisation the network trains with ([data] standardize,
 * input_norm.h), for fn_infer; NULL without it. */
FN_API const fn_input_norm *fn_trainer_input_norm(const fn_trainer *trainer);
/* The target standardisation ([data] standardize_targets, target_norm.h):
 * fn_infer's outputs are standardised; fn_target_norm_undo maps them back.
 * NULL without it. */
FN_API const fn_input_norm *fn_trainer_target_norm(const fn_trainer *trainer);
FN_API fn_optimizer *fn_trainer_optimizer(const fn_trainer *trainer);

#ifdef __cplusplus
}
#endif
#endif
