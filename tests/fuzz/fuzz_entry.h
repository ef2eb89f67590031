/* fuzz_entry.h — what one fuzz input does to the loaders, shared by the
 * libFuzzer harnesses (fuzz_config.c, fuzz_data.c, fuzz_weights.c) and by the
 * ctest replay of the corpus and the regression inputs
 * (tests/test_fuzz_regressions.c), so both drive the same entry points with
 * the same options.
 *
 * Header-only (static inline) because ctest builds each test from its one
 * source file. Every function returns the number of broken promises it saw,
 * after printing each to stderr; a clean run returns 0. The promises:
 *   - a failure is a known fn_status with a message that names the file (or,
 *     for config overrides, the --set argument);
 *   - no HDF5 file, group, dataset, attribute or dataspace is left open;
 *   - with the loaders' probe on (src/store/h5_probe.h: each file is read in a
 *     forked child first), a crash it contained happened inside HDF5, by the
 *     child's sanitizer report: one in fusenet's code is still a finding.
 * Crashes, leaks and undefined behaviour are the sanitizers' to report.
 *
 * The probe: the replay test runs with it, as train and predict do, and
 * checks that it stops the inputs that crash or hang HDF5 itself
 * (regressions/<harness>/hdf5_crash_*, hdf5_hang_*, hdf5_asan_*). The
 * harnesses run without it, in one process: a fork per load (three per
 * input) made them 20 times slower (~12 instead of ~250 inputs/s), and a
 * crash in the child is lost to libFuzzer's coverage and triage. So a
 * fuzzer still reports HDF5's own crashes as findings: each is checked to
 * be inside HDF5 and then kept under a name above, where the replay test
 * holds the probe to it, and scripts/fuzz.sh leaves those inputs out of
 * the fuzzers' seeds (they would stop a fuzzer at once). */
#ifndef FN_FUZZ_ENTRY_H
#define FN_FUZZ_ENTRY_H

/* The tests get no HDF5 include directory from CMake (only test_data and
 * test_train_cli do): Debian's serial HDF5 is then found by its full name. */
#if defined(__has_include)
#if !__has_include(<hdf5.h>) && __has_include(<hdf5/serial/hdf5.h>)
#include <hdf5/serial/hdf5.h>
#else
#include <hdf5.h>
#endif
#else
#include <hdf5.h>
#endif
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fusenet/block.h"
#include "fusenet/checkpoint.h"
#include "fusenet/config.h"
#include "fusenet/data.h"
#include "fusenet/device.h"
#include "fusenet/input_norm.h"
#include "fusenet/linear.h"
#include "fusenet/loader.h"
#include "fusenet/model.h"
#include "fusenet/provenance.h"
#include "fusenet/sgd.h"
#include "fusenet/weights.h"
#include "store/h5_probe.h"

/* Batches taken per epoch at most, so a huge declared set stays quick. */
enum { FUZZ_MAX_BATCHES = 16 };

/* Override lines inside a config input: "#--set section.key=value". inih
 * reads them as comments; the config entry applies them with fn_config_set. */
#define FUZZ_SET_PREFIX "#--set "

/* A harness's set-up step: on failure its message on stderr and exit 1
 * (nothing can be fuzzed without it). */
static inline void fuzz_setup(fn_status st, const char *harness)
{
    if (st == FN_OK)
        return;
    fprintf(stderr, "%s: %s\n", harness, fn_last_error());
    exit(1);
}

/* 1 when st is clean: OK, or a known failure whose message names `name`
 * (or `alt`, when not NULL). */
static inline int fuzz_clean(fn_status st, const char *what, const char *name, const char *alt)
{
    const char *msg = fn_last_error();
    if (st == FN_OK)
        return 1;
    if (st < FN_ERR_INVALID || st > FN_ERR_RANKS_DIFFER) {
        fprintf(stderr, "fuzz: %s returned unknown status %d\n", what, (int)st);
        return 0;
    }
    if (!msg[0] || (!strstr(msg, name) && !(alt && strstr(msg, alt)))) {
        fprintf(stderr, "fuzz: %s failed (%s) with a message not naming '%s': '%s'\n", what,
                fn_status_name(st), name, msg);
        return 0;
    }
    return 1;
}

/* --- the probe's children ---------------------------------------------------- */

/* Seconds a load may take in the probe's child before it counts as a hang
 * (the replay test: a hang input then costs seconds, not minutes, and a
 * loaded machine still reads a good input well within it). */
#define FUZZ_PROBE_SECONDS 5.0

/* The child's stderr (its sanitizer report) goes to a temporary file, and
 * the loads the probe stopped are counted. One per program: this header is
 * included by one file of each harness and of the replay test. */
