/* config_parse.c — a key's value from text: the value parsers (each fails
 * with a problem text, no location: the caller says where the value came
 * from), a key of the table into fn_config, a kind's option into its
 * options block, and the defaults of both. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/name_list.h"
#include "core/suggest.h"
#include "run/config_keys.h"

/* The table of keys and the families, by the short names used below. */
static const key_spec *const keys = fn_config_key_specs;
static const family *const families = fn_config_families;

/* --- value parsers: each fails with a problem text, no location ---------- */

static fn_status parse_long(const char *text, long *out)
{
    char *end = NULL;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (end == text || *end != '\0')
        return fn_fail(FN_ERR_INVALID, "expected an integer, got '%s'", text);
    if (errno == ERANGE)
        return fn_fail(FN_ERR_INVALID, "%s is out of range", text);
    *out = v;
    return FN_OK;
}

static fn_status parse_double(const char *text, double *out)
{
    char *end = NULL;
    errno = 0;
    double v = strtod(text, &end);
    if (end == text || *end != '\0')
        return fn_fail(FN_ERR_INVALID, "expected a number, got '%s'", text);
    if (errno == ERANGE || !isfinite(v))
        return fn_fail(FN_ERR_INVALID, "%s is not a finite number", text);
    *out = v;
    return FN_OK;
}

static fn_status check_range(const key_spec *k, double v, const char *text)
{
    int low = k->min_exclusive ? !(v > k->min) : !(v >= k->min);
    if (!low && v <= k->max)
        return FN_OK;
    const char *op = k->min_exclusive ? ">" : ">=";
    /* An integer key's limits read as integers: "<= 1048576", not "1.04858e+06". */
    if (k->type == T_INT || k->type == T_AUTO_INT)
        return fn_fail(FN_ERR_INVALID, "%s is out of range: expected %s %lld and <= %lld", text,
                       op, (long long)k->min, (long long)k->max);
    /* Ten digits: whole limits read whole ("<= 16777216"), not "1.67772e+07". */
    return fn_fail(FN_ERR_INVALID, "%s is out of range: expected %s %.10g and <= %.10g", text, op,
                   k->min, k->max);
}

static fn_status parse_bool(const char *text, int *out)
{
    static const char *const yes[] = {"true", "yes", "on", "1"};
    static const char *const no[] = {"false", "no", "off", "0"};
    for (int i = 0; i < 4; i++) {
        if (strcasecmp(text, yes[i]) == 0)
            return *out = 1, FN_OK;
        if (strcasecmp(text, no[i]) == 0)
            return *out = 0, FN_OK;
    }
    return fn_fail(FN_ERR_INVALID, "expected true or false, got '%s'", text);
}

static fn_status parse_auto_bool(const char *text, int *out)
{
    if (strcasecmp(text, "auto") == 0)
        return *out = -1, FN_OK;
    if (parse_bool(text, out) != FN_OK)
        return fn_fail(FN_ERR_INVALID, "expected auto, true or false, got '%s'", text);
    return FN_OK;
}

/* One of the key's choices, ignoring case, as its index. */
static fn_status parse_choice(const char *text, const char *const *choices, int *out)
{
    int n = 0;
    for (; choices[n]; n++)
        if (strcasecmp(text, choices[n]) == 0)
            return *out = n, FN_OK;
    char list[256];
    fn_status st = fn_fail(FN_ERR_INVALID, "expected %s, got '%s'",
                           fn_name_list(list, sizeof list, choices, n), text);
    return fn_suggest_fix(st, "", fn_suggest(text, choices, n), "");
}

static fn_status parse_seed(const char *text, uint64_t *out)
{
    char *end = NULL;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (end == text || *end != '\0')
        return fn_fail(FN_ERR_INVALID, "expected an integer, got '%s'", text);
    if (errno == ERANGE || v < 0)
        return fn_fail(FN_ERR_INVALID, "%s is out of range: expected 0 to 2^63 - 1", text);
    *out = (uint64_t)v;
    return FN_OK;
}

