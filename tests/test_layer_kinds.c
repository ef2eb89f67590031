/* test_layer_kinds.c — the registry of layer kinds (layer_kind.h) on the
 * CPU: lookup of every kind by name and by layer, the unknown kind's
 * message naming the known ones, each kind's item parsing and check, and a
 * layer's spec and settings going round through its weights-file attribute
 * description; and the optional fused backward_sgd hook, which no CPU layer
 * has. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "expect.h"
#include "fusenet/block.h"
#include "fusenet/dense.h"
#include "fusenet/dropout.h"
#include "fusenet/layer_kind.h"
#include "fusenet/linear.h"
#include "fusenet/model.h"
#include "layer_specs.h"
#include "nn/model_memory.h"

static int setup(void **state)
{
    fn_context *ctx = NULL;
    if (fn_context_create(&ctx, FN_CPU, 0, FN_MATH_FP32) != FN_OK)
        return -1;
    *state = ctx;
    return 0;
}

static int teardown(void **state)
{
    fn_context_destroy(*state);
    return 0;
}

/* A layer of spec for inputs of `in` columns and batches of up to 4 rows. */
static fn_layer *make(fn_context *ctx, const fn_layer_spec *spec, int in,
                      const fn_layer_hparams *hp)
{
    fn_layer *l = NULL;
    fn_rng rng = {.seed = 3, .offset = 0};
    EXPECT_OK(fn_layer_create(&l, ctx, in, spec, hp, 4, &rng));
    return l;
}

static void test_lookup(void **state)
{
    (void)state;
    assert_int_equal(fn_layer_kind_count(), 6);
    static const struct {
        const char *name;
        const fn_layer_kind *kind;
    } named[] = {{"block", &fn_block_kind},       {"linear", &fn_linear_kind},
                 {"relu", &fn_relu_kind},         {"gelu", &fn_gelu_kind},
                 {"residual", &fn_residual_kind}, {"dropout", &fn_dropout_kind}};
    const fn_layer_kind *k = NULL;
    for (size_t i = 0; i < sizeof named / sizeof named[0]; i++) {
        EXPECT_OK(fn_layer_kind_find(named[i].name, &k));
        if (k != named[i].kind)
            fail_msg("fn_layer_kind_find(\"%s\") found kind '%s'", named[i].name, k->name);
    }
    /* Every kind of the table is found by its name, and names are unique. */
    for (int i = 0; i < fn_layer_kind_count(); i++) {
        const fn_layer_kind *at = fn_layer_kind_at(i);
        assert_non_null(at);
        EXPECT_OK(fn_layer_kind_find(at->name, &k));
        assert_ptr_equal(k, at);
        assert_non_null(at->parse);
        assert_non_null(at->create);
        assert_true(at->n_attrs >= 0 && at->n_attrs <= FN_LAYER_ATTRS_MAX);
        assert_true(at->n_attrs == 0 || (at->get_attrs && at->set_attrs));
    }
    assert_null(fn_layer_kind_at(-1));
    assert_null(fn_layer_kind_at(fn_layer_kind_count()));
}

static void test_unknown_kind(void **state)
{
    (void)state;
    const fn_layer_kind *k = &fn_block_kind;
    EXPECT_FAIL(fn_layer_kind_find("conv", &k), FN_ERR_INVALID,
                "unknown layer kind 'conv' (expected block, linear, relu, gelu, residual or dropout)");
    assert_null(k);
    /* The message names every kind of the table. */
    for (int i = 0; i < fn_layer_kind_count(); i++)
        assert_non_null(strstr(fn_last_error(), fn_layer_kind_at(i)->name));
    EXPECT_FAIL(fn_layer_kind_find("Block", &k), FN_ERR_INVALID, "unknown layer kind 'Block'");
    char list[128];
    assert_string_equal(fn_layer_kind_list(list, sizeof list, 0),
                        "block, linear, relu, gelu, residual or dropout");
    assert_string_equal(fn_layer_kind_list(list, sizeof list, 1),
                        "'block N', 'linear N', 'relu N', 'gelu N', 'residual N' or 'dropout P'");
}

