/* config.c — the run configuration: the INI file (read by ini_reader.h)
 * and `--set` overrides go through the same setters (config_parse.c), so
 * both are checked alike and errors say where the value came from; the
 * config's life from load to destroy. The keys are config_keys.c's. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fusenet/config.h"
#include "run/config_keys.h"
#include "run/ini_reader.h"
#include "store/path.h"

/* The table of keys, by the short name used below. */
static const key_spec *const keys = fn_config_key_specs;

/* --- the INI file -------------------------------------------------------- */

/* One key of the file; ini_reader.h puts "<path>:<line>: " in front of a
 * failure's message. */
static fn_status on_key(void *arg, const char *section, const char *name, const char *value,
                        int line)
{
    fn_config *cfg = arg;
    if (!section[0])
        return fn_fail(FN_ERR_INVALID, "%s: key outside any [section]", name);
    if (!fn_config_known_section(section))
        return fn_config_suggest_section(fn_fail(FN_ERR_INVALID,
                                                 "unknown section [%s] (expected data, model, "
                                                 "train, run or output)", section),
                                         section);
    int i = fn_config_find_key(section, name);
    if (i < 0)
        return fn_config_suggest_key(fn_fail(FN_ERR_INVALID, "%s.%s: unknown key", section, name),
                                     section, name);
    if (cfg->keys->line[i] > 0)
        return fn_fail(FN_ERR_INVALID, "%s.%s: duplicate key (first set on line %d)", section,
                       name, cfg->keys->line[i]);
    cfg->keys->line[i] = line;
    fn_status st = fn_config_set_key(cfg, i, value);
    if (st != FN_OK)
        fn_error_prefix("%s.%s: ", section, name);
    return st;
}

/* A config of defaults named `path` (messages, the default output dir),
 * with paths relative to `dir`, then `text` (owned, NULL: read the file
 * `path`) parsed into it. */
static fn_status make_config(fn_config **out, const char *path, char *dir, char *text)
{
    *out = NULL;
    fn_config *cfg = calloc(1, sizeof *cfg);
    if (!cfg || !(cfg->keys = calloc(1, sizeof *cfg->keys)) || !(cfg->path = strdup(path)) ||
        !dir) {
        free(dir);
        free(text);
        fn_config_destroy(cfg);
        return fn_fail(FN_ERR_NOMEM, "out of memory for the configuration");
    }
    cfg->dir = dir;
    cfg->text = text;
    fn_status st = fn_config_defaults(cfg);
    if (st == FN_OK && !cfg->text)
        st = fn_ini_read_text(path, &cfg->text);
    if (st == FN_OK)
        st = fn_ini_parse(cfg->path, cfg->text, on_key, cfg);
    if (st != FN_OK) {
        fn_config_destroy(cfg);
        return st;
    }
    *out = cfg;
    return FN_OK;
}

fn_status fn_config_load(fn_config **out, const char *path)
{
    if (!out || !path)
        return fn_fail(FN_ERR_INVALID, "fn_config_load: a NULL argument");
    return make_config(out, path, fn_path_dir(path), NULL);
}

fn_status fn_config_parse(fn_config **out, const char *name, const char *text)
{
    if (!out || !text)
        return fn_fail(FN_ERR_INVALID, "fn_config_parse: a NULL argument");
    char *copy = strdup(text);
    if (!copy) {
        *out = NULL;
        return fn_fail(FN_ERR_NOMEM, "out of memory for the configuration");
    }
    return make_config(out, name ? name : "config", strdup("."), copy);
}

fn_status fn_config_use_memory_set(fn_config *cfg, const char *which, const fn_memory_set *set)
{
    const int train = which && strcmp(which, "train") == 0;
    if (!cfg || !set || (!train && !(which && strcmp(which, "valid") == 0)))
        return fn_fail(FN_ERR_INVALID, "fn_config_use_memory_set: %s",
                       !cfg || !set ? "the config or the set is NULL"
                                    : "expected \"train\" or \"valid\"");
    *(train ? &cfg->train_set : &cfg->valid_set) = set;
    return FN_OK;
}

/* --- overrides ----------------------------------------------------------- */

