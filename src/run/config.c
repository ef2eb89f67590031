/* config.c — the run configuration: a table of every key with its type, range
 * and default; the INI file (read by ini_reader.h) and `--set` overrides go
 * through the same setters, so both are checked alike and errors say where
 * the value came from. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <sys/stat.h>

#include "fusenet/config.h"
#include "core/suggest.h"
#include "run/config_impl.h"
#include "core/name_list.h"
#include "run/config_names.h"
#include "run/ini_reader.h"
#include "store/regular_file.h"

typedef enum key_type {
    T_NAME,   /* a non-empty string (dataset names) */
    T_PATH,   /* a path, resolved against the config's directory at finish */
    T_OPTPATH, /* a path that may be empty: not set */
    T_INT,
    T_AUTO_INT, /* auto, or an int in range: an int 0 (auto) */
    T_FLOAT,
    T_DOUBLE,
    T_BOOL,
    T_AUTO_BOOL, /* auto, or a boolean: an int -1 (auto), 0 or 1 */
    T_SEED,
    T_LAYERS,
    T_LOSS,
    T_DEVICE,
    T_MATH,
    T_OPTIMIZER,
    T_SCHEDULE,
    T_MONITOR
} key_type;

typedef struct key_spec {
    const char *section, *name;
    key_type type;
    size_t offset;     /* into fn_config */
    double min, max;   /* numbers: the allowed range */
    int min_exclusive; /* min itself is not allowed (lr > 0) */
    const char *fallback; /* the default as text; NULL: required */
} key_spec;

#define AT(field) offsetof(fn_config, field)

/* Every key but the optimisers' and the schedules' own, which each kind
 * declares (optimizer_kind.h, schedule_kind.h). docs/configuration.md's
 * table of keys is written from these. */
static const key_spec keys[] = {
    {"data", "train", T_PATH, AT(train), 0, 0, 0, NULL},
    {"data", "valid", T_OPTPATH, AT(valid), 0, 0, 0, ""},
    {"data", "inputs", T_NAME, AT(inputs), 0, 0, 0, "X"},
    {"data", "targets", T_NAME, AT(targets), 0, 0, 0, "y"},
    {"data", "memory_budget_mb", T_DOUBLE, AT(memory_budget_mb), 0, 1 << 24, 1, "1024"},
    {"data", "standardize", T_BOOL, AT(standardize), 0, 0, 0, "false"},
    {"data", "standardize_targets", T_BOOL, AT(standardize_targets), 0, 0, 0, "false"},
    {"model", "layers", T_LAYERS, AT(layers), 0, 0, 0, NULL},
    {"model", "groups", T_AUTO_INT, AT(groups), 1, 1 << 20, 0, "8"},
    {"model", "eps", T_FLOAT, AT(eps), 0, 1, 1, "1e-5"},
    {"model", "negative_slope", T_FLOAT, AT(negative_slope), 0, 1e6, 0, "0.01"},
    {"model", "init", T_OPTPATH, AT(init), 0, 0, 0, ""},
    {"train", "loss", T_LOSS, AT(loss), 0, 0, 0, "cross_entropy"},
    {"train", "batch_size", T_INT, AT(batch_size), 1, 1 << 20, 0, "64"},
    {"train", "epochs", T_INT, AT(epochs), 1, 1e6, 0, "10"},
    {"train", "lr", T_FLOAT, AT(lr), 0, 1e6, 1, "0.01"},
    {"train", "seed", T_SEED, AT(seed), 0, 0, 0, "1"},
    {"train", "checkpoint_every", T_INT, AT(checkpoint_every), 0, 1e6, 0, "0"},
    {"train", "optimizer", T_OPTIMIZER, AT(optimizer), 0, 0, 0, "sgd"},
    {"train", "schedule", T_SCHEDULE, AT(schedule), 0, 0, 0, "constant"},
    {"train", "warmup_steps", T_INT, AT(warmup_steps), 0, 1e9, 0, "0"},
    {"train", "clip_grad_norm", T_FLOAT, AT(clip_grad_norm), 0, 1e30, 0, "0"},
    {"train", "keep_best", T_BOOL, AT(keep_best), 0, 0, 0, "false"},
    {"train", "patience", T_INT, AT(patience), 0, 1e6, 0, "0"},
    /* Left unset, the loss kind's (check_best). */
    {"train", "monitor", T_MONITOR, AT(monitor), 0, 0, 0, "valid_loss"},
    {"train", "min_delta", T_DOUBLE, AT(min_delta), 0, 1e30, 0, "0"},
    {"run", "device", T_DEVICE, AT(device), 0, 0, 0, "auto"},
    {"run", "math", T_MATH, AT(math), 0, 0, 0, "fp32"},
    {"run", "log_every", T_INT, AT(log_every), 0, 1e9, 0, "20"},
    {"run", "cuda_graphs", T_BOOL, AT(cuda_graphs), 0, 0, 0, "true"},
    {"run", "layer_updates", T_BOOL, AT(layer_updates), 0, 0, 0, "false"},
    {"run", "data_on_device", T_AUTO_BOOL, AT(data_on_device), 0, 0, 0, "auto"},
    /* Empty: runs/<the config file's stem>, beside the file (finish). */
    {"output", "dir", T_OPTPATH, AT(out_dir), 0, 0, 0, ""},
};
enum { N_KEYS = sizeof keys / sizeof keys[0] };

