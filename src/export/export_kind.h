/* export_kind.h (private) — how each layer kind leaves fusenet: one row per
 * kind (export_kind.c) giving the state_dict name of each of its
 * parameters (the module scripts/weights_to_torch.py builds, whose child
 * for layer I is named "layerI") and the ONNX nodes that compute it. A new
 * layer kind adds its row here; a layer of a kind without one cannot be
 * exported, and the message says so, naming the kind. */
#ifndef FUSENET_SRC_EXPORT_EXPORT_KIND_H
#define FUSENET_SRC_EXPORT_EXPORT_KIND_H

#include <stddef.h>

#include "export/onnx_graph.h"
#include "fusenet/layer.h"

enum { FN_EXPORT_KEYS_MAX = 8, FN_EXPORT_NAME_CAP = 96 };

/* A parameter's name in fusenet ("gamma") and in the layer's module
 * ("norm.weight": the state_dict key is "layerI.norm.weight"). */
typedef struct fn_export_key {
    const char *param;
    const char *key;
} fn_export_key;

typedef struct fn_export_kind {
    const char *kind; /* a layer kind's name (layer_kind.h) */
    fn_export_key keys[FN_EXPORT_KEYS_MAX];
    int n_keys;
    /* Adds to g the nodes computing l, a layer of this kind, from the
     * tensor named `in`, the last of them writing `out`; its weights are
     * initializers named by their state_dict keys, prefix "layerI". Nodes
     * and intermediate tensors are named "<prefix>/<what>". */
    fn_status (*onnx)(fn_onnx_graph *g, const fn_layer *l, const char *prefix, const char *in,
                      const char *out);
} fn_export_kind;

/* The row of layer `index`'s kind; else FN_ERR_INVALID "layer 2 (foo):
 * kind 'foo' has no export mapping (block, ... and dropout have one)". */
fn_status fn_export_kind_of(const fn_layer *l, int index, const fn_export_kind **kind);

/* "<prefix>.<key>" of parameter p of l (a layer of row k) into name. */
fn_status fn_export_param_name(const fn_export_kind *k, const char *prefix, const fn_param *p,
                               char *name, size_t cap);

/* The rows' ONNX functions (onnx_layers.c). */
fn_status fn_onnx_block(fn_onnx_graph *g, const fn_layer *l, const char *prefix, const char *in,
                        const char *out);
fn_status fn_onnx_linear(fn_onnx_graph *g, const fn_layer *l, const char *prefix,
                         const char *in, const char *out);
fn_status fn_onnx_residual(fn_onnx_graph *g, const fn_layer *l, const char *prefix,
                           const char *in, const char *out);
fn_status fn_onnx_relu(fn_onnx_graph *g, const fn_layer *l, const char *prefix, const char *in,
                       const char *out);
fn_status fn_onnx_gelu(fn_onnx_graph *g, const fn_layer *l, const char *prefix, const char *in,
                       const char *out);
fn_status fn_onnx_dropout(fn_onnx_graph *g, const fn_layer *l, const char *prefix,
                          const char *in, const char *out);

#endif
