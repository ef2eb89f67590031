/* trainer_inputs.c — a run's outputs never replace or remove a file the run
 * reads. Every file the run writes in its directory, and every one that
 * --overwrite removes, is compared with the config, the training and
 * validation sets, the init weights and, resuming, the checkpoint, by
 * device and inode: a link, a symbolically linked directory or a path
 * spelt otherwise names the same file. Run before anything is written.
 * The temporaries the writes create are new files of names no one holds
 * (atomic_file.h), so they need no check; the leftovers of killed runs
 * that a run removes before its first write are checked the same way. */
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

enum { N_INPUTS = 5 };

/* The files the run reads. */
static void inputs_of(const fn_trainer *t, input in[N_INPUTS])
{
    const fn_config *c = t->cfg;
    in[0] = (input){"config file", c->path};
    in[1] = (input){"[data] train file", c->train};
    in[2] = (input){"[data] valid file", c->valid};
    in[3] = (input){"[model] init file", c->init};
    in[4] = (input){"checkpoint --resume reads", t->resuming ? t->checkpoint_path : NULL};
}

/* output against every input. */
static fn_status check_one(const fn_trainer *t, const char *output, const input *in)
{
    for (int i = 0; i < N_INPUTS; i++) {
        if (!in[i].path || (output == t->checkpoint_path && in[i].path == output))
            continue; /* a resumed run replaces its own checkpoint */
        if (same_file(output, in[i].path))
            return fn_fail(FN_ERR_INVALID,
                           "%s: is the %s %s (or a link to it): this run would replace it; "
                           "give another [output] dir, or move the file out of %s",
                           output, in[i].what, in[i].path, t->cfg->out_dir);
    }
    return FN_OK;
}

fn_status fn_trainer_check_inputs_kept(const fn_trainer *t)
{
    input in[N_INPUTS];
    inputs_of(t, in);
    const char *outputs[] = {t->weights_path, t->checkpoint_path, t->csv_path, t->best_path};
    for (size_t i = 0; i < sizeof outputs / sizeof *outputs; i++)
        FN_TRY(check_one(t, outputs[i], in));
    return FN_OK;
}

/* fn_atomic_remove_leftovers' keep: a leftover that is an input. */
static int is_input(const struct stat *leftover, void *arg)
{
    const input *in = arg;
    struct stat st;
    for (int i = 0; i < N_INPUTS; i++)
        if (in[i].path && stat(in[i].path, &st) == 0 && st.st_dev == leftover->st_dev &&
            st.st_ino == leftover->st_ino)
            return 1;
    return 0;
}

fn_status fn_trainer_remove_leftovers(const fn_trainer *t)
{
    input in[N_INPUTS];
    inputs_of(t, in);
    const char *outputs[] = {t->weights_path, t->checkpoint_path, t->csv_path, t->best_path};
    for (size_t i = 0; i < sizeof outputs / sizeof *outputs; i++)
        FN_TRY(fn_atomic_remove_leftovers(outputs[i], is_input, in));
    return FN_OK;
}
