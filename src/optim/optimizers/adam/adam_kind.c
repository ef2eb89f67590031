/* adam_kind.c — Adam and AdamW as registered optimisers (optimizer_kind.h):
 * their [train] keys and defaults (torch.optim's: betas 0.9, 0.999, eps
 * 1e-8; weight_decay 0 for Adam's L2 penalty, 1e-2 for AdamW's decoupled
 * decay). */
#include <stddef.h>

#include "fusenet/adam.h"
#include "fusenet/optimizer_kind.h"

#define AT(field) offsetof(fn_adam_config, field)

static const fn_option adam_options[] = {
    {"betas", FN_OPTION_PAIR, AT(beta1), 0, 0, 0, "0.9, 0.999"},
    {"adam_eps", FN_OPTION_FLOAT, AT(eps), 0, 1e6, 1, "1e-8"},
    {"weight_decay", FN_OPTION_FLOAT, AT(weight_decay), 0, 1e6, 0, "0"},
};

static const fn_option adamw_options[] = {
    {"betas", FN_OPTION_PAIR, AT(beta1), 0, 0, 0, "0.9, 0.999"},
    {"adam_eps", FN_OPTION_FLOAT, AT(eps), 0, 1e6, 1, "1e-8"},
    {"weight_decay", FN_OPTION_FLOAT, AT(weight_decay), 0, 1e6, 0, "1e-2"},
};

static fn_status create(fn_optimizer **opt, fn_context *ctx, fn_param *const *params,
                        int n_params, float lr, const void *options, int decoupled)
{
    fn_adam_config c = *(const fn_adam_config *)options;
    c.lr = lr;
    c.decoupled = decoupled;
    return fn_adam_create(opt, ctx, params, n_params, &c);
}

static fn_status create_adam(fn_optimizer **opt, fn_context *ctx, fn_param *const *params,
                             int n_params, float lr, const void *options)
{
    return create(opt, ctx, params, n_params, lr, options, 0);
}

static fn_status create_adamw(fn_optimizer **opt, fn_context *ctx, fn_param *const *params,
                              int n_params, float lr, const void *options)
{
    return create(opt, ctx, params, n_params, lr, options, 1);
}

const fn_optimizer_kind fn_adam_kind = {
    .name = "adam",
    .options_size = sizeof(fn_adam_config),
    .options = adam_options,
    .n_options = sizeof adam_options / sizeof adam_options[0],
    .create = create_adam,
};

const fn_optimizer_kind fn_adamw_kind = {
    .name = "adamw",
    .options_size = sizeof(fn_adam_config),
    .options = adamw_options,
    .n_options = sizeof adamw_options / sizeof adamw_options[0],
    .create = create_adamw,
};
