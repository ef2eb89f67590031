/* test_config.c — the run configuration: defaults, values, relative paths,
 * overrides, and every kind of bad config failing with its status and a
 * message that says where (file:line or the --set argument) and what. */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "expect.h"
#include "fusenet/adam.h"
#include "fusenet/block.h"
#include "fusenet/layer_kind.h"
#include "fusenet/model.h"
#include "fusenet/config.h"
#include "fusenet/rmsprop.h"
#include "fusenet/sgd.h"
#include "optim/schedules/cosine/cosine_schedule.h"
#include "optim/schedules/plateau/plateau_schedule.h"
#include "optim/schedules/step/step_schedule.h"
#include "run/config_impl.h"
#include "store/path.h"
#include "nn/losses/cross_entropy/cross_entropy_options.h"
#include "nn/losses/huber/huber.h"
#include "test_main.h"

/* A temporary directory holding the config and an (empty) train.h5: the
 * config only checks that data files are readable. */
typedef struct fixture {
    char dir[64];
    char path[128];
} fixture;

/* The chosen optimiser's options block (fn_config_finish), as its own type. */
static const fn_sgd_config *sgd_of(const fn_config *cfg)
{
    assert_ptr_equal(cfg->optimizer, &fn_sgd_kind);
    return cfg->optimizer_options;
}

static const fn_adam_config *adam_of(const fn_config *cfg)
{
    assert_true(cfg->optimizer == &fn_adam_kind || cfg->optimizer == &fn_adamw_kind);
    return cfg->optimizer_options;
}

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    snprintf(f->dir, sizeof f->dir, "/tmp/fn_config_XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->path, sizeof f->path, "%s/run.ini", f->dir);
    char data[128];
    snprintf(data, sizeof data, "%s/train.h5", f->dir);
    FILE *d = fopen(data, "w");
    assert_non_null(d);
    fclose(d);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    char path[128];
    snprintf(path, sizeof path, "%s/train.h5", f->dir);
    remove(path);
    remove(f->path);
    rmdir(f->dir);
    free(f);
    return 0;
}

static void write_config(const fixture *f, const char *text)
{
    FILE *c = fopen(f->path, "w");
    assert_non_null(c);
    fputs(text, c);
    fclose(c);
}

static const char minimal[] = "[data]\ntrain = train.h5\n[model]\nlayers = block 16, linear 4\n";

/* Loads text, applies the overrides (NULL-terminated) and finishes. */
static fn_status load(const fixture *f, const char *text, const char *const *sets,
                      fn_config **cfg)
{
    write_config(f, text);
    *cfg = NULL;
    FN_TRY(fn_config_load(cfg, f->path));
    for (int i = 0; sets && sets[i]; i++)
        FN_TRY(fn_config_set(*cfg, sets[i]));
    return fn_config_finish(*cfg);
}

/* Fails unless loading gives `want` and a message containing every needle. */
static void expect_error_at(const fixture *f, const char *text, const char *const *sets,
                            fn_status want, const char *needle, const char *needle2, int line)
{
    fn_config *cfg = NULL;
    fn_status got = load(f, text, sets, &cfg);
    fn_config_destroy(cfg);
    if (got != want)
        fail_msg("line %d: status '%s', expected '%s' (message: '%s')", line,
                 fn_status_name(got), fn_status_name(want), fn_last_error());
    if (!strstr(fn_last_error(), needle) || (needle2 && !strstr(fn_last_error(), needle2)))
        fail_msg("line %d: message '%s' lacks '%s'%s%s", line, fn_last_error(), needle,
                 needle2 ? " or " : "", needle2 ? needle2 : "");
}
#define EXPECT_ERROR(text, sets, status, needle, needle2) \
    expect_error_at(*state, (text), (sets), (status), (needle), (needle2), __LINE__)

static void test_defaults(void **state)
{
    fixture *f = *state;
    fn_config *cfg = NULL;
    fn_status st = load(f, minimal, NULL, &cfg);
    assert_int_equal(st, FN_OK);
    assert_string_equal(cfg->inputs, "X");
    assert_string_equal(cfg->targets, "y");
    assert_null(cfg->valid);
    assert_null(cfg->init);
    assert_int_equal(cfg->n_layers, 2);
    assert_string_equal(cfg->layers[0].kind->name, "block");
    assert_int_equal(cfg->layers[0].width, 16);
    assert_string_equal(cfg->layers[1].kind->name, "linear");
    assert_int_equal(cfg->layers[1].width, 4);
    assert_int_equal(cfg->groups, 8);
    assert_float_equal(cfg->eps, 1e-5f, 0);
    assert_float_equal(cfg->negative_slope, 0.01f, 0);
    assert_ptr_equal(cfg->loss, &fn_cross_entropy_kind);
    assert_int_equal(cfg->batch_size, 64);
    assert_int_equal(cfg->epochs, 10);
    assert_float_equal(cfg->lr, 0.01f, 0);
    assert_int_equal(sgd_of(cfg)->nesterov, 0);
    assert_int_equal(sgd_of(cfg)->momentum_bf16, 0);
    assert_int_equal(cfg->seed, 1);
    assert_int_equal(cfg->checkpoint_every, 0);
    assert_true(cfg->device_auto);
    assert_int_equal(cfg->math, FN_MATH_FP32);
    assert_float_equal(cfg->memory_budget_mb, 1024, 0);
    char want[160];
    snprintf(want, sizeof want, "%s/train.h5", f->dir);
    assert_string_equal(cfg->train, want);
    /* [output] dir unset: runs/<the config file's stem> beside it. */
    snprintf(want, sizeof want, "%s/runs/run", f->dir);
    assert_string_equal(cfg->out_dir, want);
    assert_string_equal(cfg->text, minimal);
    fn_config_destroy(cfg);
}

static void test_values_and_overrides(void **state)
{
    fixture *f = *state;
    static const char text[] =
        "# a comment\n[data]\ntrain = train.h5\nvalid = train.h5\ninputs = pixels\n"
        "memory_budget_mb = 0.5\n[model]\nlayers = block 12 ,block 12,  linear 3\ngroups = 4\n"
        "eps = 1e-3\nnegative_slope = 0.2\n[train]\nloss = mse\nbatch_size = 7\nepochs = 3\n"
        "lr = 0.5 ; inline comment\nmomentum = 0.9\nnesterov = true\nseed = 42\n"
        "checkpoint_every = 2\n[run]\ndevice = cuda:1\nmath = tf32x3\nlog_every = 0\n"
        "[output]\ndir = /tmp/somewhere\n";
    const char *sets[] = {"train.epochs=5", " train . lr = 0.25 ", NULL};
    fn_config *cfg = NULL;
    fn_status st = load(f, text, sets, &cfg);
    if (st != FN_OK)
        fail_msg("%s", fn_last_error());
    assert_string_equal(cfg->inputs, "pixels");
    assert_non_null(cfg->valid);
    assert_float_equal(cfg->memory_budget_mb, 0.5, 0);
    assert_int_equal(cfg->n_layers, 3);
    assert_int_equal(cfg->layers[2].width, 3);
    assert_int_equal(cfg->groups, 4);
    assert_float_equal(cfg->negative_slope, 0.2f, 0);
    assert_ptr_equal(cfg->loss, &fn_mse_kind);
    assert_int_equal(cfg->batch_size, 7);
    assert_int_equal(cfg->epochs, 5);
    assert_float_equal(cfg->lr, 0.25f, 0);
    assert_int_equal(sgd_of(cfg)->nesterov, 1);
    assert_int_equal(cfg->seed, 42);
    assert_false(cfg->device_auto);
    assert_int_equal(cfg->device, FN_CUDA);
    assert_int_equal(cfg->gpu, 1);
    assert_int_equal(cfg->math, FN_MATH_TF32X3);
    assert_string_equal(cfg->out_dir, "/tmp/somewhere");
    assert_non_null(strstr(cfg->text, "; --set train.epochs=5\n"));
    fn_config_destroy(cfg);
}

static void test_unknown_section(void **state)
{
    EXPECT_ERROR("[data]\ntrain = train.h5\n[trian]\nepochs = 3\n", NULL, FN_ERR_INVALID,
                 "run.ini:4: unknown section [trian]", NULL);
}

static void test_key_outside_section(void **state)
{
    EXPECT_ERROR("epochs = 3\n", NULL, FN_ERR_INVALID, "run.ini:1: epochs: key outside", NULL);
}