static fn_status parse_device(const char *text, fn_config *cfg)
{
    if (strcmp(text, "auto") == 0 || strcmp(text, "cpu") == 0) {
        cfg->device_auto = text[0] == 'a';
        cfg->device = FN_CPU;
        cfg->gpu = -1;
        cfg->gpu_pinned = 0;
        return FN_OK;
    }
    if (strncmp(text, "cuda", 4) == 0 && (text[4] == '\0' || text[4] == ':')) {
        long gpu = 0;
        if (text[4] == ':' && (parse_long(text + 5, &gpu) != FN_OK || gpu < 0 || gpu > 1023))
            return fn_fail(FN_ERR_INVALID, "expected cuda:N with N a device number, got '%s'",
                           text);
        cfg->device_auto = 0;
        cfg->device = FN_CUDA;
        cfg->gpu = (int)gpu;
        cfg->gpu_pinned = text[4] == ':';
        return FN_OK;
    }
    return fn_fail(FN_ERR_INVALID, "expected auto, cpu, cuda or cuda:N, got '%s'", text);
}

/* "beta1, beta2", each in [0, 1) as float32 (torch.optim.Adam's check). */
static fn_status parse_betas(const char *text, float betas[2])
{
    const char *comma = strchr(text, ',');
    char first[64];
    if (!comma || (size_t)(comma - text) >= sizeof first)
        return fn_fail(FN_ERR_INVALID, "expected two numbers 'beta1, beta2', got '%s'", text);
    memcpy(first, text, (size_t)(comma - text));
    first[comma - text] = '\0';
    size_t len = strlen(first);
    while (len > 0 && (first[len - 1] == ' ' || first[len - 1] == '\t'))
        first[--len] = '\0';
    const char *parts[2] = {first, comma + 1};
    float got[2];
    for (int i = 0; i < 2; i++) {
        while (*parts[i] == ' ' || *parts[i] == '\t')
            parts[i]++;
        double v = 0;
        FN_TRY(parse_double(parts[i], &v));
        got[i] = (float)v;
        if (!(got[i] >= 0.0f && got[i] < 1.0f))
            return fn_fail(FN_ERR_INVALID, "beta%d %s is out of range: expected >= 0 and < 1",
                           i + 1, parts[i]);
    }
    betas[0] = got[0];
    betas[1] = got[1];
    return FN_OK;
}

static fn_status set_string(char **slot, const char *text, int may_be_empty)
{
    if (!text[0] && !may_be_empty)
        return fn_fail(FN_ERR_INVALID, "expected a value, got nothing");
    char *c = NULL;
    if (text[0] && !(c = strdup(text)))
        return fn_fail(FN_ERR_NOMEM, "out of memory");
    free(*slot);
    *slot = c;
    return FN_OK;
}

/* A math mode by its name (device.h's table), matched ignoring case. */
static fn_status parse_math(const char *text, fn_math *math)
{
    const char *names[FN_MATH_MODES];
    for (int i = 0; i < FN_MATH_MODES; i++)
        names[i] = fn_math_name((fn_math)i);
    const int at = fn_name_find_nocase(text, names, FN_MATH_MODES);
    char known[64];
    if (fn_math_parse(at >= 0 ? names[at] : text, math) != FN_OK)
        return fn_suggest_fix(fn_fail(FN_ERR_INVALID, "expected %s, got '%s'",
                                      fn_math_list(known, sizeof known), text),
                              "", fn_suggest(text, names, FN_MATH_MODES), "");
    return FN_OK;
}

/* A type of the gradient sums by its name (comm.h's), ignoring case. */
static fn_status parse_grad_sum(const char *text, fn_comm_sum *sum)
{
    const char *names[FN_COMM_SUMS];
    for (int i = 0; i < FN_COMM_SUMS; i++)
        names[i] = fn_comm_sum_name((fn_comm_sum)i);
    const int nocase = fn_name_find_nocase(text, names, FN_COMM_SUMS);
    int at = 0;
    fn_status st = fn_name_lookup(nocase >= 0 ? names[nocase] : text, names, FN_COMM_SUMS, &at);
    if (st != FN_OK)
        return fn_suggest_fix(st, "", fn_suggest(text, names, FN_COMM_SUMS), "");
    *sum = (fn_comm_sum)at;
    return FN_OK;
}

