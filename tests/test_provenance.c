/* test_provenance.c — the group /provenance of the files a run writes
 * (provenance.h): present, with every attribute right, in weights.h5,
 * best.h5 and checkpoint.h5; each set's checksum equal to the documented
 * function computed here from the file's values, independently of the
 * data room (the word hash re-implemented below), for a set read in
 * several slabs and through the probe's child or in process alike;
 * `train --print-config` with the source of every value; `predict --info`;
 * a resumed run keeping the start its checkpoint records;
 * and files without the group (older ones) still read and summarised. */
#define _POSIX_C_SOURCE 200809L
#include <hdf5.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "expect.h"
#include "fusenet/data.h"
#include "fusenet/layer_kind.h"
#include "fusenet/memory_set.h"
#include "fusenet/model.h"
#include "fusenet/provenance.h"
#include "fusenet/version.h"
#include "fusenet/weights.h"
#include "h5_write.h"
#include "program.h"
#include "store/h5_probe.h"
#include "layer_specs.h"
#include "test_main.h"

/* 53 rows of 7 columns, batches of 5: a budget of 36 rows of 32 bytes
 * gives slabs of 35 rows and 18, and 35 * 7 floats end mid-word, so the
 * hash runs on across slab ends as it would over one piece. */
enum { ROWS = 53, IN = 7, CLASSES = 3, BATCH = 5, VALID_ROWS = 11, CAP = 1024 };
#define BUDGET_BYTES (36 * 32)
#define BUDGET_MB "0.0010986328125" /* BUDGET_BYTES / 2^20 */

typedef struct fixture {
    program_files *files;
    char train[CAP], valid[CAP];
} fixture;

/* --- the checksum, computed here ------------------------------------------------ */

/* The word hash of docs/formats.md, over one whole piece of bytes. */
static uint64_t word_hash(uint64_t h, const unsigned char *p, size_t n)
{
    for (; n >= 8; n -= 8, p += 8) {
        uint64_t w = 0;
        for (int b = 7; b >= 0; b--)
            w = (w << 8) | p[b]; /* little-endian, as the machine stores it */
        h = (h ^ w) * 0x9e3779b97f4a7c15ULL;
        h ^= h >> 29;
    }
    for (; n > 0; n--, p++)
        h = ((h ^ *p) * 0x100000001b3ULL) ^ (h >> 31);
    return h;
}

#define HASH_START 0xcbf29ce484222325ULL

/* The whole set at path: its inputs as float32 into x, its labels as int32
 * into y. */
static void read_xy(const char *path, float *x, int32_t *y)
{
    hid_t file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    assert_true(file >= 0);
    hid_t sx = H5Dopen2(file, "X", H5P_DEFAULT), sy = H5Dopen2(file, "y", H5P_DEFAULT);
    assert_true(H5Dread(sx, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, x) >= 0);
    assert_true(H5Dread(sy, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, y) >= 0);
    H5Dclose(sx);
    H5Dclose(sy);
    H5Fclose(file);
}

/* A set's checksum: the hash of the pair (hash of every input as float32,
 * hash of every label as int32), each over the whole file in file order. */
static uint64_t expected_checksum(const char *path, int rows)
{
    float *x = malloc((size_t)rows * IN * sizeof(float));
    int32_t *y = malloc((size_t)rows * sizeof(int32_t));
    assert_non_null(x);
    assert_non_null(y);
    read_xy(path, x, y);
    uint64_t pair[2] = {word_hash(HASH_START, (const unsigned char *)x, (size_t)rows * IN * 4),
                        word_hash(HASH_START, (const unsigned char *)y, (size_t)rows * 4)};
    unsigned char bytes[16];
    for (int i = 0; i < 16; i++)
        bytes[i] = (unsigned char)(pair[i / 8] >> (8 * (i % 8)));
    free(x);
    free(y);
    return word_hash(HASH_START, bytes, sizeof bytes);
}

