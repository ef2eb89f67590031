/* test_train_determinism.c — two runs of ./train with one seed write
 * identical weight datasets, bit for bit: on the CPU, and on the GPU in each
 * math mode (skipped without a GPU). The datasets are compared, not the
 * files (attributes may differ), every dataset of one file against the same
 * path in the other, with the same shape; a run with another seed must
 * differ, so the comparison can fail. The files' provenance (the group
 * /provenance: attributes only, no dataset) is the same in both runs but
 * for its times, which the comparison of datasets does not see. Uses the
 * digits of data/. */
#define _POSIX_C_SOURCE 200809L
#include <hdf5.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "expect.h"
#include "fusenet/device.h"
#include "fusenet/provenance.h"
#include "program.h"
#include "test_main.h"

enum { PATH_CAP = 1024, MAX_SETS = 64 };

typedef program_files fixture;

static int setup(void **state)
{
    fixture *f = program_files_new("fn_determinism_");
    FILE *out = fopen(f->ini, "w");
    assert_non_null(out);
    char train[PATH_CAP];
    snprintf(train, sizeof train, "%s", source_path("data/digits_train.h5"));
    /* Momentum and weight decay, so every part of the update takes part. */
    fprintf(out,
            "[data]\ntrain = %s\n[model]\nlayers = block 64, block 32, linear 10\ngroups = 8\n"
            "[train]\nbatch_size = 50\nepochs = 2\nlr = 0.05\nmomentum = 0.9\n"
            "weight_decay = 1e-4\nseed = 7\n[run]\nlog_every = 0\n",
            train);
    fclose(out);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    program_files_free(*state);
    return 0;
}

/* Trains into <dir>/<name> with the given device, math and seed. */
static void train(const fixture *f, const char *name, const char *device, const char *math,
                  int seed)
{
    char set_out[PATH_CAP], set_device[64], set_math[64], set_seed[64];
    snprintf(set_out, sizeof set_out, "output.dir=%s/%s", f->dir, name);
    snprintf(set_device, sizeof set_device, "run.device=%s", device);
    snprintf(set_math, sizeof set_math, "run.math=%s", math);
    snprintf(set_seed, sizeof set_seed, "train.seed=%d", seed);
    const char *argv[] = {f->ini,  "--set", set_out,  "--set", set_device, "--set",
                          set_math, "--set", set_seed, NULL};
    int status = program_run("train", argv, NULL, f->out, f->err);
    if (status != 0)
        fail_msg("train (%s, %s, seed %d): exit status %d; stderr:\n%s", device, math, seed,
                 status, program_slurp(f->err));
}

/* --- datasets of a weights file ------------------------------------------------ */

typedef struct dataset_list {
    char names[MAX_SETS][128];
    int n;
} dataset_list;

/* Adds the paths of the datasets under `prefix` (a group of file). With
 * H5Oopen and H5Iget_type, which every HDF5 since 1.8 has unchanged. */
static void add_datasets(hid_t file, const char *prefix, dataset_list *list)
{
    hid_t group = H5Gopen2(file, prefix, H5P_DEFAULT);
    H5G_info_t info;
    if (group < 0 || H5Gget_info(group, &info) < 0)
        fail_msg("cannot list group '%s'", prefix);
    for (hsize_t i = 0; i < info.nlinks; i++) {
        char name[64], path[128];
        if (H5Lget_name_by_idx(group, ".", H5_INDEX_NAME, H5_ITER_INC, i, name, sizeof name,
                               H5P_DEFAULT) < 0)
            fail_msg("cannot read a name in group '%s'", prefix);
        snprintf(path, sizeof path, "%s%s%s", prefix, strcmp(prefix, "/") ? "/" : "", name);
        hid_t obj = H5Oopen(file, path, H5P_DEFAULT);
        H5I_type_t type = obj < 0 ? H5I_BADID : H5Iget_type(obj);
        if (obj >= 0)
            H5Oclose(obj);
        if (type == H5I_GROUP) {
            add_datasets(file, path, list);
        } else if (type == H5I_DATASET) {
            assert_true(list->n < MAX_SETS);
            snprintf(list->names[list->n++], sizeof list->names[0], "%s", path);
        }
    }
    H5Gclose(group);
}

static hid_t open_file(const char *path, dataset_list *list)
{
    hid_t file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (file < 0)
        fail_msg("cannot open %s", path);
    list->n = 0;
    add_datasets(file, "/", list);
    return file;
}

/* The float32 values of a dataset (malloc'ed), its element count in *n. */
static float *read_set(hid_t file, const char *path, const char *name, hsize_t *dims, int *rank,
                       size_t *n)
{
    hid_t set = H5Dopen2(file, name, H5P_DEFAULT);
    if (set < 0)
        fail_msg("%s: no dataset '%s'", path, name);
    hid_t space = H5Dget_space(set);
    *rank = H5Sget_simple_extent_dims(space, dims, NULL);
    *n = (size_t)H5Sget_simple_extent_npoints(space);
    float *v = malloc((*n ? *n : 1) * sizeof(float));
    assert_non_null(v);
    if (H5Dread(set, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) < 0)
        fail_msg("%s: cannot read '%s'", path, name);
    H5Sclose(space);
    H5Dclose(set);
    return v;
}