static fn_status set_number(char *base, const key_spec *k, const char *text)
{
    char *field = base + k->offset;
    if (k->type == T_INT || k->type == T_AUTO_INT) {
        long v = 0;
        FN_TRY(parse_long(text, &v));
        FN_TRY(check_range(k, (double)v, text));
        *(int *)field = (int)v;
        return FN_OK;
    }
    double v = 0;
    FN_TRY(parse_double(text, &v));
    if (k->type == T_DOUBLE) {
        FN_TRY(check_range(k, v, text));
        *(double *)field = v;
        return FN_OK;
    }
    /* The range is checked on the float the run will use: 1e-50 passes
     * "> 0" as a double but is 0 as a float, and 1e39 is infinity. */
    const float f = (float)v;
    if (!isfinite(f))
        return fn_fail(FN_ERR_INVALID, "%s is out of range: not a finite float32 number", text);
    FN_TRY(check_range(k, (double)f, text));
    *(float *)field = f;
    return FN_OK;
}

/* "auto" (0: chosen per layer, [model] groups), or an int in the key's range. */
static fn_status parse_auto_int(fn_config *cfg, const key_spec *k, const char *text)
{
    if (strcasecmp(text, "auto") == 0) {
        *(int *)((char *)cfg + k->offset) = 0;
        return FN_OK;
    }
    long v = 0;
    if (parse_long(text, &v) != FN_OK)
        return fn_fail(FN_ERR_INVALID, "expected auto or a whole number, got '%s'", text);
    return set_number((char *)cfg, k, text);
}

/* The kind of registry r that text names, matched ignoring case, into
 * *slot (a pointer to the family's descriptor: its head is first); else
 * the registry's message with "did you mean". */
static fn_status set_kind(char *slot, const fn_registry *r, const char *text)
{
    const fn_kind *kind = NULL;
    fn_status st = fn_registry_find(r, fn_registry_spelling(r, text), &kind);
    if (st != FN_OK)
        return fn_suggest_fix(st, "", fn_registry_suggest(r, text), "");
    memcpy(slot, &kind, sizeof kind);
    return FN_OK;
}

static fn_status set_value(fn_config *cfg, const key_spec *k, const char *text)
{
    char *field = (char *)cfg + k->offset;
    switch (k->type) {
    case T_NAME:
    case T_PATH:
    case T_OPTPATH:
        return set_string((char **)field, text, k->type == T_OPTPATH);
    case T_INT:
    case T_FLOAT:
    case T_DOUBLE:
        return set_number((char *)cfg, k, text);
    case T_BOOL:
        return parse_bool(text, (int *)field);
    case T_AUTO_BOOL:
        return parse_auto_bool(text, (int *)field);
    case T_AUTO_INT:
        return parse_auto_int(cfg, k, text);
    case T_SEED:
        return parse_seed(text, (uint64_t *)field);
    case T_MATH:
        return parse_math(text, (fn_math *)field);
    case T_DEVICE:
        return parse_device(text, cfg);
    case T_KIND:
        return set_kind(field, families[fn_config_family_of(k->offset)].kinds(), text);
    case T_MONITOR:
        return fn_monitor_parse(text, (fn_monitor *)field);
    case T_CHOICE:
        return parse_choice(text, k->choices, (int *)field);
    case T_GRAD_SUM:
        return parse_grad_sum(text, (fn_comm_sum *)field);
    case T_LAYERS: {
        fn_layer_spec *layers = NULL;
        int n = 0;
        FN_TRY(fn_config_parse_layers(text, &layers, &n));
        free(cfg->layers);
        cfg->layers = layers;
        cfg->n_layers = n;
        return FN_OK;
    }
    }
    return fn_fail(FN_ERR_INVALID, "unhandled key type");
}

/* "a, b, ..." (or "") into an FN_OPTION_LIST, each number a finite
 * float32 in o's range; the list's old values are freed. */
