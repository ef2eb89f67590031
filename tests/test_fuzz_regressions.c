/* test_fuzz_regressions.c — replays every fuzz input kept in the tree through
 * the loaders, with the harnesses' own entry points (fuzz/fuzz_entry.h): the
 * crash inputs of tests/fuzz/regressions/<harness>/ and the seed corpora of
 * tests/fuzz/corpus/<harness>/, for the config, data and weights harnesses.
 * Each must run without a crash (the sanitizer build of the test command
 * adds ASan and UBSan) and end in success or a clean error: a known status
 * whose message names the file, with no HDF5 object left open. The inputs
 * on which HDF5 itself crashes or hangs must end in the loaders' probe
 * (src/store/h5_probe.h): a clean "corrupt HDF5 file" error, from a child process
 * whose crash was inside HDF5. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "fuzz/fuzz_entry.h"
#include "fuzz/fuzz_sanitizer.h"
#include "test_main.h"

enum { PATH_CAP = 1024 };

typedef enum harness { CONFIG, DATA, WEIGHTS } harness;
static const char *const names[] = {"config", "data", "weights"};

/* Inputs on which HDF5 1.10.8 itself crashes or hangs are named for it:
 * hdf5_crash_* and hdf5_hang_* in every build, hdf5_asan_* (a heap overflow
 * that breaks nothing visible without AddressSanitizer) in the sanitizer
 * build. The probe must stop them (in at least one of the harness's loads)
 * and no other input: one it stops is a new HDF5 bug, to be named so. */
static int is_hdf5_bug(const char *name, int sanitized)
{
    return strncmp(name, "hdf5_crash_", 11) == 0 || strncmp(name, "hdf5_hang_", 10) == 0 ||
           (sanitized && strncmp(name, "hdf5_asan_", 10) == 0);
}

/* Broken promises of the probe for the input just replayed: stopped
 * (contained > 0) when it must be, and only then. */
static int check_contained(const char *path, const char *name, int contained)
{
    int sanitized = __sanitizer_set_death_callback != NULL;
    int bug = is_hdf5_bug(name, sanitized);
    if (bug && contained == 0) {
        print_message("%s: HDF5 crashes or hangs on it, but no load ended in the probe's "
                      "'corrupt HDF5 file' error\n", path);
        return 1;
    }
    if (!bug && contained > 0 && !(strncmp(name, "hdf5_asan_", 10) == 0)) {
        print_message("%s: the probe stopped a crash or hang in HDF5 on it: a new HDF5 bug? "
                      "(name it hdf5_crash_*, hdf5_hang_* or hdf5_asan_*)\n", path);
        return 1;
    }
    return 0;
}

/* tests/ of the source tree: $FN_SOURCE_DIR/tests, else the working
 * directory (ctest runs the test in tests/). */
static void tests_dir(char *buf, size_t n)
{
    const char *src = getenv("FN_SOURCE_DIR");
    if (src && src[0])
        snprintf(buf, n, "%s/tests", src);
    else
        snprintf(buf, n, ".");
}

/* The whole file at path (*size bytes, plus a NUL), or NULL. */
static uint8_t *read_all(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    struct stat st;
    uint8_t *buf = NULL;
    if (fstat(fileno(f), &st) == 0 && (buf = malloc((size_t)st.st_size + 1))) {
        *size = fread(buf, 1, (size_t)st.st_size, f);
        buf[*size] = '\0';
    }
    fclose(f);
    return buf;
}

/* Runs one input through harness h's entry point; returns broken promises. */
static int replay(harness h, const char *path, fuzz_model *model)
{
    if (h == DATA)
        return fuzz_data_run(model->ctx, path);
    if (h == WEIGHTS)
        return fuzz_weights_run(model, path);
    size_t size = 0;
    uint8_t *data = read_all(path, &size);
    assert_non_null(data);
    int bad = fuzz_config_run(path, data, size);
    free(data);
    return bad;
}

static int is_input(const char *dir, const struct dirent *e)
{
    char path[PATH_CAP];
    struct stat st;
    size_t len = strlen(e->d_name);
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    return e->d_name[0] != '.' && !(len > 3 && strcmp(e->d_name + len - 3, ".md") == 0) &&
           stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* Replays every input of dir (which may be missing); counts them in *files. */
static int replay_dir(harness h, const char *dir, fuzz_model *model, int *files)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    int bad = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (!is_input(dir, e))
            continue;
        char path[PATH_CAP];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        int before = fuzz_probe.contained;
        int b = replay(h, path, model);
        b += check_contained(path, e->d_name, fuzz_probe.contained - before);
        if (b)
            print_message("%s: %d broken promise(s), see above\n", path, b);
        bad += b;
        ++*files;
    }
    closedir(d);
    return bad;
}

static void replay_harness(harness h)
{
    char base[PATH_CAP / 2], dir[PATH_CAP];
    fuzz_model model;
    tests_dir(base, sizeof base);
    fuzz_h5_init(1);
    assert_int_equal(fuzz_model_create(&model), FN_OK);
    int seeds = 0, regressions = 0, bad = 0;
    snprintf(dir, sizeof dir, "%s/fuzz/corpus/%s", base, names[h]);
    bad += replay_dir(h, dir, &model, &seeds);
    snprintf(dir, sizeof dir, "%s/fuzz/regressions/%s", base, names[h]);
    bad += replay_dir(h, dir, &model, &regressions);
    fuzz_model_destroy(&model);
    print_message("fuzz_%s: %d seed(s), %d regression input(s) replayed\n", names[h], seeds,
                  regressions);
    assert_true(seeds > 0);
    assert_int_equal(bad, 0);
}

static void config_inputs(void **state)
{
    (void)state;
    replay_harness(CONFIG);
}

static void data_inputs(void **state)
{
    (void)state;
    replay_harness(DATA);
}

static void weights_inputs(void **state)
{
    (void)state;
    replay_harness(WEIGHTS);
}

TEST_MAIN(NULL, NULL, cmocka_unit_test(config_inputs), cmocka_unit_test(data_inputs),
          cmocka_unit_test(weights_inputs))