static struct {
    int report;    /* descriptor of the report file; -1: none */
    int contained; /* loads that ended in a contained crash or hang */
} fuzz_probe = {-1, 0};

/* Present in sanitizer builds only. */
void __sanitizer_set_death_callback(void (*callback)(void)) __attribute__((weak));

/* The crash handlers as the program started: the sanitizer's, before a test
 * runner (cmocka) puts its own in place. */
static const int fuzz_crash_signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL};
static struct sigaction fuzz_start_handlers[sizeof fuzz_crash_signals / sizeof(int)];

__attribute__((constructor)) static void fuzz_save_handlers(void)
{
    for (size_t i = 0; i < sizeof fuzz_crash_signals / sizeof(int); i++)
        sigaction(fuzz_crash_signals[i], NULL, &fuzz_start_handlers[i]);
}

/* Runs first in each probe child (whose crash signals the probe has reset):
 * puts the sanitizer's handlers back, so a crash comes with a report.
 * libFuzzer's death callback would save the input as a crash of the
 * fuzzer; the parent judges the child instead. */
static inline void fuzz_probe_child_init(void)
{
    for (size_t i = 0; i < sizeof fuzz_crash_signals / sizeof(int); i++)
        sigaction(fuzz_crash_signals[i], &fuzz_start_handlers[i], NULL);
    if (__sanitizer_set_death_callback)
        __sanitizer_set_death_callback(NULL);
    if (fuzz_probe.report >= 0 && ftruncate(fuzz_probe.report, 0) == 0 &&
        lseek(fuzz_probe.report, 0, SEEK_SET) == 0)
        dup2(fuzz_probe.report, STDERR_FILENO);
}

/* 1 when the innermost frame of a sanitizer report, past the sanitizer's
 * own frames and libc's memcpy, is in HDF5. A UBSan report is never HDF5's
 * (HDF5 is not instrumented). */
static inline int fuzz_report_in_hdf5(const char *report)
{
    if (strstr(report, "runtime error:"))
        return 0;
    static const char *const runtime[] = {"sanitizer", "interceptor", "asan", "sysdeps",
                                          "libc.so"};
    for (const char *line = report; *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        const char *p = line + strspn(line, " ");
        if (p[0] == '#' && p[1] >= '0' && p[1] <= '9') {
            char frame[512];
            snprintf(frame, sizeof frame, "%.*s", (int)(len < 511 ? len : 511), line);
            if (strstr(frame, "libhdf5"))
                return 1;
            int skip = 0;
            for (size_t i = 0; i < sizeof runtime / sizeof runtime[0]; i++)
                skip |= strstr(frame, runtime[i]) != NULL;
            if (!skip)
                return 0;
        }
        line += len + (end ? 1 : 0);
    }
    return 0;
}

/* 1 unless the last load ended in a crash the probe contained whose report
 * (with sanitizers) does not place it in HDF5. */
static inline int fuzz_probe_clean(const char *what, const char *path)
{
    const char *msg = fn_last_error();
    if (!strstr(msg, "corrupt HDF5 file: the HDF5 library"))
        return 1;
    fuzz_probe.contained++;
    if (strstr(msg, "did not finish"))
        return 1; /* killed in a loop: no report to judge */
    char report[16384];
    ssize_t n = fuzz_probe.report < 0 ? -1 : pread(fuzz_probe.report, report, sizeof report - 1, 0);
    report[n > 0 ? n : 0] = '\0';
    int sanitized = __sanitizer_set_death_callback != NULL;
    if (!sanitized || fuzz_report_in_hdf5(report))
        return 1;
    fprintf(stderr, "fuzz: %s(%s): the probe's child crashed outside HDF5:\n%s\n", what, path,
            report[0] ? report : "(no report)");
    return 0;
}

/* Silences HDF5's printing of error stacks and, with probe, sets up the
 * probe's children (else the loaders run in this process alone); call
 * before the first input. */
static inline void fuzz_h5_init(int probe)
{
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    fn_h5_probe_testing t = {.in_process = 1};
    if (probe) {
        FILE *report = tmpfile(); /* open until exit */
        fuzz_probe.report = report ? fileno(report) : -1;
        t = (fn_h5_probe_testing){.max_seconds = FUZZ_PROBE_SECONDS,
                                  .child_init = fuzz_probe_child_init};
    }
    fn_h5_probe_set_testing(&t);
}

/* 1 when HDF5 has no file, group, dataset, attribute or dataspace open.
 * Datatypes are not counted: HDF5 registers some of its own lazily, so
 * their number is no measure (and LeakSanitizer cannot see a forgotten
 * identifier, which HDF5's tables still reach). */