/* --- set-up ---------------------------------------------------------------------- */

/* float64 inputs and int64 labels, so the stored types differ from what
 * the network gets. */
static void write_set(const char *path, int rows, int salt)
{
    double *x = malloc((size_t)rows * IN * sizeof(double));
    int64_t *y = malloc((size_t)rows * sizeof(int64_t));
    assert_non_null(x);
    assert_non_null(y);
    for (int i = 0; i < rows; i++) {
        y[i] = (i * 7 + salt) % CLASSES;
        for (int j = 0; j < IN; j++)
            x[i * IN + j] = 0.1 * ((i * 13 + j * 5 + salt) % 17) - 0.8 + 0.3 * (double)y[i];
    }
    h5_write_xy(path, x, (hsize_t)rows, IN, H5T_STD_I64LE, H5T_NATIVE_INT64, y);
    free(x);
    free(y);
}

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    f->files = program_files_new("fn_provenance_");
    program_files_path(f->files, "train.h5", f->train, sizeof f->train);
    program_files_path(f->files, "valid.h5", f->valid, sizeof f->valid);
    write_set(f->train, ROWS, 0);
    write_set(f->valid, VALID_ROWS, 1);
    /* line 1 [data], 2 train, 3 valid, 4 budget, 5 [model], 6 layers,
     * 7 [train], 8 batch_size, 9 epochs, 10 keep_best, 11 checkpoint_every,
     * 12 lr, 13 [run], 14 log_every, 15 device (the CPU's, on any machine) */
    program_files_ini(f->files,
                      "[data]\ntrain = %s\nvalid = %s\nmemory_budget_mb = " BUDGET_MB "\n"
                      "[model]\nlayers = block 8, linear 3\n"
                      "[train]\nbatch_size = %d\nepochs = 2\nkeep_best = true\n"
                      "checkpoint_every = 1\nlr = 0.05\n[run]\nlog_every = 0\ndevice = cpu\n",
                      f->train, f->valid, BATCH);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    program_files_free(f->files);
    free(f);
    return 0;
}

/* Runs train with the fixture's config and the extra arguments. */
static int run_train(const fixture *f, const char *const *extra)
{
    const char *argv[16] = {f->files->ini};
    int n = 1;
    while (extra && *extra && n < 15)
        argv[n++] = *extra++;
    argv[n] = NULL;
    return program_run("train", argv, NULL, f->files->out, f->files->err);
}

/* --- reading the group with HDF5 itself ----------------------------------------- */

/* Attribute `name` of /provenance in path as text (malloc'ed), NULL when absent;
 * it must be a scalar string. */
static char *attr_text(const char *path, const char *name)
{
    hid_t file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (file < 0)
        fail_msg("cannot open %s", path);
    char *value = NULL;
    if (H5Lexists(file, "provenance", H5P_DEFAULT) > 0 &&
        H5Aexists_by_name(file, "provenance", name, H5P_DEFAULT) > 0) {
        hid_t attr = H5Aopen_by_name(file, "provenance", name, H5P_DEFAULT, H5P_DEFAULT);
        hid_t space = H5Aget_space(attr), type = H5Aget_type(attr);
        assert_int_equal(H5Sget_simple_extent_type(space), H5S_SCALAR);
        assert_int_equal(H5Tget_class(type), H5T_STRING);
        assert_true(H5Tis_variable_str(type) > 0);
        char *read = NULL;
        hid_t mem = H5Tcopy(H5T_C_S1);
        H5Tset_size(mem, H5T_VARIABLE);
        H5Tset_cset(mem, H5T_CSET_UTF8);
        assert_true(H5Aread(attr, mem, &read) >= 0);
        value = strdup(read);
        H5free_memory(read);
        H5Tclose(mem);
        H5Tclose(type);
        H5Sclose(space);
        H5Aclose(attr);
    }
    H5Fclose(file);
    return value;
}