static void test_kind_of_layer(void **state)
{
    const fn_layer_hparams hp = {.groups = 2, .eps = 1e-5f, .negative_slope = 0.01f};
    for (int i = 0; i < fn_layer_kind_count(); i++) {
        const fn_layer_spec spec = {fn_layer_kind_at(i), 4, 0};
        fn_layer *l = make(*state, &spec, 4, &hp);
        assert_ptr_equal(fn_layer_kind_of(l), spec.kind);
        assert_string_equal(l->ops->kind, spec.kind->name);
        assert_int_equal(l->in_features, 4);
        assert_int_equal(l->out_features, 4);
        fn_layer_destroy(l);
    }
    assert_null(fn_layer_kind_of(NULL));
    const fn_layer_spec none = {NULL, 4, 0};
    fn_layer *l = NULL;
    fn_rng rng = {0, 0};
    EXPECT_FAIL(fn_layer_create(&l, *state, 3, &none, &hp, 4, &rng), FN_ERR_INVALID,
                "spec->kind is NULL");
    assert_null(l);
}

static void test_parse_and_check(void **state)
{
    (void)state;
    for (int i = 0; i < fn_layer_kind_count(); i++) {
        const fn_layer_kind *k = fn_layer_kind_at(i);
        if (k == &fn_dropout_kind)
            continue; /* its argument is a probability (test_dropout_item) */
        fn_layer_spec spec = {k, 0, 0};
        EXPECT_OK(k->parse("128", &spec));
        assert_int_equal(spec.width, 128);
        EXPECT_FAIL(k->parse("0", &spec), FN_ERR_INVALID,
                    "width '0' is not an integer from 1 to 16777216");
        EXPECT_FAIL(k->parse("1x6", &spec), FN_ERR_INVALID, "width '1x6'");
        EXPECT_FAIL(k->parse("16777217", &spec), FN_ERR_INVALID, "width '16777217'");
    }
    const fn_layer_hparams hp = {.groups = 8, .eps = 1e-5f, .negative_slope = 0.01f};
    const fn_layer_spec wide = {&fn_block_kind, 16, 0}, odd = {&fn_block_kind, 12, 0};
    EXPECT_OK(fn_block_kind.check(&wide, &hp));
    EXPECT_FAIL(fn_block_kind.check(&odd, &hp), FN_ERR_INVALID,
                "groups 8 does not divide the width 12");
    assert_null(fn_linear_kind.check); /* a linear layer takes any width */
}

/* get_attrs of a layer, then set_attrs of the values: the settings it was
 * made with, and a layer made from them has the same configuration. */
static void test_block_attrs_round_trip(void **state)
{
    const fn_layer_kind *k = &fn_block_kind;
    assert_int_equal(k->n_attrs, 3);
    assert_string_equal(k->attrs[0].name, "groups");
    assert_int_equal(k->attrs[0].type, FN_LAYER_ATTR_INT);
    assert_true(k->attrs[0].must_match);
    assert_string_equal(k->attrs[1].name, "eps");
    assert_int_equal(k->attrs[1].type, FN_LAYER_ATTR_DOUBLE);
    assert_string_equal(k->attrs[2].name, "negative_slope");
    assert_int_equal(k->attrs[2].type, FN_LAYER_ATTR_DOUBLE);

    const fn_layer_spec spec = {k, 8, 0};
    const fn_layer_hparams hp = {.groups = 4, .eps = 1e-3f, .negative_slope = 0.2f};
    fn_layer *l = make(*state, &spec, 5, &hp);
    fn_layer_attr_value values[FN_LAYER_ATTRS_MAX];
    EXPECT_OK(k->get_attrs(l, values));
    assert_int_equal(values[0].i, 4);
    assert_true(values[1].d == (double)1e-3f);
    assert_true(values[2].d == (double)0.2f);

    fn_layer_hparams back = {0};
    EXPECT_OK(k->set_attrs(values, l->in_features, l->out_features, &back));
    assert_int_equal(back.groups, hp.groups);
    assert_true(back.eps == hp.eps && back.negative_slope == hp.negative_slope);
    fn_layer *again = make(*state, &spec, 5, &back);
    fn_block_config a, b;
    EXPECT_OK(fn_block_get_config(l, &a));
    EXPECT_OK(fn_block_get_config(again, &b));
    assert_memory_equal(&a, &b, sizeof a);
    fn_layer_destroy(again);

    /* A file's groups the width cannot hold; a layer of another kind. */
    values[0].i = 9;
    EXPECT_FAIL(k->set_attrs(values, 5, 8, &back), FN_ERR_FORMAT,
                "sizes in 5, out 8, groups 9 are not valid");
    values[0].i = 0;
    EXPECT_FAIL(k->set_attrs(values, 5, 8, &back), FN_ERR_FORMAT, "groups 0 are not valid");
    const fn_layer_spec head = {&fn_linear_kind, 3, 0};
    fn_layer *linear = make(*state, &head, 8, &hp);
    EXPECT_FAIL(k->get_attrs(linear, values), FN_ERR_INVALID, "linear, not a block");
    fn_layer_destroy(linear);
    fn_layer_destroy(l);
}

