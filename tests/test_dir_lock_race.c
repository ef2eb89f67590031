/* test_dir_lock_race.c — the output directory's lock where two runs race for
 * it. A train run is held between its open of the directory and its flock
 * by the test-only hook FN_TEST_LOCK_GATE (src/core/test_hooks.h; the tests
 * skip in builds without the hooks), while this process, standing for the
 * other run, takes, releases or replaces the directory; then the run goes on.
 * - The run made the directory and loses the flock: it fails naming the
 *   directory and this process' pid, and the directory, the winner's now,
 *   is still there, the same one (a loser removes nothing); a third run is
 *   refused too, so no two runs ever share it.
 * - The holder ends, removing the directory it made, while the run waits:
 *   the run takes a new directory at the path and finishes its training.
 * - The holder ends and a third run makes and locks a new directory at the
 *   path before the run's flock: the run fails, naming that holder, and
 *   writes nothing into the third run's directory. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "expect.h"
#include "store/dir_lock.h"
#include "core/test_hooks.h"
#include "program.h"
#include "test_main.h"

typedef struct race {
    program_files *files;
    char out[PROGRAM_PATH_CAP];  /* the output directory the runs race for */
    char gate[PROGRAM_PATH_CAP]; /* FN_TEST_LOCK_GATE's directory */
} race;

static int setup(void **state)
{
    race *r = calloc(1, sizeof *r);
    assert_non_null(r);
    r->files = program_files_new("fn_lock_race_");
    snprintf(r->out, sizeof r->out, "%s/out", r->files->dir);
    snprintf(r->gate, sizeof r->gate, "%s/gate", r->files->dir);
    assert_int_equal(mkdir(r->gate, 0777), 0);
    /* run.ini: the corpus' good.h5 (24 rows, 6 columns, 4 classes). */
    FILE *ini = fopen(r->files->ini, "w");
    assert_non_null(ini);
    fprintf(ini,
            "[data]\ntrain = %s\n[model]\nlayers = block 8, linear 4\ngroups = 2\n"
            "[train]\nbatch_size = 8\nepochs = 2\n[run]\ndevice = cpu\nlog_every = 0\n",
            source_path("tests/bad_inputs/good.h5"));
    fclose(ini);
    *state = r;
    return 0;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static char *gate_file(const race *r, const char *name)
{
    static char path[PROGRAM_PATH_CAP + 16];
    snprintf(path, sizeof path, "%s/%s", r->gate, name);
    return path;
}

/* Starts `train run.ini --set output.dir=<out>` held at the gate, and
 * returns once it has opened the directory and waits there. */
static pid_t start_held_run(const race *r)
{
    char set_out[PROGRAM_PATH_CAP + 16];
    snprintf(set_out, sizeof set_out, "output.dir=%s", r->out);
    const char *argv[] = {r->files->ini, "--set", set_out, NULL};
    assert_int_equal(setenv("FN_TEST_LOCK_GATE", r->gate, 1), 0);
    pid_t pid = program_start("train", argv, NULL, r->files->out, r->files->err);
    assert_int_equal(unsetenv("FN_TEST_LOCK_GATE"), 0);
    for (int i = 0; i < 3000 && access(gate_file(r, "opened"), F_OK) != 0; i++)
        sleep_ms(10);
    if (access(gate_file(r, "opened"), F_OK) != 0)
        fail_msg("the run did not reach the gate within 30 s");
    return pid;
}

/* Lets the held run take its flock, and waits for its exit status. */
static int open_gate(const race *r, pid_t run)
{
    FILE *go = fopen(gate_file(r, "go"), "w");
    assert_non_null(go);
    fclose(go);
    int sig = 0;
    int status = program_wait(run, &sig);
    assert_int_equal(sig, 0);
    return status;
}

/* The run failed with "train: <out> is in use by another train run (pid
 * <this process>)". */
static void expect_refused(const race *r, int status)
{
    char expected[PROGRAM_PATH_CAP + 96];
    snprintf(expected, sizeof expected, "train: %s is in use by another train run (pid %ld)",
             r->out, (long)getpid());
    char *err = program_slurp(r->files->err);
    if (status != 1 || !strstr(err, expected))
        fail_msg("exit status %d (expected 1); stderr does not hold '%s'; it holds:\n%s", status,
                 expected, err);
    free(err);
}

static ino_t inode_of(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0)
        fail_msg("%s is gone", path);
    return st.st_ino;
}

static void test_loser_removes_nothing(void **state)
{
    race *r = *state;
    skip_without_test_hooks();
    pid_t run = start_held_run(r); /* it made <out>: there was none */
    fn_dir_lock *winner = NULL, *third = NULL;
    EXPECT_OK(fn_dir_lock_take(&winner, r->out));
    const ino_t held = inode_of(r->out);
    expect_refused(r, open_gate(r, run));
    if (inode_of(r->out) != held)
        fail_msg("%s is another directory now: the winner's was replaced", r->out);
    /* The winner writes into its directory as it would after set-up. */
    char file[PROGRAM_PATH_CAP + 48];
    snprintf(file, sizeof file, "%s/metrics.csv.%ld-0.tmp", r->out, (long)getpid());
    FILE *f = fopen(file, "w");
    if (!f)
        fail_msg("the winner cannot create %s", file);
    fclose(f);
    /* Nobody else gets the directory while the winner holds it. */
    EXPECT_FAIL(fn_dir_lock_take(&third, r->out), FN_ERR_IO, "in use by another train run");
    assert_null(third);
    fn_dir_lock_release(winner);
}

static void test_holder_removed_directory(void **state)
{
    race *r = *state;
    skip_without_test_hooks();
    fn_dir_lock *holder = NULL;
    EXPECT_OK(fn_dir_lock_take(&holder, r->out)); /* made by the holder */
    pid_t run = start_held_run(r);
    fn_dir_lock_release(holder); /* removes <out>, empty, which it made */
    assert_int_not_equal(access(r->out, F_OK), 0);
    int status = open_gate(r, run);
    char *err = program_slurp(r->files->err);
    if (status != 0)
        fail_msg("the run failed (exit status %d) after the holder removed its directory; "
                 "stderr:\n%s", status, err);
    free(err);
    char weights[PROGRAM_PATH_CAP + 16];
    snprintf(weights, sizeof weights, "%s/weights.h5", r->out);
    assert_int_equal(access(weights, F_OK), 0);
}

static void test_directory_replaced(void **state)
{
    race *r = *state;
    skip_without_test_hooks();
    fn_dir_lock *holder = NULL, *third = NULL;
    EXPECT_OK(fn_dir_lock_take(&holder, r->out));
    pid_t run = start_held_run(r);
    fn_dir_lock_release(holder);
    EXPECT_OK(fn_dir_lock_take(&third, r->out)); /* a new <out> */
    expect_refused(r, open_gate(r, run));
    DIR *d = opendir(r->out);
    assert_non_null(d);
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            fail_msg("the refused run wrote %s into the third run's directory", e->d_name);
    closedir(d);
    fn_dir_lock_release(third);
}

TEST_MAIN(NULL, NULL, cmocka_unit_test_setup_teardown(test_loser_removes_nothing, setup, program_files_teardown),
          cmocka_unit_test_setup_teardown(test_holder_removed_directory, setup, program_files_teardown),
          cmocka_unit_test_setup_teardown(test_directory_replaced, setup, program_files_teardown))