static void test_unknown_key(void **state)
{
    EXPECT_ERROR("[data]\ntrain = train.h5\n[train]\nlearning_rate = 3\n", NULL, FN_ERR_INVALID,
                 "run.ini:4: train.learning_rate: unknown key", NULL);
}

static void test_duplicate_key(void **state)
{
    EXPECT_ERROR("[train]\nepochs = 3\nlr = 0.1\nepochs = 4\n", NULL, FN_ERR_INVALID,
                 "run.ini:4: train.epochs: duplicate key (first set on line 2)", NULL);
}

static void test_syntax_error(void **state)
{
    EXPECT_ERROR("[data]\ntrain = train.h5\n[model\n", NULL, FN_ERR_INVALID,
                 "run.ini:3: syntax error", NULL);
    EXPECT_ERROR("[data]\njust words\n", NULL, FN_ERR_INVALID, "run.ini:2: syntax error", NULL);
}

static void test_not_a_number(void **state)
{
    EXPECT_ERROR("[train]\n\nlr = fast\n", NULL, FN_ERR_INVALID,
                 "run.ini:3: train.lr: expected a number, got 'fast'", NULL);
    EXPECT_ERROR("[train]\nbatch_size = 12abc\n", NULL, FN_ERR_INVALID,
                 "run.ini:2: train.batch_size: expected an integer, got '12abc'", NULL);
    EXPECT_ERROR("[train]\nepochs = 2.5\n", NULL, FN_ERR_INVALID,
                 "train.epochs: expected an integer, got '2.5'", NULL);
    EXPECT_ERROR("[train]\nlr =\n", NULL, FN_ERR_INVALID, "train.lr: expected a number, got ''",
                 NULL);
    EXPECT_ERROR("[model]\neps = nan\n", NULL, FN_ERR_INVALID, "model.eps: nan is not a finite",
                 NULL);
    EXPECT_ERROR("[train]\nnesterov = maybe\n", NULL, FN_ERR_INVALID,
                 "train.nesterov: expected true or false, got 'maybe'", NULL);
    EXPECT_ERROR("[train]\nseed = -3\n", NULL, FN_ERR_INVALID, "train.seed: -3 is out of range",
                 NULL);
}

static void test_out_of_range(void **state)
{
    EXPECT_ERROR("[train]\nmomentum = -0.5\n", NULL, FN_ERR_INVALID,
                 "run.ini:2: train.momentum: -0.5 is out of range", ">= 0");
    EXPECT_ERROR("[train]\ndampening = 2\n", NULL, FN_ERR_INVALID, "train.dampening: 2 is out",
                 "<= 1");
    EXPECT_ERROR("[train]\nlr = 0\n", NULL, FN_ERR_INVALID, "train.lr: 0 is out of range",
                 "> 0");
    EXPECT_ERROR("[model]\neps = -1e-5\n", NULL, FN_ERR_INVALID, "model.eps: -1e-5 is out", NULL);
    EXPECT_ERROR("[data]\nmemory_budget_mb = 0\n", NULL, FN_ERR_INVALID,
                 "data.memory_budget_mb: 0 is out of range", NULL);
    EXPECT_ERROR("[train]\nbatch_size = 99999999999999999999\n", NULL, FN_ERR_INVALID,
                 "train.batch_size: 99999999999999999999 is out of range", NULL);
}

/* Float keys are checked as the float32 the run uses, not as the double
 * parsed: a positive double that rounds to 0 fails "> 0" where it is set
 * (not later, without a line), and one beyond float32's range is refused. */
static void test_float_range_after_narrowing(void **state)
{
    EXPECT_ERROR("[model]\neps = 1e-50\n", NULL, FN_ERR_INVALID,
                 "run.ini:2: model.eps: 1e-50 is out of range", "> 0");
    EXPECT_ERROR("[train]\n\nlr = 1e-46\n", NULL, FN_ERR_INVALID,
                 "run.ini:3: train.lr: 1e-46 is out of range", "> 0");
    const char *const tiny_lr[] = {"train.lr=1e-46", NULL};
    EXPECT_ERROR(minimal, tiny_lr, FN_ERR_INVALID, "--set train.lr=1e-46: 1e-46 is out of range",
                 NULL);
    EXPECT_ERROR("[model]\nnegative_slope = 1e39\n", NULL, FN_ERR_INVALID,
                 "run.ini:2: model.negative_slope: 1e39 is out of range",
                 "not a finite float32 number");
    EXPECT_ERROR("[train]\nmomentum = -1e39\n", NULL, FN_ERR_INVALID,
                 "train.momentum: -1e39 is out of range", NULL);
    /* The smallest normal float and a subnormal are positive floats: kept. */
    fn_config *cfg = NULL;
    const char *const small[] = {"train.lr=1.2e-38", "model.eps=1e-44", NULL};
    fn_status st = load(*state, minimal, small, &cfg);
    if (st != FN_OK)
        fail_msg("small positive floats refused: %s", fn_last_error());
    assert_true(cfg->lr == 1.2e-38f);
    assert_true(cfg->eps > 0.0f && cfg->eps == 1e-44f);
    fn_config_destroy(cfg);
    /* A double that rounds to 0 is fine where 0 is allowed. */
    const char *const zero[] = {"train.momentum=1e-50", NULL};
    st = load(*state, minimal, zero, &cfg);
    if (st != FN_OK)
        fail_msg("momentum 1e-50 refused: %s", fn_last_error());
    assert_true(sgd_of(cfg)->momentum == 0.0f);
    fn_config_destroy(cfg);
}

static void test_zero_and_negative_sizes(void **state)
{
    EXPECT_ERROR("[train]\nbatch_size = 0\n", NULL, FN_ERR_INVALID,
                 "run.ini:2: train.batch_size: 0 is out of range", ">= 1");
    EXPECT_ERROR("[train]\nepochs = -2\n", NULL, FN_ERR_INVALID, "train.epochs: -2 is out", NULL);
    EXPECT_ERROR("[model]\ngroups = 0\n", NULL, FN_ERR_INVALID, "model.groups: 0 is out", NULL);
    EXPECT_ERROR("[model]\nlayers = block 16, linear 0\n", NULL, FN_ERR_INVALID,
                 "run.ini:2: model.layers: item 2: width '0' is not an integer", NULL);
    EXPECT_ERROR("[model]\nlayers = block -16\n", NULL, FN_ERR_INVALID,
                 "model.layers: item 1: width '-16'", NULL);
}

static void test_bad_layer_lists(void **state)
{
    EXPECT_ERROR("[model]\nlayers = blok 16\n", NULL, FN_ERR_INVALID,
                 "model.layers: item 1: unknown layer kind 'blok'", NULL);
    EXPECT_ERROR("[model]\nlayers = block\n", NULL, FN_ERR_INVALID,
                 "model.layers: item 1 'block': expected 'block N'", NULL);
    EXPECT_ERROR("[model]\nlayers = block 16,, linear 4\n", NULL, FN_ERR_INVALID,
                 "model.layers: item 2 is empty", NULL);
    EXPECT_ERROR("[model]\nlayers = block 1x6\n", NULL, FN_ERR_INVALID, "width '1x6'", NULL);
    EXPECT_ERROR("[model]\nlayers = block 16, dropout 1, linear 4\n", NULL, FN_ERR_INVALID,
                 "run.ini:2: model.layers: item 2: dropout probability '1' is not a number from "
                 "0 to below 1", NULL);
    EXPECT_ERROR("[model]\nlayers = block 16, dropout -0.1, linear 4\n", NULL, FN_ERR_INVALID,
                 "item 2: dropout probability '-0.1'", NULL);
    EXPECT_ERROR("[model]\nlayers = dropout 0.5\n", NULL, FN_ERR_INVALID,
                 "no item sets a width", NULL);
    EXPECT_ERROR("[data]\ntrain = train.h5\n[model]\nlayers = block 16, residual 16 x 3, "
                 "dropout 0.1, residual 8, linear 4\n",
                 NULL, FN_ERR_INVALID,
                 "run.ini:4: model.layers: residual 8 takes inputs of 16 columns: a residual "
                 "layer adds its input to its output",
                 "of layer 5 (residual 8)");
}

static void test_groups_must_divide(void **state)
{
    EXPECT_ERROR("[data]\ntrain = train.h5\n[model]\nlayers = block 16, block 12, linear 5\n"
                 "groups = 8\n",
                 NULL, FN_ERR_INVALID,
                 "run.ini:5: model.groups: groups 8 does not divide the width 12 of layer 1", NULL);
    /* With the default groups, the layer list is where the problem is. */
    EXPECT_ERROR("[data]\ntrain = train.h5\n[model]\nlayers = block 20\n", NULL, FN_ERR_INVALID,
                 "run.ini:4: model.layers: groups 8 does not divide the width 20", NULL);
}

