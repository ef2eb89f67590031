/* test_overwrite_inputs.c — a train run never replaces or removes a file it
 * reads. Each case puts an input where the run writes: the training set as
 * out/weights.h5 (with --overwrite), the init weights as out/best.h5 (with
 * --overwrite), the validation set as out/checkpoint.h5 named through a
 * symbolically linked directory (with --overwrite), the config as
 * out/metrics.csv (with --overwrite), the training set as out/weights.h5
 * of a run continued with --resume. Each run fails (exit 1) before it
 * writes anything, naming the output and the input, and the input is byte
 * for byte what it was. The training set at names of temporaries,
 * out/metrics.csv.tmp (no run's name: runs name theirs after their process)
 * and out/metrics.csv.<pid>-0.tmp of a process that is gone (a killed
 * run's leftover, which a run removes unless it reads it), is kept by a
 * run that succeeds. */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "file_bytes.h"
#include "program.h"
#include "test_main.h"


/* A config at path: the corpus' good.h5 (24 rows, 6 columns, 4 classes),
 * as the training and the validation set, output in <dir>/out, with `extra` lines in [train]. */
static void write_config(const program_files *f, const char *path, const char *extra)
{
    char good[PROGRAM_PATH_CAP];
    snprintf(good, sizeof good, "%s", source_path("tests/bad_inputs/good.h5"));
    FILE *out = fopen(path, "w");
    assert_non_null(out);
    fprintf(out,
            "[data]\ntrain = %s\nvalid = %s\n[model]\nlayers = block 8, linear 4\ngroups = 2\n"
            "[train]\nbatch_size = 8\nepochs = 1\n%s\n[run]\ndevice = cpu\nlog_every = 0\n"
            "[output]\ndir = %s\n",
            good, good, extra, program_files_at(f, "out"));
    fclose(out);
}

static int setup(void **state)
{
    program_files *f = program_files_new("fn_overwrite_inputs_");
    write_config(f, f->ini, "keep_best = true\ncheckpoint_every = 1");
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    program_files_free(*state);
    return 0;
}

/* train <ini> with up to three more arguments; its exit status. */
static int train(const program_files *f, const char *ini, const char *a, const char *b,
                 const char *c)
{
    const char *argv[] = {ini, a, b, c, NULL};
    return program_run("train", argv, NULL, f->out, f->err);
}

/* A first run, so that out/ holds weights.h5, checkpoint.h5, metrics.csv
 * and best.h5. */
static void first_run(const program_files *f)
{
    if (train(f, f->ini, NULL, NULL, NULL) != 0) {
        char *err = program_slurp(f->err);
        fail_msg("the first run failed:\n%s", err);
    }
}

/* The run exited 1 naming `output` and "is the <what> <input>", and input
 * holds `before`. */
static void expect_kept(const program_files *f, int status, const char *output, const char *what,
                        const char *input, const file_bytes *before)
{
    char expected[3 * PROGRAM_PATH_CAP];
    snprintf(expected, sizeof expected, "train: %s: is the %s %s (or a link to it)", output, what,
             input);
    char *err = program_slurp(f->err);
    if (status != 1 || !strstr(err, expected))
        fail_msg("exit status %d (expected 1); stderr does not hold '%s'; it holds:\n%s", status,
                 expected, err);
    free(err);
    struct stat st;
    if (stat(input, &st) != 0)
        fail_msg("%s, an input of the run, is gone", input);
    file_bytes after = file_bytes_read(input);
    if (after.size != before->size || memcmp(after.data, before->data, after.size) != 0)
        fail_msg("%s, an input of the run, was changed", input);
    free(after.data);
}

/* train --set <key>=<input> [flag] exits 1 naming `output` and the <what>
 * `input`, and input is byte for byte what it was before the run. */
static void expect_set_kept(const program_files *f, const char *key, const char *input,
                            const char *flag, const char *output, const char *what)
{
    file_bytes before = file_bytes_read(input);
    char set[PROGRAM_PATH_CAP + 16];
    snprintf(set, sizeof set, "%s=%s", key, input);
    int status = train(f, f->ini, "--set", set, flag);
    expect_kept(f, status, output, what, input, &before);
    free(before.data);
}

