/* weights_loss.c — the loss a weights file's network was trained with
 * (fn_weights_loss, weights.h): the root attribute `config` is read (in a
 * probe's child first, as every weights read is), parsed as a config and
 * its [train] loss looked up in the registry. */
#include <stdlib.h>

#include "fusenet/config.h"
#include "fusenet/safetensors.h"
#include "fusenet/weights.h"
#include "run/weights_impl.h"
#include "store/h5util.h"

/* The file's config text (*text malloc'ed; "" for a file without one). */
static fn_status read_config_text(const char *path, char **text)
{
    *text = NULL;
    hid_t file = -1;
    FN_TRY(fn_h5_open_read(&file, path));
    fn_status st = fn_weights_check_format(file, path, FN_WEIGHTS_FORMAT);
    if (st == FN_OK && H5Aexists(file, "config") > 0)
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

static fn_status loss_of_text(const char *path, const char *text, const fn_loss_kind **kind)
{
    fn_config *cfg = NULL;
    fn_status st = fn_config_parse(&cfg, path, text);
    char name[64];
    if (st == FN_OK)
        st = fn_config_get(cfg, "train.loss", name, sizeof name);
    fn_config_destroy(cfg);
    if (st != FN_OK) {
        fn_error_prefix("%s: the config it holds: ", path);
        return st;
    }
    return fn_loss_kind_find(name, kind);
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
