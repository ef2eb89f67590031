/* config.h — the run configuration of `train`: every setting with its
 * default, read from an INI file (inih) and from `--set section.key=value`
 * overrides, both through one strict validation.
 *
 * Errors name where the value came from: "config.ini:12: train.lr: expected a
 * number, got 'fast'", "--set train.lr=x: expected a number, got 'x'",
 * "config.ini: [data] train is required". Paths in the file are resolved
 * relative to the file's directory, paths given with --set relative to the
 * current directory, and every path is normalised ("data/../runs" reads
 * "runs"). docs/configuration.md lists every section and key. */
#ifndef FUSENET_CONFIG_H
#define FUSENET_CONFIG_H

#include "fusenet/api.h"

#include <stddef.h>
#include <stdint.h>

#include "fusenet/device.h"
#include "fusenet/layer_kind.h"
#include "fusenet/memory_set.h"
#include "fusenet/model.h"
#include "fusenet/schedule.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Opaque: every setting is set through fn_config_load/_parse/_set and read
 * back with fn_config_get, so a new key changes no program's layout. */
typedef struct fn_config fn_config;

/* Reads and checks a config file. On failure *cfg is NULL. */
FN_API fn_status fn_config_load(fn_config **cfg, const char *path);
/* The same from INI text a program holds ("" for every default): `name`
 * stands for the file in messages ("name:3: train.lr: ...") and in the
 * default [output] dir (runs/<name's stem>); paths are relative to the
 * current directory. On failure *cfg is NULL. */
FN_API fn_status fn_config_parse(fn_config **cfg, const char *name, const char *text);
/* Applies "section.key=value" (the argument of --set) with the same checks. */
FN_API fn_status fn_config_set(fn_config *cfg, const char *assignment);
/* A memory set (memory_set.h) for [data] train or valid (`which`: "train"
 * or "valid") in place of a file, which must then not be given. The set
 * is borrowed: it must outlive every trainer made from cfg. Call before
 * fn_config_finish. */
FN_API fn_status fn_config_use_memory_set(fn_config *cfg, const char *which, const fn_memory_set *set);
/* The checks that involve several keys and the required keys; call after the
 * last fn_config_set. Resolves paths against cfg->dir. */
FN_API fn_status fn_config_finish(fn_config *cfg);
/* After fn_config_finish: the i-th thing the user should know that is no
 * error (one line, no newline; a program prints it), NULL past the last.
 * One kind so far: a key of the file that applies only to another
 * optimiser than the one a --set chose ("config.ini:9: [train] momentum
 * applies to optimizer = sgd only; ignored, as --set train.optimizer=adam
 * chose adam"); given by --set, or with the optimiser chosen in the file,
 * such a key is an error. */
FN_API const char *fn_config_notice(const fn_config *cfg, int i);
FN_API void fn_config_destroy(fn_config *cfg); /* NULL is fine */
/* The value of "section.key" as a config file would give it ("20",
 * "true", "block 128, block 128, linear 10", a resolved path after
 * fn_config_finish; "" for a path not set), in value (cap bytes, the
 * terminating zero included). FN_ERR_INVALID for an unknown key or a value
 * longer than cap. */
FN_API fn_status fn_config_get(const fn_config *cfg, const char *key, char *value, size_t cap);
/* Whether section.name was set, in the file or by --set (not a default). */
FN_API int fn_config_given(const fn_config *cfg, const char *section, const char *name);

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
FN_API int fn_config_n_keys(void);
FN_API int fn_config_key_text(const fn_config *cfg, int i, char *name, size_t name_cap, char *value,
                              size_t value_cap);

/* Key i's section ("train") and name ("lr"), NULL when i is out of range;
 * and where cfg's value came from: the line of the config file (> 0), or
 * 0 with *assignment the --set argument that gave it, or 0 with
 * *assignment NULL: the default. */
FN_API const char *fn_config_key_section(int i);
FN_API const char *fn_config_key_name(int i);
FN_API int fn_config_key_origin(const fn_config *cfg, int i, const char **assignment);
/* The resolved configuration as INI text: every key under its section,
 * with its value as fn_config_get gives it and, when `sources` is 1, a
 * comment saying where it came from ("; default", "; config.ini:12",
 * "; --set train.lr=0.1"). Call after fn_config_finish; *text is
 * malloc'ed (the caller frees it). */
FN_API fn_status fn_config_resolved_text(const fn_config *cfg, int sources, char **text);
/* Parses a [model] layers value ("block 128, block 128, linear 10"): each
 * item is a kind's name (layer_kind.h) and its arguments, and may end in a
 * repetition "x N" ("residual 64 x 16": 16 such layers, N from 1 to 4096).
 * On success
 * *layers is malloc'ed; the message names the item on failure. */
FN_API fn_status fn_config_parse_layers(const char *text, fn_layer_spec **layers, int *n_layers);

/* The network of cfg's [model] for inputs of in_features columns: its
 * layers with groups, eps and negative_slope, initialised from [train]
 * seed, for batches of up to [train] batch_size rows (fn_model_create).
 * With [model] init, each layer takes the file's eps and negative_slope
 * where the config does not set them; where it does and they differ, it
 * fails naming both (the values themselves are loaded by fn_weights_load). */
FN_API fn_status fn_model_build(fn_net **net, fn_context *ctx, const fn_config *cfg, int in_features);

#ifdef __cplusplus
}
#endif
#endif
