/* test_export.c — the exports of export.h and the safetensors reader of
 * safetensors.h on the CPU: a layer kind without an export row is refused
 * by name and leaves no file; HDF5 -> safetensors -> [model] init's reads
 * (fn_weights_build, fn_weights_load, fn_weights_input_norm) -> HDF5 gives
 * the same values bit for bit; damaged or foreign safetensors files (short,
 * a header longer than the file, bad JSON, another format or version, a
 * missing tensor, a wrong shape, a NaN) are refused naming the problem;
 * a header's keys, tensors and byte ranges are checked before anything
 * its sizes claim is allocated (a key twice, two tensors sharing bytes, a
 * small file claiming 6 GiB, a header over the 100 MiB cap), and reading
 * 200000 short metadata strings takes memory of the header's size; its
 * metadata is named as what it is (a slope out of range, a number where
 * text goes, sizes that disagree, a kind's raw bytes escaped); a write that
 * fails (a directory at the path, a full disk) leaves no file and no
 * temporary, and a temporary of another process at "<path>.tmp" is left
 * alone; a model and its check file are published together or not at
 * all, and an export without one removes the earlier check file. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <dirent.h>
#include <unistd.h>

#include <cmocka.h>

#include "expect.h"
#include "program.h"
#include "test_main.h"
#include "under_asan.h"
#include "fusenet/block.h"
#include "fusenet/dense.h"
#include "fusenet/dropout.h"
#include "fusenet/export.h"
#include "fusenet/linear.h"
#include "fusenet/model.h"
#include "fusenet/safetensors.h"
#include "fusenet/weights.h"

enum { IN = 6, CAP = 512 };

typedef struct fixture {
    fn_context *ctx;
    fn_net *net;
    fn_input_norm *norm;
    char dir[64];
} fixture;

/* block 8 (groups 2, eps 1e-3, slope 0.2), linear 3, on standardised
 * inputs; gamma and beta drawn away from their defaults. */
static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    *state = f;
    EXPECT_OK(fn_context_create(&f->ctx, FN_CPU, -1, FN_MATH_FP32));
    const fn_layer_spec specs[2] = {{&fn_block_kind, 8, 0}, {&fn_linear_kind, 3, 0}};
    const fn_layer_hparams hp[2] = {{.groups = 2, .eps = 1e-3f, .negative_slope = 0.2f},
                                    {.groups = 1, .eps = 1e-5f, .negative_slope = 0.01f}};
    EXPECT_OK(fn_model_create_each(&f->net, f->ctx, specs, 2, IN, hp, 4, 7));
    for (int i = 0; i < fn_net_n_params(f->net); i++) {
        fn_param *p = fn_net_param(f->net, i);
        for (size_t k = 0; k < fn_tensor_count(&p->value); k++)
            p->value.data[k] += 0.001f * (float)((k * 7919 + (size_t)i * 104729) % 997) - 0.5f;
    }
    float mean[IN], sd[IN];
    for (int j = 0; j < IN; j++) {
        mean[j] = 0.25f * (float)j - 1.0f;
        sd[j] = 0.5f + 0.125f * (float)j;
    }
    EXPECT_OK(fn_input_norm_create(&f->norm, f->ctx, IN, mean, sd));
    program_temp_dir(f->dir, sizeof f->dir, "fn_export_");
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    program_remove_dir(f->dir);
    fn_input_norm_destroy(f->norm);
    fn_net_destroy(f->net);
    fn_context_destroy(f->ctx);
    free(f);
    return 0;
}

static const char *path_in(const fixture *f, const char *name, char *buf)
{
    snprintf(buf, CAP, "%s/%s", f->dir, name);
    return buf;
}

static int exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

/* No temporary of path's ("<path>.tmp", "<path>.<pid>-<n>.tmp") in its
 * directory. */
static void expect_no_tmp(const char *path)
{
    char dir[CAP];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    assert_non_null(slash);
    *slash = '\0';
    const char *base = slash + 1;
    DIR *d = opendir(dir);
    assert_non_null(d);
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        const size_t n = strlen(e->d_name);
        if (strncmp(e->d_name, base, strlen(base)) == 0 && n > 4 &&
            strcmp(e->d_name + n - 4, ".tmp") == 0)
            fail_msg("%s/%s was left behind", dir, e->d_name);
    }
    closedir(d);
}

static void expect_nothing_at(const char *path)
{
    assert_false(exists(path));
    expect_no_tmp(path);
}

static void expect_error(fn_status st, fn_status want, const char *part)
{
    assert_int_equal(st, want);
    if (!strstr(fn_last_error(), part))
        fail_msg("message '%s' lacks '%s'", fn_last_error(), part);
}

