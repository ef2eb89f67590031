/* config_keys.c — the configuration's keys: the table of every key with
 * its type, range and default, the keys the registered kinds declare
 * (kind.h: each family's kinds, read through their heads alone), a key
 * found by its name, where each value came from, and "did you mean" for an
 * unknown section or key. */
#include <stdio.h>
#include <string.h>

#include "core/suggest.h"
#include "run/config_keys.h"

/* Every key but the optimisers' and the schedules' own, which each kind
 * declares (optimizer_kind.h, schedule_kind.h). docs/configuration.md's
 * table of keys is written from these. */
static const char *const shard_choices[] = {"none", "optimizer", NULL};

const key_spec fn_config_key_specs[N_KEYS] = {
    {"data", "train", T_PATH, AT(train), 0, 0, 0, NULL, NULL},
    {"data", "valid", T_OPTPATH, AT(valid), 0, 0, 0, "", NULL},
    {"data", "inputs", T_NAME, AT(inputs), 0, 0, 0, "X", NULL},
    {"data", "targets", T_NAME, AT(targets), 0, 0, 0, "y", NULL},
    {"data", "memory_budget_mb", T_DOUBLE, AT(memory_budget_mb), 0, 1 << 24, 1, "1024", NULL},
    {"data", "standardize", T_BOOL, AT(standardize), 0, 0, 0, "false", NULL},
    {"data", "standardize_targets", T_BOOL, AT(standardize_targets), 0, 0, 0, "false", NULL},
    {"model", "layers", T_LAYERS, AT(layers), 0, 0, 0, NULL, NULL},
    {"model", "groups", T_AUTO_INT, AT(groups), 1, 1 << 20, 0, "8", NULL},
    {"model", "eps", T_FLOAT, AT(eps), 0, 1, 1, "1e-5", NULL},
    {"model", "negative_slope", T_FLOAT, AT(negative_slope), 0, 1e6, 0, "0.01", NULL},
    {"model", "init", T_OPTPATH, AT(init), 0, 0, 0, "", NULL},
    {"train", "loss", T_KIND, AT(loss), 0, 0, 0, "cross_entropy", NULL},
    {"train", "batch_size", T_INT, AT(batch_size), 1, 1 << 20, 0, "64", NULL},
    {"train", "epochs", T_INT, AT(epochs), 1, 1e6, 0, "10", NULL},
    {"train", "lr", T_FLOAT, AT(lr), 0, 1e6, 1, "0.01", NULL},
    {"train", "seed", T_SEED, AT(seed), 0, 0, 0, "1", NULL},
    {"train", "checkpoint_every", T_INT, AT(checkpoint_every), 0, 1e6, 0, "0", NULL},
    {"train", "optimizer", T_KIND, AT(optimizer), 0, 0, 0, "sgd", NULL},
    {"train", "schedule", T_KIND, AT(schedule), 0, 0, 0, "constant", NULL},
    {"train", "warmup_steps", T_INT, AT(warmup_steps), 0, 1e9, 0, "0", NULL},
    {"train", "clip_grad_norm", T_FLOAT, AT(clip_grad_norm), 0, 1e30, 0, "0", NULL},
    {"train", "keep_best", T_BOOL, AT(keep_best), 0, 0, 0, "false", NULL},
    {"train", "patience", T_INT, AT(patience), 0, 1e6, 0, "0", NULL},
    /* Left unset, the loss kind's (check_best). */
    {"train", "monitor", T_MONITOR, AT(monitor), 0, 0, 0, "valid_loss", NULL},
    {"train", "min_delta", T_DOUBLE, AT(min_delta), 0, 1e30, 0, "0", NULL},
    {"run", "device", T_DEVICE, AT(device), 0, 0, 0, "auto", NULL},
    {"run", "math", T_MATH, AT(math), 0, 0, 0, "fp32", NULL},
    {"run", "log_every", T_INT, AT(log_every), 0, 1e9, 0, "20", NULL},
    {"run", "cuda_graphs", T_BOOL, AT(cuda_graphs), 0, 0, 0, "true", NULL},
    {"run", "layer_updates", T_BOOL, AT(layer_updates), 0, 0, 0, "false", NULL},
    {"run", "data_on_device", T_AUTO_BOOL, AT(data_on_device), 0, 0, 0, "auto", NULL},
    {"run", "shard", T_CHOICE, AT(shard), 0, 0, 0, "none", shard_choices},
    {"run", "grad_sum", T_GRAD_SUM, AT(grad_sum), 0, 0, 0, "float32", NULL},
    /* Empty: runs/<the config file's stem>, beside the file (finish). */
    {"output", "dir", T_OPTPATH, AT(out_dir), 0, 0, 0, "", NULL},
};
_Static_assert(sizeof fn_config_key_specs / sizeof fn_config_key_specs[0] == N_KEYS,
               "N_KEYS counts the table");

