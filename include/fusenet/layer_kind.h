/* layer_kind.h — the registry of layer kinds. A kind ("block", "linear") is
 * one descriptor: how an item of [model] layers names and sizes it, how a
 * layer of it is created, and which attributes its group in a weights file
 * carries beyond kind, in_features and out_features, described without
 * HDF5 (run/weights.c writes and reads them). The one table of every kind
 * is in src/nn/layer_kind.c; config and weights files find them there. */
#ifndef FUSENET_LAYER_KIND_H
#define FUSENET_LAYER_KIND_H

#include "fusenet/api.h"

#include <stddef.h>

#include "fusenet/init.h"
#include "fusenet/kind.h"
#include "fusenet/layer.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fn_layer_kind fn_layer_kind;

/* One layer of a list: an item of [model] layers ("block 128"), or a layer
 * group of a weights file. */
typedef struct fn_layer_spec {
    const fn_layer_kind *kind;
    int width;    /* out_features; 0: its input's (a kind whose item has no width) */
    double value; /* a kind's number besides the width ("dropout 0.1": 0.1); else 0 */
} fn_layer_spec;

/* The settings of [model] shared by the layers; a kind reads those it uses. */
typedef struct fn_layer_hparams {
    int groups;           /* block: GroupNorm's groups, divides the width */
    float eps;            /* block: GroupNorm's eps */
    float negative_slope; /* block: LeakyReLU's slope */
    int forward_only;     /* every kind: no gradients or backward caches (fn_layer.forward_only) */
} fn_layer_hparams;

/* A kind's own attribute of a weights file, stored as an int32 or a
 * float64 scalar. */
typedef enum fn_layer_attr_type { FN_LAYER_ATTR_INT, FN_LAYER_ATTR_DOUBLE } fn_layer_attr_type;

typedef struct fn_layer_attr {
    const char *name;
    fn_layer_attr_type type;
    int must_match; /* loading a file into a built layer: the file's value must be the layer's */
} fn_layer_attr;

/* The value of an attribute: .i for FN_LAYER_ATTR_INT, .d for _DOUBLE. */
typedef union fn_layer_attr_value {
    long long i;
    double d;
} fn_layer_attr_value;

enum { FN_LAYER_ATTRS_MAX = 8 };