/* Every parameter of a and b, bit for bit. */
static void expect_same_values(const fn_net *a, const fn_net *b)
{
    assert_int_equal(fn_net_n_params(a), fn_net_n_params(b));
    for (int i = 0; i < fn_net_n_params(a); i++) {
        const fn_param *p = fn_net_param(a, i), *q = fn_net_param(b, i);
        assert_string_equal(p->name, q->name);
        assert_int_equal(fn_tensor_count(&p->value), fn_tensor_count(&q->value));
        assert_memory_equal(p->value.data, q->value.data,
                            fn_tensor_count(&p->value) * sizeof(float));
    }
}

static void expect_same_norm(const fn_input_norm *a, const fn_input_norm *b)
{
    assert_non_null(a);
    assert_non_null(b);
    assert_int_equal(fn_input_norm_features(a), fn_input_norm_features(b));
    assert_memory_equal(fn_input_norm_mean(a), fn_input_norm_mean(b), IN * sizeof(float));
    assert_memory_equal(fn_input_norm_std(a), fn_input_norm_std(b), IN * sizeof(float));
}

/* --- a kind without an export row --------------------------------------------------- */

static fn_status mystery_forward(fn_layer *l, const fn_tensor *x, fn_tensor *y)
{
    (void)l;
    return fn_tensor_copy(y, x);
}

static void mystery_destroy(fn_layer *l)
{
    free(l);
}

static const fn_layer_ops mystery_ops = {
    .kind = "mystery", .forward = mystery_forward, .destroy = mystery_destroy};

static void unmapped_kind_is_refused(void **state)
{
    fixture *f = *state;
    fn_net *net = NULL;
    const fn_layer_spec spec = {&fn_linear_kind, 4, 0};
    const fn_layer_hparams hp = {.groups = 1};
    EXPECT_OK(fn_model_create_each(&net, f->ctx, &spec, 1, IN, &hp, 4, 1));
    fn_layer *l = calloc(1, sizeof *l);
    *l = (fn_layer){.ops = &mystery_ops, .ctx = f->ctx, .device = FN_CPU, .in_features = 4,
                    .out_features = 4, .max_batch = 4, .forward_only = 1};
    EXPECT_OK(fn_net_add(net, l));
    char path[CAP];
    for (int format = 0; format < FN_EXPORT_FORMATS; format++) {
        path_in(f, format == FN_EXPORT_ONNX ? "m.onnx" : "m.safetensors", path);
        expect_error(fn_export_write(net, NULL, NULL, (fn_export_format)format, path),
                     FN_ERR_INVALID, "layer 1 (mystery): kind 'mystery' has no export mapping");
        expect_nothing_at(path);
    }
    fn_net_destroy(net);
}

/* --- the round trip ------------------------------------------------------------------ */

static void safetensors_round_trip_is_bit_identical(void **state)
{
    fixture *f = *state;
    char h5[CAP], st[CAP], h5_again[CAP];
    path_in(f, "w.h5", h5);
    path_in(f, "w.safetensors", st);
    path_in(f, "again.h5", h5_again);
    EXPECT_OK(fn_weights_save(
        h5, f->net, &(fn_weights_save_options){.norm = f->norm, .config_text = "[model]\n"}));
    fn_net *from_h5 = NULL;
    fn_input_norm *norm_h5 = NULL;
    EXPECT_OK(fn_weights_build(&from_h5, f->ctx, h5, 4));
    EXPECT_OK(fn_weights_input_norm(&norm_h5, f->ctx, h5, IN));
    EXPECT_OK(fn_export_write(from_h5, norm_h5, NULL, FN_EXPORT_SAFETENSORS, st));
    /* [model] init's reads: the settings (build), the values into a net
     * of the config (load), the standardisation. */
    fn_net *built = NULL, *loaded = NULL;
    fn_input_norm *norm_st = NULL;
    EXPECT_OK(fn_weights_build(&built, f->ctx, st, 4));
    expect_same_values(f->net, built);
    fn_block_config bc;
    EXPECT_OK(fn_block_get_config(fn_net_layer(built, 0), &bc));
    assert_int_equal(bc.groups, 2);
    assert_true(bc.eps == 1e-3f && bc.negative_slope == 0.2f);
    const fn_layer_spec specs[2] = {{&fn_block_kind, 8, 0}, {&fn_linear_kind, 3, 0}};
    const fn_layer_hparams hp[2] = {{.groups = 2, .eps = 1e-3f, .negative_slope = 0.2f},
                                    {.groups = 1}};
    EXPECT_OK(fn_model_create_each(&loaded, f->ctx, specs, 2, IN, hp, 4, 99));
    EXPECT_OK(fn_weights_load(loaded, st));
    expect_same_values(f->net, loaded);
    EXPECT_OK(fn_weights_input_norm(&norm_st, f->ctx, st, IN));
    expect_same_norm(f->norm, norm_st);
    /* ... and written as HDF5 again: the same values as the first file. */
    EXPECT_OK(fn_weights_save(
        h5_again, loaded, &(fn_weights_save_options){.norm = norm_st, .config_text = "[model]\n"}));
    fn_net *again = NULL;
    fn_input_norm *norm_again = NULL;
    EXPECT_OK(fn_weights_build(&again, f->ctx, h5_again, 4));
    EXPECT_OK(fn_weights_input_norm(&norm_again, f->ctx, h5_again, IN));
    expect_same_values(from_h5, again);
    expect_same_norm(norm_h5, norm_again);
    fn_input_norm_destroy(norm_again);
    fn_input_norm_destroy(norm_st);
    fn_input_norm_destroy(norm_h5);
    fn_net_destroy(again);
    fn_net_destroy(loaded);
    fn_net_destroy(built);
    fn_net_destroy(from_h5);
}