static const char *const sections[] = {"data", "model", "train", "run", "output"};

/* --- the keys the kinds declare ------------------------------------------ */

const family fn_config_families[N_FAMILIES] = {
    {"optimizer", AT(optimizer), AT(optimizer_options), fn_optimizer_kinds},
    {"schedule", AT(schedule), AT(schedule_options), fn_schedule_kinds},
    {"loss", AT(loss), AT(loss_options), fn_loss_kinds},
};

/* The table's keys and the families, by the short names this file uses. */
static const key_spec *const keys = fn_config_key_specs;
static const family *const families = fn_config_families;

int fn_config_family_count(int f) { return fn_registry_count(families[f].kinds()); }

const fn_kind *fn_config_family_kind(int f, int k)
{
    return fn_registry_at(families[f].kinds(), k);
}

int fn_config_family_of(size_t offset)
{
    int f = 0;
    while (f < N_FAMILIES - 1 && families[f].chosen != offset)
        f++;
    return f;
}

/* Kind k of family f's option called `name`, or NULL. */
const fn_option *fn_config_kind_option(int f, int k, const char *name)
{
    return fn_kind_option(fn_config_family_kind(f, k), name);
}

/* The first kind of family f that takes option `name`; -1 for none. */
int fn_config_first_taking(int f, const char *name)
{
    for (int k = 0; k < fn_config_family_count(f); k++)
        if (fn_config_kind_option(f, k, name))
            return k;
    return -1;
}

/* The j-th distinct option name of the families' kinds, its family in
 * *fam; NULL past the last. */
const char *fn_config_option_name(int j, int *fam)
{
    int seen = 0;
    for (int f = 0; f < N_FAMILIES; f++)
        for (int k = 0; k < fn_config_family_count(f); k++) {
            const fn_kind *v = fn_config_family_kind(f, k);
            for (int o = 0; o < v->n_options; o++) {
                const char *name = v->options[o].name;
                if (fn_config_first_taking(f, name) == k && seen++ == j) {
                    if (fam)
                        *fam = f;
                    return name;
                }
            }
        }
    return NULL;
}

/* The index in family f of the kind cfg chose. */
int fn_config_chosen_kind(const fn_config *cfg, int f)
{
    const void *chosen = *(const void *const *)((const char *)cfg + families[f].chosen);
    int k = 0;
    while (k < fn_config_family_count(f) - 1 && (const void *)fn_config_family_kind(f, k) != chosen)
        k++;
    return k;
}

static const char *key_section(int i)
{
    return i < N_KEYS ? keys[i].section : "train";
}

static const char *key_name(int i)
{
    return i < N_KEYS ? keys[i].name : fn_config_option_name(i - N_KEYS, NULL);
}

int fn_config_find_key(const char *section, const char *name)
{
    for (int i = 0; i < N_KEYS; i++)
        if (strcmp(keys[i].section, section) == 0 &&
            strcmp(keys[i].name, name) == 0)
            return i;
    for (int j = 0; strcmp(section, "train") == 0 && fn_config_option_name(j, NULL); j++)
        if (strcmp(fn_config_option_name(j, NULL), name) == 0)
            return N_KEYS + j;
    return -1;
}

