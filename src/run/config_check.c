/* config_check.c — fn_config_finish: the checks across keys (a layer
 * against the [model] settings, a kind's keys against the kind chosen,
 * keep_best and patience against the loss), the required keys, and paths
 * resolved and checked, each failure naming where the value came from. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "core/name_list.h"
#include "run/config_keys.h"
#include "store/path.h"
#include "store/regular_file.h"

/* The table of keys and the families, by the short names used below. */
static const key_spec *const keys = fn_config_key_specs;
static const family *const families = fn_config_families;

/* Fails with "where: problem" for key i, where is its last source. */
static fn_status key_fail(const fn_config *cfg, fn_status status, int i, const char *problem)
{
    if (cfg->keys->assignment[i])
        return fn_fail(status, "--set %s: %s", cfg->keys->assignment[i], problem);
    if (cfg->keys->line[i] > 0)
        return fn_fail(status, "%s:%d: %s.%s: %s", cfg->path, cfg->keys->line[i],
                       fn_config_key_section(i), fn_config_key_name(i), problem);
    return fn_fail(status, "%s: %s.%s: %s", cfg->path, fn_config_key_section(i),
                   fn_config_key_name(i), problem);
}

/* The memory set a data key's file gives way to; NULL for other keys. */
static const fn_memory_set *memory_set_for(const fn_config *cfg, int i)
{
    return keys[i].offset == AT(train) ? cfg->train_set
         : keys[i].offset == AT(valid) ? cfg->valid_set
                                       : NULL;
}

static fn_status check_required(const fn_config *cfg)
{
    for (int i = 0; i < N_KEYS; i++)
        if (!keys[i].fallback && !fn_config_key_given(cfg, i) && !memory_set_for(cfg, i))
            return fn_fail(FN_ERR_INVALID, "%s: [%s] %s is required", cfg->path, keys[i].section,
                           keys[i].name);
    return FN_OK;
}

/* Each layer's kind checks its item against the [model] settings (a
 * message on groups, or on layers when groups is not given) and, after
 * the first, against the width before it (a message on layers). Layers
 * that keep their input's width (dropout) at the front have width 0 until
 * the data's columns are known: the layer after them is checked against
 * those when the network is made. */
static fn_status check_layers(const fn_config *cfg)
{
    const int layers = fn_config_find_key("model", "layers");
    const int groups = fn_config_find_key("model", "groups");
    const int settings = fn_config_key_given(cfg, groups) ? groups : layers;
    char problem[512], item[64];
    for (int l = 0; l < cfg->n_layers; l++) {
        const fn_layer_spec *s = &cfg->layers[l];
        const fn_layer_hparams hp = {.groups = fn_config_groups(cfg, s->width), .eps = cfg->eps,
                                     .negative_slope = cfg->negative_slope};
        int where = -1;
        if (s->kind->check && s->kind->check(s, &hp) != FN_OK)
            where = settings;
        else if (l > 0 && cfg->layers[l - 1].width > 0 && s->kind->check_input &&
                 s->kind->check_input(s, cfg->layers[l - 1].width) != FN_OK)
            where = layers;
        if (where >= 0) {
            fn_layer_spec_format(s, item, sizeof item);
            snprintf(problem, sizeof problem, "%s of layer %d (%s)", fn_last_error(), l, item);
            return key_fail(cfg, FN_ERR_INVALID, where, problem);
        }
    }
    return FN_OK;
}

/* Key `name` of [train], given with a value other than its default, does
 * not apply to the settings chosen: an error naming it. */
static fn_status not_applicable(const fn_config *cfg, const char *name, int differs,
                                const char *why)
{
    const int i = fn_config_find_key("train", name);
    if (!fn_config_key_given(cfg, i) || !differs)
        return FN_OK;
    return key_fail(cfg, FN_ERR_INVALID, i, why);
}

/* Whether option o of kind k of family f holds other than its default
 * (an option without one always does). */