/* A net of every kind with an export row: gelu 8, dropout 0.25, residual 8
 * (groups 2), relu 8, block 8, linear 3; its parameters drawn away from
 * their initial values. */
enum { EVERY_KIND_LAYERS = 6 };

static fn_net *every_kind_net(fn_context *ctx, unsigned long long seed)
{
    const fn_layer_spec specs[EVERY_KIND_LAYERS] = {
        {&fn_gelu_kind, 8, 0},     {&fn_dropout_kind, 0, 0.25}, {&fn_residual_kind, 8, 0},
        {&fn_relu_kind, 8, 0},     {&fn_block_kind, 8, 0},      {&fn_linear_kind, 3, 0}};
    fn_layer_hparams hp[EVERY_KIND_LAYERS];
    for (int i = 0; i < EVERY_KIND_LAYERS; i++)
        hp[i] = (fn_layer_hparams){.groups = 2, .eps = 1e-3f, .negative_slope = 0.2f};
    fn_net *net = NULL;
    EXPECT_OK(fn_model_create_each(&net, ctx, specs, EVERY_KIND_LAYERS, IN, hp, 4, seed));
    return net;
}

/* HDF5 -> safetensors -> [model] init's reads -> HDF5, for every kind:
 * the same bits at each step, and the architecture rebuilt from the
 * safetensors metadata alone (the residual's groups, dropout's p). */
static void every_kind_round_trips(void **state)
{
    fixture *f = *state;
    char h5[CAP], st[CAP], h5_again[CAP];
    path_in(f, "every.h5", h5);
    path_in(f, "every.safetensors", st);
    path_in(f, "every_again.h5", h5_again);
    fn_net *net = every_kind_net(f->ctx, 5);
    for (int i = 0; i < fn_net_n_params(net); i++) {
        fn_param *p = fn_net_param(net, i);
        for (size_t k = 0; k < fn_tensor_count(&p->value); k++)
            p->value.data[k] += 0.001f * (float)((k * 7919 + (size_t)i * 104729) % 997) - 0.5f;
    }
    EXPECT_OK(fn_weights_save(h5, net, &(fn_weights_save_options){.config_text = "[model]\n"}));
    fn_net *from_h5 = NULL, *built = NULL, *again = NULL;
    EXPECT_OK(fn_weights_build(&from_h5, f->ctx, h5, 4));
    EXPECT_OK(fn_export_write(from_h5, NULL, NULL, FN_EXPORT_SAFETENSORS, st));
    EXPECT_OK(fn_weights_build(&built, f->ctx, st, 4));
    expect_same_values(net, built);
    assert_int_equal(fn_net_n_layers(built), EVERY_KIND_LAYERS);
    const char *kinds[EVERY_KIND_LAYERS] = {"gelu", "dropout", "residual", "relu", "block",
                                            "linear"};
    for (int i = 0; i < EVERY_KIND_LAYERS; i++)
        assert_string_equal(fn_net_layer(built, i)->ops->kind, kinds[i]);
    /* Every registered kind is in this net: a new kind fails here until it
     * has an export row and a place in every_kind_net. */
    assert_int_equal(fn_layer_kind_count(), EVERY_KIND_LAYERS);
    for (int k = 0; k < fn_layer_kind_count(); k++) {
        int found = 0;
        for (int i = 0; i < EVERY_KIND_LAYERS; i++)
            found |= strcmp(fn_layer_kind_at(k)->name, kinds[i]) == 0;
        if (!found)
            fail_msg("layer kind '%s' is not in every_kind_net", fn_layer_kind_at(k)->name);
    }
    fn_block_config bc;
    EXPECT_OK(fn_block_get_config(fn_net_layer(built, 2), &bc));
    assert_true(bc.residual == 1 && bc.groups == 2 && bc.eps == 1e-3f);
    double p = 0.0;
    EXPECT_OK(fn_dropout_get_p(fn_net_layer(from_h5, 1), &p));
    assert_true(p == 0.25);
    EXPECT_OK(fn_dropout_get_p(fn_net_layer(built, 1), &p));
    assert_true(p == 0.25);
    fn_net *loaded = every_kind_net(f->ctx, 99);
    EXPECT_OK(fn_weights_load(loaded, st));
    expect_same_values(net, loaded);
    EXPECT_OK(
        fn_weights_save(h5_again, loaded, &(fn_weights_save_options){.config_text = "[model]\n"}));
    EXPECT_OK(fn_weights_build(&again, f->ctx, h5_again, 4));
    expect_same_values(from_h5, again);
    EXPECT_OK(fn_dropout_get_p(fn_net_layer(again, 1), &p));
    assert_true(p == 0.25);
    /* The ONNX export has a row for every kind too. */
    char onnx[CAP];
    EXPECT_OK(fn_export_write(from_h5, NULL, NULL, FN_EXPORT_ONNX, path_in(f, "every.onnx", onnx)));
    fn_net_destroy(again);
    fn_net_destroy(loaded);
    fn_net_destroy(built);
    fn_net_destroy(from_h5);
    fn_net_destroy(net);
}

