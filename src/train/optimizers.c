/* optimizers.c — the registry of optimisers by name: the one place a new
 * optimiser (its own header and files, optimizer.h) is made known to runs.
 * [train] optimizer names the entry to use; each adapter reads its options
 * from the config ([train] lr and weight_decay are every optimiser's). */
#include <stdio.h>
#include <string.h>

#include "fusenet/adam.h"
#include "fusenet/sgd.h"
#include "io/config_impl.h"
#include "train/optimizers.h"

typedef fn_status (*optimizer_create)(fn_optimizer **opt, fn_net *net, const fn_config *cfg);

static fn_status create_sgd(fn_optimizer **opt, fn_net *net, const fn_config *cfg)
{
    fn_sgd *sgd = NULL;
    FN_TRY(fn_sgd_create(&sgd, fn_net_context(net), fn_net_params(net), fn_net_n_params(net),
                         &cfg->sgd));
    *opt = fn_sgd_optimizer(sgd);
    return FN_OK;
}

static fn_status create_adam_kind(fn_optimizer **opt, fn_net *net, const fn_config *cfg,
                                  int decoupled)
{
    fn_adam_config a = fn_adam_config_default(cfg->sgd.lr, decoupled);
    a.beta1 = cfg->betas[0];
    a.beta2 = cfg->betas[1];
    a.eps = cfg->adam_eps;
    a.weight_decay = cfg->sgd.weight_decay;
    return fn_adam_create(opt, fn_net_context(net), fn_net_params(net), fn_net_n_params(net), &a);
}

static fn_status create_adam(fn_optimizer **opt, fn_net *net, const fn_config *cfg)
{
    return create_adam_kind(opt, net, cfg, 0);
}

static fn_status create_adamw(fn_optimizer **opt, fn_net *net, const fn_config *cfg)
{
    return create_adam_kind(opt, net, cfg, 1);
}

static const struct {
    const char *name;
    optimizer_create create;
} registry[] = {
    {"sgd", create_sgd},
    {"adam", create_adam},
    {"adamw", create_adamw},
};

enum { N_REGISTERED = sizeof registry / sizeof registry[0] };

fn_status fn_optimizer_from_config(fn_optimizer **opt, const char *name, fn_net *net,
                                   const fn_config *cfg)
{
    *opt = NULL;
    for (int i = 0; i < N_REGISTERED; i++)
        if (strcmp(registry[i].name, name) == 0)
            return registry[i].create(opt, net, cfg);
    char known[256] = "";
    for (int i = 0; i < N_REGISTERED; i++)
        snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", i ? ", " : "",
                 registry[i].name);
    return fn_fail(FN_ERR_INVALID, "unknown optimizer '%s' (known: %s)", name, known);
}