/* The keys the registries' kinds declare (option.h) follow the table's in
 * one numbering: key N_KEYS + j is the j-th distinct option name of the
 * families below, the optimisers' first, each in its registry's order
 * (option_name). Every kind's options block is kept, each key's value read
 * into the block of every kind of its family that takes it; finish checks
 * the chosen kind's and hands it on (cfg->optimizer_options,
 * cfg->schedule_options, cfg->loss_options). */
enum { MAX_OPTIONS = 48, MAX_KINDS = 16, N_FAMILIES = 3, ALL_KEYS = N_KEYS + MAX_OPTIONS };

/* Where each key's value came from: a file line, an override, or the default. */
struct fn_config_keys {
    int line[ALL_KEYS];         /* > 0: set on this line of the file */
    char *assignment[ALL_KEYS]; /* non-NULL: set by this --set argument */
    void *options[N_FAMILIES][MAX_KINDS]; /* each kind's options block */
    char notices[MAX_OPTIONS][320]; /* fn_config_notice's, made by finish */
    int n_notices;
};

static const char *const sections[] = {"data", "model", "train", "run", "output"};

/* --- helpers ------------------------------------------------------------ */

static char *copy_string(const char *s)
{
    size_t n = strlen(s) + 1;
    char *c = malloc(n);
    if (c)
        memcpy(c, s, n);
    return c;
}

/* Drops "." components, empty ones and each "name/.." pair, as Python's
 * os.path.normpath does: "data/../runs/x" reads "runs/x". Lexical: ".."
 * after a symbolic link is taken as going up the link's name. Writes into
 * out, which has room for strlen(path) + 2 bytes. */
static void normalize_path(const char *path, char *out)
{
    const int absolute = path[0] == '/';
    char *base = out + absolute, *end = base; /* end: after the last kept "name/" */
    int kept = 0; /* components in out that a ".." may remove */
    if (absolute)
        out[0] = '/';
    for (const char *in = path; *in;) {
        while (*in == '/')
            in++;
        size_t len = strcspn(in, "/");
        const int dot = len == 1 && in[0] == '.', dotdot = len == 2 && !strncmp(in, "..", 2);
        if (dotdot && kept > 0) {
            end--; /* the slash after the last component, then the component */
            while (end > base && end[-1] != '/')
                end--;
            kept--;
        } else if (len > 0 && !dot && !(dotdot && absolute)) {
            memcpy(end, in, len);
            end += len;
            *end++ = '/';
            kept += !dotdot;
        }
        in += len;
    }
    if (end > base)
        end--; /* the last slash */
    *end = '\0';
    if (!out[0])
        strcpy(out, ".");
}

char *fn_path_join(const char *dir, const char *name)
{
    if (name[0] == '/' || !dir || !dir[0] || strcmp(dir, ".") == 0)
        dir = NULL;
    size_t n = (dir ? strlen(dir) : 0) + strlen(name) + 2;
    char *joined = malloc(n), *p = malloc(n + 1);
    if (joined && p) {
        snprintf(joined, n, "%s%s%s", dir ? dir : "", dir ? "/" : "", name);
        normalize_path(joined, p);
    } else {
        free(p);
        p = NULL;
    }
    free(joined);
    return p;
}

