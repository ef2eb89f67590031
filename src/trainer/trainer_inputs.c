/* trainer_inputs.c — the check that a run's outputs never replace or remove
 * a file the run reads. Every file the run writes in its directory (each
 * file and its temporary, which a write first removes), and every one that
 * --overwrite removes, is compared with the config, the training and
 * validation sets, the init weights and, resuming, the checkpoint, by
 * device and inode: a link, a symbolically linked directory or a path
 * spelt otherwise names the same file. Run before anything is written. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "store/atomic_file.h"
#include "trainer/trainer_impl.h"

/* 1 when both paths exist and are one file (links followed). */
static int same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
           sa.st_ino == sb.st_ino;
}

typedef struct input {
    const char *what, *path; /* path NULL: not read by this run */
} input;

/* output (the file itself, or with tmp its temporary) against every input. */
static fn_status check_one(const fn_trainer *t, const char *output, int tmp, const input *in,
                           int n_in)
{
    for (int i = 0; i < n_in; i++) {
        if (!in[i].path || (!tmp && output == t->checkpoint_path && in[i].path == output))
            continue; /* a resumed run replaces its own checkpoint */
        if (same_file(output, in[i].path))
            return fn_fail(FN_ERR_INVALID,
                           "%s: is the %s %s (or a link to it): this run would %s it; give "
                           "another [output] dir, or move the file out of %s",
                           output, in[i].what, in[i].path, tmp ? "remove" : "replace",
                           t->cfg->out_dir);
    }
    return FN_OK;
}

fn_status fn_trainer_check_inputs_kept(const fn_trainer *t)
{
    const fn_config *c = t->cfg;
    const input in[] = {{"config file", c->path},
                        {"[data] train file", c->train},
                        {"[data] valid file", c->valid},
                        {"[model] init file", c->init},
                        {"checkpoint --resume reads", t->resuming ? t->checkpoint_path : NULL}};
    const int n_in = (int)(sizeof in / sizeof *in);
    const char *outputs[] = {t->weights_path, t->checkpoint_path, t->csv_path, t->best_path};
    for (size_t i = 0; i < sizeof outputs / sizeof *outputs; i++) {
        FN_TRY(check_one(t, outputs[i], 0, in, n_in));
        char *tmp = fn_atomic_tmp_name(outputs[i]);
        if (!tmp)
            return fn_fail(FN_ERR_NOMEM, "out of memory");
        fn_status st = check_one(t, tmp, 1, in, n_in);
        free(tmp);
        FN_TRY(st);
    }
    return FN_OK;
}