static void expect_attr(const char *path, const char *name, const char *want)
{
    char *got = attr_text(path, name);
    if (!got)
        fail_msg("%s: /provenance has no attribute '%s'", path, name);
    if (strcmp(got, want) != 0)
        fail_msg("%s: /provenance %s is '%s', expected '%s'", path, name, got, want);
    free(got);
}

static void expect_attr_contains(const char *path, const char *name, const char *needle)
{
    char *got = attr_text(path, name);
    if (!got)
        fail_msg("%s: /provenance has no attribute '%s'", path, name);
    if (!strstr(got, needle))
        fail_msg("%s: /provenance %s lacks '%s':\n%s", path, name, needle, got);
    free(got);
}

/* "2026-01-02T03:04:05Z" */
static void expect_time(const char *path, const char *name, char *out)
{
    char *got = attr_text(path, name);
    if (!got)
        fail_msg("%s: /provenance has no attribute '%s'", path, name);
    int y, mo, d, h, mi, s;
    char z = 0;
    if (strlen(got) != 20 || sscanf(got, "%4d-%2d-%2dT%2d:%2d:%2d%c", &y, &mo, &d, &h, &mi, &s,
                                    &z) != 7 || z != 'Z' || y < 2020)
        fail_msg("%s: /provenance %s is '%s', expected a UTC time like 2026-01-02T03:04:05Z",
                 path, name, got);
    snprintf(out, 32, "%s", got);
    free(got);
}

static void expect_set(const char *path, const char *set, const char *data, int rows)
{
    char name[32], want[256];
    snprintf(name, sizeof name, "%s_path", set);
    expect_attr(path, name, data);
    snprintf(name, sizeof name, "%s_datasets", set);
    snprintf(want, sizeof want, "'X' [%d, %d] float64, 'y' [%d] int64", rows, IN, rows);
    expect_attr(path, name, want);
    snprintf(name, sizeof name, "%s_checksum", set);
    snprintf(want, sizeof want, "%016llx", (unsigned long long)expected_checksum(data, rows));
    expect_attr(path, name, want);
}

static void expect_provenance(const fixture *f, const char *file)
{
    char path[CAP + 16], ini_line[CAP + 64];
    snprintf(path, sizeof path, "%s/out/%s", f->files->dir, file);
    expect_attr(path, "provenance_version", FN_PROVENANCE_VERSION);
    expect_attr(path, "fusenet_version", fn_version());
    expect_attr(path, "fusenet_commit", fn_version_commit());
    expect_attr(path, "device", "cpu");
    expect_attr(path, "math", "fp32");
    expect_attr(path, "ranks", "1");
    snprintf(ini_line, sizeof ini_line, "batch_size = %d  ; %s:8\n", BATCH, f->files->ini);
    expect_attr_contains(path, "config", ini_line);
    expect_attr_contains(path, "config", "lr = 0.100000001  ; --set train.lr=0.1\n");
    expect_attr_contains(path, "config", "groups = 8  ; default\n");
    expect_set(path, "train", f->train, ROWS);
    expect_set(path, "valid", f->valid, VALID_ROWS);
    char started[32], ended[32];
    expect_time(path, "started", started);
    expect_time(path, "ended", ended);
    assert_true(strcmp(started, ended) <= 0);
}

/* --- the tests ------------------------------------------------------------------- */

static void test_every_file_holds_provenance(void **state)
{
    fixture *f = *state;
    char out[CAP + 32];
    snprintf(out, sizeof out, "output.dir=%s/out", f->files->dir);
    const char *extra[] = {"--set", out, "--set", "train.lr=0.1", NULL};
    if (run_train(f, extra) != 0)
        fail_msg("train failed:\n%s", program_slurp(f->files->err));
    expect_provenance(f, "weights.h5");
    expect_provenance(f, "best.h5");
    expect_provenance(f, "checkpoint.h5");
}

