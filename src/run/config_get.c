/* config_get.c — a value read back as a file would give it
 * (fn_config_get), and the resolved values as text, for the ranks'
 * agreement (fn_config_key_text). */
#include <stdio.h>
#include <string.h>

#include "run/config_keys.h"

/* The table of keys, by the short name used below. */
static const key_spec *const keys = fn_config_key_specs;

/* "block 128, residual 64 x 16, linear 10" into buf (a run of equal
 * layers as one item with its repetition); the length it needs, as
 * snprintf. */
static size_t format_layers(const fn_config *cfg, char *buf, size_t cap)
{
    size_t len = 0;
    if (cap)
        buf[0] = '\0';
    for (int i = 0; i < cfg->n_layers;) {
        const fn_layer_spec *s = &cfg->layers[i];
        int run = 1;
        while (i + run < cfg->n_layers && cfg->layers[i + run].kind == s->kind &&
               cfg->layers[i + run].width == s->width && cfg->layers[i + run].value == s->value)
            run++;
        char item[64], times[24] = "";
        fn_layer_spec_format(s, item, sizeof item);
        if (run > 1)
            snprintf(times, sizeof times, " x %d", run);
        const int n = snprintf(len < cap ? buf + len : NULL, len < cap ? cap - len : 0,
                               "%s%s%s", i ? ", " : "", item, times);
        len += (size_t)(n > 0 ? n : 0);
        i += run;
    }
    return len;
}

static const char *device_text(const fn_config *cfg, char *buf, size_t cap)
{
    if (cfg->device_auto)
        return "auto";
    if (cfg->device == FN_CPU)
        return "cpu";
    if (!cfg->gpu_pinned)
        return "cuda";
    snprintf(buf, cap, "cuda:%d", cfg->gpu);
    return buf;
}

/* Key k's value as a file would give it; the length it needs, as snprintf. */
static size_t format_value(const fn_config *cfg, const key_spec *k, char *buf, size_t cap)
{
    const char *field = (const char *)cfg + k->offset;
    char small[32];
    int n = 0;
    switch (k->type) {
    case T_NAME:
    case T_PATH:
    case T_OPTPATH: {
        const char *text = *(char *const *)field;
        n = snprintf(buf, cap, "%s", text ? text : "");
        break;
    }
    case T_INT: n = snprintf(buf, cap, "%d", *(const int *)field); break;
    case T_FLOAT: n = snprintf(buf, cap, "%.9g", (double)*(const float *)field); break;
    case T_DOUBLE: n = snprintf(buf, cap, "%.17g", *(const double *)field); break;
    case T_BOOL: n = snprintf(buf, cap, "%s", *(const int *)field ? "true" : "false"); break;
    case T_AUTO_INT: {
        const int v = *(const int *)field;
        n = v == 0 ? snprintf(buf, cap, "auto") : snprintf(buf, cap, "%d", v);
        break;
    }
    case T_AUTO_BOOL: {
        const int v = *(const int *)field;
        n = snprintf(buf, cap, "%s", v < 0 ? "auto" : v ? "true" : "false");
        break;
    }
    case T_SEED:
        n = snprintf(buf, cap, "%llu", (unsigned long long)*(const uint64_t *)field);
        break;
    case T_KIND: {
        const int f = fn_config_family_of(k->offset);
        n = snprintf(buf, cap, "%s", fn_config_family_kind(f, fn_config_chosen_kind(cfg, f))->name);
        break;
    }
    case T_MATH: n = snprintf(buf, cap, "%s", fn_math_name(*(const fn_math *)field)); break;
    case T_MONITOR: n = snprintf(buf, cap, "%s", fn_monitor_name(*(const fn_monitor *)field)); break;
    case T_CHOICE: n = snprintf(buf, cap, "%s", k->choices[*(const int *)field]); break;
    case T_GRAD_SUM:
        n = snprintf(buf, cap, "%s", fn_comm_sum_name(*(const fn_comm_sum *)field));
        break;
    case T_DEVICE:
        n = snprintf(buf, cap, "%s", device_text(cfg, small, sizeof small));
        break;
    case T_LAYERS: return format_layers(cfg, buf, cap);
    }
    return (size_t)(n > 0 ? n : 0);
}

