/* optimizers.h (private) — the optimisers a run's config can name. */
#ifndef FUSENET_TRAIN_OPTIMIZERS_H
#define FUSENET_TRAIN_OPTIMIZERS_H

#include "fusenet/config.h"
#include "fusenet/optimizer.h"

/* The optimiser called `name` ("sgd") over net's parameters, configured by
 * cfg; FN_ERR_INVALID naming the known ones when there is none. */
fn_status fn_optimizer_from_config(fn_optimizer **opt, const char *name, fn_net *net,
                                   const fn_config *cfg);

#endif