/* The number of values that differ, over every dataset; a dataset of one
 * file missing from the other, or of another shape, fails the test. */
static size_t count_differences(const char *a, const char *b)
{
    dataset_list la, lb;
    hid_t fa = open_file(a, &la), fb = open_file(b, &lb);
    if (la.n != lb.n || la.n == 0)
        fail_msg("%s holds %d datasets, %s %d", a, la.n, b, lb.n);
    size_t differ = 0;
    for (int i = 0; i < la.n; i++) {
        hsize_t da[H5S_MAX_RANK], db[H5S_MAX_RANK];
        int ra, rb;
        size_t na, nb;
        float *va = read_set(fa, a, la.names[i], da, &ra, &na);
        float *vb = read_set(fb, b, la.names[i], db, &rb, &nb);
        if (ra != rb || na != nb || memcmp(da, db, (size_t)ra * sizeof da[0]) != 0)
            fail_msg("dataset '%s' has another shape in %s than in %s", la.names[i], b, a);
        for (size_t j = 0; j < na; j++)
            differ += memcmp(&va[j], &vb[j], sizeof(float)) != 0;
        free(va);
        free(vb);
    }
    H5Fclose(fa);
    H5Fclose(fb);
    return differ;
}

/* The text without its "dir = " line (each run writes to a folder of its
 * own), malloc'ed. */
static char *without_dir(const char *text)
{
    char *copy = strdup(text);
    assert_non_null(copy);
    char *line = strstr(copy, "\ndir = ");
    if (line) {
        char *end = strchr(line + 1, '\n');
        memmove(line, end ? end : line + strlen(line), strlen(end ? end : line) + 1);
    }
    return copy;
}

/* Every provenance item of a and b alike, but the times of the runs and
 * their output folders. */
static void expect_same_provenance(const char *a, const char *b)
{
    fn_provenance *pa = NULL, *pb = NULL;
    EXPECT_OK(fn_provenance_read(&pa, a));
    EXPECT_OK(fn_provenance_read(&pb, b));
    assert_true(fn_provenance_count(pa) > 0);
    assert_int_equal(fn_provenance_count(pa), fn_provenance_count(pb));
    for (int i = 0; i < fn_provenance_count(pa); i++) {
        const char *name = fn_provenance_name(pa, i), *va = fn_provenance_value(pa, i);
        const char *vb = fn_provenance_get(pb, name);
        if (strcmp(name, "started") == 0 || strcmp(name, "ended") == 0)
            continue;
        if (!vb)
            fail_msg("provenance %s: '%s' in %s, none in %s", name, va, a, b);
        char *ca = without_dir(va), *cb = without_dir(vb);
        if (strcmp(ca, cb) != 0)
            fail_msg("provenance %s: '%s' in %s, '%s' in %s", name, ca, a, cb, b);
        free(ca);
        free(cb);
    }
    fn_provenance_destroy(pa);
    fn_provenance_destroy(pb);
}

static void expect_deterministic(const fixture *f, const char *device, const char *math)
{
    char a[PATH_CAP], b[PATH_CAP], c[PATH_CAP], name[64];
    snprintf(name, sizeof name, "%s_%s_a", device, math);
    train(f, name, device, math, 7);
    snprintf(a, sizeof a, "%s/%s/weights.h5", f->dir, name);
    snprintf(name, sizeof name, "%s_%s_b", device, math);
    train(f, name, device, math, 7);
    snprintf(b, sizeof b, "%s/%s/weights.h5", f->dir, name);
    snprintf(name, sizeof name, "%s_%s_other_seed", device, math);
    train(f, name, device, math, 8);
    snprintf(c, sizeof c, "%s/%s/weights.h5", f->dir, name);
    size_t same_seed = count_differences(a, b);
    if (same_seed != 0)
        fail_msg("%s, %s: two runs with seed 7 differ in %zu values", device, math, same_seed);
    expect_same_provenance(a, b);
    if (count_differences(a, c) == 0)
        fail_msg("%s, %s: seeds 7 and 8 give the same weights: the comparison sees nothing",
                 device, math);
}

static void test_cpu(void **state) { expect_deterministic(*state, "cpu", "fp32"); }

static void test_cuda(void **state)
{
    skip_without_gpu();
    expect_deterministic(*state, "cuda", "fp32");
    expect_deterministic(*state, "cuda", "tf32");
    expect_deterministic(*state, "cuda", "tf32x3");
    expect_deterministic(*state, "cuda", "bf16");
}

TEST_MAIN(NULL, NULL, cmocka_unit_test_setup_teardown(test_cpu, setup, teardown),
          cmocka_unit_test_setup_teardown(test_cuda, setup, teardown))
