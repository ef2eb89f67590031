/* test_predict_memory.c — the memory predict's network takes and is checked
 * for: forward passes only, at most as many rows a batch as the inputs have.
 * - A network built from a weights file (fn_weights_build) has no
 *   gradients, no block dz cache and no gradient buffers between its
 *   layers; backward on it is an error; fn_model_memory_need with
 *   forward_only counts exactly what it allocated.
 * - predict under RLIMIT_AS of 4 GiB (the limit the check reads): --batch
 *   1048576 over the corpus' 24 rows runs (its batches hold 24 rows); a
 *   network whose activations for all 60000 rows of its inputs do not fit
 *   is refused naming the capped batch and the --batch that would fit.
 *   These skip under AddressSanitizer, which cannot run under RLIMIT_AS.
 * - A weights file of a few KB or MB claiming a 16384 x 16384 layer (1 GiB,
 *   within the limit), whose datasets are too small or declared but not
 *   stored: predict, export and train's [model] init each refuse it naming
 *   the dataset, with a peak resident size (the program's and its probe
 *   child's, from wait4) far below what the claim would take. */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE /* wait4 */
#include <fcntl.h>
#include <hdf5.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "expect.h"
#include "fusenet/layer_kind.h"
#include "fusenet/model.h"
#include "fusenet/net.h"
#include "fusenet/weights.h"
#include "h5_write.h"
#include "program.h"
#include "layer_specs.h"
#include "test_main.h"
#include "under_asan.h"
#include "nn/model_memory.h"

enum { CAP = 1024, IN = 6 /* the corpus' good.h5 */ };
static const double LIMIT = 4.0 * 1024 * 1024 * 1024;

static int setup(void **state)
{
    *state = program_files_new("fn_predict_memory_");
    return 0;
}

static int teardown(void **state)
{
    program_files_free(*state);
    return 0;
}

/* weights.h5 of block width (groups groups), linear 4, for IN inputs. */
static void write_weights(const char *path, int width, int groups)
{
    fn_context *cpu = NULL;
    EXPECT_OK(fn_context_create(&cpu, FN_CPU, -1, FN_MATH_FP32));
    const fn_layer_spec specs[] = {kind_spec("block", width), kind_spec("linear", 4)};
    const fn_layer_hparams hp = default_hparams(groups);
    fn_net *net = NULL;
    EXPECT_OK(fn_model_create(&net, cpu, specs, 2, IN, &hp, 1, 1));
    EXPECT_OK(fn_weights_save(path, net, NULL));
    fn_net_destroy(net);
    fn_context_destroy(cpu);
}

static void test_built_forward_only(void **state)
{
    program_files *f = *state;
    const char *path = program_files_at(f, "w.h5");
    write_weights(path, 16, 4);
    fn_context *cpu = NULL;
    EXPECT_OK(fn_context_create(&cpu, FN_CPU, -1, FN_MATH_FP32));
    enum { BATCH = 5 };
    fn_net *net = NULL;
    EXPECT_OK(fn_weights_build(&net, cpu, path, BATCH));
    double params = 0, buffers = 0;
    for (int i = 0; i < fn_net_n_params(net); i++) {
        const fn_param *p = fn_net_param(net, i);
        params += (double)fn_tensor_count(&p->value) * sizeof(float);
        if (p->grad.data || fn_tensor_count(&p->grad))
            fail_msg("parameter %d (%s) has a gradient in a network for forward passes", i,
                     p->name);
    }
    for (int i = 0; i < fn_net_n_layers(net); i++)
        buffers += (double)fn_layer_buffer_bytes(fn_net_layer(net, i));
    /* The block caches z [5, 16], mean and rstd [5, 4]; no dz. */
    assert_true(buffers == BATCH * (16 + 2 * 4) * sizeof(float));
    const fn_layer_spec specs[] = {kind_spec("block", 16), kind_spec("linear", 4)};
    fn_layer_hparams hp = default_hparams(4);
    hp.forward_only = 1;
    fn_model_memory need;
    fn_model_memory_need(specs, 2, IN, &hp, BATCH, &need);
    assert_true(need.params == params && need.grads == 0);
    /* Per row: the block's z [16], mean and rstd [4] and output [16]; the
     * linear's output [4]: no gradient between the layers. */
    assert_true(need.activations == BATCH * (16 + 2 * 4 + 16 + 4) * sizeof(float));
    fn_tensor x = {0}, y = {0}, dy = {0};
    EXPECT_OK(fn_tensor_alloc(&x, BATCH, IN, FN_CPU));
    EXPECT_OK(fn_tensor_alloc(&dy, BATCH, 4, FN_CPU));
    EXPECT_OK(fn_net_forward(net, &x, &y));
    EXPECT_FAIL(fn_net_backward(net, &dy), FN_ERR_INVALID, "forward passes only");
    EXPECT_FAIL(fn_layer_backward(fn_net_layer(net, 1), &dy, NULL), FN_ERR_INVALID,
                "forward passes only");
    fn_tensor_free(&x);
    fn_tensor_free(&dy);
    fn_net_destroy(net);
    fn_context_destroy(cpu);
}

