/* optimizer_kind.h — the registry of optimisers: for each, its [train]
 * optimizer name, the [train] keys of its own options (type, range,
 * default; shared keys such as weight_decay are declared by every kind
 * that takes them), the check across them, and the optimiser made from
 * them. The config reads a kind's keys from this table into the kind's own
 * options block; its messages ("applies to optimizer = adam or adamw
 * only", "expected sgd, adam, adamw or rmsprop") are generated from it (the
 * same code reads the schedules' keys, schedule_kind.h); the trainer makes
 * the optimiser through it. None of them names an optimiser.
 *
 * A new optimiser is its own files (optimizer.h's interface; its
 * descriptor, src/optim/optimizers/sgd/sgd_kind.c's pattern) plus one line in the table
 * of src/optim/optimizer_kind.c and its extern below. */
#ifndef FUSENET_OPTIMIZER_KIND_H
#define FUSENET_OPTIMIZER_KIND_H

#include "fusenet/api.h"

#include <stddef.h>

#include "fusenet/kind.h"
#include "fusenet/optimizer.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fn_optimizer_kind {
    /* name: the [train] optimizer value ("sgd"); options_size: bytes of
     * its options block (its own config struct); options: its [train]
     * keys; check_options (optional): the rules across them. */
    FN_KIND_HEAD;
    /* The optimiser over params with learning rate lr and these options. */
    fn_status (*create)(fn_optimizer **opt, fn_context *ctx, fn_param *const *params,
                        int n_params, float lr, const void *options);
} fn_optimizer_kind;

FN_API extern const fn_optimizer_kind fn_sgd_kind;
FN_API extern const fn_optimizer_kind fn_adam_kind;
FN_API extern const fn_optimizer_kind fn_adamw_kind;
FN_API extern const fn_optimizer_kind fn_rmsprop_kind;

FN_API const fn_registry *fn_optimizer_kinds(void); /* the table (kind.h) */
FN_API int fn_optimizer_kind_count(void);
FN_API const fn_optimizer_kind *fn_optimizer_kind_at(int i); /* NULL past the end */

/* The kind called `name`; FN_ERR_INVALID "expected sgd, adam, adamw or rmsprop,
 * got 'x'" (the table's names) when there is none. */
FN_API fn_status fn_optimizer_kind_find(const char *name, const fn_optimizer_kind **kind);

#ifdef __cplusplus
}
#endif
#endif