static inline int fuzz_h5_closed(const char *what)
{
    hsize_t spaces = 0;
    ssize_t objects = H5Fget_obj_count((hid_t)H5F_OBJ_ALL, H5F_OBJ_ALL);
    H5Inmembers(H5I_DATASPACE, &spaces);
    if (objects == 0 && spaces == 0)
        return 1;
    fprintf(stderr, "fuzz: %s left HDF5 identifiers open: %zd objects, %llu dataspaces\n", what,
            objects, (unsigned long long)spaces);
    return 0;
}

/* --- config ----------------------------------------------------------------- */

/* Applies one "#--set " line of the input (text of len bytes after the
 * prefix) to cfg; returns the broken promises. */
static inline int fuzz_config_override(fn_config *cfg, const char *text, size_t len)
{
    char *assignment = malloc(len + 1);
    if (!assignment)
        return 0;
    memcpy(assignment, text, len);
    assignment[len] = '\0';
    fn_clear_error();
    fn_status st = fn_config_set(cfg, assignment);
    int bad = !fuzz_clean(st, "fn_config_set", "--set", NULL);
    free(assignment);
    return bad;
}

/* Applies every override line of data[0, size) to cfg. */
static inline int fuzz_config_overrides(fn_config *cfg, const uint8_t *data, size_t size)
{
    const size_t plen = strlen(FUZZ_SET_PREFIX);
    int bad = 0;
    for (size_t line = 0; line < size;) {
        const uint8_t *nl = memchr(data + line, '\n', size - line);
        size_t end = nl ? (size_t)(nl - data) : size;
        if (end - line >= plen && memcmp(data + line, FUZZ_SET_PREFIX, plen) == 0) {
            const char *text = (const char *)data + line + plen;
            if (!memchr(text, '\0', end - line - plen))
                bad += fuzz_config_override(cfg, text, end - line - plen);
        }
        line = end + 1;
    }
    return bad;
}

/* Loads the config file at path (whose bytes are data), applies its override
 * lines, runs the cross-key checks and frees it. */
static inline int fuzz_config_run(const char *path, const uint8_t *data, size_t size)
{
    fn_config *cfg = NULL;
    fn_clear_error();
    fn_status st = fn_config_load(&cfg, path);
    if (st != FN_OK)
        return !fuzz_clean(st, "fn_config_load", path, NULL) + (cfg != NULL);
    int bad = fuzz_config_overrides(cfg, data, size);
    fn_clear_error();
    st = fn_config_finish(cfg);
    bad += !fuzz_clean(st, "fn_config_finish", path, "--set");
    fn_config_destroy(cfg);
    return bad;
}

/* --- data sets -------------------------------------------------------------- */

/* The three ways train and predict open a set: labels "y" for
 * cross-entropy, float targets "t" for mse read in slabs of a few rows, and
 * inputs only. */
static inline fn_data_options fuzz_data_options(int which)
{
    fn_data_options o = {.inputs = "X", .batch_size = 3, .memory_budget = 1 << 20,
                         .shuffle = 1, .seed = 7};
    if (which == 0) {
        o.targets = "y";
        o.target_kind = FN_DATA_LABELS;
        o.out_features = 4;
    } else if (which == 1) {
        o.targets = "t";
        o.target_kind = FN_DATA_FLOATS;
        o.out_features = 2;
        o.batch_size = 2;
        o.memory_budget = 64;
    } else {
        o.batch_size = 5;
        o.shuffle = 0;
    }
    return o;
}

/* Takes the batches of one epoch (at most FUZZ_MAX_BATCHES) through a
 * synchronous loader, as predict does, then seeks. The loader's buffers
 * hold a batch of rows, of whatever width the file declares: running out
 * of memory for them is clean, though it names no file. */
static inline int fuzz_data_walk(fn_context *ctx, fn_data *d, const char *path)
{
    const fn_loader_options sync = {.mode = FN_LOADER_SYNC};
    fn_loader *l = NULL;
    fn_clear_error();
    fn_status st = fn_loader_create(&l, ctx, d, &sync);
    if (st != FN_OK)
        return !fuzz_clean(st, "fn_loader_create", path, "out of host memory");
    fn_batch b;
    st = fn_loader_start(l, 0, 0);
    for (int i = 0; st == FN_OK && i < FUZZ_MAX_BATCHES; i++) {
        fn_clear_error();
        st = fn_loader_next(l, &b);
        if (st == FN_OK && b.rows == 0)
            break;
    }
    int bad = !fuzz_clean(st, "fn_loader_next", path, NULL);
    fn_clear_error();
    st = fn_loader_start(l, 1, fn_data_batches(d) / 2);
    if (st == FN_OK)
        st = fn_loader_next(l, &b);
    bad += !fuzz_clean(st, "fn_loader_start/next", path, NULL);
    fn_loader_destroy(l);
    return bad;
}