/* The groups a built layer holds (its kind's attribute "groups"). */
static int built_groups(const fn_layer *l)
{
    const fn_layer_kind *k = fn_layer_kind_of(l);
    fn_layer_attr_value v[FN_LAYER_ATTRS_MAX];
    assert_int_equal(k->get_attrs(l, v), FN_OK);
    for (int i = 0; i < k->n_attrs; i++)
        if (strcmp(k->attrs[i].name, "groups") == 0)
            return (int)v[i].i;
    return 0;
}

/* groups = auto: each block gets the largest divisor of its width up to 8
 * that leaves every group at least 2 channels (a group of one channel
 * normalises it to 0: a constant output), so widths 8 does not divide
 * (30, scikit-learn's 100) build, and small ones (8, 7, 6, 2) are never
 * cut into single channels. */
static void test_groups_auto(void **state)
{
    const int widths[] = {64, 30, 100, 13, 12, 1, 8, 7, 6, 2, 16, 4},
              want[] = {8, 6, 5, 1, 6, 1, 4, 1, 3, 1, 8, 2};
    for (int i = 0; i < 12; i++)
        assert_int_equal(fn_block_auto_groups(widths[i]), want[i]);
    fn_config *cfg = NULL;
    assert_int_equal(load(*state, "[data]\ntrain = train.h5\n[model]\nlayers = block 30, "
                                  "residual 30, block 100, block 13, block 8, block 7, linear 4\n"
                                  "groups = auto\n",
                          NULL, &cfg),
                     FN_OK);
    char value[16];
    assert_int_equal(fn_config_get(cfg, "model.groups", value, sizeof value), FN_OK);
    assert_string_equal(value, "auto");
    fn_context *ctx = NULL;
    fn_net *net = NULL;
    assert_int_equal(fn_context_create(&ctx, FN_CPU, -1, FN_MATH_FP32), FN_OK);
    assert_int_equal(fn_model_build(&net, ctx, cfg, 7), FN_OK);
    const int built[] = {6, 6, 5, 1, 4, 1};
    for (int i = 0; i < 6; i++)
        assert_int_equal(built_groups(fn_net_layer(net, i)), built[i]);
    fn_net_destroy(net);
    fn_context_destroy(ctx);
    fn_config_destroy(cfg);
    EXPECT_ERROR("[data]\ntrain = train.h5\n[model]\nlayers = block 16, linear 4\n"
                 "groups = nine\n", NULL, FN_ERR_INVALID,
                 "model.groups: expected auto or a whole number, got 'nine'", NULL);
}

static void test_nesterov_needs_momentum(void **state)
{
    EXPECT_ERROR("[data]\ntrain = train.h5\n[model]\nlayers = linear 2\n[train]\nnesterov = on\n",
                 NULL, FN_ERR_INVALID, "run.ini:6: train.nesterov: nesterov needs momentum > 0",
                 NULL);
}

static void test_momentum_bf16_needs_momentum(void **state)
{
    EXPECT_ERROR("[data]\ntrain = train.h5\n[model]\nlayers = linear 2\n[train]\n"
                 "momentum_bf16 = true\n",
                 NULL, FN_ERR_INVALID,
                 "run.ini:6: train.momentum_bf16: momentum_bf16 needs momentum > 0", NULL);
    EXPECT_ERROR("[train]\nmomentum_bf16 = half\n", NULL, FN_ERR_INVALID,
                 "train.momentum_bf16: expected true or false, got 'half'", NULL);
    const char *const adam[] = {"train.optimizer=adam", "train.momentum_bf16=true", NULL};
    EXPECT_ERROR(minimal, adam, FN_ERR_INVALID,
                 "--set train.momentum_bf16=true: applies to optimizer = sgd only", NULL);
}

static void test_bad_enums(void **state)
{
    EXPECT_ERROR("[train]\nloss = hinge\n", NULL, FN_ERR_INVALID,
                 "train.loss: expected bce_with_logits, cross_entropy, huber or mse, got 'hinge'", NULL);
    EXPECT_ERROR("[run]\ndevice = gpu\n", NULL, FN_ERR_INVALID, "run.device: expected auto", NULL);
    EXPECT_ERROR("[run]\ndevice = cuda:x\n", NULL, FN_ERR_INVALID, "run.device: expected cuda:N",
                 NULL);
    EXPECT_ERROR("[run]\nmath = fp16\n", NULL, FN_ERR_INVALID,
                 "run.math: expected fp32, tf32, tf32x3 or bf16, got 'fp16'", NULL);
}

/* math = bf16 is a mode of its own, from the file and from --set. */
static void test_math_bf16(void **state)
{
    fixture *f = *state;
    static const char text[] = "[data]\ntrain = train.h5\n[model]\nlayers = linear 2\n"
                               "[run]\nmath = bf16\n";
    fn_config *cfg = NULL;
    if (load(f, text, NULL, &cfg) != FN_OK)
        fail_msg("%s", fn_last_error());
    assert_int_equal(cfg->math, FN_MATH_BF16);
    assert_string_equal(fn_math_name(cfg->math), "bf16");
    fn_config_destroy(cfg);
    const char *sets[] = {"run.math=bf16", NULL};
    if (load(f, "[data]\ntrain = train.h5\n[model]\nlayers = linear 2\n", sets, &cfg) != FN_OK)
        fail_msg("%s", fn_last_error());
    assert_int_equal(cfg->math, FN_MATH_BF16);
    fn_config_destroy(cfg);
}

/* [run] grad_sum: float32 by default, bf16 from the file or --set (any
 * case), also with the optimiser sharded, given back by fn_config_get;
 * other values refused by name. */
static void test_grad_sum(void **state)
{
    fixture *f = *state;
    fn_config *cfg = NULL;
    if (load(f, minimal, NULL, &cfg) != FN_OK)
        fail_msg("%s", fn_last_error());
    assert_int_equal(cfg->grad_sum, FN_COMM_SUM_FLOAT32);
    fn_config_destroy(cfg);
    static const char text[] = "[data]\ntrain = train.h5\n[model]\nlayers = linear 2\n"
                               "[run]\ngrad_sum = bf16\n";
    if (load(f, text, NULL, &cfg) != FN_OK)
        fail_msg("%s", fn_last_error());
    assert_int_equal(cfg->grad_sum, FN_COMM_SUM_BF16);
    char value[32];
    assert_int_equal(fn_config_get(cfg, "run.grad_sum", value, sizeof value), FN_OK);
    assert_string_equal(value, "bf16");
    fn_config_destroy(cfg);
    const char *sets[] = {"run.grad_sum=BF16", NULL};
    if (load(f, minimal, sets, &cfg) != FN_OK)
        fail_msg("%s", fn_last_error());
    assert_int_equal(cfg->grad_sum, FN_COMM_SUM_BF16);
    fn_config_destroy(cfg);
    /* With the optimiser sharded too: its reduce-scatter sums in bfloat16. */
    static const char sharded[] = "[data]\ntrain = train.h5\n[model]\nlayers = linear 2\n"
                                  "[run]\ngrad_sum = bf16\nshard = optimizer\n";
    if (load(f, sharded, NULL, &cfg) != FN_OK)
        fail_msg("%s", fn_last_error());
    assert_int_equal(cfg->grad_sum, FN_COMM_SUM_BF16);
    assert_true(cfg->shard);
    fn_config_destroy(cfg);
    EXPECT_ERROR("[run]\ngrad_sum = fp16\n", NULL, FN_ERR_INVALID,
                 "run.grad_sum: expected float32 or bf16, got 'fp16'", NULL);
    EXPECT_ERROR("[run]\ngrad_sum = bf61\n", NULL, FN_ERR_INVALID, "got 'bf61'",
                 "did you mean bf16?");
}