static int option_differs(const fn_config *cfg, int f, int k, const fn_option *o)
{
    if (o->type == FN_OPTION_LIST) /* the default is empty */
        return ((const fn_option_list *)((const char *)cfg->keys->options[f][k] + o->offset))->n > 0;
    char fallback[256] = {0};
    if (!o->fallback || fn_config_family_kind(f, k)->options_size > sizeof fallback ||
        fn_config_set_option(fallback, o, o->fallback) != FN_OK)
        return 1;
    const size_t size = o->type == FN_OPTION_PAIR ? 2 * sizeof(float)
                        : o->type == FN_OPTION_FLOAT ? sizeof(float) : sizeof(int);
    return memcmp((const char *)cfg->keys->options[f][k] + o->offset, fallback + o->offset,
                  size) != 0;
}

/* "adam or adamw": the kinds of family f that take option `name`. */
static const char *kinds_taking(int f, const char *name, char *buf, size_t cap)
{
    const char *names[MAX_KINDS];
    int n = 0;
    for (int k = 0; k < fn_config_family_count(f) && n < MAX_KINDS; k++)
        if (fn_config_kind_option(f, k, name))
            names[n++] = fn_config_family_kind(f, k)->name;
    return fn_name_list(buf, cap, names, n);
}

/* "betas, adam_eps, weight_decay": kind k's options, or "none". */
static const char *own_options(int f, int k, char *buf, size_t cap)
{
    const fn_kind *v = fn_config_family_kind(f, k);
    size_t len = 0;
    snprintf(buf, cap, "none");
    for (int i = 0; i < v->n_options && len < cap; i++) {
        int w = snprintf(buf + len, cap - len, "%s%s", i ? ", " : "", v->options[i].name);
        len += w > 0 ? (size_t)w : 0;
    }
    return buf;
}

/* Key i, an option of family f's other kinds than the one --set chose,
 * was given in the file: a notice (the file's value is kept for the kinds
 * that take it), so `--set train.optimizer=adam` switches a file written
 * for SGD in one step. */
static void notice_other_kind(const fn_config *cfg, int f, int i, const char *taking,
                              const char *chosen)
{
    struct fn_config_keys *k = cfg->keys;
    if (k->n_notices >= MAX_OPTIONS)
        return;
    snprintf(k->notices[k->n_notices++], sizeof k->notices[0],
             "%s:%d: [train] %s applies to %s = %s only; ignored, as --set %s chose %s",
             cfg->path, k->line[i], fn_config_key_name(i), families[f].selector,
             taking, k->assignment[fn_config_find_key("train", families[f].selector)],
             chosen);
}

/* An option of family f's other kinds, given with a value other than its
 * default, is an error naming the kinds it applies to (a notice when the
 * kind came from --set and the option from the file). */
static fn_status check_others(const fn_config *cfg, int f, int c)
{
    const char *chosen = fn_config_family_kind(f, c)->name;
    const char *selector = families[f].selector;
    const int chosen_by_set = cfg->keys->assignment[fn_config_find_key("train", selector)] != NULL;
    int fam = 0;
    for (int j = 0; fn_config_option_name(j, &fam); j++) {
        const char *name = fn_config_option_name(j, NULL);
        if (fam != f || fn_config_kind_option(f, c, name))
            continue;
        const int k = fn_config_first_taking(f, name), i = fn_config_find_key("train", name);
        const int differs = option_differs(cfg, f, k, fn_config_kind_option(f, k, name));
        char taking[128], own[256], why[512];
        kinds_taking(f, name, taking, sizeof taking);
        if (chosen_by_set && differs && !cfg->keys->assignment[i] && cfg->keys->line[i] > 0) {
            notice_other_kind(cfg, f, i, taking, chosen);
            continue;
        }
        snprintf(why, sizeof why, "applies to %s = %s only, not %s (%s's keys: %s)", selector,
                 taking, chosen, chosen, own_options(f, c, own, sizeof own));
        FN_TRY(not_applicable(cfg, name, differs, why));
    }
    return FN_OK;
}