/* Opens the HDF5 file at path as a data set in each of the three ways. */
static inline int fuzz_data_run(fn_context *ctx, const char *path)
{
    int bad = 0;
    for (int which = 0; which < 3; which++) {
        fn_data_options opt = fuzz_data_options(which);
        fn_data *d = NULL;
        fn_clear_error();
        fn_status st = fn_data_open(&d, path, &opt);
        bad += !fuzz_clean(st, "fn_data_open", path, NULL);
        bad += st != FN_OK && !fuzz_probe_clean("fn_data_open", path);
        if (st == FN_OK)
            bad += fuzz_data_walk(ctx, d, path);
        fn_data_close(d);
        bad += !fuzz_h5_closed("fn_data_open/close");
    }
    return bad;
}

/* --- weights and checkpoints ------------------------------------------------ */

/* A fixed network (3 -> block 4, groups 2 -> linear 2) with an SGD optimiser
 * that keeps momentum buffers: what the seeds were written from. */
typedef struct fuzz_model {
    fn_context *ctx;
    fn_net *net;
    fn_sgd *opt;
} fuzz_model;

static inline void fuzz_model_destroy(fuzz_model *m)
{
    fn_sgd_destroy(m->opt);
    fn_net_destroy(m->net);
    fn_context_destroy(m->ctx);
    *m = (fuzz_model){0};
}

static inline fn_status fuzz_model_create(fuzz_model *m)
{
    *m = (fuzz_model){0};
    const fn_layer_spec block = {&fn_block_kind, 4, 0}, linear = {&fn_linear_kind, 2, 0};
    const fn_layer_hparams hp = {.groups = 2, .eps = 1e-5f, .negative_slope = 0.01f};
    fn_rng rng = {.seed = 1, .offset = 0};
    fn_sgd_config sgd = fn_sgd_config_default(0.1f);
    sgd.momentum = 0.9f;
    fn_status st = fn_context_create(&m->ctx, FN_CPU, -1, FN_MATH_FP32);
    if (st == FN_OK)
        st = fn_net_create(&m->net, m->ctx, 4);
    if (st == FN_OK)
        st = fn_model_add_layer(m->net, &block, 3, &hp, &rng);
    if (st == FN_OK)
        st = fn_model_add_layer(m->net, &linear, 4, &hp, &rng);
    if (st == FN_OK)
        st = fn_sgd_create(&m->opt, m->ctx, fn_net_params(m->net), fn_net_n_params(m->net),
                           &sgd);
    if (st != FN_OK)
        fuzz_model_destroy(m);
    return st;
}

/* Builds a network from the file, loads it into the fixed network as weights
 * and as a checkpoint, and reads its input standardisation. */
static inline int fuzz_weights_run(fuzz_model *m, const char *path)
{
    fn_net *built = NULL;
    fn_train_state state;
    fn_clear_error();
    fn_status st = fn_weights_build(&built, m->ctx, path, 4);
    int bad = !fuzz_clean(st, "fn_weights_build", path, NULL);
    bad += st != FN_OK && !fuzz_probe_clean("fn_weights_build", path);
    fn_net_destroy(built);
    bad += !fuzz_h5_closed("fn_weights_build");
    fn_clear_error();
    st = fn_weights_load(m->net, path);
    bad += !fuzz_clean(st, "fn_weights_load", path, NULL);
    bad += st != FN_OK && !fuzz_probe_clean("fn_weights_load", path);
    bad += !fuzz_h5_closed("fn_weights_load");
    fn_clear_error();
    st = fn_checkpoint_load(path, m->net, fn_sgd_optimizer(m->opt), &state);
    bad += !fuzz_clean(st, "fn_checkpoint_load", path, NULL);
    bad += st != FN_OK && !fuzz_probe_clean("fn_checkpoint_load", path);
    bad += !fuzz_h5_closed("fn_checkpoint_load");
    /* The input standardisation group, for the fixed network's 3 input
     * columns. */
    fn_input_norm *norm = NULL;
    fn_clear_error();
    st = fn_input_norm_load(&norm, m->ctx, path, 3);
    bad += !fuzz_clean(st, "fn_input_norm_load", path, NULL);
    bad += st != FN_OK && !fuzz_probe_clean("fn_input_norm_load", path);
    fn_input_norm_destroy(norm);
    bad += !fuzz_h5_closed("fn_input_norm_load");
    /* Its provenance, as predict --info reads it. */
    char line[512];
    fn_clear_error();
    st = fn_provenance_file_summary(path, line, sizeof line);
    bad += !fuzz_clean(st, "fn_provenance_file_summary", path, NULL);
    bad += st != FN_OK && !fuzz_probe_clean("fn_provenance_file_summary", path);
    bad += !fuzz_h5_closed("fn_provenance_file_summary");
    return bad;
}

#endif