/* Sets attribute `name` of /provenance in path to value. */
static void rewrite_attr(const char *path, const char *name, const char *value)
{
    hid_t file = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    assert_true(file >= 0);
    hid_t group = H5Gopen2(file, "provenance", H5P_DEFAULT);
    assert_true(group >= 0);
    assert_true(H5Aexists(group, name) > 0);
    hid_t type = H5Tcopy(H5T_C_S1);
    H5Tset_size(type, H5T_VARIABLE);
    H5Tset_cset(type, H5T_CSET_UTF8);
    h5_set_attr(group, name, type, type, &value);
    H5Tclose(type);
    H5Gclose(group);
    H5Fclose(file);
}

/* A run continued with --resume keeps its checkpoint's start and says
 * when it resumed; a fresh run has no resumed. */
static void test_resumed_run_keeps_its_start(void **state)
{
    fixture *f = *state;
    char out[CAP + 32], checkpoint[CAP], weights[CAP];
    snprintf(out, sizeof out, "output.dir=%s/resumed", f->files->dir);
    const char *first[] = {"--set", out, "--set", "train.epochs=1", NULL};
    if (run_train(f, first) != 0)
        fail_msg("train failed:\n%s", program_slurp(f->files->err));
    snprintf(checkpoint, sizeof checkpoint, "%s/resumed/checkpoint.h5", f->files->dir);
    snprintf(weights, sizeof weights, "%s/resumed/weights.h5", f->files->dir);
    char *resumed = attr_text(checkpoint, "resumed");
    assert_null(resumed);
    rewrite_attr(checkpoint, "started", "2001-02-03T04:05:06Z");
    const char *again[] = {"--set", out, "--set", "train.epochs=2", "--resume", NULL};
    if (run_train(f, again) != 0)
        fail_msg("train --resume failed:\n%s", program_slurp(f->files->err));
    expect_attr(weights, "started", "2001-02-03T04:05:06Z");
    char when[32];
    expect_time(weights, "resumed", when);
}

/* The set's checksum does not depend on its slabs or on where it was
 * read (the probe's child, or this process), and a memory set of the same
 * values has the same one. */
static void test_checksum_of_what_was_read(void **state)
{
    fixture *f = *state;
    const uint64_t want = expected_checksum(f->train, ROWS);
    fn_data_options opt = {.inputs = "X", .targets = "y", .target_kind = FN_DATA_LABELS,
                           .out_features = CLASSES, .batch_size = BATCH,
                           .memory_budget = BUDGET_BYTES, .shuffle = 1, .seed = 3};
    char text[256];
    uint64_t sum = 0;
    for (int in_process = 0; in_process < 2; in_process++)
        for (int whole = 0; whole < 2; whole++) {
            fn_h5_probe_testing testing = {.in_process = in_process};
            fn_h5_probe_set_testing(&testing);
            opt.memory_budget = whole ? SIZE_MAX : BUDGET_BYTES;
            fn_data *d = NULL;
            EXPECT_OK(fn_data_open(&d, f->train, &opt));
            assert_int_equal(fn_data_slab_rows(d), whole ? ROWS : 35);
            EXPECT_OK(fn_data_fingerprint(d, text, sizeof text, &sum));
            if (sum != want)
                fail_msg("in process %d, whole %d: checksum %016llx, expected %016llx",
                         in_process, whole, (unsigned long long)sum, (unsigned long long)want);
            fn_data_close(d);
        }
    fn_h5_probe_set_testing(NULL);
    float x[ROWS * IN];
    int32_t y[ROWS];
    read_xy(f->train, x, y);
    fn_memory_set *m = NULL;
    EXPECT_OK(fn_memory_set_labels(&m, "same", x, ROWS, IN, y));
    fn_data *d = NULL;
    opt.memory_budget = BUDGET_BYTES;
    EXPECT_OK(fn_data_open_memory(&d, m, &opt));
    EXPECT_OK(fn_data_fingerprint(d, text, sizeof text, &sum));
    assert_true(sum == want);
    fn_data_close(d);
    /* one value changed: another checksum */
    x[ROWS * IN - 1] += 1.0f;
    fn_memory_set *changed = NULL;
    EXPECT_OK(fn_memory_set_labels(&changed, "changed", x, ROWS, IN, y));
    EXPECT_OK(fn_data_open_memory(&d, changed, &opt));
    EXPECT_OK(fn_data_fingerprint(d, text, sizeof text, &sum));
    assert_true(sum != want);
    fn_data_close(d);
    fn_memory_set_destroy(m);
    fn_memory_set_destroy(changed);
}

