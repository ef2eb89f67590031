/* export_impl.h (private) — what the writers of export.h share: the list
 * of text entries a model file carries (the architecture first, then the
 * weights file's config and provenance), the atomic write of a file's
 * bytes, and the two writers. */
#ifndef FUSENET_SRC_EXPORT_EXPORT_IMPL_H
#define FUSENET_SRC_EXPORT_EXPORT_IMPL_H

#include <stddef.h>

#include "fusenet/export.h"

struct fn_export_meta {
    char **keys, **values; /* [n], malloc'ed */
    int n, cap;
};

/* The format's name in the entries, and its version: a reader refuses a
 * newer one. */
#define FN_EXPORT_FORMAT "fusenet-export"
#define FN_EXPORT_VERSION 1

/* Appends a copy of (key, value). */
fn_status fn_export_meta_add(fn_export_meta *meta, const char *key, const char *value);
/* Frees what meta holds (not meta itself). */
void fn_export_meta_clear(fn_export_meta *meta);

/* *all: format, format_version, fusenet_version, in_features,
 * out_features, n_layers, layers (a summary, "block 128, linear 10"),
 * standardize ("true" or "false"), per layer I "layerI.kind",
 * "layerI.in_features", "layerI.out_features" and each attribute its kind
 * writes to a weights file ("layerI.groups", ...), then meta's entries.
 * Every layer's kind must have an export row (export_kind.h). */
fn_status fn_export_describe(const fn_net *net, const fn_input_norm *norm,
                             const fn_export_meta *meta, fn_export_meta *all);

/* Writes the n parts to a new temporary of this process
 * ("<path>.<pid>-<n>.tmp", atomic_file.h), closed and named in *tmp
 * (malloc'ed); fn_atomic_commit publishes it at path. On failure nothing
 * is left and *tmp is NULL. */
fn_status fn_export_file_stage(const char *path, const void *const *parts, const size_t *sizes,
                               int n, char **tmp);

/* The check file of fn_export_check_write, staged the same way. */
fn_status fn_export_check_stage(const char *path, const float *inputs, const float *outputs,
                                int rows, int in, int out, char **tmp);

/* The formats' writers: the model staged for path, as fn_export_file_stage. */
fn_status fn_export_onnx(const fn_net *net, const fn_input_norm *norm, const fn_export_meta *all,
                         const char *path, char **tmp);
fn_status fn_export_safetensors(const fn_net *net, const fn_input_norm *norm,
                                const fn_export_meta *all, const char *path, char **tmp);

/* 1 when the file at path is a safetensors file fusenet exported (its
 * header reads and its metadata's format is fusenet-export). */
int fn_safetensors_is_export(const char *path);

#endif