/* The first key of any section called name. */
static int find_key_anywhere(const char *name)
{
    for (int i = 0; i < fn_config_n_keys(); i++)
        if (strcmp(key_name(i), name) == 0)
            return i;
    return -1;
}

int fn_config_known_section(const char *section)
{
    for (size_t i = 0; i < sizeof sections / sizeof sections[0]; i++)
        if (strcmp(sections[i], section) == 0)
            return 1;
    return 0;
}

/* --- did you mean -------------------------------------------------------- */

/* A failure about an unknown section gets the nearest known one. */
fn_status fn_config_suggest_section(fn_status st, const char *section)
{
    return fn_suggest_fix(st, "[", fn_suggest(section, sections, sizeof sections / sizeof sections[0]),
                          "]");
}

/* A failure about an unknown key gets the nearest key of its section, or
 * else the nearest key of another section ("[data] standardize"). */
fn_status fn_config_suggest_key(fn_status st, const char *section, const char *name)
{
    const char *same[ALL_KEYS], *all[ALL_KEYS];
    int n_same = 0, n_all = 0;
    for (int i = 0; i < fn_config_n_keys() && n_all < ALL_KEYS; i++) {
        if (strcmp(key_section(i), section) == 0)
            same[n_same++] = key_name(i);
        all[n_all++] = key_name(i);
    }
    const char *near = fn_suggest(name, same, n_same);
    if (near)
        return fn_suggest_fix(st, "", near, "");
    near = fn_suggest(name, all, n_all);
    if (!near)
        return st;
    char where[48];
    snprintf(where, sizeof where, "[%s] ", key_section(find_key_anywhere(near)));
    return fn_suggest_fix(st, where, near, "");
}

/* A name declared by two families would be one key for both; one of the
 * table's [train] keys would hide it. */
fn_status fn_config_check_option_names(void)
{
    int f = 0;
    for (int j = 0; fn_config_option_name(j, &f); j++) {
        for (int i = 0; i < N_KEYS; i++)
            if (strcmp(keys[i].section, "train") == 0 &&
                strcmp(keys[i].name, fn_config_option_name(j, NULL)) == 0)
                return fn_fail(FN_ERR_INVALID, "config_keys.c: [train] %s is declared by an %s and "
                               "by the table of keys", keys[i].name,
                               families[f].selector);
        for (int g = f + 1; g < N_FAMILIES; g++)
            if (fn_config_first_taking(g, fn_config_option_name(j, NULL)) >= 0)
                return fn_fail(FN_ERR_INVALID, "config_keys.c: [train] %s is declared by an %s and a "
                               "%s", fn_config_option_name(j, NULL), families[f].selector,
                               families[g].selector);
    }
    return FN_OK;
}

/* --- where each value came from ------------------------------------------ */

int fn_config_key_given(const fn_config *cfg, int i)
{
    return cfg->keys->line[i] > 0 || cfg->keys->assignment[i] != NULL;
}

/* Every key: the table's and the kinds' (option_name). */
int fn_config_n_keys(void)
{
    int n = N_KEYS;
    while (fn_config_option_name(n - N_KEYS, NULL))
        n++;
    return n;
}

int fn_config_given(const fn_config *cfg, const char *section, const char *name)
{
    const int i = cfg && section && name ? fn_config_find_key(section, name) : -1;
    return i >= 0 && fn_config_key_given(cfg, i);
}

const char *fn_config_key_section(int i)
{
    return i >= 0 && i < fn_config_n_keys() ? key_section(i) : NULL;
}

const char *fn_config_key_name(int i)
{
    return i >= 0 && i < fn_config_n_keys() ? key_name(i) : NULL;
}

int fn_config_key_origin(const fn_config *cfg, int i, const char **assignment)
{
    *assignment = NULL;
    if (!cfg || i < 0 || i >= fn_config_n_keys())
        return 0;
    *assignment = cfg->keys->assignment[i];
    return *assignment ? 0 : cfg->keys->line[i];
}
