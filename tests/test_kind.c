/* test_kind.c — the one head every registered kind opens with (kind.h) and
 * the registry helper over any table of heads: each of the four
 * registries (layer kinds, losses, optimisers, schedules) holds its
 * descriptors' heads at the descriptors' own addresses, and counting,
 * lookup, the list a message names, the spelling that ignores case and
 * "did you mean" answer alike for all of them; a kind's rule across its
 * keys is reached through its head, with the base rate or the network's
 * outputs from the context; each loss's declared facts agree with one
 * another (one that reads logits has a link to probabilities). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "expect.h"
#include "fusenet/adam.h"
#include "fusenet/kind.h"
#include "fusenet/layer_kind.h"
#include "fusenet/loss_kind.h"
#include "fusenet/optimizer_kind.h"
#include "fusenet/schedule_kind.h"
#include "nn/losses/cross_entropy/cross_entropy_options.h"
#include "optim/schedules/cosine/cosine_schedule.h"
#include "test_main.h"

/* A registry and its typed entry points, as a family's own header gives them. */
typedef struct family {
    const char *what;
    const fn_registry *(*kinds)(void);
    int (*count)(void);
    const void *(*at)(int i);
} family;

static const void *layer_at(int i) { return fn_layer_kind_at(i); }
static const void *loss_at(int i) { return fn_loss_kind_at(i); }
static const void *optimizer_at(int i) { return fn_optimizer_kind_at(i); }
static const void *schedule_at(int i) { return fn_schedule_kind_at(i); }

static const family families[] = {
    {"layer kinds", fn_layer_kinds, fn_layer_kind_count, layer_at},
    {"losses", fn_loss_kinds, fn_loss_kind_count, loss_at},
    {"optimisers", fn_optimizer_kinds, fn_optimizer_kind_count, optimizer_at},
    {"schedules", fn_schedule_kinds, fn_schedule_kind_count, schedule_at},
};

/* Every entry of every registry is its descriptor's head: the same
 * address, the same name; counting and bounds agree with the typed calls,
 * and each name finds its own entry. */
static void test_heads_are_the_descriptors(void **state)
{
    (void)state;
    for (size_t f = 0; f < sizeof families / sizeof families[0]; f++) {
        const fn_registry *r = families[f].kinds();
        assert_non_null(r);
        assert_int_equal(fn_registry_count(r), families[f].count());
        assert_true(fn_registry_count(r) > 0);
        for (int i = 0; i < fn_registry_count(r); i++) {
            const fn_kind *k = fn_registry_at(r, i);
            if ((const void *)k != families[f].at(i))
                fail_msg("%s: entry %d is not its descriptor's head", families[f].what, i);
            const fn_kind *found = NULL;
            EXPECT_OK(fn_registry_find(r, k->name, &found));
            assert_ptr_equal(found, k);
            assert_ptr_equal(fn_registry_lookup(r, k->name), k);
            assert_true(k->n_options == 0 || k->options != NULL);
        }
        assert_null(fn_registry_at(r, -1));
        assert_null(fn_registry_at(r, fn_registry_count(r)));
        assert_null(fn_registry_lookup(r, NULL));
    }
    /* The typed fields and the head's are one. */
    assert_ptr_equal(&fn_adam_kind.kind, (const void *)&fn_adam_kind);
    assert_string_equal(fn_adam_kind.kind.name, "adam");
    assert_ptr_equal(fn_adam_kind.kind.options, fn_adam_kind.options);
    assert_string_equal(fn_layer_kind_at(0)->kind.usage, fn_layer_kind_at(0)->usage);
}

/* The messages every registry generates from its table. */
static void test_find_and_list(void **state)
{
    (void)state;
    const fn_kind *k = NULL;
    EXPECT_FAIL(fn_registry_find(fn_schedule_kinds(), "linear", &k), FN_ERR_INVALID,
                "expected constant, step, cosine or plateau, got 'linear'");
    EXPECT_FAIL(fn_registry_find(fn_optimizer_kinds(), NULL, &k), FN_ERR_INVALID,
                "expected sgd, adam, adamw or rmsprop, got ''");
    /* The typed finds say the same. */
    const fn_loss_kind *loss = NULL;
    EXPECT_FAIL(fn_loss_kind_find("l1", &loss), FN_ERR_INVALID,
                "expected bce_with_logits, cross_entropy, huber or mse, got 'l1'");
    char list[256];
    assert_string_equal(fn_registry_list(fn_optimizer_kinds(), list, sizeof list, 0),
                        "sgd, adam, adamw or rmsprop");
    /* A kind without a usage is listed by its name. */
    assert_string_equal(fn_registry_list(fn_optimizer_kinds(), list, sizeof list, 1),
                        "'sgd', 'adam', 'adamw' or 'rmsprop'");
    assert_string_equal(fn_registry_list(fn_layer_kinds(), list, sizeof list, 1),
                        fn_layer_kind_list(list + 128, 128, 1));
    /* Cut to fit. */
    assert_string_equal(fn_registry_list(fn_optimizer_kinds(), list, 6, 0), "sgd, ");
}