static void test_linear_has_no_attrs(void **state)
{
    (void)state;
    const fn_layer_kind *plain[] = {&fn_linear_kind, &fn_relu_kind, &fn_gelu_kind};
    for (size_t i = 0; i < sizeof plain / sizeof plain[0]; i++) {
        assert_int_equal(plain[i]->n_attrs, 0);
        assert_null(plain[i]->get_attrs);
        assert_null(plain[i]->set_attrs);
        assert_null(plain[i]->check);
    }
}

/* A residual layer is a block with the skip: the block's attributes and
 * check, its configuration with residual set; its width must equal its
 * input's, and the message says which two differ and why. */
static void test_residual(void **state)
{
    const fn_layer_kind *k = &fn_residual_kind;
    assert_int_equal(k->n_attrs, 3);
    assert_string_equal(k->attrs[0].name, "groups");
    const fn_layer_hparams hp = {.groups = 2, .eps = 1e-5f, .negative_slope = 0.01f};
    const fn_layer_spec spec = {k, 6, 0};
    fn_layer *l = make(*state, &spec, 6, &hp);
    fn_block_config bc;
    EXPECT_OK(fn_block_get_config(l, &bc));
    assert_int_equal(bc.residual, 1);
    assert_int_equal(bc.groups, 2);
    fn_layer_attr_value values[FN_LAYER_ATTRS_MAX];
    EXPECT_OK(k->get_attrs(l, values));
    assert_int_equal(values[0].i, 2);
    fn_layer_destroy(l);
    const fn_layer_spec block = {&fn_block_kind, 6, 0};
    l = make(*state, &block, 6, &hp);
    EXPECT_OK(fn_block_get_config(l, &bc));
    assert_int_equal(bc.residual, 0);
    fn_layer_destroy(l);
    fn_rng rng = {.seed = 3, .offset = 0};
    EXPECT_FAIL(fn_layer_create(&l, *state, 5, &spec, &hp, 4, &rng), FN_ERR_INVALID,
                "residual 6 takes inputs of 5 columns: a residual layer adds its input to its "
                "output, so its width must equal its input's");
    assert_null(l);
    /* In a net, the message names the layer. */
    const fn_layer_spec specs[] = {{&fn_block_kind, 8, 0}, {k, 6, 0}};
    fn_net *net = NULL;
    EXPECT_FAIL(fn_model_create(&net, *state, specs, 2, 3, &hp, 4, 1), FN_ERR_INVALID,
                "layer 1 (residual 6): residual 6 takes inputs of 8 columns");
    assert_null(net);
    EXPECT_FAIL(fn_model_create(&net, NULL, specs, 2, 3, &hp, 4, 1), FN_ERR_INVALID,
                "ctx, specs or settings are NULL");
    EXPECT_FAIL(fn_model_specs_fit_memory(NULL, specs, 2, 3, &hp, 4), FN_ERR_INVALID,
                "ctx is NULL");
}

/* A relu or gelu layer: its parameters are the linear layer's (weight,
 * bias), its buffers z and dz at max_batch (none made forward only), as
 * param_floats and row_floats say. */
static void test_dense_sizes(void **state)
{
    const fn_layer_kind *kinds[] = {&fn_relu_kind, &fn_gelu_kind};
    for (int i = 0; i < 2; i++) {
        for (int forward_only = 0; forward_only < 2; forward_only++) {
            const fn_layer_spec spec = {kinds[i], 6, 0};
            const fn_layer_hparams hp = {.forward_only = forward_only};
            fn_layer *l = make(*state, &spec, 5, &hp);
            assert_int_equal(l->n_params, 2);
            assert_string_equal(l->params[0].name, "weight");
            assert_string_equal(l->params[1].name, "bias");
            assert_true((double)fn_layer_param_count(l) == kinds[i]->param_floats(5, &spec));
            assert_int_equal(fn_layer_buffer_bytes(l),
                             (size_t)(kinds[i]->row_floats(&spec, &hp) * 4 * sizeof(float)));
            assert_int_equal(fn_layer_buffer_bytes(l), forward_only ? 0 : 2 * 6 * 4 * sizeof(float));
            fn_layer_destroy(l);
        }
    }
}