struct fn_layer_kind {
    /* name: in items, weights files and its fn_layer_ops.kind ("block");
     * usage: an item of [model] layers ("block N"); no options. */
    FN_KIND_HEAD;
    /* The item's arguments after the name and its blanks ("128"), into
     * *spec (kind already set). The message names the bad argument
     * ("width '0' is not an integer from 1 to 16777216"). */
    fn_status (*parse)(const char *args, fn_layer_spec *spec);
    /* Optional: the item of spec back as text ("dropout 0.1"), as snprintf;
     * NULL: "<name> <width>". */
    int (*format)(const fn_layer_spec *spec, char *buf, size_t cap);
    /* Optional: spec against the [model] settings, before anything is
     * built; the message says what is wrong ("groups 8 does not divide the
     * width 12"). */
    fn_status (*check)(const fn_layer_spec *spec, const fn_layer_hparams *hp);
    /* Optional: spec after inputs of in_features columns, where a list
     * knows them before the data is read (the width of the item before);
     * create checks the same. The message says what is wrong ("residual 64
     * takes inputs of 32 columns: ..."). */
    fn_status (*check_input)(const fn_layer_spec *spec, int in_features);
    /* A layer for inputs of in_features columns, batches of up to max_batch
     * rows, initialised from rng. */
    fn_status (*create)(fn_layer **layer, fn_context *ctx, int in_features,
                        const fn_layer_spec *spec, const fn_layer_hparams *hp, int max_batch,
                        fn_rng *rng);
    /* Its attributes in a weights file, in the order they are written;
     * n_attrs at most FN_LAYER_ATTRS_MAX. With none, the two hooks below
     * are NULL. */
    const fn_layer_attr *attrs;
    int n_attrs;
    /* values[i] of attrs[i] for l, a layer of this kind. */
    fn_status (*get_attrs)(const fn_layer *l, fn_layer_attr_value *values);
    /* The settings *hp a layer of in -> out features is created with, from
     * values read back from a file; checked (FN_ERR_FORMAT). */
    fn_status (*set_attrs)(const fn_layer_attr_value *values, int in_features, int out_features,
                           fn_layer_hparams *hp);
    /* Optional: the item's value (fn_layer_spec.value: dropout's p) from
     * values read back from a file and checked by set_attrs, so that a
     * layer built from a file keeps it. NULL: 0. */
    double (*spec_value)(const fn_layer_attr_value *values);
    /* Optional: the bytes l (a layer of this kind) allocated on its device
     * besides its parameters and their gradients: what forward caches for
     * backward, at its max_batch, and its backend's workspace. NULL: none. */
    size_t (*buffer_bytes)(const fn_layer *l);
    /* The floats a layer of in_features -> spec->width takes, for the
     * memory check before anything is built (model.h): its parameters
     * (each has a gradient as large, but with hp->forward_only), and its
     * own buffers per row of a batch (NULL: none), those of backward left
     * out with hp->forward_only. Counted as doubles: 2^24 x 2^24
     * overflows an int. */
    double (*param_floats)(int in_features, const fn_layer_spec *spec);
    double (*row_floats)(const fn_layer_spec *spec, const fn_layer_hparams *hp);
    /* Its layers' parameters by name (fn_param.name), in their order,
     * ended by NULL; NULL for a kind without parameters. In a weights
     * file "weight" is stored as [out, in] and every other as [out], so a
     * file's datasets are checked against the sizes its group claims
     * before a layer of that size is allocated. */
    const char *const *param_names;
    /* Optional: the bytes of copies of l's parameters that it keeps in
     * another precision (the block's bfloat16 weight in bf16 mode on the
     * GPU), counted with the weights in the run's memory summary and not in
     * buffer_bytes. NULL: none. */
    size_t (*weight_copy_bytes)(const fn_layer *l);
    /* Its outputs are normalised and activated, so a narrow range: as the
     * last layer under a loss that reads logits (fn_loss_kind.takes_logits)
     * it gets a notice. */
    int bounded_outputs;
    /* On a GPU in bf16 math: its layers write their output as bfloat16
     * into a next layer that takes it so (bf16_output: the ops'
     * forward_bf16), or take their input so (bf16_input: the ops'
     * bf16_input). net.c joins two such layers and never allocates the
     * float activation between them; the memory check (model.h) counts
     * it out the same way. */
    int bf16_output, bf16_input;
};

/* The registry: every kind, in the order messages list them. */
FN_API const fn_registry *fn_layer_kinds(void);
FN_API int fn_layer_kind_count(void);
FN_API const fn_layer_kind *fn_layer_kind_at(int i); /* [0, count), else NULL */

/* The kind called name; else FN_ERR_INVALID "unknown layer kind 'conv'
 * (expected block or linear)". */
FN_API fn_status fn_layer_kind_find(const char *name, const fn_layer_kind **kind);
/* The kind of a built layer, by its ops' kind; NULL for a layer of no
 * registered kind. */
FN_API const fn_layer_kind *fn_layer_kind_of(const fn_layer *l);

/* The known kinds for a message, "block or linear", or with usages set
 * their items, "'block N' or 'linear N'"; cut to fit cap. Returns buf. */
FN_API const char *fn_layer_kind_list(char *buf, size_t cap, int usages);

/* The width a layer of spec has after inputs of in_features columns:
 * spec->width, or in_features for a kind that keeps its input's (0). */
FN_API int fn_layer_spec_out(const fn_layer_spec *spec, int in_features);
/* The item of spec as text ("block 128", "dropout 0.1"), as snprintf. */
FN_API int fn_layer_spec_format(const fn_layer_spec *spec, char *buf, size_t cap);

/* The bytes l's kind says l allocated besides its parameters and their
 * gradients (buffer_bytes above); 0 for a kind without the hook. */
FN_API size_t fn_layer_buffer_bytes(const fn_layer *l);
/* The same for weight_copy_bytes; 0 for a kind without the hook. */
FN_API size_t fn_layer_weight_copy_bytes(const fn_layer *l);

/* A layer of spec->kind (checked entry point of its create). */
FN_API fn_status fn_layer_create(fn_layer **layer, fn_context *ctx, int in_features,
                                 const fn_layer_spec *spec, const fn_layer_hparams *hp, int max_batch,
                                 fn_rng *rng);

/* The parse of a kind whose one argument is its width: an integer from 1
 * to 16777216. */
FN_API fn_status fn_layer_parse_width(const char *args, fn_layer_spec *spec);

#ifdef __cplusplus
}
#endif
#endif