/* The network's outputs: the last layer's width. */
static int out_features(const fn_config *cfg)
{
    return cfg->n_layers > 0 ? cfg->layers[cfg->n_layers - 1].width : 0;
}

/* Family f: the other kinds' options, the chosen kind's options that have
 * no default, then its own check; its options block goes to the config. */
static fn_status check_family(fn_config *cfg, int f)
{
    const family *fam = &families[f];
    const int c = fn_config_chosen_kind(cfg, f);
    const fn_kind *v = fn_config_family_kind(f, c);
    FN_TRY(check_others(cfg, f, c));
    for (int o = 0; o < v->n_options; o++) {
        if (v->options[o].fallback ||
            fn_config_key_given(cfg, fn_config_find_key("train", v->options[o].name)))
            continue;
        char why[256];
        snprintf(why, sizeof why, "%s = %s needs %s", fam->selector, v->name, v->options[o].name);
        return key_fail(cfg, FN_ERR_INVALID, fn_config_find_key("train", fam->selector), why);
    }
    const char *key = NULL;
    const fn_option_context at = {.lr = cfg->lr, .outputs = out_features(cfg)};
    if (v->check_options && v->check_options(cfg->keys->options[f][c], &at, &key) != FN_OK) {
        char problem[512];
        snprintf(problem, sizeof problem, "%s", fn_last_error());
        return key_fail(cfg, FN_ERR_INVALID, fn_config_find_key("train", key), problem);
    }
    *(const void **)((char *)cfg + fam->chosen_options) = cfg->keys->options[f][c];
    return FN_OK;
}

const char *fn_config_notice(const fn_config *cfg, int i)
{
    return cfg && i >= 0 && i < cfg->keys->n_notices ? cfg->keys->notices[i] : NULL;
    return FN_OK;
}

/* A path from the file is relative to the file's directory; one from --set
 * to the current directory, as on every command line. */
static fn_status resolve_path(fn_config *cfg, int i)
{
    char **slot = (char **)((char *)cfg + keys[i].offset);
    if (!*slot)
        return FN_OK;
    char *full = fn_path_join(cfg->keys->assignment[i] ? "." : cfg->dir, *slot);
    if (!full)
        return fn_fail(FN_ERR_NOMEM, "out of memory");
    free(*slot);
    *slot = full;
    /* Input files are checked now, so a typo fails before anything is built. */
    if (keys[i].offset != AT(out_dir) && access(full, R_OK) != 0) {
        char problem[512];
        snprintf(problem, sizeof problem, "cannot read '%s': %s", full, strerror(errno));
        return key_fail(cfg, FN_ERR_IO, i, problem);
    }
    struct stat st;
    if (keys[i].offset != AT(out_dir) && stat(full, &st) == 0 && !S_ISREG(st.st_mode)) {
        char problem[512];
        snprintf(problem, sizeof problem, "'%s' is %s, not a regular file", full,
                 fn_file_kind(st.st_mode));
        return key_fail(cfg, FN_ERR_IO, i, problem);
    }
    return FN_OK;
}

/* standardize_targets is for a loss of values (mse), not of labels, nor
 * of targets in [0, 1]: bce_with_logits' would become other numbers than
 * 0 and 1, and predict would rescale its logits. */
static fn_status check_standardize_targets(const fn_config *cfg)
{
    if (!cfg->standardize_targets ||
        (cfg->loss->targets == FN_DATA_FLOATS && !cfg->loss->unit_targets))
        return FN_OK;
    char why[192];
    if (cfg->loss->targets == FN_DATA_FLOATS)
        snprintf(why, sizeof why, "applies to a loss of values (mse), not loss = %s's targets in "
                 "[0, 1] (standardised, they would no longer be 0 and 1)", cfg->loss->name);
    else
        snprintf(why, sizeof why, "applies to a loss of values (mse), not loss = %s's class "
                 "labels", cfg->loss->name);
    return key_fail(cfg, FN_ERR_INVALID, fn_config_find_key("data", "standardize_targets"), why);
}

