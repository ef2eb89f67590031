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
#include "fusenet/layer_kind.h"
#include "fusenet/linear.h"
#include "fusenet/model.h"

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
    assert_int_equal(fn_layer_kind_count(), 5);
    const fn_layer_kind *k = NULL;
    EXPECT_OK(fn_layer_kind_find("block", &k));
    assert_ptr_equal(k, &fn_block_kind);
    EXPECT_OK(fn_layer_kind_find("linear", &k));
    assert_ptr_equal(k, &fn_linear_kind);
    EXPECT_OK(fn_layer_kind_find("relu", &k));
    assert_ptr_equal(k, &fn_relu_kind);
    EXPECT_OK(fn_layer_kind_find("gelu", &k));
    assert_ptr_equal(k, &fn_gelu_kind);
    EXPECT_OK(fn_layer_kind_find("residual", &k));
    assert_ptr_equal(k, &fn_residual_kind);
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
                "unknown layer kind 'conv' (expected block, linear, relu, gelu or residual)");
    assert_null(k);
    /* The message names every kind of the table. */
    for (int i = 0; i < fn_layer_kind_count(); i++)
        assert_non_null(strstr(fn_last_error(), fn_layer_kind_at(i)->name));
    EXPECT_FAIL(fn_layer_kind_find("Block", &k), FN_ERR_INVALID, "unknown layer kind 'Block'");
    char list[128];
    assert_string_equal(fn_layer_kind_list(list, sizeof list, 0),
                        "block, linear, relu, gelu or residual");
    assert_string_equal(fn_layer_kind_list(list, sizeof list, 1),
                        "'block N', 'linear N', 'relu N', 'gelu N' or 'residual N'");
}

static void test_kind_of_layer(void **state)
{
    const fn_layer_hparams hp = {.groups = 2, .eps = 1e-5f, .negative_slope = 0.01f};
    for (int i = 0; i < fn_layer_kind_count(); i++) {
        const fn_layer_spec spec = {fn_layer_kind_at(i), 4};
        fn_layer *l = make(*state, &spec, 4, &hp);
        assert_ptr_equal(fn_layer_kind_of(l), spec.kind);
        assert_string_equal(l->ops->kind, spec.kind->name);
        assert_int_equal(l->in_features, 4);
        assert_int_equal(l->out_features, 4);
        fn_layer_destroy(l);
    }
    assert_null(fn_layer_kind_of(NULL));
    const fn_layer_spec none = {NULL, 4};
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
        fn_layer_spec spec = {k, 0};
        EXPECT_OK(k->parse("128", &spec));
        assert_int_equal(spec.width, 128);
        EXPECT_FAIL(k->parse("0", &spec), FN_ERR_INVALID,
                    "width '0' is not an integer from 1 to 16777216");
        EXPECT_FAIL(k->parse("1x6", &spec), FN_ERR_INVALID, "width '1x6'");
        EXPECT_FAIL(k->parse("16777217", &spec), FN_ERR_INVALID, "width '16777217'");
    }
    const fn_layer_hparams hp = {.groups = 8, .eps = 1e-5f, .negative_slope = 0.01f};
    const fn_layer_spec wide = {&fn_block_kind, 16}, odd = {&fn_block_kind, 12};
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

    const fn_layer_spec spec = {k, 8};
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
    const fn_layer_spec head = {&fn_linear_kind, 3};
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
    const fn_layer_spec spec = {k, 6};
    fn_layer *l = make(*state, &spec, 6, &hp);
    fn_block_config bc;
    EXPECT_OK(fn_block_get_config(l, &bc));
    assert_int_equal(bc.residual, 1);
    assert_int_equal(bc.groups, 2);
    fn_layer_attr_value values[FN_LAYER_ATTRS_MAX];
    EXPECT_OK(k->get_attrs(l, values));
    assert_int_equal(values[0].i, 2);
    fn_layer_destroy(l);
    const fn_layer_spec block = {&fn_block_kind, 6};
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
    const fn_layer_spec specs[] = {{&fn_block_kind, 8}, {k, 6}};
    fn_net *net = NULL;
    EXPECT_FAIL(fn_model_create(&net, *state, specs, 2, 3, &hp, 4, 1), FN_ERR_INVALID,
                "layer 1 (residual 6): residual 6 takes inputs of 8 columns");
    assert_null(net);
}

/* No CPU layer fuses backward and the SGD step: the checked entry point
 * says so, and fn_sgd_fused_backward falls back for them (test_net_fused_cuda
 * covers the fused block on the GPU). */
static void test_no_fused_step_on_the_cpu(void **state)
{
    const fn_layer_hparams hp = {.groups = 2, .eps = 1e-5f, .negative_slope = 0.01f};
    for (int i = 0; i < fn_layer_kind_count(); i++) {
        const fn_layer_spec spec = {fn_layer_kind_at(i), 4};
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
    const fn_layer_kind *block = NULL, *linear = NULL;
    EXPECT_OK(fn_layer_kind_find("block", &block));
    EXPECT_OK(fn_layer_kind_find("linear", &linear));
    const fn_layer_hparams hp = {.groups = 4, .eps = 1e-5f, .negative_slope = 0.01f};
    const fn_layer_spec specs[] = {{block, 16}, {linear, 3}};
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
    const fn_layer_spec huge[] = {{block, 1 << 24}, {block, 1 << 24}, {linear, 4}};
    const fn_layer_hparams one = {.groups = 1, .eps = 1e-5f, .negative_slope = 0.01f};
    EXPECT_FAIL(fn_model_create(&net, *state, huge, 3, 6, &one, 8, 1), FN_ERR_NOMEM,
                "the network needs at least 2251806.3 GB of host memory");
    assert_null(net);
    assert_non_null(strstr(fn_last_error(), "more than the"));
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_lookup),          T(test_unknown_kind),          T(test_kind_of_layer),
        T(test_parse_and_check), T(test_block_attrs_round_trip), T(test_linear_has_no_attrs),
        T(test_residual),
        T(test_no_fused_step_on_the_cpu), T(test_memory_need),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