/* [train] optimizer, its options, schedules and clipping. */
static void test_optimizer_keys(void **state)
{
    fixture *f = *state;
    fn_config *cfg = NULL;
    assert_int_equal(load(f, minimal, NULL, &cfg), FN_OK);
    assert_string_equal(cfg->optimizer->name, "sgd");
    assert_float_equal(sgd_of(cfg)->momentum, 0, 0);
    assert_float_equal(sgd_of(cfg)->dampening, 0, 0);
    assert_float_equal(sgd_of(cfg)->weight_decay, 0, 0);
    assert_string_equal(cfg->schedule->name, "constant");
    assert_int_equal(cfg->warmup_steps, 0);
    assert_float_equal(cfg->clip_grad_norm, 0, 0);
    fn_config_destroy(cfg);

    char text[512];
    snprintf(text, sizeof text, "%s[train]\noptimizer = adamw\nbetas = 0.8 , 0.99\n"
             "adam_eps = 1e-6\nschedule = cosine\nwarmup_steps = 10\nmin_lr = 1e-4\n"
             "clip_grad_norm = 2.5\n", minimal);
    assert_int_equal(load(f, text, NULL, &cfg), FN_OK);
    assert_string_equal(cfg->optimizer->name, "adamw");
    assert_float_equal(adam_of(cfg)->beta1, 0.8f, 0);
    assert_float_equal(adam_of(cfg)->beta2, 0.99f, 0);
    assert_float_equal(adam_of(cfg)->eps, 1e-6f, 0);
    assert_string_equal(cfg->schedule->name, "cosine");
    assert_int_equal(cfg->warmup_steps, 10);
    assert_float_equal(((const fn_cosine_schedule_options *)cfg->schedule_options)->min_lr, 1e-4f,
                       0);
    assert_float_equal(cfg->clip_grad_norm, 2.5f, 0);
    /* AdamW's weight decay defaults to torch.optim.AdamW's. */
    assert_float_equal(adam_of(cfg)->weight_decay, 1e-2f, 0);
    fn_config_destroy(cfg);

    const char *const adam_wd0[] = {"train.optimizer=adamw", "train.weight_decay=0", NULL};
    assert_int_equal(load(f, minimal, adam_wd0, &cfg), FN_OK);
    assert_float_equal(adam_of(cfg)->weight_decay, 0, 0);
    fn_config_destroy(cfg);
    const char *const step[] = {"train.schedule=step", "train.step_size=100", "train.gamma=0.5",
                                NULL};
    assert_int_equal(load(f, minimal, step, &cfg), FN_OK);
    const fn_step_schedule_options *so = cfg->schedule_options;
    assert_int_equal(so->step_size, 100);
    assert_float_equal(so->gamma, 0.5f, 0);
    char v[32];
    assert_int_equal(fn_config_get(cfg, "train.step_size", v, sizeof v), FN_OK);
    assert_string_equal(v, "100");
    fn_config_destroy(cfg);
    /* momentum = 0 with Adam says nothing wrong: allowed. */
    const char *const adam_m0[] = {"train.optimizer=adam", "train.momentum=0", NULL};
    assert_int_equal(load(f, minimal, adam_m0, &cfg), FN_OK);
    fn_config_destroy(cfg);
}

/* A loss's own keys: read into its options block, refused for another
 * loss, checked against their range, and shown by fn_config_get. */
static void test_loss_keys(void **state)
{
    char text[512];
    snprintf(text, sizeof text, "%s[train]\nloss = huber\ndelta = 0.25\n", minimal);
    fn_config *cfg = NULL;
    assert_int_equal(load(*state, text, NULL, &cfg), FN_OK);
    assert_ptr_equal(cfg->loss, &fn_huber_kind);
    assert_true(((const fn_huber_options *)cfg->loss_options)->delta == 0.25f);
    char value[64];
    assert_int_equal(fn_config_get(cfg, "train.delta", value, sizeof value), FN_OK);
    assert_string_equal(value, "0.25");
    fn_config_destroy(cfg);
    snprintf(text, sizeof text, "%s[train]\nloss = huber\n", minimal);
    assert_int_equal(load(*state, text, NULL, &cfg), FN_OK);
    assert_true(((const fn_huber_options *)cfg->loss_options)->delta == 1.0f);
    fn_config_destroy(cfg);
    snprintf(text, sizeof text, "%s[train]\nloss = mse\ndelta = 2\n", minimal);
    EXPECT_ERROR(text, NULL, FN_ERR_INVALID,
                 "run.ini:7: train.delta: applies to loss = huber only, not mse", NULL);
    snprintf(text, sizeof text, "%s[train]\nloss = huber\ndelta = 0\n", minimal);
    EXPECT_ERROR(text, NULL, FN_ERR_INVALID, "run.ini:7: train.delta: 0 is out of range", NULL);
    const char *const negative[] = {"train.loss=huber", "train.delta=-1", NULL};
    EXPECT_ERROR(minimal, negative, FN_ERR_INVALID, "--set train.delta=-1: -1 is out of range", NULL);
    /* cross_entropy's: minimal's network has 4 outputs. */
    snprintf(text, sizeof text, "%s[train]\nclass_weights = 1, 2.5, 0, 4\nlabel_smoothing = 0.1\n",
             minimal);
    assert_int_equal(load(*state, text, NULL, &cfg), FN_OK);
    const fn_cross_entropy_options *ce = cfg->loss_options;
    assert_int_equal(ce->class_weights.n, 4);
    assert_true(ce->class_weights.values[1] == 2.5f && ce->class_weights.values[2] == 0.0f);
    assert_true(ce->label_smoothing == 0.1f);
    assert_int_equal(fn_config_get(cfg, "train.class_weights", value, sizeof value), FN_OK);
    assert_string_equal(value, "1, 2.5, 0, 4");
    fn_config_destroy(cfg);
    snprintf(text, sizeof text, "%s[train]\nclass_weights = 1, 2, 3\n", minimal);
    EXPECT_ERROR(text, NULL, FN_ERR_INVALID,
                 "run.ini:6: train.class_weights: 3 weights, but the network has 4 outputs", NULL);
    snprintf(text, sizeof text, "%s[train]\nclass_weights = 1, -2, 3, 4\n", minimal);
    EXPECT_ERROR(text, NULL, FN_ERR_INVALID,
                 "run.ini:6: train.class_weights: item 2: -2 is out of range", NULL);
    snprintf(text, sizeof text, "%s[train]\nclass_weights = 1, x, 3, 4\n", minimal);
    EXPECT_ERROR(text, NULL, FN_ERR_INVALID,
                 "run.ini:6: train.class_weights: item 2: expected a number, got 'x'", NULL);
    snprintf(text, sizeof text, "%s[train]\nlabel_smoothing = 1.5\n", minimal);
    EXPECT_ERROR(text, NULL, FN_ERR_INVALID,
                 "run.ini:6: train.label_smoothing: 1.5 is out of range", NULL);
    snprintf(text, sizeof text, "%s[train]\nloss = mse\nlabel_smoothing = 0.1\n", minimal);
    EXPECT_ERROR(text, NULL, FN_ERR_INVALID, "run.ini:7: train.label_smoothing: applies to loss = "
                 "cross_entropy only, not mse (mse's keys: none)", NULL);
}

