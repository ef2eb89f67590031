/* optimizers.c — the registry of optimisers by name: the one place a new
 * optimiser (its own header and files, optimizer.h) is made known to runs.
 * [train] configures SGD only so far; a future `optimizer =` key names the
 * entry to use. */
#include <stdio.h>
#include <string.h>

#include "fusenet/sgd.h"
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

static const struct {
    const char *name;
    optimizer_create create;
} registry[] = {
    {"sgd", create_sgd},
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
