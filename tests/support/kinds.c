/* kinds.c — the layer kinds the gradient checks run, each by its
 * descriptor (kind.h); a new kind is checked at every tier once it is here. */
#include "kind.h"

const gc_kind *const gc_kinds[] = {&gc_block_kind, &gc_linear_kind, &gc_relu_kind, &gc_gelu_kind,
                                    &gc_residual_kind, &gc_dropout_kind};
const size_t gc_n_kinds = GC_COUNT(gc_kinds);
