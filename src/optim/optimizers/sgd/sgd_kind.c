/* sgd_kind.c — SGD (with momentum, dampening, weight decay, Nesterov, the
 * momentum buffers in bfloat16) as a registered optimiser (optimizer_kind.h): its [train] keys, their
 * defaults (torch.optim.SGD's) and the rule across them. */
#include <stddef.h>

#include "fusenet/optimizer_kind.h"
#include "fusenet/sgd.h"

#define AT(field) offsetof(fn_sgd_config, field)

static const fn_option options[] = {
    {"momentum", FN_OPTION_FLOAT, AT(momentum), 0, 1e6, 0, "0"},
    {"dampening", FN_OPTION_FLOAT, AT(dampening), 0, 1, 0, "0"},
    {"weight_decay", FN_OPTION_FLOAT, AT(weight_decay), 0, 1e6, 0, "0"},
    {"nesterov", FN_OPTION_BOOL, AT(nesterov), 0, 0, 0, "false"},
    {"momentum_bf16", FN_OPTION_BOOL, AT(momentum_bf16), 0, 0, 0, "false"},
};

static fn_status check(const void *options_, const fn_option_context *at, const char **key)
{
    (void)at;
    const fn_sgd_config *s = options_;
    *key = "nesterov";
    if (s->nesterov && (s->momentum <= 0 || s->dampening != 0))
        return fn_fail(FN_ERR_INVALID, "nesterov needs momentum > 0 and dampening = 0");
    *key = "momentum_bf16";
    if (s->momentum_bf16 && s->momentum <= 0)
        return fn_fail(FN_ERR_INVALID,
                       "momentum_bf16 needs momentum > 0: without momentum there is no buffer "
                       "to keep");
    return FN_OK;
}

static fn_status create(fn_optimizer **opt, fn_context *ctx, fn_param *const *params,
                        int n_params, float lr, const void *options_)
{
    fn_sgd_config c = *(const fn_sgd_config *)options_;
    c.lr = lr;
    fn_sgd *sgd = NULL;
    FN_TRY(fn_sgd_create(&sgd, ctx, params, n_params, &c));
    *opt = fn_sgd_optimizer(sgd);
    return FN_OK;
}

const fn_optimizer_kind fn_sgd_kind = {
    .name = "sgd",
    .options_size = sizeof(fn_sgd_config),
    .options = options,
    .n_options = sizeof options / sizeof options[0],
    .check_options = check,
    .create = create,
};