/* Every kind's param_names are its layers' parameters, in order, shaped
 * as the weights format stores them ("weight" [out, in], others [out]):
 * a weights file's datasets are checked against them before a layer of
 * the sizes its group claims is built (run/weights.c). */
static void test_param_names(void **state)
{
    for (int k = 0; k < fn_layer_kind_count(); k++) {
        const fn_layer_kind *kind = fn_layer_kind_at(k);
        const fn_layer_spec spec = {kind, 4, 0.25};
        const fn_layer_hparams hp = {.groups = 2, .eps = 1e-5f, .negative_slope = 0.01f};
        fn_layer *l = make(*state, &spec, 4, &hp);
        int n = 0;
        for (; kind->param_names && kind->param_names[n]; n++) {
            assert_true(n < l->n_params);
            assert_string_equal(l->params[n].name, kind->param_names[n]);
            const int is_weight = strcmp(kind->param_names[n], "weight") == 0;
            assert_int_equal(fn_tensor_count(&l->params[n].value), is_weight ? 16 : 4);
        }
        if (n != l->n_params)
            fail_msg("kind %s: param_names lists %d parameters, its layer has %d", kind->name, n,
                     l->n_params);
        fn_layer_destroy(l);
    }
}

/* "dropout P": a probability in [0, 1), its input's width, read back as
 * written; the weights file's attribute p. */