/* Option o's value in block, as a file would give it; as snprintf. */
static size_t format_option(const void *block, const fn_option *o, char *buf, size_t cap)
{
    const char *field = (const char *)block + o->offset;
    int n = 0;
    switch (o->type) {
    case FN_OPTION_FLOAT: n = snprintf(buf, cap, "%.9g", (double)*(const float *)field); break;
    case FN_OPTION_INT: n = snprintf(buf, cap, "%d", *(const int *)field); break;
    case FN_OPTION_BOOL:
        n = snprintf(buf, cap, "%s", *(const int *)field ? "true" : "false");
        break;
    case FN_OPTION_PAIR:
        n = snprintf(buf, cap, "%.9g, %.9g", (double)((const float *)field)[0],
                     (double)((const float *)field)[1]);
        break;
    case FN_OPTION_LIST: {
        const fn_option_list *list = (const fn_option_list *)field;
        size_t len = 0;
        if (cap)
            buf[0] = '\0';
        for (int v = 0; v < list->n; v++) {
            int w = snprintf(buf + (len < cap ? len : cap), len < cap ? cap - len : 0, "%s%.9g",
                             v ? ", " : "", (double)list->values[v]);
            len += w > 0 ? (size_t)w : 0;
        }
        return len;
    }
    }
    return (size_t)(n > 0 ? n : 0);
}

/* Key i's value: a field of cfg, or a kind's option (the chosen kind's
 * when it takes it, else the first that does). */
static size_t format_key(const fn_config *cfg, int i, char *buf, size_t cap)
{
    if (i < N_KEYS)
        return format_value(cfg, &keys[i], buf, cap);
    int f = 0;
    const char *name = fn_config_option_name(i - N_KEYS, &f);
    int k = fn_config_chosen_kind(cfg, f);
    if (!fn_config_kind_option(f, k, name))
        k = fn_config_first_taking(f, name);
    return format_option(cfg->keys->options[f][k], fn_config_kind_option(f, k, name), buf, cap);
}

fn_status fn_config_get(const fn_config *cfg, const char *key, char *value, size_t cap)
{
    if (!cfg || !key || !value || cap == 0)
        return fn_fail(FN_ERR_INVALID, "fn_config_get: a NULL argument or no room");
    value[0] = '\0';
    const char *dot = strchr(key, '.');
    char section[32];
    int i = -1;
    if (dot && (size_t)(dot - key) < sizeof section) {
        memcpy(section, key, (size_t)(dot - key));
        section[dot - key] = '\0';
        i = fn_config_find_key(section, dot + 1);
    }
    if (i < 0)
        return fn_fail(FN_ERR_INVALID, "fn_config_get: unknown key '%s' (expected section.key, "
                       "as in the README's tables)", key);
    const size_t need = format_key(cfg, i, value, cap);
    if (need >= cap)
        return fn_fail(FN_ERR_INVALID, "fn_config_get: %s needs %zu bytes, given %zu", key,
                       need + 1, cap);
    return FN_OK;
}

/* The keys that may differ between the processes of one run: the progress
 * lines' interval, the device each process resolves for itself, and paths
 * (a node's own copy of a file may sit elsewhere: what the run depends on
 * is the file's content). */
static int per_process(const key_spec *k)
{
    return k->offset == AT(log_every) || k->offset == AT(device) || k->type == T_PATH ||
           k->type == T_OPTPATH;
}

int fn_config_key_text(const fn_config *cfg, int i, char *name, size_t name_cap, char *value,
                       size_t value_cap)
{
    if (!cfg || i < 0 || i >= fn_config_n_keys())
        return -1;
    snprintf(name, name_cap, "[%s] %s", fn_config_key_section(i), fn_config_key_name(i));
    if (i < N_KEYS && per_process(&keys[i]))
        return -1;
    return (int)format_key(cfg, i, value, value_cap);
}