static void test_print_config(void **state)
{
    fixture *f = *state;
    char out[CAP + 32], dir[CAP];
    snprintf(dir, sizeof dir, "%s/never", f->files->dir);
    snprintf(out, sizeof out, "output.dir=%s", dir);
    const char *extra[] = {"--set", out, "--set", "train.epochs=4", "--print-config", NULL};
    assert_int_equal(run_train(f, extra), 0);
    char *text = program_slurp(f->files->out);
    char want[3 * CAP];
    const char *lines[] = {"[data]\ntrain = ", "[train]\n", "epochs = 4  ; --set train.epochs=4\n",
                           "optimizer = sgd  ; default\n", "momentum = 0  ; default\n",
                           "[output]\n"};
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++)
        if (!strstr(text, lines[i]))
            fail_msg("--print-config lacks '%s':\n%s", lines[i], text);
    snprintf(want, sizeof want, "train = %s  ; %s:2\n", f->train, f->files->ini);
    if (!strstr(text, want))
        fail_msg("--print-config lacks '%s':\n%s", want, text);
    snprintf(want, sizeof want, "dir = %s  ; --set %s\n", dir, out);
    if (!strstr(text, want))
        fail_msg("--print-config lacks '%s':\n%s", want, text);
    snprintf(want, sizeof want, "layers = block 8, linear 3  ; %s:6\n", f->files->ini);
    if (!strstr(text, want))
        fail_msg("--print-config lacks '%s':\n%s", want, text);
    free(text);
    struct stat st;
    assert_int_not_equal(stat(dir, &st), 0); /* nothing made */
    text = program_slurp(f->files->err);
    assert_string_equal(text, "");
    free(text);
}

static void test_predict_info(void **state)
{
    fixture *f = *state;
    char out[CAP + 32], weights[CAP];
    snprintf(out, sizeof out, "output.dir=%s/info", f->files->dir);
    const char *extra[] = {"--set", out, NULL};
    if (run_train(f, extra) != 0)
        fail_msg("train failed:\n%s", program_slurp(f->files->err));
    snprintf(weights, sizeof weights, "%s/info/weights.h5", f->files->dir);
    const char *argv[] = {"--info", weights, NULL};
    assert_int_equal(program_run("predict", argv, NULL, f->files->out, f->files->err), 0);
    char *text = program_slurp(f->files->out);
    char want[3 * CAP];
    snprintf(want, sizeof want, "%s: fusenet %s (commit %s), cpu, math fp32, 1 rank, ", weights,
             fn_version(), fn_version_commit());
    if (strncmp(text, want, strlen(want)) != 0)
        fail_msg("predict --info printed:\n%s\nexpected it to start with:\n%s", text, want);
    snprintf(want, sizeof want,
             "; train %s 'X' [%d, %d] float64, 'y' [%d] int64, checksum %016llx; valid %s",
             f->train, ROWS, IN, ROWS, (unsigned long long)expected_checksum(f->train, ROWS),
             f->valid);
    if (!strstr(text, want))
        fail_msg("predict --info printed:\n%s\nwithout:\n%s", text, want);
    assert_non_null(strchr(text, '\n'));
    assert_string_equal(strchr(text, '\n'), "\n"); /* one line */
    free(text);
    const char *no_file[] = {"--info", NULL};
    assert_int_equal(program_run("predict", no_file, NULL, f->files->out, f->files->err), 2);
    char missing[CAP];
    program_files_path(f->files, "missing.h5", missing, sizeof missing);
    const char *absent[] = {"--info", missing, NULL};
    assert_int_equal(program_run("predict", absent, NULL, f->files->out, f->files->err), 1);
    text = program_slurp(f->files->err);
    if (!strstr(text, missing))
        fail_msg("predict --info of a missing file said:\n%s", text);
    free(text);
}