static fn_status set_list(fn_option_list *list, const fn_option *o, const char *text)
{
    fn_option_list got = {NULL, 0};
    const key_spec k = {"train", o->name, T_FLOAT, 0, o->min, o->max, o->min_exclusive, NULL, NULL};
    fn_status st = FN_OK;
    for (const char *at = text; *at && st == FN_OK;) {
        while (*at == ' ' || *at == '\t')
            at++;
        const char *end = strchr(at, ',');
        size_t len = end ? (size_t)(end - at) : strlen(at);
        while (len > 0 && (at[len - 1] == ' ' || at[len - 1] == '\t'))
            len--;
        char item[64];
        float *grown = realloc(got.values, (size_t)(got.n + 1) * sizeof *grown);
        if (!grown) {
            st = fn_fail(FN_ERR_NOMEM, "out of memory for %s", o->name);
            break;
        }
        got.values = grown;
        if (len >= sizeof item) {
            st = fn_fail(FN_ERR_INVALID, "item %d is too long", got.n + 1);
            break;
        }
        snprintf(item, sizeof item, "%.*s", (int)len, at);
        st = set_number((char *)&got.values[got.n], &k, item);
        if (st != FN_OK)
            fn_error_prefix("item %d: ", got.n + 1);
        got.n++;
        at = end ? end + 1 : at + strlen(at);
    }
    if (st != FN_OK) {
        free(got.values);
        return st;
    }
    free(list->values);
    *list = got;
    return FN_OK;
}

/* A kind's option from text into its options block. */
fn_status fn_config_set_option(void *block, const fn_option *o, const char *text)
{
    char *field = (char *)block + o->offset;
    switch (o->type) {
    case FN_OPTION_LIST:
        return set_list((fn_option_list *)field, o, text);
    case FN_OPTION_FLOAT:
    case FN_OPTION_INT: {
        const key_spec k = {"train", o->name, o->type == FN_OPTION_INT ? T_INT : T_FLOAT,
                            o->offset, o->min, o->max, o->min_exclusive, o->fallback, NULL};
        return set_number(block, &k, text);
    }
    case FN_OPTION_BOOL:
        return parse_bool(text, (int *)field);
    case FN_OPTION_PAIR:
        return parse_betas(text, (float *)field);
    }
    return fn_fail(FN_ERR_INVALID, "unhandled option type");
}

/* Key i's value: into cfg, or into the options block of every kind of its
 * family that takes the option. */
fn_status fn_config_set_key(fn_config *cfg, int i, const char *text)
{
    if (i < N_KEYS)
        return set_value(cfg, &keys[i], text);
    int f = 0;
    const char *name = fn_config_option_name(i - N_KEYS, &f);
    for (int k = 0; k < fn_config_family_count(f); k++) {
        const fn_option *o = fn_config_kind_option(f, k, name);
        if (o)
            FN_TRY(fn_config_set_option(cfg->keys->options[f][k], o, text));
    }
    return FN_OK;
}

/* Every kind's options block, at its defaults (zeros for a key without). */
static fn_status option_defaults(fn_config *cfg)
{
    for (int f = 0; f < N_FAMILIES; f++)
        if (fn_config_family_count(f) > MAX_KINDS)
            return fn_fail(FN_ERR_INVALID, "config_parse.c: more %ss than it keeps",
                           families[f].selector);
    if (fn_config_option_name(MAX_OPTIONS, NULL))
        return fn_fail(FN_ERR_INVALID, "config_parse.c: more options than it keeps");
    FN_TRY(fn_config_check_option_names());
    for (int f = 0; f < N_FAMILIES; f++)
        for (int k = 0; k < fn_config_family_count(f); k++) {
            const fn_kind *v = fn_config_family_kind(f, k);
            if (!(cfg->keys->options[f][k] = calloc(1, v->options_size ? v->options_size : 1)))
                return fn_fail(FN_ERR_NOMEM, "out of memory for the configuration");
            for (int o = 0; o < v->n_options; o++) {
                if (!v->options[o].fallback)
                    continue;
                fn_status st = fn_config_set_option(cfg->keys->options[f][k], &v->options[o],
                                                    v->options[o].fallback);
                if (st != FN_OK) {
                    fn_error_prefix("default of %s's %s: ", v->name, v->options[o].name);
                    return st;
                }
            }
        }
    return FN_OK;
}

static fn_status apply_defaults(fn_config *cfg)
{
    for (int i = 0; i < N_KEYS; i++) {
        if (!keys[i].fallback)
            continue;
        fn_status st = set_value(cfg, &keys[i], keys[i].fallback);
        if (st != FN_OK) {
            fn_error_prefix("default of %s.%s: ", keys[i].section,
                            keys[i].name);
            return st;
        }
    }
    return FN_OK;
}

fn_status fn_config_defaults(fn_config *cfg)
{
    FN_TRY(apply_defaults(cfg));
    return option_defaults(cfg);
}