static void test_dropout_item(void **state)
{
    const fn_layer_kind *k = &fn_dropout_kind;
    fn_layer_spec spec = {k, 7, 0};
    EXPECT_OK(k->parse("0.25", &spec));
    assert_int_equal(spec.width, 0);
    assert_true(spec.value == 0.25);
    char text[32];
    fn_layer_spec_format(&spec, text, sizeof text);
    assert_string_equal(text, "dropout 0.25");
    assert_int_equal(fn_layer_spec_out(&spec, 13), 13);
    EXPECT_OK(k->parse("0", &spec));
    const char *bad[] = {"1", "1.5", "-0.1", "x", "0.5x", "nan", ""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        EXPECT_FAIL(k->parse(bad[i], &spec), FN_ERR_INVALID, "dropout probability");
    EXPECT_FAIL(k->parse("1", &spec), FN_ERR_INVALID,
                "dropout probability '1' is not a number from 0 to below 1");
    /* In a list: the width of the layer before it; the list reads back. */
    fn_layer_spec got = {k, 0, 0};
    EXPECT_OK(k->parse("0.5", &got));
    const fn_layer_hparams hp = {0};
    fn_layer *l = make(*state, &got, 6, &hp);
    assert_int_equal(l->out_features, 6);
    fn_layer_attr_value values[FN_LAYER_ATTRS_MAX];
    EXPECT_OK(k->get_attrs(l, values));
    assert_true(values[0].d == 0.5);
    fn_layer_hparams back;
    EXPECT_OK(k->set_attrs(values, 6, 6, &back));
    values[0].d = 1.0;
    EXPECT_FAIL(k->set_attrs(values, 6, 6, &back), FN_ERR_FORMAT, "p 1 is not valid");
    fn_layer_destroy(l);
}

/* y of a dropout layer of p 0.5 over 64 rows of 32 ones, with pass. */
static void dropout_run(fn_layer *l, const fn_pass *pass, float *y, int rows)
{
    float x[64 * 32];
    for (int i = 0; i < 64 * 32; i++)
        x[i] = 1.0f + (float)i;
    fn_tensor xt = fn_tensor_view(x, rows, 32, FN_CPU), yt = fn_tensor_view(y, rows, 32, FN_CPU);
    EXPECT_OK(fn_layer_set_pass(l, pass));
    EXPECT_OK(fn_layer_forward(l, &xt, &yt));
}

/* Training: each element either zeroed or scaled by 1/(1 - p), about p of
 * them zeroed; backward zeroes and scales the same ones; the mask is a
 * function of (seed, layer, step, row in the whole batch, column): the
 * same again for the same pass, another for another step or layer, and a
 * share starting at row 16 draws rows 16.. of the whole batch's mask.
 * Outside training, and in a layer made forward only, the identity. */
static void test_dropout_masks(void **state)
{
    fn_rng rng = {.seed = 9, .offset = 0};
    fn_layer *a = NULL, *b = NULL, *frozen = NULL;
    EXPECT_OK(fn_dropout_create(&a, *state, 32, 0.5, 64, &rng, 0));
    EXPECT_OK(fn_dropout_create(&b, *state, 32, 0.5, 64, &rng, 0));
    EXPECT_OK(fn_dropout_create(&frozen, *state, 32, 0.5, 64, &rng, 1));
    assert_int_equal(rng.offset, 3);
    static float y[64 * 32], again[64 * 32], other[64 * 32], share[48 * 32];
    const fn_pass step7 = {.training = 1, .step = 7, .row0 = 0};
    dropout_run(a, &step7, y, 64);
    int zeros = 0;
    for (int i = 0; i < 64 * 32; i++) {
        const float x = 1.0f + (float)i;
        assert_true(y[i] == 0.0f || y[i] == x * 2.0f);
        zeros += y[i] == 0.0f;
    }
    assert_in_range(zeros, 1024 - 160, 1024 + 160); /* 5 sigma of 2048 draws at 0.5 */
    float dy[64 * 32], dx[64 * 32];
    for (int i = 0; i < 64 * 32; i++)
        dy[i] = 3.0f;
    fn_tensor dyt = fn_tensor_view(dy, 64, 32, FN_CPU), dxt = fn_tensor_view(dx, 64, 32, FN_CPU);
    EXPECT_OK(fn_layer_backward(a, &dyt, &dxt));
    for (int i = 0; i < 64 * 32; i++)
        assert_true(dx[i] == (y[i] == 0.0f ? 0.0f : 6.0f));
    dropout_run(a, &step7, again, 64);
    assert_memory_equal(y, again, sizeof y);
    const fn_pass step8 = {.training = 1, .step = 8, .row0 = 0};
    dropout_run(a, &step8, other, 64);
    assert_true(memcmp(y, other, sizeof y) != 0);
    dropout_run(b, &step7, other, 64);
    assert_true(memcmp(y, other, sizeof y) != 0);
    /* A share of rows 16..63: its x is rows 16.. of the whole batch's. */
    float xs[48 * 32];
    for (int i = 0; i < 48 * 32; i++)
        xs[i] = 1.0f + (float)(i + 16 * 32);
    fn_tensor xt = fn_tensor_view(xs, 48, 32, FN_CPU), st = fn_tensor_view(share, 48, 32, FN_CPU);
    const fn_pass part = {.training = 1, .step = 7, .row0 = 16};
    EXPECT_OK(fn_layer_set_pass(a, &part));
    EXPECT_OK(fn_layer_forward(a, &xt, &st));
    assert_memory_equal(share, y + 16 * 32, sizeof share);
    /* Not training; made forward only. */
    const fn_pass eval = {0};
    dropout_run(a, &eval, other, 64);
    for (int i = 0; i < 64 * 32; i++)
        assert_true(other[i] == 1.0f + (float)i);
    dropout_run(frozen, &step7, other, 64);
    assert_int_equal(frozen->pass.training, 0);
    for (int i = 0; i < 64 * 32; i++)
        assert_true(other[i] == 1.0f + (float)i);
    fn_layer_destroy(a);
    fn_layer_destroy(b);
    fn_layer_destroy(frozen);
}

/* No CPU layer fuses backward and the SGD step: the checked entry point
 * says so, and fn_sgd_fused_backward falls back for them (test_net_fused_cuda
 * covers the fused block on the GPU). */
static void test_no_fused_step_on_the_cpu(void **state)
{
    const fn_layer_hparams hp = {.groups = 2, .eps = 1e-5f, .negative_slope = 0.01f};
    for (int i = 0; i < fn_layer_kind_count(); i++) {
        const fn_layer_spec spec = {fn_layer_kind_at(i), 4, 0};
        fn_layer *l = make(*state, &spec, 4, &hp);
        assert_null(l->ops->backward_sgd);
        float xs[4] = {1, 2, 3, 4}, ys[4], dys[4] = {1, 0, 0, 0};
        fn_tensor x = fn_tensor_view(xs, 1, 4, FN_CPU), y = fn_tensor_view(ys, 1, 4, FN_CPU);
        fn_tensor dy = fn_tensor_view(dys, 1, 4, FN_CPU);
        EXPECT_OK(fn_layer_forward(l, &x, &y));
        EXPECT_FAIL(fn_layer_backward_sgd(l, &dy, NULL, 0.1f), FN_ERR_INVALID,
                    "no fused backward and SGD step on the cpu");
        fn_layer_destroy(l);
    }
}

/* The memory arithmetic before a net is built (model.h) against the net
 * built: every parameter and its gradient counted, and a net too large for
 * any machine (two layers of 2^24 features: a petabyte) refused before
 * anything is allocated, naming need and limit. */
static void test_memory_need(void **state)
{
    const fn_layer_hparams hp = default_hparams(4);
    const fn_layer_spec specs[] = {kind_spec("block", 16), kind_spec("linear", 3)};
    fn_model_memory need;
    fn_model_memory_need(specs, 2, 8, &hp, 4, &need);
    fn_net *net = NULL;
    EXPECT_OK(fn_model_create(&net, *state, specs, 2, 8, &hp, 4, 1));
    double bytes = 0;
    for (int i = 0; i < fn_net_n_params(net); i++)
        bytes += (double)fn_tensor_count(&fn_net_param(net, i)->value) * sizeof(float);
    fn_net_destroy(net);
    assert_true(need.params == bytes && need.grads == bytes);
    /* Per row: the block's z, dz [16] and mean, rstd [4] and its output
     * [16]; the linear's output [3] and its input's gradient [16]. */
    assert_true(need.activations == (2 * 16 + 2 * 4 + 16 + 3 + 16) * 4.0 * sizeof(float));
    assert_true(need.total == need.params + need.grads + need.activations);
    const fn_layer_spec huge[] = {kind_spec("block", 1 << 24), kind_spec("block", 1 << 24),
                                  kind_spec("linear", 4)};
    const fn_layer_hparams one = {.groups = 1, .eps = 1e-5f, .negative_slope = 0.01f};
    EXPECT_FAIL(fn_model_create(&net, *state, huge, 3, 6, &one, 8, 1), FN_ERR_NOMEM,
                "the network needs at least 2251806.3 GB of host memory");
    assert_null(net);
    assert_non_null(strstr(fn_last_error(), "more than the"));
}

/* The activations of "block 16, <second> 16, block 16, linear 3" counted
 * for a net on device in math (fn_model_memory_start), 4 rows. */
static double activations_of(const char *second, fn_device device, fn_math math)
{
    const fn_layer_hparams hp = default_hparams(4);
    const fn_layer_spec specs[] = {kind_spec("block", 16), kind_spec(second, 16),
                                   kind_spec("block", 16), kind_spec("linear", 3)};
    fn_model_memory need;
    fn_model_memory_start(&need, device, math);
    for (int i = 0, in = 16; i < 4; in = fn_layer_spec_out(&specs[i], in), i++)
        fn_model_memory_add(&need, &specs[i], in, &hp, 4, i == 0);
    assert_true(need.total == need.params + need.grads + need.activations);
    return need.activations;
}

/* On a GPU in bf16 math the net joins a block to the block after it
 * through bfloat16 (net.c) and allocates no float output between them:
 * the memory check counts each joined output [4, 16] out; a residual block
 * writes bfloat16 into the next block but reads a float input; the CPU and
 * fp32 math join nothing. */
static void test_memory_need_bf16_joins(void **state)
{
    (void)state;
    const double cpu = activations_of("block", FN_CPU, FN_MATH_BF16);
    const double output = 4 * 16 * sizeof(float);
    assert_true(activations_of("block", FN_CUDA, FN_MATH_FP32) == cpu);
    assert_true(activations_of("block", FN_CUDA, FN_MATH_TF32) == cpu);
    assert_true(activations_of("block", FN_CUDA, FN_MATH_BF16) == cpu - 2 * output);
    assert_true(activations_of("residual", FN_CUDA, FN_MATH_BF16) ==
                activations_of("residual", FN_CPU, FN_MATH_FP32) - output);
    fn_model_memory zeroed = {0}, cpu_start;
    fn_model_memory_start(&cpu_start, FN_CPU, FN_MATH_FP32);
    assert_int_equal(cpu_start.bf16_joins, zeroed.bf16_joins);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_lookup),          T(test_unknown_kind),          T(test_kind_of_layer),
        T(test_parse_and_check), T(test_block_attrs_round_trip), T(test_linear_has_no_attrs),
        T(test_residual), T(test_dense_sizes), T(test_param_names), T(test_dropout_item),
        T(test_dropout_masks),
        T(test_no_fused_step_on_the_cpu), T(test_memory_need), T(test_memory_need_bf16_joins),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
