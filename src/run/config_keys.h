/* config_keys.h (private) — what the configuration's files share: the
 * table of keys (config_keys.c), the families of registered kinds whose
 * kinds declare their own [train] keys (kind.h), where each value came
 * from, and the calls one file makes into another. The files: config.c
 * (the INI file, overrides, the config's life), config_keys.c (the keys
 * and their names, "did you mean"), config_parse.c (values from text),
 * config_layers.c ([model] layers), config_check.c (fn_config_finish's
 * checks) and config_get.c (values back as text). */
#ifndef FUSENET_RUN_CONFIG_KEYS_H
#define FUSENET_RUN_CONFIG_KEYS_H

#include <stddef.h>

#include "fusenet/kind.h"
#include "run/config_impl.h"

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
    T_KIND, /* a kind of the family this key selects (fn_config_families) */
    T_DEVICE,
    T_MATH,
    T_MONITOR,
    T_CHOICE, /* one of the key's choices (NULL-terminated): an int, its index */
    T_GRAD_SUM /* a type of the gradient sums (fusenet/comm.h's fn_comm_sum) */
} key_type;

typedef struct key_spec {
    const char *section, *name;
    key_type type;
    size_t offset;     /* into fn_config */
    double min, max;   /* numbers: the allowed range */
    int min_exclusive; /* min itself is not allowed (lr > 0) */
    const char *fallback; /* the default as text; NULL: required */
    const char *const *choices; /* T_CHOICE's names, NULL-terminated */
} key_spec;

#define AT(field) offsetof(fn_config, field)

/* The keys of the table (config_keys.c). */
enum { N_KEYS = 35 };
extern const key_spec fn_config_key_specs[N_KEYS];

/* The keys the registries' kinds declare (option.h) follow the table's in
 * one numbering: key N_KEYS + j is the j-th distinct option name of the
 * families below, the optimisers' first, each in its registry's order
 * (fn_config_option_name). Every kind's options block is kept, each key's
 * value read into the block of every kind of its family that takes it;
 * finish checks the chosen kind's and hands it on (cfg->optimizer_options,
 * cfg->schedule_options, cfg->loss_options). */
enum { MAX_OPTIONS = 48, MAX_KINDS = 16, N_FAMILIES = 3, ALL_KEYS = N_KEYS + MAX_OPTIONS };

/* A registry whose kinds declare their own [train] keys. */
typedef struct family {
    const char *selector;  /* the [train] key that chooses a kind */
    size_t chosen;         /* of the chosen kind's pointer in fn_config */
    size_t chosen_options; /* of the chosen kind's options block in fn_config */
    const fn_registry *(*kinds)(void);
} family;

extern const family fn_config_families[N_FAMILIES];

/* Where each key's value came from: a file line, an override, or the default. */
struct fn_config_keys {
    int line[ALL_KEYS];         /* > 0: set on this line of the file */
    char *assignment[ALL_KEYS]; /* non-NULL: set by this --set argument */
    void *options[N_FAMILIES][MAX_KINDS]; /* each kind's options block */
    char notices[MAX_OPTIONS][320]; /* fn_config_notice's, made by finish */
    int n_notices;
};

/* config_keys.c: family f's kinds; kind k's option called name (NULL:
 * none); the first kind of f that takes it (-1: none); the j-th option
 * name of the families, its family in *fam (NULL past the last); the
 * index in f of the kind cfg chose; the family a T_KIND key at offset of
 * fn_config selects. */
int fn_config_family_count(int f);
const fn_kind *fn_config_family_kind(int f, int k);
const fn_option *fn_config_kind_option(int f, int k, const char *name);
int fn_config_first_taking(int f, const char *name);
const char *fn_config_option_name(int j, int *fam);
int fn_config_chosen_kind(const fn_config *cfg, int f);
int fn_config_family_of(size_t offset);

/* config_keys.c: key i of section/name (-1: none), whether a section is
 * known, whether key i was given (file or --set); a failure about an
 * unknown section or key gets the nearest known one; the check that no
 * option name is declared twice. */
int fn_config_find_key(const char *section, const char *name);
int fn_config_known_section(const char *section);
int fn_config_key_given(const fn_config *cfg, int i);
fn_status fn_config_suggest_section(fn_status st, const char *section);
fn_status fn_config_suggest_key(fn_status st, const char *section, const char *name);
fn_status fn_config_check_option_names(void);

/* config_parse.c: every key at its default, every kind's options block
 * at its defaults; key i's value from text (into cfg, or into the options
 * block of every kind of its family that takes it); option o from text
 * into a kind's options block. */
fn_status fn_config_defaults(fn_config *cfg);
fn_status fn_config_set_key(fn_config *cfg, int i, const char *text);
fn_status fn_config_set_option(void *block, const fn_option *o, const char *text);

#endif