static char *directory_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        return copy_string(".");
    if (slash == path)
        return copy_string("/");
    size_t n = (size_t)(slash - path);
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, path, n);
        d[n] = '\0';
    }
    return d;
}

/* --- the keys the kinds declare ------------------------------------------ */

/* One kind of a registry, as the config sees it. */
typedef struct kind_view {
    const void *kind; /* the registry's entry */
    const char *name; /* the selector's value */
    size_t options_size;
    const fn_option *options;
    int n_options;
} kind_view;

/* A registry whose kinds declare their own [train] keys. */
typedef struct family {
    const char *selector; /* the [train] key that chooses a kind */
    size_t chosen;        /* of the chosen kind's pointer in fn_config */
    size_t chosen_options; /* of the chosen kind's options block in fn_config */
    int (*count)(void);
    kind_view (*at)(int k);
    /* The chosen kind's rule across its keys (*key: the one to name). */
    fn_status (*check)(const fn_config *cfg, int k, const void *block, const char **key);
} family;

static kind_view optimizer_at(int k)
{
    const fn_optimizer_kind *o = fn_optimizer_kind_at(k);
    return (kind_view){o, o->name, o->options_size, o->options, o->n_options};
}

static kind_view schedule_at(int k)
{
    const fn_schedule_kind *s = fn_schedule_kind_at(k);
    return (kind_view){s, s->name, s->options_size, s->options, s->n_options};
}

static kind_view loss_at(int k)
{
    const fn_loss_kind *l = fn_loss_kind_at(k);
    return (kind_view){l, l->name, l->options_size, l->options, l->n_options};
}

static fn_status optimizer_check(const fn_config *cfg, int k, const void *block, const char **key)
{
    (void)cfg;
    const fn_optimizer_kind *o = fn_optimizer_kind_at(k);
    return o->check ? o->check(block, key) : FN_OK;
}

static fn_status schedule_check(const fn_config *cfg, int k, const void *block, const char **key)
{
    const fn_schedule_kind *s = fn_schedule_kind_at(k);
    return s->check ? s->check(block, cfg->lr, key) : FN_OK;
}

/* The network's outputs: the last layer's width. */
static int out_features(const fn_config *cfg)
{
    return cfg->n_layers > 0 ? cfg->layers[cfg->n_layers - 1].width : 0;
}

static fn_status loss_check(const fn_config *cfg, int k, const void *block, const char **key)
{
    const fn_loss_kind *l = fn_loss_kind_at(k);
    return l->check ? l->check(block, out_features(cfg), key) : FN_OK;
}

static const family families[N_FAMILIES] = {
    {"optimizer", AT(optimizer), AT(optimizer_options), fn_optimizer_kind_count, optimizer_at,
     optimizer_check},
    {"schedule", AT(schedule), AT(schedule_options), fn_schedule_kind_count, schedule_at,
     schedule_check},
    {"loss", AT(loss), AT(loss_options), fn_loss_kind_count, loss_at, loss_check},
};

/* Kind k of family f's option called `name`, or NULL. */
static const fn_option *kind_option(int f, int k, const char *name)
{
    const kind_view v = families[f].at(k);
    return fn_option_find(v.options, v.n_options, name);
}

/* The first kind of family f that takes option `name`; -1 for none. */
static int first_taking(int f, const char *name)
{
    for (int k = 0; k < families[f].count(); k++)
        if (kind_option(f, k, name))
            return k;
    return -1;
}

/* The j-th distinct option name of the families' kinds, its family in
 * *fam; NULL past the last. */
static const char *option_name(int j, int *fam)
{
    int seen = 0;
    for (int f = 0; f < N_FAMILIES; f++)
        for (int k = 0; k < families[f].count(); k++) {
            const kind_view v = families[f].at(k);
            for (int o = 0; o < v.n_options; o++) {
                const char *name = v.options[o].name;
                if (first_taking(f, name) == k && seen++ == j) {
                    if (fam)
                        *fam = f;
                    return name;
                }
            }
        }
    return NULL;
}

/* The index in family f of the kind cfg chose. */
static int chosen_kind(const fn_config *cfg, int f)
{
    const void *chosen = *(const void *const *)((const char *)cfg + families[f].chosen);
    int k = 0;
    while (k < families[f].count() - 1 && families[f].at(k).kind != chosen)
        k++;
    return k;
}