/* Matching that ignores case and "did you mean", for any registry. */
static void test_spelling_and_suggest(void **state)
{
    (void)state;
    assert_string_equal(fn_registry_spelling(fn_optimizer_kinds(), "AdamW"), "adamw");
    assert_string_equal(fn_registry_spelling(fn_layer_kinds(), "Block"), "block");
    assert_string_equal(fn_registry_spelling(fn_loss_kinds(), "nope"), "nope");
    assert_string_equal(fn_registry_suggest(fn_schedule_kinds(), "cosin"), "cosine");
    assert_string_equal(fn_registry_suggest(fn_loss_kinds(), "hubber"), "huber");
    assert_string_equal(fn_registry_suggest(fn_layer_kinds(), "residul"), "residual");
    assert_null(fn_registry_suggest(fn_optimizer_kinds(), "zzzzzzzz"));
}

/* A kind's options and its rule across them, through its head alone. */
static void test_options_through_the_head(void **state)
{
    (void)state;
    const fn_kind *adam = &fn_adam_kind.kind;
    assert_non_null(fn_kind_option(adam, "betas"));
    assert_null(fn_kind_option(adam, "momentum"));
    assert_null(fn_kind_option(NULL, "betas"));
    assert_null(fn_kind_option(adam, NULL));
    for (int i = 0; i < fn_layer_kind_count(); i++)
        assert_int_equal(fn_layer_kind_at(i)->kind.n_options, 0);

    const fn_kind *cosine = NULL;
    EXPECT_OK(fn_registry_find(fn_schedule_kinds(), "cosine", &cosine));
    assert_non_null(cosine->check_options);
    const fn_cosine_schedule_options min_lr = {.min_lr = 0.5f};
    const char *key = NULL;
    const fn_option_context low = {.lr = 0.1, .outputs = 0}, high = {.lr = 1.0, .outputs = 0};
    EXPECT_FAIL(cosine->check_options(&min_lr, &low, &key), FN_ERR_INVALID,
                "min_lr 0.5 is above lr 0.1");
    assert_string_equal(key, "min_lr");
    EXPECT_OK(cosine->check_options(&min_lr, &high, &key));

    const fn_kind *ce = NULL;
    EXPECT_OK(fn_registry_find(fn_loss_kinds(), "cross_entropy", &ce));
    float weights[3] = {1, 2, 3};
    fn_cross_entropy_options o = {0};
    o.class_weights = (fn_option_list){weights, 3};
    const fn_option_context three = {.lr = 0.1, .outputs = 3}, four = {.lr = 0.1, .outputs = 4};
    EXPECT_OK(ce->check_options(&o, &three, &key));
    EXPECT_FAIL(ce->check_options(&o, &four, &key), FN_ERR_INVALID,
                "3 weights, but the network has 4 outputs");
    assert_string_equal(key, "class_weights");
}

/* What each loss declares agrees with itself: a loss whose outputs have a
 * link to probabilities (softmax, sigmoid) reads logits, unbounded scores,
 * and one that reads logits has that link; probabilities in [0, 1] are
 * values, never labels; a loss that counts nothing right watches its loss. */
static void test_loss_facts_agree(void **state)
{
    (void)state;
    for (int i = 0; i < fn_loss_kind_count(); i++) {
        const fn_loss_kind *k = fn_loss_kind_at(i);
        if (!k->takes_logits != !k->probabilities)
            fail_msg("loss %s: takes_logits %d, but it %s a link to probabilities", k->name,
                     k->takes_logits, k->probabilities ? "has" : "has no");
        if (k->unit_targets && k->targets != FN_DATA_FLOATS)
            fail_msg("loss %s: unit targets that are not values", k->name);
        if (!k->metric && !k->watch_loss)
            fail_msg("loss %s: watches a metric it does not have", k->name);
    }
    const fn_loss_kind *bce = NULL;
    EXPECT_OK(fn_loss_kind_find("bce_with_logits", &bce));
    assert_true(bce->takes_logits);
}

TEST_MAIN(NULL, NULL, cmocka_unit_test(test_heads_are_the_descriptors),
          cmocka_unit_test(test_loss_facts_agree),
          cmocka_unit_test(test_find_and_list),
          cmocka_unit_test(test_spelling_and_suggest),
          cmocka_unit_test(test_options_through_the_head))