static void test_optimizer_key_errors(void **state)
{
    char text[512];
    snprintf(text, sizeof text, "%s[train]\noptimizer = adam\nmomentum = 0.9\n", minimal);
    EXPECT_ERROR(text, NULL, FN_ERR_INVALID,
                 "run.ini:7: train.momentum: applies to optimizer = sgd or rmsprop only, not adam",
                 NULL);
    snprintf(text, sizeof text, "%s[train]\noptimizer = adamw\ndampening = 0.5\n", minimal);
    EXPECT_ERROR(text, NULL, FN_ERR_INVALID, "run.ini:7: train.dampening: applies to optimizer = "
                 "sgd only, not adamw", NULL);
    const char *const nesterov[] = {"train.optimizer=adam", "train.nesterov=true", NULL};
    EXPECT_ERROR(minimal, nesterov, FN_ERR_INVALID,
                 "--set train.nesterov=true: applies to optimizer = sgd only", NULL);
    snprintf(text, sizeof text, "%s[train]\nbetas = 0.5, 0.5\n", minimal);
    EXPECT_ERROR(text, NULL, FN_ERR_INVALID,
                 "run.ini:6: train.betas: applies to optimizer = adam or adamw only", NULL);
    const char *const eps[] = {"train.adam_eps=1e-3", NULL};
    EXPECT_ERROR(minimal, eps, FN_ERR_INVALID, "--set train.adam_eps=1e-3: applies to optimizer "
                 "= adam or adamw only, not sgd", NULL);
    EXPECT_ERROR("[train]\noptimizer = adagrad\n", NULL, FN_ERR_INVALID,
                 "train.optimizer: expected sgd, adam, adamw or rmsprop, got 'adagrad'", NULL);
    EXPECT_ERROR("[train]\nbetas = 0.9\n", NULL, FN_ERR_INVALID,
                 "train.betas: expected two numbers 'beta1, beta2', got '0.9'", NULL);
    EXPECT_ERROR("[train]\nbetas = 0.9, 1\n", NULL, FN_ERR_INVALID,
                 "train.betas: beta2 1 is out of range", NULL);
    EXPECT_ERROR("[train]\nbetas = x, 0.9\n", NULL, FN_ERR_INVALID,
                 "train.betas: expected a number, got 'x'", NULL);
    EXPECT_ERROR("[train]\nschedule = linear\n", NULL, FN_ERR_INVALID,
                 "train.schedule: expected constant, step, cosine or plateau, got 'linear'", NULL);
    snprintf(text, sizeof text, "%s[train]\nschedule = step\n", minimal);
    EXPECT_ERROR(text, NULL, FN_ERR_INVALID,
                 "run.ini:6: train.schedule: schedule = step needs step_size", NULL);
    snprintf(text, sizeof text, "%s[train]\nstep_size = 10\n", minimal);
    EXPECT_ERROR(text, NULL, FN_ERR_INVALID,
                 "run.ini:6: train.step_size: applies to schedule = step only", NULL);
    snprintf(text, sizeof text, "%s[train]\nschedule = cosine\ngamma = 0.5\n", minimal);
    EXPECT_ERROR(text, NULL, FN_ERR_INVALID,
                 "run.ini:7: train.gamma: applies to schedule = step only", NULL);
    snprintf(text, sizeof text, "%s[train]\nmin_lr = 0.001\n", minimal);
    EXPECT_ERROR(text, NULL, FN_ERR_INVALID,
                 "run.ini:6: train.min_lr: applies to schedule = cosine or plateau only", NULL);
    snprintf(text, sizeof text, "%s[train]\nschedule = cosine\nlr = 0.1\nmin_lr = 0.5\n",
             minimal);
    EXPECT_ERROR(text, NULL, FN_ERR_INVALID,
                 "run.ini:8: train.min_lr: min_lr 0.5 is above lr 0.1", NULL);
    EXPECT_ERROR("[train]\nclip_grad_norm = -1\n", NULL, FN_ERR_INVALID,
                 "train.clip_grad_norm: -1 is out of range", NULL);
    EXPECT_ERROR("[train]\nwarmup_steps = -1\n", NULL, FN_ERR_INVALID,
                 "train.warmup_steps: -1 is out of range", NULL);
}

/* RMSprop's keys: torch's defaults, read into its block; each bad value
 * names its key; its own keys refused with another optimiser. */
static void test_rmsprop_keys(void **state)
{
    fixture *f = *state;
    fn_config *cfg = NULL;
    const char *const plain[] = {"train.optimizer=rmsprop", NULL};
    assert_int_equal(load(f, minimal, plain, &cfg), FN_OK);
    const fn_rmsprop_config *r = cfg->optimizer_options;
    assert_string_equal(cfg->optimizer->name, "rmsprop");
    assert_float_equal(r->alpha, 0.99f, 0);
    assert_float_equal(r->eps, 1e-8f, 0);
    assert_float_equal(r->momentum, 0, 0);
    assert_float_equal(r->weight_decay, 0, 0);
    assert_int_equal(r->centered, 0);
    fn_config_destroy(cfg);
    char text[512];
    snprintf(text, sizeof text, "%s[train]\noptimizer = rmsprop\nalpha = 0.5\nrmsprop_eps = 1e-6\n"
             "momentum = 0.9\ncentered = yes\nweight_decay = 0.01\n", minimal);
    assert_int_equal(load(f, text, NULL, &cfg), FN_OK);
    r = cfg->optimizer_options;
    assert_float_equal(r->alpha, 0.5f, 0);
    assert_float_equal(r->eps, 1e-6f, 0);
    assert_float_equal(r->momentum, 0.9f, 0);
    assert_float_equal(r->weight_decay, 0.01f, 0);
    assert_int_equal(r->centered, 1);
    fn_config_destroy(cfg);

    snprintf(text, sizeof text, "%s[train]\noptimizer = rmsprop\nalpha = 1.5\n", minimal);
    EXPECT_ERROR(text, NULL, FN_ERR_INVALID, "run.ini:7: train.alpha: 1.5 is out of range", NULL);
    const char *const eps0[] = {"train.optimizer=rmsprop", "train.rmsprop_eps=0", NULL};
    EXPECT_ERROR(minimal, eps0, FN_ERR_INVALID, "--set train.rmsprop_eps=0: 0 is out of range",
                 "expected > 0");
    const char *const negative[] = {"train.optimizer=rmsprop", "train.momentum=-1", NULL};
    EXPECT_ERROR(minimal, negative, FN_ERR_INVALID, "--set train.momentum=-1: -1 is out of range",
                 NULL);
    const char *const centered[] = {"train.optimizer=rmsprop", "train.centered=maybe", NULL};
    EXPECT_ERROR(minimal, centered, FN_ERR_INVALID, "train.centered=maybe: expected true or false",
                 NULL);
    snprintf(text, sizeof text, "%s[train]\nalpha = 0.5\n", minimal);
    EXPECT_ERROR(text, NULL, FN_ERR_INVALID,
                 "run.ini:6: train.alpha: applies to optimizer = rmsprop only, not sgd", NULL);
    const char *const on_adam[] = {"train.optimizer=adam", "train.centered=true", NULL};
    EXPECT_ERROR(minimal, on_adam, FN_ERR_INVALID,
                 "--set train.centered=true: applies to optimizer = rmsprop only, not adam",
                 "(adam's keys: betas, adam_eps, weight_decay)");
    const char *const dampening[] = {"train.optimizer=rmsprop", "train.dampening=0.5", NULL};
    EXPECT_ERROR(minimal, dampening, FN_ERR_INVALID,
                 "--set train.dampening=0.5: applies to optimizer = sgd only, not rmsprop", NULL);
}

/* schedule = plateau: torch's ReduceLROnPlateau defaults, its keys read
 * into its block, each bad value naming its key, its keys refused with
 * another schedule; min_lr is cosine's and plateau's. */
static void test_plateau_keys(void **state)
{
    fixture *f = *state;
    fn_config *cfg = NULL;
    const char *const plain[] = {"train.schedule=plateau", NULL};
    assert_int_equal(load(f, minimal, plain, &cfg), FN_OK);
    const fn_plateau_schedule_options *p = cfg->schedule_options;
    assert_string_equal(cfg->schedule->name, "plateau");
    assert_float_equal(p->factor, 0.1f, 0);
    assert_int_equal(p->patience, 10);
    assert_float_equal(p->threshold, 1e-4f, 0);
    assert_int_equal(p->cooldown, 0);
    assert_float_equal(p->min_lr, 0, 0);
    fn_config_destroy(cfg);
    char text[512];
    snprintf(text, sizeof text, "%s[train]\nschedule = plateau\nfactor = 0.5\n"
             "plateau_patience = 2\nthreshold = 0.01\ncooldown = 1\nmin_lr = 1e-4\n", minimal);
    assert_int_equal(load(f, text, NULL, &cfg), FN_OK);
    p = cfg->schedule_options;
    assert_float_equal(p->factor, 0.5f, 0);
    assert_int_equal(p->patience, 2);
    assert_float_equal(p->threshold, 0.01f, 0);
    assert_int_equal(p->cooldown, 1);
    assert_float_equal(p->min_lr, 1e-4f, 0);
    char v[32];
    assert_int_equal(fn_config_get(cfg, "train.plateau_patience", v, sizeof v), FN_OK);
    assert_string_equal(v, "2");
    fn_config_destroy(cfg);

    snprintf(text, sizeof text, "%s[train]\nschedule = plateau\nfactor = 1\n", minimal);
    EXPECT_ERROR(text, NULL, FN_ERR_INVALID, "run.ini:7: train.factor: factor 1 must be > 0 and "
                 "< 1", NULL);
    const char *const zero[] = {"train.schedule=plateau", "train.factor=0", NULL};
    EXPECT_ERROR(minimal, zero, FN_ERR_INVALID, "--set train.factor=0: 0 is out of range", NULL);
    const char *const patience[] = {"train.schedule=plateau", "train.plateau_patience=-1", NULL};
    EXPECT_ERROR(minimal, patience, FN_ERR_INVALID,
                 "--set train.plateau_patience=-1: -1 is out of range: expected >= 0", NULL);
    const char *const fraction[] = {"train.schedule=plateau", "train.cooldown=1.5", NULL};
    EXPECT_ERROR(minimal, fraction, FN_ERR_INVALID,
                 "--set train.cooldown=1.5: expected an integer, got '1.5'", NULL);
    const char *const threshold[] = {"train.schedule=plateau", "train.threshold=1", NULL};
    EXPECT_ERROR(minimal, threshold, FN_ERR_INVALID, "--set train.threshold=1: threshold 1 must "
                 "be >= 0 and < 1", NULL);
    snprintf(text, sizeof text, "%s[train]\nschedule = cosine\ncooldown = 3\n", minimal);
    EXPECT_ERROR(text, NULL, FN_ERR_INVALID,
                 "run.ini:7: train.cooldown: applies to schedule = plateau only, not cosine",
                 "(cosine's keys: min_lr)");
    const char *const on_constant[] = {"train.factor=0.5", NULL};
    EXPECT_ERROR(minimal, on_constant, FN_ERR_INVALID, "--set train.factor=0.5: applies to "
                 "schedule = plateau only, not constant (constant's keys: none)", NULL);
}