static const char *key_section(int i) { return i < N_KEYS ? keys[i].section : "train"; }
static const char *key_name(int i)
{
    return i < N_KEYS ? keys[i].name : option_name(i - N_KEYS, NULL);
}

static int find_key(const char *section, const char *name)
{
    for (int i = 0; i < N_KEYS; i++)
        if (strcmp(keys[i].section, section) == 0 && strcmp(keys[i].name, name) == 0)
            return i;
    for (int j = 0; strcmp(section, "train") == 0 && option_name(j, NULL); j++)
        if (strcmp(option_name(j, NULL), name) == 0)
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

static int known_section(const char *section)
{
    for (size_t i = 0; i < sizeof sections / sizeof sections[0]; i++)
        if (strcmp(sections[i], section) == 0)
            return 1;
    return 0;
}

/* --- did you mean ------------------------------------------------------- */

/* A failure about an unknown section gets the nearest known one. */
static fn_status suggest_section(fn_status st, const char *section)
{
    return fn_suggest_fix(st, "[", fn_suggest(section, sections, sizeof sections / sizeof sections[0]),
                          "]");
}

/* A failure about an unknown key gets the nearest key of its section, or
 * else the nearest key of another section ("[data] standardize"). */
static fn_status suggest_key(fn_status st, const char *section, const char *name)
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

/* The most layers one item's repetition ("residual 64 x 16") makes. */
enum { MAX_REPEAT = 4096 };

/* A trailing " x N" of buf, cut off: *times = N (1 when there is none). */
static fn_status take_repeat(char *buf, int item, int *times)
{
    *times = 1;
    char *last = strrchr(buf, ' '), *tab = strrchr(buf, '\t');
    if (tab > last)
        last = tab;
    if (!last)
        return FN_OK;
    char *x = last;
    while (x > buf && (x[-1] == ' ' || x[-1] == '\t'))
        x--;
    if (x - buf < 2 || x[-1] != 'x' || (x[-2] != ' ' && x[-2] != '\t'))
        return FN_OK;
    char *end = NULL;
    errno = 0;
    const long n = strtol(last + 1, &end, 10);
    if (end == last + 1 || *end != '\0' || errno == ERANGE || n < 1 || n > MAX_REPEAT)
        return fn_fail(FN_ERR_INVALID, "item %d: repetition 'x %s' is not an integer from 1 to %d",
                       item, last + 1, MAX_REPEAT);
    *times = (int)n;
    x[-2] = '\0';
    return FN_OK;
}

/* One "kind arguments [x N]" item of a layer list; `item` is its 1-based
 * position. The kind (layer_kind.h) parses its arguments; *times is N. */
static fn_status parse_layer_item(const char *start, size_t len, int item, fn_layer_spec *spec,
                                  int *times)
{
    char buf[64], usages[256];
    while (len > 0 && (*start == ' ' || *start == '\t'))
        start++, len--;
    while (len > 0 && (start[len - 1] == ' ' || start[len - 1] == '\t'))
        len--;
    if (len == 0)
        return fn_fail(FN_ERR_INVALID, "item %d is empty (expected %s)", item,
                       fn_layer_kind_list(usages, sizeof usages, 1));
    if (len >= sizeof buf)
        return fn_fail(FN_ERR_INVALID, "item %d is too long", item);
    memcpy(buf, start, len);
    buf[len] = '\0';
    FN_TRY(take_repeat(buf, item, times));
    char *space = strpbrk(buf, " \t");
    if (!space)
        return fn_fail(FN_ERR_INVALID, "item %d '%s': expected %s", item, buf,
                       fn_layer_kind_list(usages, sizeof usages, 1));
    *space = '\0';
    const char *args = space + 1;
    while (*args == ' ' || *args == '\t')
        args++;
    fn_status st = fn_value_suggest(
        fn_layer_kind_find(fn_value_spelling(fn_layer_kind_names, buf), &spec->kind),
        fn_layer_kind_names, buf);
    if (st == FN_OK)
        st = spec->kind->parse(args, spec);
    if (st != FN_OK)
        fn_error_prefix("item %d: ", item);
    return st;
}

/* Appends `times` copies of spec to *specs [*n, *cap), growing it. */
static fn_status append_layers(fn_layer_spec **specs, int *n, int *cap, const fn_layer_spec *spec,
                               int times)
{
    if (*n + times > *cap) {
        int grown = *cap ? *cap : 8;
        while (grown < *n + times)
            grown *= 2;
        fn_layer_spec *more = realloc(*specs, (size_t)grown * sizeof *more);
        if (!more)
            return fn_fail(FN_ERR_NOMEM, "out of memory for %d layers", grown);
        *specs = more;
        *cap = grown;
    }
    for (int i = 0; i < times; i++)
        (*specs)[(*n)++] = *spec;
    return FN_OK;
}

fn_status fn_config_parse_layers(const char *text, fn_layer_spec **layers, int *n_layers)
{
    fn_layer_spec *specs = NULL;
    int n = 0, cap = 0;
    const char *start = text;
    for (int item = 1;; item++) {
        const char *comma = strchr(start, ',');
        const size_t len = comma ? (size_t)(comma - start) : strlen(start);
        fn_layer_spec spec = {0};
        int times = 1;
        fn_status st = parse_layer_item(start, len, item, &spec, &times);
        if (st == FN_OK)
            st = append_layers(&specs, &n, &cap, &spec, times);
        if (st != FN_OK) {
            free(specs);
            return st;
        }
        if (!comma)
            break;
        start = comma + 1;
    }
    /* An item that keeps its input's width (0) after one that has a width
     * takes that width here; only leading ones wait for the data's. */
    for (int i = 1; i < n; i++)
        if (specs[i].width == 0)
            specs[i].width = specs[i - 1].width;
    if (n > 0 && specs[n - 1].width == 0) {
        free(specs);
        return fn_fail(FN_ERR_INVALID, "no item sets a width: the last layer's width is the "
                       "number of outputs (add a layer such as 'linear 10')");
    }
    *layers = specs;
    *n_layers = n;
    return FN_OK;
}

static fn_status set_string(char **slot, const char *text, int may_be_empty)
{
    if (!text[0] && !may_be_empty)
        return fn_fail(FN_ERR_INVALID, "expected a value, got nothing");
    char *c = NULL;
    if (text[0] && !(c = copy_string(text)))
        return fn_fail(FN_ERR_NOMEM, "out of memory");
    free(*slot);
    *slot = c;
    return FN_OK;
}

static fn_status parse_math(const char *text, fn_math *math)
{
    char known[64];
    if (fn_math_parse(fn_value_spelling(fn_math_names, text), math) != FN_OK)
        return fn_value_suggest(fn_fail(FN_ERR_INVALID, "expected %s, got '%s'",
                                        fn_math_list(known, sizeof known), text),
                                fn_math_names, text);
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
    case T_LOSS:
        return fn_value_suggest(fn_loss_kind_find(fn_value_spelling(fn_loss_names, text),
                                                  (const fn_loss_kind **)field),
                                fn_loss_names, text);
    case T_MATH:
        return parse_math(text, (fn_math *)field);
    case T_DEVICE:
        return parse_device(text, cfg);
    case T_OPTIMIZER:
        return fn_value_suggest(
            fn_optimizer_kind_find(fn_value_spelling(fn_optimizer_names, text),
                                   (const fn_optimizer_kind **)field),
            fn_optimizer_names, text);
    case T_SCHEDULE:
        return fn_value_suggest(
            fn_schedule_kind_find(fn_value_spelling(fn_schedule_names, text),
                                  (const fn_schedule_kind **)field),
            fn_schedule_names, text);
    case T_MONITOR:
        return fn_monitor_parse(text, (fn_monitor *)field);
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
    const key_spec k = {"train", o->name, T_FLOAT, 0, o->min, o->max, o->min_exclusive, NULL};
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
static fn_status set_option(void *block, const fn_option *o, const char *text)
{
    char *field = (char *)block + o->offset;
    switch (o->type) {
    case FN_OPTION_LIST:
        return set_list((fn_option_list *)field, o, text);
    case FN_OPTION_FLOAT:
    case FN_OPTION_INT: {
        const key_spec k = {"train", o->name, o->type == FN_OPTION_INT ? T_INT : T_FLOAT,
                            o->offset, o->min, o->max, o->min_exclusive, o->fallback};
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
static fn_status set_key(fn_config *cfg, int i, const char *text)
{
    if (i < N_KEYS)
        return set_value(cfg, &keys[i], text);
    int f = 0;
    const char *name = option_name(i - N_KEYS, &f);
    for (int k = 0; k < families[f].count(); k++) {
        const fn_option *o = kind_option(f, k, name);
        if (o)
            FN_TRY(set_option(cfg->keys->options[f][k], o, text));
    }
    return FN_OK;
}

/* A name declared by two families would be one key for both; one of the
 * table's [train] keys would hide it. */
static fn_status check_option_names(void)
{
    int f = 0;
    for (int j = 0; option_name(j, &f); j++) {
        for (int i = 0; i < N_KEYS; i++)
            if (strcmp(keys[i].section, "train") == 0 &&
                strcmp(keys[i].name, option_name(j, NULL)) == 0)
                return fn_fail(FN_ERR_INVALID, "config.c: [train] %s is declared by an %s and "
                               "by config.c's table", keys[i].name, families[f].selector);
        for (int g = f + 1; g < N_FAMILIES; g++)
            if (first_taking(g, option_name(j, NULL)) >= 0)
                return fn_fail(FN_ERR_INVALID, "config.c: [train] %s is declared by an %s and a "
                               "%s", option_name(j, NULL), families[f].selector,
                               families[g].selector);
    }
    return FN_OK;
}

/* Every kind's options block, at its defaults (zeros for a key without). */
static fn_status option_defaults(fn_config *cfg)
{
    for (int f = 0; f < N_FAMILIES; f++)
        if (families[f].count() > MAX_KINDS)
            return fn_fail(FN_ERR_INVALID, "config.c: more %ss than it keeps", families[f].selector);
    if (option_name(MAX_OPTIONS, NULL))
        return fn_fail(FN_ERR_INVALID, "config.c: more options than it keeps");
    FN_TRY(check_option_names());
    for (int f = 0; f < N_FAMILIES; f++)
        for (int k = 0; k < families[f].count(); k++) {
            const kind_view v = families[f].at(k);
            if (!(cfg->keys->options[f][k] = calloc(1, v.options_size ? v.options_size : 1)))
                return fn_fail(FN_ERR_NOMEM, "out of memory for the configuration");
            for (int o = 0; o < v.n_options; o++) {
                if (!v.options[o].fallback)
                    continue;
                fn_status st = set_option(cfg->keys->options[f][k], &v.options[o],
                                          v.options[o].fallback);
                if (st != FN_OK) {
                    fn_error_prefix("default of %s's %s: ", v.name, v.options[o].name);
                    return st;
                }
            }
        }
    return FN_OK;
}

/* --- the INI file ------------------------------------------------------- */

/* One key of the file; ini_reader.h puts "<path>:<line>: " in front of a
 * failure's message. */
static fn_status on_key(void *arg, const char *section, const char *name, const char *value,
                        int line)
{
    fn_config *cfg = arg;
    if (!section[0])
        return fn_fail(FN_ERR_INVALID, "%s: key outside any [section]", name);
    if (!known_section(section))
        return suggest_section(fn_fail(FN_ERR_INVALID,
                                       "unknown section [%s] (expected data, model, train, run "
                                       "or output)", section),
                               section);
    int i = find_key(section, name);
    if (i < 0)
        return suggest_key(fn_fail(FN_ERR_INVALID, "%s.%s: unknown key", section, name), section,
                           name);
    if (cfg->keys->line[i] > 0)
        return fn_fail(FN_ERR_INVALID, "%s.%s: duplicate key (first set on line %d)", section,
                       name, cfg->keys->line[i]);
    cfg->keys->line[i] = line;
    fn_status st = set_key(cfg, i, value);
    if (st != FN_OK)
        fn_error_prefix("%s.%s: ", section, name);
    return st;
}

static fn_status apply_defaults(fn_config *cfg)
{
    for (int i = 0; i < N_KEYS; i++) {
        if (!keys[i].fallback)
            continue;
        fn_status st = set_value(cfg, &keys[i], keys[i].fallback);
        if (st != FN_OK) {
            fn_error_prefix("default of %s.%s: ", keys[i].section, keys[i].name);
            return st;
        }
    }
    return FN_OK;
}

/* A config of defaults named `path` (messages, the default output dir),
 * with paths relative to `dir`, then `text` (owned, NULL: read the file
 * `path`) parsed into it. */
static fn_status make_config(fn_config **out, const char *path, char *dir, char *text)
{
    *out = NULL;
    fn_config *cfg = calloc(1, sizeof *cfg);
    if (!cfg || !(cfg->keys = calloc(1, sizeof *cfg->keys)) || !(cfg->path = copy_string(path)) ||
        !dir) {
        free(dir);
        free(text);
        fn_config_destroy(cfg);
        return fn_fail(FN_ERR_NOMEM, "out of memory for the configuration");
    }
    cfg->dir = dir;
    cfg->text = text;
    fn_status st = apply_defaults(cfg);
    if (st == FN_OK)
        st = option_defaults(cfg);
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
    return make_config(out, path, directory_of(path), NULL);
}

fn_status fn_config_parse(fn_config **out, const char *name, const char *text)
{
    if (!out || !text)
        return fn_fail(FN_ERR_INVALID, "fn_config_parse: a NULL argument");
    char *copy = copy_string(text);
    if (!copy) {
        *out = NULL;
        return fn_fail(FN_ERR_NOMEM, "out of memory for the configuration");
    }
    return make_config(out, name ? name : "config", copy_string("."), copy);
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

/* --- overrides ---------------------------------------------------------- */

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
    if (!known_section(section))
        return suggest_section(
            fn_fail(FN_ERR_INVALID, "--set %s: unknown section [%s]", assignment, section),
            section);
    int i = find_key(section, name);
    if (i < 0)
        return suggest_key(
            fn_fail(FN_ERR_INVALID, "--set %s: unknown key %s.%s", assignment, section, name),
            section, name);
    fn_status st = set_key(cfg, i, value);
    if (st != FN_OK) {
        fn_error_prefix("--set %s: ", assignment);
        return st;
    }
    char *copy = copy_string(assignment);
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

/* --- checks across keys, required keys, paths --------------------------- */

/* Fails with "where: problem" for key i, where is its last source. */
static fn_status key_fail(const fn_config *cfg, fn_status status, int i, const char *problem)
{
    if (cfg->keys->assignment[i])
        return fn_fail(status, "--set %s: %s", cfg->keys->assignment[i], problem);
    if (cfg->keys->line[i] > 0)
        return fn_fail(status, "%s:%d: %s.%s: %s", cfg->path, cfg->keys->line[i],
                       key_section(i), key_name(i), problem);
    return fn_fail(status, "%s: %s.%s: %s", cfg->path, key_section(i), key_name(i), problem);
}

static int key_given(const fn_config *cfg, int i)
{
    return cfg->keys->line[i] > 0 || cfg->keys->assignment[i] != NULL;
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
        if (!keys[i].fallback && !key_given(cfg, i) && !memory_set_for(cfg, i))
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
    const int layers = find_key("model", "layers");
    const int settings = key_given(cfg, find_key("model", "groups")) ? find_key("model", "groups")
                                                                      : layers;
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
    const int i = find_key("train", name);
    if (!key_given(cfg, i) || !differs)
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
    if (!o->fallback || families[f].at(k).options_size > sizeof fallback ||
        set_option(fallback, o, o->fallback) != FN_OK)
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
    for (int k = 0; k < families[f].count() && n < MAX_KINDS; k++)
        if (kind_option(f, k, name))
            names[n++] = families[f].at(k).name;
    return fn_name_list(buf, cap, names, n);
}

/* "betas, adam_eps, weight_decay": kind k's options, or "none". */
static const char *own_options(int f, int k, char *buf, size_t cap)
{
    const kind_view v = families[f].at(k);
    size_t len = 0;
    snprintf(buf, cap, "none");
    for (int i = 0; i < v.n_options && len < cap; i++) {
        int w = snprintf(buf + len, cap - len, "%s%s", i ? ", " : "", v.options[i].name);
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
             cfg->path, k->line[i], key_name(i), families[f].selector, taking,
             k->assignment[find_key("train", families[f].selector)], chosen);
}

/* An option of family f's other kinds, given with a value other than its
 * default, is an error naming the kinds it applies to (a notice when the
 * kind came from --set and the option from the file). */
static fn_status check_others(const fn_config *cfg, int f, int c)
{
    const char *chosen = families[f].at(c).name, *selector = families[f].selector;
    const int chosen_by_set = cfg->keys->assignment[find_key("train", selector)] != NULL;
    int fam = 0;
    for (int j = 0; option_name(j, &fam); j++) {
        const char *name = option_name(j, NULL);
        if (fam != f || kind_option(f, c, name))
            continue;
        const int k = first_taking(f, name), i = find_key("train", name);
        const int differs = option_differs(cfg, f, k, kind_option(f, k, name));
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

/* Family f: the other kinds' options, the chosen kind's options that have
 * no default, then its own check; its options block goes to the config. */
static fn_status check_family(fn_config *cfg, int f)
{
    const family *fam = &families[f];
    const int c = chosen_kind(cfg, f);
    const kind_view v = fam->at(c);
    FN_TRY(check_others(cfg, f, c));
    for (int o = 0; o < v.n_options; o++) {
        if (v.options[o].fallback || key_given(cfg, find_key("train", v.options[o].name)))
            continue;
        char why[256];
        snprintf(why, sizeof why, "%s = %s needs %s", fam->selector, v.name, v.options[o].name);
        return key_fail(cfg, FN_ERR_INVALID, find_key("train", fam->selector), why);
    }
    const char *key = NULL;
    if (fam->check(cfg, c, cfg->keys->options[f][c], &key) != FN_OK) {
        char problem[512];
        snprintf(problem, sizeof problem, "%s", fn_last_error());
        return key_fail(cfg, FN_ERR_INVALID, find_key("train", key), problem);
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
    return key_fail(cfg, FN_ERR_INVALID, find_key("data", "standardize_targets"), why);
}

/* keep_best and patience watch [train] monitor: by default the loss
 * kind's validation metric; a validation metric needs [data] valid, the
 * accuracy a loss that classifies. */
static fn_status check_best(fn_config *cfg)
{
    const int key = find_key("train", "monitor");
    if (!key_given(cfg, key))
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
    return key_fail(cfg, FN_ERR_INVALID, find_key("train", name), why);
}

/* [output] dir left unset: runs/<stem of the config file>, so two configs
 * never share a folder by default. Given empty it is an error: a variable
 * that expanded to nothing, not a request for the default. */
static fn_status default_out_dir(fn_config *cfg)
{
    if (cfg->out_dir)
        return FN_OK;
    const int key = find_key("output", "dir");
    if (key_given(cfg, key))
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
        if (!m || !key_given(cfg, i))
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

/* --- reading a value back ------------------------------------------------ */

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
    case T_LOSS: n = snprintf(buf, cap, "%s", (*(const fn_loss_kind *const *)field)->name); break;
    case T_OPTIMIZER:
        n = snprintf(buf, cap, "%s", (*(const fn_optimizer_kind *const *)field)->name);
        break;
    case T_MATH: n = snprintf(buf, cap, "%s", fn_math_name(*(const fn_math *)field)); break;
    case T_SCHEDULE:
        n = snprintf(buf, cap, "%s", (*(const fn_schedule_kind *const *)field)->name);
        break;
    case T_MONITOR: n = snprintf(buf, cap, "%s", fn_monitor_name(*(const fn_monitor *)field)); break;
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
    const char *name = option_name(i - N_KEYS, &f);
    int k = chosen_kind(cfg, f);
    if (!kind_option(f, k, name))
        k = first_taking(f, name);
    return format_option(cfg->keys->options[f][k], kind_option(f, k, name), buf, cap);
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
        i = find_key(section, dot + 1);
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

/* --- the resolved values as text, for the ranks' agreement ---------------- */

/* Every key: the table's and the kinds' (option_name). */
int fn_config_n_keys(void)
{
    int n = N_KEYS;
    while (option_name(n - N_KEYS, NULL))
        n++;
    return n;
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
    snprintf(name, name_cap, "[%s] %s", key_section(i), key_name(i));
    if (i < N_KEYS && per_process(&keys[i]))
        return -1;
    return (int)format_key(cfg, i, value, value_cap);
}

int fn_config_given(const fn_config *cfg, const char *section, const char *name)
{
    const int i = cfg && section && name ? find_key(section, name) : -1;
    return i >= 0 && key_given(cfg, i);
}

/* Kind k of family f's options block, with its lists' values. */
static void free_options(void *block, int f, int k)
{
    if (!block)
        return;
    const kind_view v = families[f].at(k);
    for (int o = 0; o < v.n_options; o++)
        if (v.options[o].type == FN_OPTION_LIST)
            free(((fn_option_list *)((char *)block + v.options[o].offset))->values);
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

/* --- where each value came from, for the printed configuration ----------- */

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
