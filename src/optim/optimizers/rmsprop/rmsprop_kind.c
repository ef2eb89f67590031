/* rmsprop_kind.c — RMSprop as a registered optimiser (optimizer_kind.h):
 * its [train] keys and their defaults (torch.optim.RMSprop's: alpha 0.99,
 * eps 1e-8, momentum 0, not centered, weight_decay 0). eps is
 * rmsprop_eps, as Adam's is adam_eps; momentum and weight_decay are the
 * keys SGD declares too. */
#include <stddef.h>

#include "fusenet/optimizer_kind.h"
#include "fusenet/rmsprop.h"

#define AT(field) offsetof(fn_rmsprop_config, field)

static const fn_option options[] = {
    {"alpha", FN_OPTION_FLOAT, AT(alpha), 0, 1, 0, "0.99"},
    {"rmsprop_eps", FN_OPTION_FLOAT, AT(eps), 0, 1e6, 1, "1e-8"},
    {"momentum", FN_OPTION_FLOAT, AT(momentum), 0, 1e6, 0, "0"},
    {"centered", FN_OPTION_BOOL, AT(centered), 0, 0, 0, "false"},
    {"weight_decay", FN_OPTION_FLOAT, AT(weight_decay), 0, 1e6, 0, "0"},
};

static fn_status create(fn_optimizer **opt, fn_context *ctx, fn_param *const *params,
                        int n_params, float lr, const void *options_)
{
    fn_rmsprop_config c = *(const fn_rmsprop_config *)options_;
    c.lr = lr;
    return fn_rmsprop_create(opt, ctx, params, n_params, &c);
}

const fn_optimizer_kind fn_rmsprop_kind = {
    .name = "rmsprop",
    .options_size = sizeof(fn_rmsprop_config),
    .options = options,
    .n_options = sizeof options / sizeof options[0],
    .create = create,
};