/* program argv (NULL-terminated) under RLIMIT_AS = LIMIT: its exit status;
 * stdout and stderr in f->out and f->err; *peak_kb (when not NULL) the
 * largest resident size of it and the children it waited for. */
static int run_limited(const program_files *f, const char *program, const char *const *argv,
                       long *peak_kb)
{
    const char *full[16] = {program_path(program)};
    int n = 1;
    for (; argv[n - 1] && n < 15; n++)
        full[n] = argv[n - 1];
    full[n] = NULL;
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        struct rlimit as = {(rlim_t)LIMIT, (rlim_t)LIMIT};
        int out = open(f->out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int err = open(f->err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (setrlimit(RLIMIT_AS, &as) != 0 || out < 0 || err < 0 || dup2(out, 1) < 0 ||
            dup2(err, 2) < 0)
            _exit(126);
        execv(full[0], (char *const *)full);
        _exit(127);
    }
    int status = 0;
    struct rusage usage = {0};
    assert_int_equal(wait4(pid, &status, 0, &usage), pid);
    if (!WIFEXITED(status))
        fail_msg("%s died of signal %d under RLIMIT_AS", program, WTERMSIG(status));
    if (peak_kb)
        *peak_kb = usage.ru_maxrss;
    return WEXITSTATUS(status);
}

static int predict_limited(const program_files *f, const char *const *argv)
{
    return run_limited(f, "predict", argv, NULL);
}

static void skip_under_asan(void)
{
    if (UNDER_ASAN) {
        print_message("skipped: AddressSanitizer cannot run under RLIMIT_AS\n");
        skip();
    }
}

static void test_batch_capped_at_rows(void **state)
{
    skip_under_asan();
    program_files *f = *state;
    char weights[CAP], out[CAP];
    snprintf(weights, sizeof weights, "%s", program_files_at(f, "w.h5"));
    snprintf(out, sizeof out, "%s", program_files_at(f, "out.h5"));
    /* 2^20 rows of this network's activations take 8.7 GB; 24 rows 0.2 MB. */
    write_weights(weights, 1024, 8);
    const char *argv[] = {weights, source_path("tests/bad_inputs/good.h5"), out, "--device",
                          "cpu", "--batch", "1048576", NULL};
    int status = predict_limited(f, argv);
    char *text = program_slurp(f->out);
    char *err = program_slurp(f->err);
    if (status != 0 || !strstr(text, "predict: 24 rows written"))
        fail_msg("exit status %d (expected 0, 24 rows written); stdout:\n%s\nstderr:\n%s", status,
                 text, err);
    free(text);
    free(err);
}

static void test_suggests_batch(void **state)
{
    skip_under_asan();
    program_files *f = *state;
    char weights[CAP], inputs[CAP], out[CAP];
    snprintf(weights, sizeof weights, "%s", program_files_at(f, "w.h5"));
    snprintf(inputs, sizeof inputs, "%s", program_files_at(f, "x.h5"));
    snprintf(out, sizeof out, "%s", program_files_at(f, "out.h5"));
    /* 131 KB of activations a row: 60000 rows take 7.9 GB. */
    write_weights(weights, 16384, 16);
    enum { ROWS = 60000 };
    float *x = calloc((size_t)ROWS * IN, sizeof *x);
    assert_non_null(x);
    hid_t file = H5Fcreate(inputs, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    assert_true(file >= 0);
    h5_put(file, "X", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 2, ROWS, IN, x);
    H5Fclose(file);
    free(x);
    const char *argv[] = {weights, inputs, out, "--device", "cpu", "--batch", "1048576", NULL};
    int status = predict_limited(f, argv);
    char *err = program_slurp(f->err);
    long most = 0;
    const char *fits = strstr(err, "batches of at most ");
    if (status != 1 || !strstr(err, "activations for batches of 60000 rows") || !fits ||
        sscanf(fits, "batches of at most %ld rows would fit: give --batch", &most) != 1 ||
        most < 1 || most >= ROWS)
        fail_msg("exit status %d (expected 1, naming batches of 60000 rows and the --batch that "
                 "fits); stderr:\n%s", status, err);
    char hint[96];
    snprintf(hint, sizeof hint, "give --batch %ld or less", most);
    if (!strstr(err, hint))
        fail_msg("stderr lacks '%s':\n%s", hint, err);
    free(err);
    assert_int_not_equal(access(out, F_OK), 0);
}

/* --- sizes a weights file claims ------------------------------------------ */

enum { CLAIM = 16384 }; /* a CLAIM x CLAIM layer: 1 GiB of float32 */

/* Dataset name of shape [rows, cols] as fusenet writes it (chunked by
 * rows, Fletcher-32), its first chunk of 16 rows written and no other. */
static void put_first_chunk(hid_t group, const char *name, hsize_t rows, hsize_t cols)
{
    if (H5Lexists(group, name, H5P_DEFAULT) > 0)
        assert_true(H5Ldelete(group, name, H5P_DEFAULT) >= 0);
    hsize_t dims[2] = {rows, cols}, chunk[2] = {16, cols}, start[2] = {0, 0};
    hid_t space = H5Screate_simple(2, dims, NULL), dcpl = H5Pcreate(H5P_DATASET_CREATE);
    assert_true(H5Pset_chunk(dcpl, 2, chunk) >= 0 && H5Pset_fletcher32(dcpl) >= 0);
    hid_t set = H5Dcreate2(group, name, H5T_IEEE_F32LE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    assert_true(set >= 0);
    float *values = calloc(16 * cols, sizeof *values);
    assert_non_null(values);
    hid_t mem = H5Screate_simple(2, chunk, NULL);
    assert_true(H5Sselect_hyperslab(space, H5S_SELECT_SET, start, NULL, chunk, NULL) >= 0);
    assert_true(H5Dwrite(set, H5T_NATIVE_FLOAT, mem, space, H5P_DEFAULT, values) >= 0);
    free(values);
    H5Sclose(mem);
    H5Dclose(set);
    H5Pclose(dcpl);
    H5Sclose(space);
}

/* A weights file of "linear CLAIM, linear CLAIM, linear 4" for IN inputs
 * whose groups claim those sizes: with `declared`, layer 0 and 2 stored in
 * full and layer 1's weight [CLAIM, CLAIM] declared with one chunk of
 * 1024 written (1.1 MB of file); without, every dataset of a "linear 4,
 * linear 4, linear 4" file (13 KB). */
static void write_claim(const char *path, int declared)
{
    fn_context *cpu = NULL;
    EXPECT_OK(fn_context_create(&cpu, FN_CPU, -1, FN_MATH_FP32));
    const fn_layer_kind *linear = NULL;
    EXPECT_OK(fn_layer_kind_find("linear", &linear));
    const int width = declared ? CLAIM : 4;
    const fn_layer_spec specs[] = {{linear, width, 0}, {linear, width, 0}, {linear, 4, 0}};
    const fn_layer_hparams hp = {0};
    fn_net *net = NULL;
    /* Layer 1 of width 4 when declared: its datasets are replaced below. */
    const fn_layer_spec small[] = {{linear, width, 0}, {linear, 4, 0}, {linear, 4, 0}};
    EXPECT_OK(fn_model_create(&net, cpu, declared ? small : specs, 3, IN, &hp, 1, 1));
    EXPECT_OK(fn_weights_save(path, net, NULL));
    fn_net_destroy(net);
    fn_context_destroy(cpu);
    hid_t file = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    assert_true(file >= 0);
    const char *groups[] = {"layer0", "layer1", "layer2"};
    const char *keys[] = {"out_features", "in_features", "out_features", "in_features"};
    const int claim = CLAIM;
    for (int k = 0; k < 4; k++) {
        hid_t g = H5Gopen2(file, groups[(k + 1) / 2], H5P_DEFAULT);
        assert_true(g >= 0);
        h5_set_attr(g, keys[k], H5T_STD_I32LE, H5T_NATIVE_INT, &claim);
        if (declared && k == 1) {
            put_first_chunk(g, "weight", CLAIM, CLAIM);
            float bias[CLAIM] = {0};
            assert_true(H5Ldelete(g, "bias", H5P_DEFAULT) >= 0);
            h5_put(g, "bias", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 1, CLAIM, 0, bias);
        }
        H5Gclose(g);
    }
    if (declared) { /* layer2's weight [4, CLAIM] */
        hid_t g = H5Gopen2(file, "layer2", H5P_DEFAULT);
        float *w = calloc(4 * CLAIM, sizeof *w);
        assert_true(g >= 0 && w);
        assert_true(H5Ldelete(g, "weight", H5P_DEFAULT) >= 0);
        h5_put(g, "weight", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 2, 4, CLAIM, w);
        free(w);
        H5Gclose(g);
    }
    H5Fclose(file);
}

/* The program refuses the file, exit 1, stderr holding want, its peak
 * resident size under 256 MB (the claim alone is 1024 MB; the programs
 * take about 20 MB). */
static void expect_refused_small(const program_files *f, const char *program,
                                 const char *const *argv, const char *want)
{
    long peak_kb = 0;
    int status = run_limited(f, program, argv, &peak_kb);
    char *err = program_slurp(f->err);
    if (status != 1 || !strstr(err, want))
        fail_msg("%s: exit status %d (expected 1, naming '%s'); stderr:\n%s", program, status,
                 want, err);
    free(err);
    if (peak_kb > 256 * 1024)
        fail_msg("%s: peak resident size %ld KB before refusing a file of a few KB or MB "
                 "(expected under 256 MB)", program, peak_kb);
}

static void refused_by(const program_files *f, const char *weights, const char *want)
{
    char out[CAP], dir[CAP], init[CAP + 16];
    snprintf(out, sizeof out, "%s", program_files_at(f, "out.h5"));
    snprintf(dir, sizeof dir, "output.dir=%s", program_files_at(f, "run"));
    snprintf(init, sizeof init, "model.init=%s", weights);
    const char *predict[] = {weights, source_path("tests/bad_inputs/good.h5"), out, "--device",
                             "cpu", NULL};
    expect_refused_small(f, "predict", predict, want);
    snprintf(out, sizeof out, "%s", program_files_at(f, "model.onnx"));
    const char *export[] = {weights, out, NULL};
    expect_refused_small(f, "export", export, want);
    char ini[CAP], data[CAP + 16];
    snprintf(ini, sizeof ini, "%s", source_path("tests/bad_inputs/train.ini"));
    snprintf(data, sizeof data, "data.train=%s", source_path("tests/bad_inputs/good.h5"));
    const char *train[] = {ini, "--set", init, "--set", dir, "--set", data, NULL};
    expect_refused_small(f, "train", train, want);
    assert_int_not_equal(access(out, F_OK), 0);
}

static void test_claimed_layers_not_stored(void **state)
{
    skip_under_asan();
    program_files *f = *state;
    char weights[CAP];
    snprintf(weights, sizeof weights, "%s", program_files_at(f, "w.h5"));
    write_claim(weights, 0);
    refused_by(f, weights, "w.h5: group 'layer0': dataset 'weight' has shape [4, 6], expected "
               "[16384, 6]");
    write_claim(weights, 1);
    refused_by(f, weights, "w.h5: group 'layer1': dataset 'weight' declares [16384, 16384] in "
               "1024 chunks but stores only 1 of them");
}

TEST_MAIN(NULL, NULL, cmocka_unit_test_setup_teardown(test_built_forward_only, setup, teardown),
          cmocka_unit_test_setup_teardown(test_batch_capped_at_rows, setup, teardown),
          cmocka_unit_test_setup_teardown(test_suggests_batch, setup, teardown),
          cmocka_unit_test_setup_teardown(test_claimed_layers_not_stored, setup, teardown))
