/* layer_specs.h — the layer specs the tests build nets from through the
 * registry (fn_model_create), without spelling out the look-up each time.
 * Include after <cmocka.h>. */
#ifndef FN_TEST_LAYER_SPECS_H
#define FN_TEST_LAYER_SPECS_H

#include "fusenet/layer_kind.h"

/* A layer of the registered kind `kind` (the test fails if there is none)
 * with width outputs. */
fn_layer_spec kind_spec(const char *kind, int width);

/* The [model] defaults with `groups` GroupNorm groups: eps 1e-5, slope 0.01. */
fn_layer_hparams default_hparams(int groups);

#endif
