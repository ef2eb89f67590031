/* config_impl.h (private) — the configuration's fields, for the library's
 * own readers (the trainer, fn_model_build) and white-box tests; programs
 * read settings through fn_config_get (config.h). */
#ifndef FUSENET_RUN_CONFIG_IMPL_H
#define FUSENET_RUN_CONFIG_IMPL_H

#include <stdint.h>

#include "fusenet/comm.h"
#include "fusenet/config.h"
#include "fusenet/device.h"
#include "fusenet/layer_kind.h"
#include "fusenet/loss_kind.h"
#include "fusenet/memory_set.h"
#include "run/monitor.h"
#include "fusenet/optimizer_kind.h"
#include "fusenet/schedule_kind.h"

struct fn_config {
    char *path; /* the config file as given */
    char *dir;  /* its directory: the base of relative paths */
    char *text; /* the file's text, plus the overrides as comment lines */

    /* [data] */
    char *train;             /* required unless train_set; resolved path */
    char *valid;             /* NULL: no validation set (or valid_set) */
    const struct fn_memory_set *train_set; /* in place of train (fn_config_use_memory_set) */
    const struct fn_memory_set *valid_set; /* in place of valid */
    char *inputs;            /* dataset name, "X" */
    char *targets;           /* dataset name, "y" */
    double memory_budget_mb; /* host memory for a data set before slabs, 1024 */
    int standardize;         /* per-column mean/std of the training set (input_norm.h), 0 */
    int standardize_targets; /* the same for mse targets (target_norm.h), 0 */

    /* [model] */
    fn_layer_spec *layers; /* [n_layers], required: the items, "block 128" or "linear 10" */
    int n_layers;
    int groups;           /* 8, must divide every block width; 0: auto (fn_config_groups) */
    float eps;            /* 1e-5 */
    float negative_slope; /* 0.01 */
    char *init;           /* NULL, or weights.h5 to start from (resolved) */

    /* [train] */
    const fn_loss_kind *loss; /* cross_entropy (loss_kind.h) */
    /* The chosen loss's own options block (its kind's [train] keys), set
     * by fn_config_finish, owned by the config; NULL for a loss without. */
    const void *loss_options;
    int batch_size;    /* 64 */
    int epochs;        /* 10 */
    float lr;          /* 0.01: the schedule's base rate, every optimiser's */
    uint64_t seed;     /* 1 */
    int checkpoint_every; /* epochs between checkpoints, 0 = only when interrupted */
    const fn_optimizer_kind *optimizer; /* sgd (optimizer_kind.h) */
    /* The chosen optimiser's own options block (its config struct:
     * fn_sgd_config, fn_adam_config), read from the [train] keys it
     * declares; set by fn_config_finish, owned by the config. */
    const void *optimizer_options;
    const fn_schedule_kind *schedule; /* constant (schedule_kind.h) */
    /* The chosen schedule's own options block (its options struct), read
     * from the [train] keys it declares; set by fn_config_finish, owned by
     * the config. */
    const void *schedule_options;
    int warmup_steps;     /* 0: every schedule's linear warm-up */
    float clip_grad_norm; /* 0 = off */
    int keep_best;        /* write best.h5 when the validation metric improves */
    int patience;         /* stop after this many epochs without improvement, 0 = never */
    fn_monitor monitor;   /* what keep_best and patience watch; by default the loss kind's
                           * (valid_accuracy when it classifies, else valid_loss) */
    double min_delta;     /* an improvement is by more than this, 0 */

    /* [run] */
    int device_auto; /* device = auto: CUDA when a GPU is present */
    fn_device device;
    int gpu; /* cuda:N */
    int gpu_pinned; /* device = cuda:N named the GPU (not auto or cuda): every rank takes it */
    fn_math math;
    int log_every; /* steps between plain progress lines, 0 = per epoch only */
    int cuda_graphs; /* GPU: replay each step as a CUDA graph (src/trainer/step_graph.c) */
    int layer_updates; /* each layer's update beside backward where allowed (step_choice.c) */
    int shard;         /* [run] shard: 0 none, 1 optimizer (optim/shard.h), over the ranks */
    int data_on_device; /* GPU: the training set kept on the device; -1 auto (loader.h) */
    fn_comm_sum grad_sum; /* the type of the gradient sums over the ranks (comm.h) */

    /* [output] */
    char *out_dir; /* "runs/<config file's stem>" beside the file (resolved) */

    struct fn_config_keys *keys; /* private: where each value came from */
};

/* The groups of a block of `width` columns: [model] groups, or with
 * groups = auto the largest divisor of the width up to 8 that leaves each
 * group at least 2 channels (fn_block_auto_groups). */
int fn_config_groups(const fn_config *cfg, int width);

#endif
