/* config.h — the run configuration of `train`: every setting with its
 * default, read from an INI file (inih) and from `--set section.key=value`
 * overrides, both through one strict validation.
 *
 * Errors name where the value came from: "config.ini:12: train.lr: expected a
 * number, got 'fast'", "--set train.lr=x: expected a number, got 'x'",
 * "config.ini: [data] train is required". Paths in the file are resolved
 * relative to the file's directory, paths given with --set relative to the
 * current directory, and every path is normalised ("data/../runs" reads
 * "runs"). The README lists every section and key. */
#ifndef FUSENET_CONFIG_H
#define FUSENET_CONFIG_H

#include <stdint.h>

#include "fusenet/device.h"
#include "fusenet/layer_kind.h"
#include "fusenet/loss.h"
#include "fusenet/model.h"
#include "fusenet/schedule.h"
#include "fusenet/sgd.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fn_config {
    char *path; /* the config file as given */
    char *dir;  /* its directory: the base of relative paths */
    char *text; /* the file's text, plus the overrides as comment lines */

    /* [data] */
    char *train;             /* required; resolved path */
    char *valid;             /* NULL: no validation set */
    char *inputs;            /* dataset name, "X" */
    char *targets;           /* dataset name, "y" */
    double memory_budget_mb; /* host memory for a data set before slabs, 1024 */
    int standardize;         /* per-column mean/std of the training set (input_norm.h), 0 */

    /* [model] */
    fn_layer_spec *layers; /* [n_layers], required: the items, "block 128" or "linear 10" */
    int n_layers;
    int groups;           /* 8, must divide every block width */
    float eps;            /* 1e-5 */
    float negative_slope; /* 0.01 */
    char *init;           /* NULL, or weights.h5 to start from (resolved) */

    /* [train] */
    fn_loss_kind loss; /* cross_entropy */
    int batch_size;    /* 64 */
    int epochs;        /* 10 */
    fn_sgd_config sgd; /* lr 0.01, momentum 0, dampening 0, weight_decay 0, nesterov off */
    uint64_t seed;     /* 1 */
    int checkpoint_every; /* epochs between checkpoints, 0 = only when interrupted */
    char *optimizer;      /* "sgd", "adam" or "adamw"; lr and weight_decay are sgd's fields */
    float betas[2];       /* adam, adamw: 0.9, 0.999 */
    float adam_eps;       /* adam, adamw: 1e-8 */
    fn_schedule_kind schedule; /* constant */
    int warmup_steps;     /* 0 */
    int step_size;        /* schedule = step: required */
    float gamma;          /* schedule = step: 0.1 */
    float min_lr;         /* schedule = cosine: 0 */
    float clip_grad_norm; /* 0 = off */
    int keep_best;        /* write best.h5 when the validation metric improves */
    int patience;         /* stop after this many epochs without improvement, 0 = never */

    /* [run] */
    int device_auto; /* device = auto: CUDA when a GPU is present */
    fn_device device;
    int gpu; /* cuda:N */
    int gpu_pinned; /* device = cuda:N named the GPU (not auto or cuda): every rank takes it */
    fn_math math;
    int log_every; /* steps between plain progress lines, 0 = per epoch only */
    int cuda_graphs; /* GPU: replay each step as a CUDA graph (src/train/step_graph.c) */

    /* [output] */
    char *out_dir; /* "runs/<config file's stem>" beside the file (resolved) */

    struct fn_config_keys *keys; /* private: where each value came from */
} fn_config;

/* Reads and checks a config file. On failure *cfg is NULL. */
fn_status fn_config_load(fn_config **cfg, const char *path);
/* Applies "section.key=value" (the argument of --set) with the same checks. */
fn_status fn_config_set(fn_config *cfg, const char *assignment);
/* The checks that involve several keys and the required keys; call after the
 * last fn_config_set. Resolves paths against cfg->dir. */
fn_status fn_config_finish(fn_config *cfg);
void fn_config_destroy(fn_config *cfg);
/* Whether section.name was set, in the file or by --set (not a default). */
int fn_config_given(const fn_config *cfg, const char *section, const char *name);

/* The keys one by one (0 <= i < fn_config_n_keys()), to compare the
 * configs of the processes of one run: key i's "[section] name" into name
 * and its resolved value as text into value, the text standing for the
 * value (two configs resolve a key alike exactly when the texts are
 * equal). Each follows snprintf's rules; returns the length the value's
 * text needs, or -1, writing only the name, for a key that may differ
 * between the processes of one run: [run] log_every (printing only),
 * [run] device (each process resolves its own; a caller compares the
 * device it resolved to) and the paths ([data] train and valid, [model]
 * init, [output] dir: a node's copy of a file may sit elsewhere; a caller
 * compares the files' contents). */
int fn_config_n_keys(void);
int fn_config_key_text(const fn_config *cfg, int i, char *name, size_t name_cap, char *value,
                       size_t value_cap);

/* Parses a [model] layers value ("block 128, block 128, linear 10"): each
 * item is a kind's name (layer_kind.h) and its arguments. On success
 * *layers is malloc'ed; the message names the item on failure. */
fn_status fn_config_parse_layers(const char *text, fn_layer_spec **layers, int *n_layers);

/* The network of cfg's [model] for inputs of in_features columns: its
 * layers with groups, eps and negative_slope, initialised from [train]
 * seed, for batches of up to [train] batch_size rows (fn_model_create).
 * With [model] init, each layer takes the file's eps and negative_slope
 * where the config does not set them; where it does and they differ, it
 * fails naming both (the values themselves are loaded by fn_weights_load). */
fn_status fn_model_build(fn_net **net, fn_context *ctx, const fn_config *cfg, int in_features);

/* "dir/name" unless name is absolute; malloc'ed, NULL when out of memory. */
char *fn_path_join(const char *dir, const char *name);

#ifdef __cplusplus
}
#endif
#endif