/* keep_best and patience watch [train] monitor: by default the loss
 * kind's validation metric; a validation metric needs [data] valid, the
 * accuracy a loss that classifies. */
static fn_status check_best(fn_config *cfg)
{
    const int key = fn_config_find_key("train", "monitor");
    if (!fn_config_key_given(cfg, key))
        cfg->monitor = cfg->loss->watch_loss ? FN_MONITOR_VALID_LOSS : FN_MONITOR_VALID_ACCURACY;
    else if (cfg->monitor == FN_MONITOR_VALID_ACCURACY && !cfg->loss->metric) {
        char why[160];
        snprintf(why, sizeof why, "valid_accuracy needs a loss that classifies (loss = %s has no "
                 "accuracy); use valid_loss or train_loss", cfg->loss->name);
        return key_fail(cfg, FN_ERR_INVALID, key, why);
    }
    if (cfg->valid || cfg->valid_set || !fn_monitor_needs_valid(cfg->monitor))
        return FN_OK;
    const char *name = cfg->keep_best ? "keep_best" : cfg->patience > 0 ? "patience" : NULL;
    if (!name)
        return FN_OK;
    char why[160];
    snprintf(why, sizeof why, "needs a validation set ([data] valid) to watch %s (or [train] "
             "monitor = train_loss)", fn_monitor_name(cfg->monitor));
    return key_fail(cfg, FN_ERR_INVALID, fn_config_find_key("train", name), why);
}

/* [output] dir left unset: runs/<stem of the config file>, so two configs
 * never share a folder by default. Given empty it is an error: a variable
 * that expanded to nothing, not a request for the default. */
static fn_status default_out_dir(fn_config *cfg)
{
    if (cfg->out_dir)
        return FN_OK;
    const int key = fn_config_find_key("output", "dir");
    if (fn_config_key_given(cfg, key))
        return key_fail(cfg, FN_ERR_INVALID, key,
                        "expected a directory, got nothing (leave [output] dir out for the "
                        "default runs/<config name>)");
    const char *base = strrchr(cfg->path, '/');
    base = base ? base + 1 : cfg->path;
    size_t len = strlen(base);
    const char *dot = strrchr(base, '.');
    if (dot && dot != base)
        len = (size_t)(dot - base);
    cfg->out_dir = malloc(len + 6);
    if (!cfg->out_dir)
        return fn_fail(FN_ERR_NOMEM, "out of memory");
    snprintf(cfg->out_dir, len + 6, "runs/%.*s", (int)len, base);
    return FN_OK;
}

/* A data key given a file and a memory set: which one was meant? */
static fn_status check_memory_sets(const fn_config *cfg)
{
    for (int i = 0; i < N_KEYS; i++) {
        const fn_memory_set *m = memory_set_for(cfg, i);
        if (!m || !fn_config_key_given(cfg, i))
            continue;
        char problem[512];
        snprintf(problem, sizeof problem, "is a file and memory set '%s' too; give one of the two",
                 fn_memory_set_name(m));
        return key_fail(cfg, FN_ERR_INVALID, i, problem);
    }
    return FN_OK;
}

fn_status fn_config_finish(fn_config *cfg)
{
    if (!cfg)
        return fn_fail(FN_ERR_INVALID, "fn_config_finish: the config is NULL");
    FN_TRY(check_memory_sets(cfg));
    FN_TRY(check_required(cfg));
    FN_TRY(check_layers(cfg));
    cfg->keys->n_notices = 0;
    for (int f = 0; f < N_FAMILIES; f++)
        FN_TRY(check_family(cfg, f));
    FN_TRY(check_best(cfg));
    FN_TRY(check_standardize_targets(cfg));
    FN_TRY(default_out_dir(cfg));
    for (int i = 0; i < N_KEYS; i++)
        if (keys[i].type == T_PATH || keys[i].type == T_OPTPATH)
            FN_TRY(resolve_path(cfg, i));
    return FN_OK;
}