static void test_training_set_as_weights(void **state)
{
    program_files *f = *state;
    first_run(f);
    char *weights = program_files_at(f, "out/weights.h5");
    file_bytes_copy(source_path("tests/bad_inputs/good.h5"), weights);
    expect_set_kept(f, "data.train", weights, "--overwrite", weights, "[data] train file");
}

static void test_init_as_best(void **state)
{
    program_files *f = *state;
    first_run(f);
    char *best = program_files_at(f, "out/best.h5");
    expect_set_kept(f, "model.init", best, "--overwrite", best, "[model] init file");
}

/* Named through another path: out is reached as alias/. */
static void test_validation_set_through_linked_dir(void **state)
{
    program_files *f = *state;
    first_run(f);
    char checkpoint[PROGRAM_PATH_CAP], valid[PROGRAM_PATH_CAP];
    snprintf(checkpoint, sizeof checkpoint, "%s", program_files_at(f, "out/checkpoint.h5"));
    snprintf(valid, sizeof valid, "%s", program_files_at(f, "alias/checkpoint.h5"));
    assert_int_equal(symlink(program_files_at(f, "out"), program_files_at(f, "alias")), 0);
    file_bytes_copy(source_path("tests/bad_inputs/good.h5"), checkpoint);
    expect_set_kept(f, "data.valid", valid, "--overwrite", checkpoint, "[data] valid file");
}

static void test_config_as_metrics(void **state)
{
    program_files *f = *state;
    first_run(f);
    char *csv = program_files_at(f, "out/metrics.csv");
    write_config(f, csv, "");
    file_bytes before = file_bytes_read(csv);
    int status = train(f, csv, "--overwrite", NULL, NULL);
    expect_kept(f, status, csv, "config file", csv, &before);
    free(before.data);
}

/* A resumed run writes weights.h5 at its end. */
static void test_training_set_as_weights_resumed(void **state)
{
    program_files *f = *state;
    first_run(f);
    char *weights = program_files_at(f, "out/weights.h5");
    file_bytes_copy(source_path("tests/bad_inputs/good.h5"), weights);
    expect_set_kept(f, "data.train", weights, "--resume", weights, "[data] train file");
}

/* Neither a name runs once gave their temporaries nor a leftover's name
 * is removed while the run reads the file there. */
static void test_training_set_as_temporary(void **state)
{
    program_files *f = *state;
    assert_int_equal(mkdir(program_files_at(f, "out"), 0777), 0);
    char tmp[2][PROGRAM_PATH_CAP];
    snprintf(tmp[0], sizeof tmp[0], "%s", program_files_at(f, "out/metrics.csv.tmp"));
    /* 99999999: above any pid_max, so no process has it. */
    snprintf(tmp[1], sizeof tmp[1], "%s", program_files_at(f, "out/metrics.csv.99999999-0.tmp"));
    for (int i = 0; i < 2; i++) {
        file_bytes_copy(source_path("tests/bad_inputs/good.h5"), tmp[i]);
        file_bytes before = file_bytes_read(tmp[i]);
        char set[PROGRAM_PATH_CAP + 16];
        snprintf(set, sizeof set, "data.train=%s", tmp[i]);
        const int status = train(f, f->ini, "--set", set, i ? "--overwrite" : NULL);
        if (status != 0) {
            char *err = program_slurp(f->err);
            fail_msg("training on %s: exit status %d; stderr:\n%s", tmp[i], status, err);
        }
        file_bytes after = file_bytes_read(tmp[i]);
        if (after.size != before.size || memcmp(after.data, before.data, after.size) != 0)
            fail_msg("%s, an input of the run, was changed or removed", tmp[i]);
        free(before.data);
        free(after.data);
    }
}

TEST_MAIN_EACH(setup, teardown,
               cmocka_unit_test(test_training_set_as_weights),
               cmocka_unit_test(test_init_as_best),
               cmocka_unit_test(test_validation_set_through_linked_dir),
               cmocka_unit_test(test_config_as_metrics),
               cmocka_unit_test(test_training_set_as_weights_resumed),
               cmocka_unit_test(test_training_set_as_temporary))