/* A net of other sizes is refused by fn_weights_load, naming the layer. */
static void safetensors_load_checks_layers(void **state)
{
    fixture *f = *state;
    char st[CAP];
    path_in(f, "w.safetensors", st);
    EXPECT_OK(fn_export_write(f->net, NULL, NULL, FN_EXPORT_SAFETENSORS, st));
    fn_net *other = NULL;
    const fn_layer_spec specs[2] = {{&fn_block_kind, 8, 0}, {&fn_linear_kind, 4, 0}};
    const fn_layer_hparams hp[2] = {{.groups = 2, .eps = 1e-3f, .negative_slope = 0.2f},
                                    {.groups = 1}};
    EXPECT_OK(fn_model_create_each(&other, f->ctx, specs, 2, IN, hp, 4, 1));
    expect_error(fn_weights_load(other, st), FN_ERR_FORMAT,
                 "layer 1 is linear 8 -> 3, the model has linear 8 -> 4");
    fn_net_destroy(other);
    fn_input_norm *norm = NULL;
    EXPECT_OK(fn_weights_input_norm(&norm, f->ctx, st, IN));
    assert_null(norm);
}

/* --- damaged and foreign safetensors files ------------------------------------------- */

static void write_bytes(const char *path, const void *data, size_t n)
{
    FILE *out = fopen(path, "wb");
    assert_non_null(out);
    assert_int_equal(fwrite(data, 1, n, out), n);
    fclose(out);
}

/* A safetensors file of this header and n data bytes (zeros, except a
 * NaN at the start when nan is set). */
static void write_st(const char *path, const char *header, size_t n, int nan)
{
    size_t h = strlen(header);
    unsigned char *buf = calloc(8 + h + n + 1, 1);
    for (int b = 0; b < 8; b++)
        buf[b] = (unsigned char)((uint64_t)h >> (8 * b));
    memcpy(buf + 8, header, h);
    if (nan) {
        const float v = NAN;
        memcpy(buf + 8 + h, &v, 4);
    }
    write_bytes(path, buf, 8 + h + n);
    free(buf);
}

#define META_1 "\"__metadata__\":{\"format\":\"fusenet-export\",\"format_version\":\"1\"," \
               "\"n_layers\":\"1\",\"standardize\":\"false\",\"in_features\":\"2\","       \
               "\"out_features\":\"1\","                                                   \
               "\"layer0.kind\":\"linear\",\"layer0.in_features\":\"2\","               \
               "\"layer0.out_features\":\"1\"}"
#define WEIGHT "\"layer0.weight\":{\"dtype\":\"F32\",\"shape\":[1,2],\"data_offsets\":[0,8]}"
#define BIAS "\"layer0.bias\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]}"