static void test_missing_required(void **state)
{
    EXPECT_ERROR("[model]\nlayers = linear 2\n", NULL, FN_ERR_INVALID,
                 "run.ini: [data] train is required", NULL);
    EXPECT_ERROR("[data]\ntrain = train.h5\n", NULL, FN_ERR_INVALID,
                 "run.ini: [model] layers is required", NULL);
    /* An override supplies a required key as well as the file does. */
    const char *sets[] = {"model.layers=linear 2", NULL};
    fixture *f = *state;
    fn_config *cfg = NULL;
    assert_int_equal(load(f, "[data]\ntrain = train.h5\n", sets, &cfg), FN_OK);
    fn_config_destroy(cfg);
}

static void test_missing_data_file(void **state)
{
    EXPECT_ERROR("[data]\ntrain = nothere.h5\n[model]\nlayers = linear 2\n", NULL, FN_ERR_IO,
                 "run.ini:2: data.train: cannot read", "nothere.h5': No such file");
    EXPECT_ERROR("[data]\ntrain = train.h5\nvalid = v.h5\n[model]\nlayers = linear 2\n", NULL,
                 FN_ERR_IO, "run.ini:3: data.valid: cannot read", NULL);
    EXPECT_ERROR("[data]\ntrain = train.h5\n[model]\nlayers = linear 2\ninit = w.h5\n", NULL,
                 FN_ERR_IO, "run.ini:5: model.init: cannot read", NULL);
}

static void test_missing_config_file(void **state)
{
    (void)state;
    fn_config *cfg = NULL;
    assert_int_equal(fn_config_load(&cfg, "/nonexistent/run.ini"), FN_ERR_IO);
    assert_null(cfg);
    assert_non_null(strstr(fn_last_error(), "/nonexistent/run.ini: cannot open"));
}

/* A config or an input path that is not a regular file is refused at once,
 * saying what it is (a FIFO would block the reader forever), and a config
 * over 1 MiB is not read. */