/* A weights file without the group (as every file before it) loads as
 * before and reads as an empty provenance; its summary says so. */
static void test_file_without_provenance(void **state)
{
    fixture *f = *state;
    char path[CAP];
    program_files_path(f->files, "old.h5", path, sizeof path);
    fn_context *ctx = NULL;
    EXPECT_OK(fn_context_create(&ctx, FN_CPU, -1, FN_MATH_FP32));
    const fn_layer_spec specs[] = {kind_spec("block", 8), kind_spec("linear", 3)};
    const fn_layer_hparams hp = default_hparams(4);
    fn_net *net = NULL;
    EXPECT_OK(fn_model_create(&net, ctx, specs, 2, IN, &hp, 4, 1));
    EXPECT_OK(fn_weights_save(path, net, &(fn_weights_save_options){.config_text = ""}));
    EXPECT_OK(fn_weights_load(net, path));
    fn_provenance *prov = NULL;
    EXPECT_OK(fn_provenance_read(&prov, path));
    assert_int_equal(fn_provenance_count(prov), 0);
    assert_null(fn_provenance_get(prov, "fusenet_version"));
    fn_provenance_destroy(prov);
    char line[512], want[256];
    EXPECT_OK(fn_provenance_file_summary(path, line, sizeof line));
    snprintf(want, sizeof want,
             "no provenance recorded (the file predates it; written by fusenet %s)",
             fn_version());
    assert_string_equal(line, want);
    const char *argv[] = {"--info", path, NULL};
    assert_int_equal(program_run("predict", argv, NULL, f->files->out, f->files->err), 0);
    char *text = program_slurp(f->files->out);
    assert_non_null(strstr(text, want));
    free(text);
    fn_net_destroy(net);
    fn_context_destroy(ctx);
}

static void test_provenance_list(void **state)
{
    (void)state;
    fn_provenance *p = NULL;
    EXPECT_OK(fn_provenance_create(&p));
    char line[256];
    fn_provenance_summary(p, line, sizeof line);
    assert_string_equal(line, "no provenance recorded");
    EXPECT_OK(fn_provenance_set(p, "ranks", "1"));
    EXPECT_OK(fn_provenance_set(p, "device", "cpu"));
    EXPECT_OK(fn_provenance_set(p, "ranks", "2"));
    assert_int_equal(fn_provenance_count(p), 2);
    assert_string_equal(fn_provenance_get(p, "ranks"), "2");
    assert_string_equal(fn_provenance_name(p, 1), "device");
    assert_null(fn_provenance_get(p, "math"));
    fn_provenance_summary(p, line, sizeof line);
    assert_string_equal(line, "fusenet ? (commit ?), cpu, math ?, 2 ranks, ? to ?");
    EXPECT_FAIL(fn_provenance_set(p, "", "x"), FN_ERR_INVALID, "empty name");
    fn_provenance_destroy(p);
}

TEST_MAIN(setup, teardown, cmocka_unit_test(test_every_file_holds_provenance),
          cmocka_unit_test(test_checksum_of_what_was_read), cmocka_unit_test(test_print_config),
          cmocka_unit_test(test_predict_info), cmocka_unit_test(test_file_without_provenance),
          cmocka_unit_test(test_provenance_list),
          cmocka_unit_test(test_resumed_run_keeps_its_start))