static void bad_safetensors_are_refused(void **state)
{
    fixture *f = *state;
    char path[CAP];
    path_in(f, "bad.safetensors", path);
    fn_net *net = NULL;
    struct {
        const char *header;
        size_t data;
        int nan;
        const char *message;
    } cases[] = {
        {"{" META_1 "," WEIGHT "," BIAS "}", 12, 0, NULL},
        {"{" META_1 "," WEIGHT "," BIAS "}", 12, 1, "tensor 'layer0.weight' holds nan at index 0"},
        {"{" META_1 "," WEIGHT "}", 12, 0, "tensor 'layer0.bias' is missing"},
        {"{" META_1 "," WEIGHT "," BIAS "}", 8, 0, "data_offsets are not a range of 4 bytes"},
        {"{" META_1 ",\"layer0.weight\":{\"dtype\":\"F32\",\"shape\":[2,1],\"data_offsets\":"
         "[0,8]}," BIAS "}", 12, 0, "tensor 'layer0.weight' is [2, 1], but the layer's sizes"},
        {"{" META_1 ",\"layer0.weight\":{\"dtype\":\"F16\",\"shape\":[1,2],\"data_offsets\":"
         "[0,4]}," BIAS "}", 12, 0, "dtype is F16, expected F32"},
        {"{\"__metadata__\":{\"format\":\"fusenet-export\",\"format_version\":\"2\"}}", 0, 0,
         "format_version is 2, this build reads 1"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, 0,
         "not a fusenet export"},
        {"{" META_1 ",}", 0, 0, "invalid JSON at byte"},
        {"[1, 2", 0, 0, "invalid JSON at byte"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        write_st(path, cases[i].header, cases[i].data, cases[i].nan);
        fn_status st = fn_weights_build(&net, f->ctx, path, 1);
        if (!cases[i].message) {
            EXPECT_OK(st);
            fn_net_destroy(net);
            continue;
        }
        expect_error(st, FN_ERR_FORMAT, cases[i].message);
        assert_null(net);
    }
    /* Shorter than its length field, and a length past the file's end. */
    write_bytes(path, "\x10\0\0", 3);
    expect_error(fn_weights_build(&net, f->ctx, path, 1), FN_ERR_FORMAT, "too short");
    write_bytes(path, "\xff\xff\0\0\0\0\0\0{}", 10);
    expect_error(fn_weights_build(&net, f->ctx, path, 1), FN_ERR_FORMAT,
                 "the header length 65535 exceeds the file's 10 bytes");
    assert_int_equal(remove(path), 0);
    assert_int_equal(mkdir(path, 0755), 0);
    expect_error(fn_weights_build(&net, f->ctx, path, 1), FN_ERR_IO, "is a directory");
    rmdir(path);
}

/* The header's own checks, before anything its sizes claim is allocated:
 * a key twice (among the tensors or the metadata), two tensors sharing
 * bytes (both named), a file of a few hundred bytes whose metadata claims
 * a layer of 6 GiB, a tensor whose shape claims more than the data holds,
 * a header length over the 100 MiB cap. */
static void header_checks_come_first(void **state)
{
    fixture *f = *state;
    char path[CAP];
    path_in(f, "ranges.safetensors", path);
    fn_net *net = NULL;
#define META_HUGE "\"__metadata__\":{\"format\":\"fusenet-export\",\"format_version\":\"1\","    \
                  "\"n_layers\":\"1\",\"standardize\":\"false\",\"in_features\":\"65536\","  \
                  "\"out_features\":\"24576\",\"layer0.kind\":\"linear\","                  \
                  "\"layer0.in_features\":\"65536\",\"layer0.out_features\":\"24576\"}"
    struct {
        const char *header;
        size_t data;
        const char *message;
    } cases[] = {
        {"{" META_1 "," WEIGHT "," BIAS "," BIAS "}", 12,
         "the header holds the key 'layer0.bias' twice"},
        {"{\"__metadata__\":{\"format\":\"fusenet-export\",\"format\":\"x\"}," WEIGHT "}", 8,
         "__metadata__ holds the key 'format' twice"},
        {"{" META_1 "," WEIGHT ",\"layer0.bias\":{\"dtype\":\"F32\",\"shape\":[1],"
         "\"data_offsets\":[4,8]}}", 12,
         "tensors 'layer0.weight' [0, 8) and 'layer0.bias' [4, 8) share bytes"},
        {"{" META_HUGE "," WEIGHT "," BIAS "}", 12,
         "the metadata's layers have 1610637312 parameters (6442549248 bytes as float32), but "
         "the file holds 12 bytes"},
        {"{" META_1 ",\"big\":{\"dtype\":\"F32\",\"shape\":[1048576,1048576],"
         "\"data_offsets\":[0,8]}," WEIGHT "," BIAS "}", 12,
         "tensor 'big': its shape is not a list of sizes whose values fit in the file's 12"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        write_st(path, cases[i].header, cases[i].data, 0);
        expect_error(fn_weights_build(&net, f->ctx, path, 1), FN_ERR_FORMAT, cases[i].message);
        assert_null(net);
    }
    /* 200 MiB claimed by the length field of an 18-byte file. */
    write_bytes(path, "\x00\x00\x80\x0c\x00\x00\x00\x00{}\0\0\0\0\0\0\0\0", 18);
    expect_error(fn_weights_build(&net, f->ctx, path, 1), FN_ERR_FORMAT,
                 "the header length 209715200 is over the 104857600 bytes (100 MiB)");
#undef META_HUGE
}

/* The process's address space now, in bytes (/proc/self/statm). */
static size_t address_space(void)
{
    FILE *in = fopen("/proc/self/statm", "r");
    unsigned long pages = 0;
    if (!in || fscanf(in, "%lu", &pages) != 1)
        pages = 0;
    if (in)
        fclose(in);
    return (size_t)pages * (size_t)sysconf(_SC_PAGESIZE);
}

/* A 3.6 MB header of 200000 short metadata strings is read (and refused
 * as no fusenet export) within 256 MiB more address space: the reader
 * takes memory of the header's size, not the rest of the header for every
 * string (3.3 GB and more). In a child, under RLIMIT_AS; skipped under
 * AddressSanitizer, which cannot run under RLIMIT_AS. */
static void many_strings_take_header_memory(void **state)
{
    fixture *f = *state;
    if (UNDER_ASAN)
        skip();
    enum { STRINGS = 200000 };
    char path[CAP];
    path_in(f, "strings.safetensors", path);
    char *header = malloc((size_t)STRINGS * 24 + 64);
    size_t n = (size_t)sprintf(header, "{\"__metadata__\":{");
    for (int i = 0; i < STRINGS; i++)
        n += (size_t)sprintf(header + n, "%s\"k%06d\":\"vvvvv\"", i ? "," : "", i);
    n += (size_t)sprintf(header + n, "}}");
    assert_true(n > 3500000);
    write_st(path, header, 0, 0);
    free(header);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        const size_t cap = address_space() + ((size_t)256 << 20);
        struct rlimit lim = {.rlim_cur = cap, .rlim_max = RLIM_INFINITY};
        setrlimit(RLIMIT_AS, &lim);
        fn_net *net = NULL;
        fn_status st = fn_weights_build(&net, f->ctx, path, 1);
        _exit(st == FN_ERR_FORMAT && strstr(fn_last_error(), "not a fusenet export") ? 0 : 1);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

/* good's bytes with the first `from` of its header replaced by `to` (the
 * length field rewritten), written to path. */
static void rewrite_header(const char *good, const char *path, const char *from, const char *to)
{
    char *bytes = program_slurp(good);
    struct stat st;
    assert_int_equal(stat(good, &st), 0);
    uint64_t h = 0;
    for (int b = 0; b < 8; b++)
        h |= (uint64_t)(unsigned char)bytes[b] << (8 * b);
    const size_t data = (size_t)st.st_size - 8 - (size_t)h;
    char *header = calloc(h + 1, 1);
    memcpy(header, bytes + 8, h);
    char *at = strstr(header, from);
    if (!at)
        fail_msg("the header lacks %s", from);
    const size_t nf = strlen(from), nt = strlen(to), h2 = h - nf + nt;
    unsigned char *out = malloc(8 + h2 + data + 1);
    for (int b = 0; b < 8; b++)
        out[b] = (unsigned char)((uint64_t)h2 >> (8 * b));
    memcpy(out + 8, header, (size_t)(at - header));
    memcpy(out + 8 + (at - header), to, nt);
    memcpy(out + 8 + (at - header) + nt, at + nf, h - (size_t)(at - header) - nf);
    memcpy(out + 8 + h2, bytes + 8 + h, data);
    write_bytes(path, out, 8 + h2 + data);
    free(out);
    free(header);
    free(bytes);
}

/* Metadata named as what it is, with the file: a slope out of [model]'s
 * range, a number where safetensors holds text, sizes that disagree with
 * each other or with the tensors; a kind's raw bytes come out escaped. */
static void metadata_is_named(void **state)
{
    fixture *f = *state;
    char good[CAP], path[CAP];
    path_in(f, "named_good.safetensors", good);
    path_in(f, "named.safetensors", path);
    EXPECT_OK(fn_export_write(f->net, f->norm, NULL, FN_EXPORT_SAFETENSORS, good));
    struct {
        const char *from, *to, *message;
    } cases[] = {
        {"\"layer0.negative_slope\":\"0.2", "\"layer0.negative_slope\":\"1e30\",\"x\":\"0.2",
         "layer 0 (metadata 'layer0.*'): negative_slope 1e+30 is out of range"},
        {"\"format_version\":\"1\"", "\"format_version\":1",
         "metadata 'format_version' is a JSON number, expected a string"},
        {"\"in_features\":\"6\"", "\"in_features\":\"7\"",
         "metadata 'layer0.in_features' is 6, but 'in_features' is 7"},
        {"\"layer1.in_features\":\"8\"", "\"layer1.in_features\":\"9\"",
         "metadata 'layer1.in_features' is 9, but the layer before gives 8"},
        {"\"out_features\":\"3\"", "\"out_features\":\"4\"",
         "metadata 'out_features' is 4, but the last layer gives 3"},
        {"\"layer1.out_features\":\"3\"", "\"layer1.out_features\":\"2\"",
         "metadata 'out_features' is 3, but the last layer gives 2"},
        {"\"layer0.kind\":\"block\"", "\"layer0.kind\":\"\\u001b[2Jblock\\n\"",
         "unknown layer kind '\\x1b[2Jblock\\n'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        rewrite_header(good, path, cases[i].from, cases[i].to);
        fn_net *net = NULL;
        fn_status st = fn_weights_build(&net, f->ctx, path, 1);
        assert_int_not_equal(st, FN_OK);
        if (!strstr(fn_last_error(), cases[i].message) || !strstr(fn_last_error(), path))
            fail_msg("case %zu: '%s' lacks '%s' or the file", i, fn_last_error(),
                     cases[i].message);
        assert_null(strchr(fn_last_error(), '\x1b'));
    }
    /* The tensors against sizes that agree with each other but not with them. */
    rewrite_header(good, path, "\"layer1.out_features\":\"3\"", "\"layer1.out_features\":\"2\"");
    rewrite_header(path, path, "\"out_features\":\"3\"", "\"out_features\":\"2\"");
    fn_net *net = NULL;
    expect_error(fn_weights_build(&net, f->ctx, path, 1), FN_ERR_FORMAT,
                 "tensor 'layer1.weight' is [3, 8], but the layer's sizes");
}

/* Every truncation of a good file, and every byte of its length field and
 * header replaced by values that matter to JSON and to the length: each
 * load either succeeds or fails with a message naming the file (under the
 * sanitizers, with no memory error). */
static void load_mutant(const fixture *f, const char *path, const unsigned char *m, size_t len,
                        int *loaded)
{
    write_bytes(path, m, len);
    fn_net *net = NULL;
    fn_input_norm *norm = NULL;
    fn_status st = fn_weights_build(&net, f->ctx, path, 1);
    if (st != FN_OK && !strstr(fn_last_error(), path))
        fail_msg("%zu bytes: '%s' does not name the file", len, fn_last_error());
    *loaded += st == FN_OK;
    st = fn_weights_input_norm(&norm, f->ctx, path, 0);
    if (st != FN_OK && !strstr(fn_last_error(), path))
        fail_msg("%zu bytes: '%s' does not name the file", len, fn_last_error());
    fn_net_destroy(net);
    fn_input_norm_destroy(norm);
}

static void mutated_safetensors_fail_cleanly(void **state)
{
    fixture *f = *state;
    char good[CAP], path[CAP];
    path_in(f, "good.safetensors", good);
    path_in(f, "mutant.safetensors", path);
    EXPECT_OK(fn_export_write(f->net, f->norm, NULL, FN_EXPORT_SAFETENSORS, good));
    char *bytes = program_slurp(good);
    struct stat st;
    assert_int_equal(stat(good, &st), 0);
    const size_t n = (size_t)st.st_size;
    const size_t header_end = 8 + ((unsigned char)bytes[0] | (size_t)(unsigned char)bytes[1] << 8);
    assert_true(header_end < n);
    static const unsigned char values[] = {0xff, '"', '}'};
    unsigned char *m = malloc(n);
    int loaded = 0;
    for (size_t at = 0; at < n; at++)
        load_mutant(f, path, (const unsigned char *)bytes, at, &loaded);
    for (size_t at = 0; at < header_end; at++)
        for (size_t v = 0; v < sizeof values; v++) {
            memcpy(m, bytes, n);
            m[at] = values[v];
            load_mutant(f, path, m, n, &loaded);
        }
    assert_true(loaded > 0); /* a blank of the padding, say */
    free(m);
    free(bytes);
}

/* --- failed writes ----------------------------------------------------------------- */

static void directory_path_leaves_nothing(void **state)
{
    fixture *f = *state;
    char dir[CAP];
    path_in(f, "model.onnx", dir);
    assert_int_equal(mkdir(dir, 0755), 0);
    assert_int_not_equal(fn_export_write(f->net, f->norm, NULL, FN_EXPORT_ONNX, dir), FN_OK);
    struct stat st;
    assert_int_equal(stat(dir, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    expect_no_tmp(dir);
    rmdir(dir);
}

/* A full disk (RLIMIT_FSIZE with SIGXFSZ ignored: writes fail with EFBIG,
 * as with ENOSPC), in a child: exit 0 when the export failed with an I/O
 * error naming the system's reason. */
static void full_disk_leaves_nothing(void **state)
{
    fixture *f = *state;
    for (int format = 0; format < FN_EXPORT_FORMATS; format++) {
        char path[CAP];
        path_in(f, format == FN_EXPORT_ONNX ? "full.onnx" : "full.safetensors", path);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            signal(SIGXFSZ, SIG_IGN);
            struct rlimit lim = {.rlim_cur = 64, .rlim_max = RLIM_INFINITY};
            setrlimit(RLIMIT_FSIZE, &lim);
            fn_status st = fn_export_write(f->net, f->norm, NULL, (fn_export_format)format, path);
            _exit(st == FN_ERR_IO && strstr(fn_last_error(), "File too large") ? 0 : 1);
        }
        int status = 0;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
        expect_nothing_at(path);
    }
}

/* --- temporaries and publication ---------------------------------------------------- */

/* A file at "<path>.tmp" (another writer's temporary in flight) is neither
 * removed nor renamed into place: an export writes and renames only a
 * temporary of its own process. */
static void other_temporaries_are_left_alone(void **state)
{
    fixture *f = *state;
    char path[CAP], tmp[CAP + 8];
    for (int format = 0; format < FN_EXPORT_FORMATS; format++) {
        path_in(f, format == FN_EXPORT_ONNX ? "own.onnx" : "own.safetensors", path);
        snprintf(tmp, sizeof tmp, "%s.tmp", path);
        write_bytes(tmp, "in flight", 9);
        EXPECT_OK(fn_export_write(f->net, f->norm, NULL, (fn_export_format)format, path));
        assert_true(fn_export_file_is(path, (fn_export_format)format));
        char *kept = program_slurp(tmp);
        assert_string_equal(kept, "in flight");
        free(kept);
        assert_int_equal(remove(tmp), 0);
        expect_no_tmp(path);
    }
}

static void expect_bytes(const char *path, const char *bytes, size_t n)
{
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal((size_t)st.st_size, n);
    char *now = program_slurp(path);
    assert_memory_equal(now, bytes, n);
    free(now);
}

static size_t size_of(const char *path)
{
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    return (size_t)st.st_size;
}

/* The model and its check file stand together or not at all: a check
 * file that cannot be written (a non-finite output, a full disk) leaves
 * the earlier pair byte for byte and no temporary; an export without a
 * check file removes the earlier one (but not a file of another kind). */
static void model_and_check_stand_together(void **state)
{
    fixture *f = *state;
    char model[CAP], check[CAP + 16];
    path_in(f, "pair.onnx", model);
    snprintf(check, sizeof check, "%s.check.h5", model);
    float x[2 * IN], y[2 * 3];
    for (int k = 0; k < 2 * IN; k++)
        x[k] = 0.125f * (float)k;
    for (int k = 0; k < 2 * 3; k++)
        y[k] = (float)k;
    EXPECT_OK(fn_export_write_with_check(f->net, f->norm, NULL, FN_EXPORT_ONNX, model, check, x,
                                         y, 2));
    assert_true(fn_export_file_is(model, FN_EXPORT_ONNX));
    assert_true(fn_export_check_file_is(check));
    const size_t model_size = size_of(model), check_size = size_of(check);
    char *model_bytes = program_slurp(model), *check_bytes = program_slurp(check);

    /* A NaN among the outputs: the check file fails after the model is
     * written, so neither is published. The same net as safetensors would
     * differ from the ONNX bytes kept. */
    y[4] = NAN;
    assert_int_not_equal(fn_export_write_with_check(f->net, NULL, NULL, FN_EXPORT_ONNX, model,
                                                    check, x, y, 2), FN_OK);
    expect_bytes(model, model_bytes, model_size);
    expect_bytes(check, check_bytes, check_size);
    expect_no_tmp(model);
    expect_no_tmp(check);
    y[4] = 4.0f;

    /* A full disk for the check file only, in a child. */
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        signal(SIGXFSZ, SIG_IGN);
        struct rlimit lim = {.rlim_cur = model_size + 256, .rlim_max = RLIM_INFINITY};
        setrlimit(RLIMIT_FSIZE, &lim);
        fn_status st = fn_export_write_with_check(f->net, NULL, NULL, FN_EXPORT_ONNX, model,
                                                  check, x, y, 2);
        _exit(st == FN_ERR_IO ? 0 : 1);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    expect_bytes(model, model_bytes, model_size);
    expect_bytes(check, check_bytes, check_size);
    expect_no_tmp(model);
    expect_no_tmp(check);

    /* Without a check file: the earlier one goes, the model is the new one. */
    EXPECT_OK(fn_export_write_with_check(f->net, NULL, NULL, FN_EXPORT_ONNX, model, check, NULL,
                                         NULL, 0));
    assert_false(exists(check));
    assert_true(fn_export_file_is(model, FN_EXPORT_ONNX));
    /* A file of another kind at that name is not a check file: it stays. */
    write_bytes(check, "notes", 5);
    EXPECT_OK(fn_export_write_with_check(f->net, NULL, NULL, FN_EXPORT_ONNX, model, check, NULL,
                                         NULL, 0));
    expect_bytes(check, "notes", 5);
    free(model_bytes);
    free(check_bytes);
}

TEST_MAIN(setup, teardown, cmocka_unit_test(unmapped_kind_is_refused),
          cmocka_unit_test(safetensors_round_trip_is_bit_identical),
          cmocka_unit_test(every_kind_round_trips),
          cmocka_unit_test(safetensors_load_checks_layers),
          cmocka_unit_test(bad_safetensors_are_refused),
          cmocka_unit_test(header_checks_come_first),
          cmocka_unit_test(many_strings_take_header_memory),
          cmocka_unit_test(metadata_is_named),
          cmocka_unit_test(mutated_safetensors_fail_cleanly),
          cmocka_unit_test(directory_path_leaves_nothing),
          cmocka_unit_test(full_disk_leaves_nothing),
          cmocka_unit_test(other_temporaries_are_left_alone),
          cmocka_unit_test(model_and_check_stand_together))