static void test_not_a_regular_file(void **state)
{
    fixture *f = *state;
    char fifo[160], big[160];
    snprintf(fifo, sizeof fifo, "%s/fifo", f->dir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    fn_config *cfg = NULL;
    assert_int_equal(fn_config_load(&cfg, fifo), FN_ERR_IO);
    assert_non_null(strstr(fn_last_error(), "fifo: is a FIFO (named pipe), not a regular file"));
    assert_int_equal(fn_config_load(&cfg, f->dir), FN_ERR_IO);
    assert_non_null(strstr(fn_last_error(), ": is a directory, not a regular file"));
    assert_int_equal(fn_config_load(&cfg, "/dev/zero"), FN_ERR_IO);
    assert_non_null(strstr(fn_last_error(), "/dev/zero: is a character device, not a regular file"));
    EXPECT_ERROR("[data]\ntrain = fifo\n[model]\nlayers = linear 2\n", NULL, FN_ERR_IO,
                 "run.ini:2: data.train: '", "fifo' is a FIFO (named pipe), not a regular file");
    EXPECT_ERROR("[data]\ntrain = train.h5\n[model]\nlayers = linear 2\ninit = /dev/null\n", NULL,
                 FN_ERR_IO, "run.ini:5: model.init: '/dev/null' is a character device", NULL);
    EXPECT_ERROR("[data]\ntrain = train.h5\nvalid = .\n[model]\nlayers = linear 2\n", NULL,
                 FN_ERR_IO, "run.ini:3: data.valid: '", "' is a directory, not a regular file");
    remove(fifo);

    snprintf(big, sizeof big, "%s/big.ini", f->dir);
    FILE *out = fopen(big, "w");
    assert_non_null(out);
    for (int i = 0; i < (1 << 20) / 16 + 1; i++)
        fputs("; a comment....\n", out); /* 16 bytes a line */
    fclose(out);
    assert_int_equal(fn_config_load(&cfg, big), FN_ERR_INVALID);
    assert_non_null(strstr(fn_last_error(), "big.ini: 1048592 bytes: a config has at most 1048576"));
    remove(big);
    assert_null(cfg);
}

static void test_bad_overrides(void **state)
{
    const char *nan_lr[] = {"train.lr=x", NULL};
    EXPECT_ERROR(minimal, nan_lr, FN_ERR_INVALID, "--set train.lr=x: expected a number, got 'x'",
                 NULL);
    const char *no_eq[] = {"train.lr", NULL};
    EXPECT_ERROR(minimal, no_eq, FN_ERR_INVALID, "--set train.lr: expected section.key=value",
                 NULL);
    const char *no_dot[] = {"lr=3", NULL};
    EXPECT_ERROR(minimal, no_dot, FN_ERR_INVALID, "--set lr=3: expected section.key=value", NULL);
    const char *bad_key[] = {"train.rate=3", NULL};
    EXPECT_ERROR(minimal, bad_key, FN_ERR_INVALID, "--set train.rate=3: unknown key train.rate",
                 NULL);
    const char *bad_section[] = {"fit.lr=3", NULL};
    EXPECT_ERROR(minimal, bad_section, FN_ERR_INVALID, "--set fit.lr=3: unknown section [fit]",
                 NULL);
    const char *range[] = {"train.batch_size=0", NULL};
    EXPECT_ERROR(minimal, range, FN_ERR_INVALID, "--set train.batch_size=0: 0 is out of range",
                 NULL);
    const char *groups[] = {"model.groups=3", NULL};
    EXPECT_ERROR(minimal, groups, FN_ERR_INVALID,
                 "--set model.groups=3: groups 3 does not divide the width 16", NULL);
}

/* A line longer than inih's buffer (200 bytes) is read whole: 60 layers
 * in one line, then a key after it, with an inline comment on the long
 * line; a long line that is not "key = value" is still a syntax error. */
static void test_long_line(void **state)
{
    fixture *f = *state;
    char text[2048] = "[data]\ntrain = train.h5\n[model]\nlayers = block 16";
    for (int i = 1; i < 59; i++)
        strcat(text, ", block 16");
    strcat(text, ", linear 4 ; a deep net\ngroups = 4\n");
    fn_config *cfg = NULL;
    fn_status st = load(f, text, NULL, &cfg);
    if (st != FN_OK)
        fail_msg("%s", fn_last_error());
    assert_int_equal(cfg->n_layers, 60);
    assert_string_equal(cfg->layers[59].kind->name, "linear");
    assert_int_equal(cfg->groups, 4);
    char value[64];
    assert_int_equal(fn_config_get(cfg, "model.layers", value, sizeof value), FN_OK);
    assert_string_equal(value, "block 16 x 59, linear 4");
    fn_config_destroy(cfg);
    char broken[512] = "[data]\ntrain = train.h5\n";
    while (strlen(broken) < 400)
        strcat(broken, "block 16 ");
    strcat(broken, "\n");
    EXPECT_ERROR(broken, NULL, FN_ERR_INVALID, "run.ini:3: syntax error", NULL);
}

static void test_parse_layers(void **state)
{
    (void)state;
    fn_layer_spec *layers = NULL;
    int n = 0;
    assert_int_equal(fn_config_parse_layers("block 8,linear 2", &layers, &n), FN_OK);
    assert_int_equal(n, 2);
    assert_string_equal(layers[1].kind->name, "linear");
    free(layers);
    assert_int_equal(fn_config_parse_layers("", &layers, &n), FN_ERR_INVALID);
    assert_non_null(strstr(fn_last_error(), "item 1 is empty"));
    /* A repetition: "kind args x N" is N layers. */
    assert_int_equal(fn_config_parse_layers("block 8 x 16, linear 2 x 1", &layers, &n), FN_OK);
    assert_int_equal(n, 17);
    assert_string_equal(layers[15].kind->name, "block");
    assert_int_equal(layers[15].width, 8);
    assert_string_equal(layers[16].kind->name, "linear");
    free(layers);
    assert_int_equal(fn_config_parse_layers("block 8, block 8 x 0", &layers, &n), FN_ERR_INVALID);
    assert_non_null(strstr(fn_last_error(), "item 2: repetition 'x 0' is not an integer from 1"));
    assert_int_equal(fn_config_parse_layers("block 8 x many", &layers, &n), FN_ERR_INVALID);
    assert_non_null(strstr(fn_last_error(), "repetition 'x many'"));
}

/* Joined paths read as os.path.normpath writes them. */
static void test_path_join_normalises(void **state)
{
    (void)state;
    static const char *const cases[][3] = {
        {"data", "../runs/example", "runs/example"},
        {"data", "x", "data/x"},
        {".", "./a//b/", "a/b"},
        {"a/b", "../../..", ".."},
        {"/tmp/x", "../y/./z", "/tmp/y/z"},
        {"/", "../a", "/a"},
        {"a", "..", "."},
        {"../a", "../b", "../b"},
        {"d", "/abs/./p", "/abs/p"},
        {NULL, "a/../../b", "../b"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *p = fn_path_join(cases[i][0], cases[i][1]);
        assert_non_null(p);
        if (strcmp(p, cases[i][2]) != 0)
            fail_msg("join('%s', '%s') is '%s', expected '%s'", cases[i][0] ? cases[i][0] : "NULL",
                     cases[i][1], p, cases[i][2]);
        free(p);
    }
    /* A config's directory, the base of its relative paths. */
    static const char *const dirs[][2] = {
        {"a/b/c.ini", "a/b"}, {"c.ini", "."}, {"/c.ini", "/"}, {"/x/y", "/x"}};
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
        char *d = fn_path_dir(dirs[i][0]);
        assert_non_null(d);
        assert_string_equal(d, dirs[i][1]);
        free(d);
    }
}

/* keep_best and patience need a validation set; their defaults are off. */
static void test_best_keys(void **state)
{
    fixture *f = *state;
    fn_config *cfg = NULL;
    assert_int_equal(load(f, minimal, NULL, &cfg), FN_OK);
    assert_int_equal(cfg->keep_best, 0);
    assert_int_equal(cfg->patience, 0);
    assert_false(fn_config_given(cfg, "train", "patience"));
    assert_true(fn_config_given(cfg, "model", "layers"));
    fn_config_destroy(cfg);
    const char *best[] = {"train.keep_best=true", NULL};
    EXPECT_ERROR(minimal, best, FN_ERR_INVALID,
                 "--set train.keep_best=true: needs a validation set ([data] valid) to watch", NULL);
    const char *patience[] = {"train.patience=3", NULL};
    EXPECT_ERROR(minimal, patience, FN_ERR_INVALID, "--set train.patience=3: needs a validation",
                 NULL);
    const char *negative[] = {"train.patience=-1", NULL};
    EXPECT_ERROR(minimal, negative, FN_ERR_INVALID,
                 "--set train.patience=-1: -1 is out of range: expected >= 0 and <= 1000000", NULL);
}

/* [train] monitor: by default the loss kind's validation metric
 * (valid_accuracy for cross_entropy, valid_loss for mse); train_loss
 * needs no validation set; valid_accuracy needs a loss that classifies;
 * min_delta is >= 0. */
static void test_monitor_keys(void **state)
{
    fixture *f = *state;
    fn_config *cfg = NULL;
    char value[64];
    assert_int_equal(load(f, minimal, NULL, &cfg), FN_OK);
    assert_int_equal(cfg->monitor, FN_MONITOR_VALID_ACCURACY);
    assert_int_equal(fn_config_get(cfg, "train.monitor", value, sizeof value), FN_OK);
    assert_string_equal(value, "valid_accuracy");
    assert_true(cfg->min_delta == 0);
    fn_config_destroy(cfg);
    const char *mse[] = {"train.loss=mse", NULL};
    assert_int_equal(load(f, minimal, mse, &cfg), FN_OK);
    assert_int_equal(cfg->monitor, FN_MONITOR_VALID_LOSS);
    fn_config_destroy(cfg);
    const char *train_loss[] = {"train.patience=3", "train.monitor=train_loss",
                                "train.min_delta=0.01", NULL};
    assert_int_equal(load(f, minimal, train_loss, &cfg), FN_OK);
    assert_int_equal(cfg->monitor, FN_MONITOR_TRAIN_LOSS);
    assert_true(cfg->min_delta == 0.01);
    fn_config_destroy(cfg);
    const char *valid_loss[] = {"train.keep_best=true", "train.monitor=valid_loss", NULL};
    EXPECT_ERROR(minimal, valid_loss, FN_ERR_INVALID,
                 "--set train.keep_best=true: needs a validation set ([data] valid) to watch "
                 "valid_loss (or [train] monitor = train_loss)", NULL);
    const char *acc[] = {"train.loss=mse", "train.monitor=valid_accuracy", NULL};
    EXPECT_ERROR(minimal, acc, FN_ERR_INVALID, "--set train.monitor=valid_accuracy: "
                 "valid_accuracy needs a loss that classifies (loss = mse has no accuracy)", NULL);
    const char *bad[] = {"train.monitor=val_loss", NULL};
    EXPECT_ERROR(minimal, bad, FN_ERR_INVALID, "expected valid_loss, valid_accuracy or "
                 "train_loss, got 'val_loss'", NULL);
    const char *delta[] = {"train.min_delta=-1", NULL};
    EXPECT_ERROR(minimal, delta, FN_ERR_INVALID, "--set train.min_delta=-1: -1 is out of range",
                 NULL);
}

/* An optimiser chosen by --set takes over a file written for another in
 * one step: the file's keys of the other optimiser become notices; given
 * by --set, or with the optimiser chosen in the file, they stay errors. */
static void test_optimizer_from_command_line(void **state)
{
    fixture *f = *state;
    char text[512];
    snprintf(text, sizeof text, "%s[train]\nmomentum = 0.9\nnesterov = true\nlr = 0.1\n",
             minimal);
    fn_config *cfg = NULL;
    const char *adam[] = {"train.optimizer=adam", NULL};
    assert_int_equal(load(f, text, adam, &cfg), FN_OK);
    assert_string_equal(cfg->optimizer->name, "adam");
    assert_non_null(strstr(fn_config_notice(cfg, 0),
                           "/run.ini:6: [train] momentum applies to optimizer = sgd or rmsprop only; "
                           "ignored, as --set train.optimizer=adam chose adam"));
    assert_non_null(strstr(fn_config_notice(cfg, 1), "run.ini:7: [train] nesterov applies"));
    assert_null(fn_config_notice(cfg, 2));
    fn_config_destroy(cfg);
    /* Without the switch, no notice. */
    assert_int_equal(load(f, text, NULL, &cfg), FN_OK);
    assert_null(fn_config_notice(cfg, 0));
    fn_config_destroy(cfg);
    const char *both[] = {"train.optimizer=adam", "train.momentum=0.5", NULL};
    EXPECT_ERROR(text, both, FN_ERR_INVALID,
                 "--set train.momentum=0.5: applies to optimizer = sgd or rmsprop only, not adam", NULL);
    /* Back from the file's adam to SGD: adam's keys become notices. */
    snprintf(text, sizeof text, "%s[train]\noptimizer = adam\nbetas = 0.8, 0.99\n", minimal);
    const char *sgd[] = {"train.optimizer=sgd", NULL};
    assert_int_equal(load(f, text, sgd, &cfg), FN_OK);
    assert_non_null(strstr(fn_config_notice(cfg, 0), "run.ini:7: [train] betas applies "
                                                     "to optimizer = adam or adamw only"));
    fn_config_destroy(cfg);
}

/* fn_config_get gives each kind of value back as a file would give it. */
static void test_get_values(void **state)
{
    const fixture *f = *state;
    static const char *const sets[] = {"run.device=cuda:1", "train.optimizer=adamw",
                                       "train.betas=0.8, 0.99", NULL};
    fn_config *cfg = NULL;
    EXPECT_OK(load(f, "[data]\ntrain = train.h5\nstandardize = true\n[model]\n"
                      "layers = block 16, block 16, linear 4\ngroups = 4\n[train]\nlr = 0.25\n"
                      "seed = 9223372036854775807\n",
                   sets, &cfg));
    char v[256], want[256];
    static const char *const expected[][2] = {
        {"model.layers", "block 16 x 2, linear 4"}, {"model.groups", "4"},
        {"train.lr", "0.25"}, {"data.standardize", "true"}, {"train.optimizer", "adamw"},
        {"train.weight_decay", "0.00999999978"}, {"train.betas", "0.800000012, 0.99000001"},
        {"train.seed", "9223372036854775807"}, {"run.device", "cuda:1"},
        {"run.math", "fp32"}, {"train.loss", "cross_entropy"}, {"train.schedule", "constant"},
        {"data.memory_budget_mb", "1024"}, {"data.valid", ""}, {"run.log_every", "20"}};
    for (size_t i = 0; i < sizeof expected / sizeof expected[0]; i++) {
        EXPECT_OK(fn_config_get(cfg, expected[i][0], v, sizeof v));
        if (strcmp(v, expected[i][1]) != 0)
            fail_msg("%s: '%s', expected '%s'", expected[i][0], v, expected[i][1]);
    }
    EXPECT_OK(fn_config_get(cfg, "data.train", v, sizeof v));
    snprintf(want, sizeof want, "%s/train.h5", f->dir);
    assert_string_equal(v, want);
    EXPECT_FAIL(fn_config_get(cfg, "train.rate", v, sizeof v), FN_ERR_INVALID,
                "fn_config_get: unknown key 'train.rate'");
    EXPECT_FAIL(fn_config_get(cfg, "lr", v, sizeof v), FN_ERR_INVALID, "unknown key 'lr'");
    EXPECT_FAIL(fn_config_get(cfg, "model.layers", v, 10), FN_ERR_INVALID,
                "model.layers needs 23 bytes, given 10");
    fn_config_destroy(cfg);
}

/* An empty [output] dir is a mistake (a variable that expanded to
 * nothing), not a request for the default folder; the empty valid and init
 * keys mean "none". */
static void test_empty_output_dir(void **state)
{
    const char *empty[] = {"output.dir=", NULL};
    EXPECT_ERROR(minimal, empty, FN_ERR_INVALID, "--set output.dir=: expected a directory, got "
                 "nothing", "leave [output] dir out for the default");
    static const char in_file[] =
        "[data]\ntrain = train.h5\n[model]\nlayers = block 16, linear 4\n[output]\ndir =\n";
    EXPECT_ERROR(in_file, NULL, FN_ERR_INVALID, "run.ini:6: output.dir: expected a directory",
                 NULL);
    const char *replaced[] = {"output.dir=elsewhere", NULL};
    fn_config *cfg = NULL;
    if (load(*state, in_file, replaced, &cfg) != FN_OK)
        fail_msg("%s", fn_last_error());
    assert_non_null(strstr(cfg->out_dir, "elsewhere"));
    fn_config_destroy(cfg);
    const char *no_valid[] = {"data.valid=", "model.init=", NULL};
    if (load(*state, minimal, no_valid, &cfg) != FN_OK)
        fail_msg("%s", fn_last_error());
    assert_null(cfg->valid);
    assert_null(cfg->init);
    fn_config_destroy(cfg);
}

/* Misspelt sections, keys and values name the one that was likely meant;
 * values are taken whatever their case. */
static void test_did_you_mean(void **state)
{
    EXPECT_ERROR("[data]\ntrain = train.h5\nstandardise = true\n", NULL, FN_ERR_INVALID,
                 "run.ini:3: data.standardise: unknown key", "did you mean standardize?");
    EXPECT_ERROR("[data]\ntrain = train.h5\n[train]\nlearning_rate = 3\n", NULL, FN_ERR_INVALID,
                 "train.learning_rate: unknown key", "did you mean lr?");
    EXPECT_ERROR("[data]\ntrain = train.h5\n[training]\nepochs = 3\n", NULL, FN_ERR_INVALID,
                 "run.ini:4: unknown section [training]", "did you mean [train]?");
    EXPECT_ERROR("[data]\ntrain = train.h5\n[train]\nstandardize = true\n", NULL,
                 FN_ERR_INVALID, "train.standardize: unknown key",
                 "did you mean [data] standardize?");
    EXPECT_ERROR("[train]\noptimizer = adma\n", NULL, FN_ERR_INVALID,
                 "got 'adma'", "did you mean adam?");
    EXPECT_ERROR("[train]\nloss = crossentropy\n", NULL, FN_ERR_INVALID,
                 "got 'crossentropy'", "did you mean cross_entropy?");
    EXPECT_ERROR("[train]\nschedule = cosin\n", NULL, FN_ERR_INVALID, "got 'cosin'",
                 "did you mean cosine?");
    EXPECT_ERROR("[run]\nmath = tf23\n", NULL, FN_ERR_INVALID, "got 'tf23'",
                 "did you mean tf32?");
    EXPECT_ERROR("[model]\nlayers = blok 16\n", NULL, FN_ERR_INVALID, "unknown layer kind 'blok'",
                 "did you mean block?");
    const char *set_section[] = {"training.lr=3", NULL};
    EXPECT_ERROR(minimal, set_section, FN_ERR_INVALID, "--set training.lr=3: unknown section",
                 "did you mean [train]?");
    const char *set_key[] = {"train.learning_rate=3", NULL};
    EXPECT_ERROR(minimal, set_key, FN_ERR_INVALID, "unknown key train.learning_rate",
                 "did you mean lr?");
    /* Nothing near: no guess. */
    EXPECT_ERROR("[train]\nloss = hinge\n", NULL, FN_ERR_INVALID, "got 'hinge'", NULL);
    assert_null(strstr(fn_last_error(), "did you mean"));
}

/* standardize_targets is for values (mse), not class labels or bce's 0/1. */
static void test_standardize_targets(void **state)
{
    const char *ce[] = {"data.standardize_targets=true", NULL};
    EXPECT_ERROR(minimal, ce, FN_ERR_INVALID, "--set data.standardize_targets=true: applies to a "
                 "loss of values (mse), not loss = cross_entropy's class labels", NULL);
    const char *bce[] = {"data.standardize_targets=true", "train.loss=bce_with_logits", NULL};
    EXPECT_ERROR(minimal, bce, FN_ERR_INVALID, "--set data.standardize_targets=true: applies to a "
                 "loss of values (mse), not loss = bce_with_logits's targets in [0, 1]", NULL);
    fn_config *cfg = NULL;
    const char *mse[] = {"data.standardize_targets=true", "train.loss=mse", NULL};
    if (load(*state, minimal, mse, &cfg) != FN_OK)
        fail_msg("%s", fn_last_error());
    assert_int_equal(cfg->standardize_targets, 1);
    fn_config_destroy(cfg);
}

static void test_enum_values_ignore_case(void **state)
{
    fn_config *cfg = NULL;
    const char *sets[] = {"train.optimizer=Adam", "train.loss=MSE", "train.schedule=Cosine",
                          "run.math=FP32", "model.layers=Block 16, LINEAR 4", NULL};
    if (load(*state, minimal, sets, &cfg) != FN_OK)
        fail_msg("%s", fn_last_error());
    assert_string_equal(cfg->optimizer->name, "adam");
    assert_string_equal(cfg->loss->name, "mse");
    assert_string_equal(cfg->schedule->name, "cosine");
    assert_int_equal(cfg->math, FN_MATH_FP32);
    assert_string_equal(cfg->layers[0].kind->name, "block");
    assert_string_equal(cfg->layers[1].kind->name, "linear");
    fn_config_destroy(cfg);
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
TEST_MAIN(NULL, NULL, T(test_not_a_regular_file), T(test_defaults), T(test_values_and_overrides), T(test_grad_sum),
          T(test_unknown_section), T(test_key_outside_section), T(test_unknown_key),
          T(test_duplicate_key), T(test_syntax_error), T(test_not_a_number), T(test_out_of_range),
          T(test_float_range_after_narrowing), T(test_zero_and_negative_sizes),
          T(test_bad_layer_lists), T(test_groups_must_divide), T(test_groups_auto), T(test_nesterov_needs_momentum),
          T(test_momentum_bf16_needs_momentum),
          T(test_bad_enums), T(test_missing_required), T(test_missing_data_file),
          T(test_missing_config_file), T(test_bad_overrides), T(test_long_line),
          T(test_parse_layers), T(test_optimizer_keys), T(test_optimizer_key_errors),
          T(test_rmsprop_keys), T(test_plateau_keys), T(test_loss_keys),
          T(test_path_join_normalises), T(test_best_keys), T(test_monitor_keys),
          T(test_optimizer_from_command_line), T(test_get_values),
          T(test_math_bf16), T(test_empty_output_dir), T(test_did_you_mean),
          T(test_standardize_targets), T(test_enum_values_ignore_case))