static char *trimmed_copy(const char *start, size_t len)
{
    while (len > 0 && (*start == ' ' || *start == '\t'))
        start++, len--;
    while (len > 0 && (start[len - 1] == ' ' || start[len - 1] == '\t'))
        len--;
    char *c = malloc(len + 1);
    if (c) {
        memcpy(c, start, len);
        c[len] = '\0';
    }
    return c;
}

/* Adds "; --set a.b=c" to the kept text, so exported files say how the run
 * differed from its file. */
static fn_status note_override(fn_config *cfg, const char *assignment)
{
    size_t n = strlen(cfg->text) + strlen(assignment) + 16;
    char *text = malloc(n);
    if (!text)
        return fn_fail(FN_ERR_NOMEM, "out of memory");
    size_t len = strlen(cfg->text);
    const char *sep = len && cfg->text[len - 1] != '\n' ? "\n" : "";
    snprintf(text, n, "%s%s; --set %s\n", cfg->text, sep, assignment);
    free(cfg->text);
    cfg->text = text;
    return FN_OK;
}

static fn_status apply_override(fn_config *cfg, const char *assignment, const char *section,
                                const char *name, const char *value)
{
    if (!fn_config_known_section(section))
        return fn_config_suggest_section(
            fn_fail(FN_ERR_INVALID, "--set %s: unknown section [%s]", assignment, section),
            section);
    int i = fn_config_find_key(section, name);
    if (i < 0)
        return fn_config_suggest_key(
            fn_fail(FN_ERR_INVALID, "--set %s: unknown key %s.%s", assignment, section, name),
            section, name);
    fn_status st = fn_config_set_key(cfg, i, value);
    if (st != FN_OK) {
        fn_error_prefix("--set %s: ", assignment);
        return st;
    }
    char *copy = strdup(assignment);
    if (!copy)
        return fn_fail(FN_ERR_NOMEM, "out of memory");
    free(cfg->keys->assignment[i]);
    cfg->keys->assignment[i] = copy;
    return note_override(cfg, assignment);
}

fn_status fn_config_set(fn_config *cfg, const char *assignment)
{
    if (!cfg || !assignment)
        return fn_fail(FN_ERR_INVALID, "fn_config_set: a NULL argument");
    const char *eq = strchr(assignment, '=');
    const char *dot = eq ? memchr(assignment, '.', (size_t)(eq - assignment)) : NULL;
    if (!eq || !dot)
        return fn_fail(FN_ERR_INVALID, "--set %s: expected section.key=value", assignment);
    char *section = trimmed_copy(assignment, (size_t)(dot - assignment));
    char *name = trimmed_copy(dot + 1, (size_t)(eq - dot - 1));
    char *value = trimmed_copy(eq + 1, strlen(eq + 1));
    fn_status st = section && name && value
                       ? apply_override(cfg, assignment, section, name, value)
                       : fn_fail(FN_ERR_NOMEM, "out of memory");
    free(section);
    free(name);
    free(value);
    return st;
}

/* Kind k of family f's options block, with its lists' values. */
static void free_options(void *block, int f, int k)
{
    if (!block)
        return;
    const fn_kind *v = fn_config_family_kind(f, k);
    for (int o = 0; o < v->n_options; o++)
        if (v->options[o].type == FN_OPTION_LIST)
            free(((fn_option_list *)((char *)block + v->options[o].offset))->values);
    free(block);
}

void fn_config_destroy(fn_config *cfg)
{
    if (!cfg)
        return;
    for (int i = 0; i < N_KEYS; i++) {
        key_type t = keys[i].type;
        if (t == T_NAME || t == T_PATH || t == T_OPTPATH)
            free(*(char **)((char *)cfg + keys[i].offset));
    }
    for (int i = 0; cfg->keys && i < ALL_KEYS; i++)
        free(cfg->keys->assignment[i]);
    for (int f = 0; cfg->keys && f < N_FAMILIES; f++)
        for (int k = 0; k < MAX_KINDS; k++)
            free_options(cfg->keys->options[f][k], f, k);
    free(cfg->layers);
    free(cfg->keys);
    free(cfg->path);
    free(cfg->dir);
    free(cfg->text);
    free(cfg);
}
