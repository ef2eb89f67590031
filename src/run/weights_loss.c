/* weights_loss.c — the loss a weights file's network was trained with
 * (fn_weights_loss, weights.h): the run's resolved configuration (the
 * provenance's `config`, every --set applied) or, in a file written before
 * provenance, the root attribute `config` is read (in a probe's child
 * first, as every weights read is), parsed as a config and its [train]
 * loss looked up in the registry. The root attribute alone would not do:
 * it holds the config file's text, with each --set only as a comment. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fusenet/config.h"
#include "fusenet/safetensors.h"
#include "fusenet/weights.h"
#include "run/ini_reader.h"
#include "run/weights_impl.h"
#include "store/h5util.h"

enum { LOSS_CAP = 64 };

/* The provenance's resolved config into *text when the file has one. */
static fn_status resolved_text(hid_t file, const char *path, char **text)
{
    if (H5Lexists(file, "provenance", H5P_DEFAULT) <= 0)
        return FN_OK;
    hid_t group = H5Gopen2(file, "provenance", H5P_DEFAULT);
    if (group < 0)
        return fn_fail(FN_ERR_FORMAT, "%s: cannot open the group 'provenance'", path);
    fn_status st = H5Aexists(group, "config") > 0
                       ? fn_h5_get_string(group, path, "config", text)
                       : FN_OK;
    H5Gclose(group);
    return st;
}

/* The file's config text (*text malloc'ed; "" for a file without one). */
static fn_status read_config_text(const char *path, char **text)
{
    *text = NULL;
    hid_t file = -1;
    FN_TRY(fn_h5_open_read(&file, path));
    fn_status st = fn_weights_check_format(file, path, FN_WEIGHTS_FORMAT);
    if (st == FN_OK)
        st = resolved_text(file, path, text);
    if (st == FN_OK && !*text && H5Aexists(file, "config") > 0)
        st = fn_h5_get_string(file, path, "config", text);
    H5Fclose(file);
    if (st == FN_OK && !*text && !(*text = calloc(1, 1)))
        st = fn_fail(FN_ERR_NOMEM, "%s: out of memory reading its config", path);
    return st;
}

/* The probe's child reads the text and drops it. */
static fn_status probe_config(fn_h5_child *probe, void *arg)
{
    (void)probe;
    char *text = NULL;
    fn_status st = read_config_text(arg, &text);
    free(text);
    return st;
}

/* [train] loss of an INI text: its last value, or "" (the default). */
static fn_status on_key(void *arg, const char *section, const char *name, const char *value,
                        int line)
{
    (void)line;
    char *loss = arg;
    if (strcmp(section, "train") == 0 && strcmp(name, "loss") == 0)
        snprintf(loss, LOSS_CAP, "%s", value);
    return FN_OK;
}

/* Only [train] loss is read: the resolved text's other values (paths of
 * memory sets left empty, keys of options not chosen) need not make a
 * config that could run again. */
static fn_status loss_of_text(const char *path, const char *text, const fn_loss_kind **kind)
{
    char name[LOSS_CAP] = "";
    fn_status st = fn_ini_parse(path, text, on_key, name);
    if (st != FN_OK) {
        fn_error_prefix("%s: the config it holds: ", path);
        return st;
    }
    if (!name[0]) {
        fn_config *cfg = NULL; /* the default loss: an empty config's */
        st = fn_config_parse(&cfg, path, "");
        if (st == FN_OK)
            st = fn_config_get(cfg, "train.loss", name, sizeof name);
        fn_config_destroy(cfg);
        FN_TRY(st);
    }
    st = fn_loss_kind_find(name, kind);
    if (st != FN_OK)
        fn_error_prefix("%s: [train] loss: ", path);
    return st;
}

fn_status fn_weights_loss(const char *path, const fn_loss_kind **kind)
{
    if (!path || !kind)
        return fn_fail(FN_ERR_INVALID, "fn_weights_loss: a NULL argument");
    if (fn_safetensors_path(path))
        return fn_fail(FN_ERR_FORMAT, "%s: a safetensors export records no loss; only a "
                       "weights file (weights.h5, best.h5) says what its network predicts", path);
    FN_TRY(fn_h5_probe(path, probe_config, (void *)path, FN_H5_PROBE_SECONDS, NULL));
    char *text = NULL;
    FN_TRY(read_config_text(path, &text));
    fn_status st = loss_of_text(path, text, kind);
    free(text);
    return st;
}
