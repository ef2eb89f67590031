/* test_binding.c — what a binding asks the library (binding.h): enum
 * constants by name and the sizes of the structs it mirrors; and
 * fn_weights_loss, the loss a weights file's network was trained with,
 * from the run's resolved config (where a --set is applied), not the
 * config file's text (where a --set is only a comment). */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "expect.h"
#include "fusenet/binding.h"
#include "fusenet/layer_kind.h"
#include "fusenet/model.h"
#include "fusenet/trainer.h"
#include "fusenet/weights.h"
#include "test_main.h"

static void test_constants_by_name(void **state)
{
    (void)state;
    long long v = -1;
    EXPECT_OK(fn_binding_constant("FN_ERR_IO", &v));
    assert_int_equal(v, FN_ERR_IO);
    EXPECT_OK(fn_binding_constant("FN_CUDA", &v));
    assert_int_equal(v, FN_CUDA);
    EXPECT_OK(fn_binding_constant("FN_DATA_FLOATS", &v));
    assert_int_equal(v, FN_DATA_FLOATS);
    EXPECT_FAIL(fn_binding_constant("FN_NO_SUCH", &v), FN_ERR_INVALID,
                "the library has no constant 'FN_NO_SUCH'");
}

static void test_struct_sizes(void **state)
{
    (void)state;
    assert_int_equal(fn_binding_struct_size("fn_trainer_options"), sizeof(fn_trainer_options));
    assert_int_equal(fn_binding_struct_size("fn_train_epoch"), sizeof(fn_train_epoch));
    assert_int_equal(fn_binding_struct_size("fn_train_model"), sizeof(fn_train_model));
    assert_int_equal(fn_binding_struct_size("fn_no_such"), 0);
}

/* A weights file of a small net with the given config text and, when
 * resolved is not NULL, a provenance whose config is it. */
static void write_weights(const char *path, const char *text, const char *resolved)
{
    fn_context *ctx = NULL;
    EXPECT_OK(fn_context_create(&ctx, FN_CPU, -1, FN_MATH_FP32));
    const fn_layer_kind *linear = NULL;
    EXPECT_OK(fn_layer_kind_find("linear", &linear));
    const fn_layer_spec spec = {.kind = linear, .width = 3};
    const fn_layer_hparams hp = {.groups = 1, .eps = 1e-5f, .negative_slope = 0.01f};
    fn_net *net = NULL;
    EXPECT_OK(fn_model_create(&net, ctx, &spec, 1, 4, &hp, 4, 1));
    fn_provenance *prov = NULL;
    if (resolved) {
        EXPECT_OK(fn_provenance_create(&prov));
        EXPECT_OK(fn_provenance_set(prov, "config", resolved));
    }
    EXPECT_OK(fn_weights_save(path, net,
                              &(fn_weights_save_options){.provenance = prov, .config_text = text}));
    fn_provenance_destroy(prov);
    fn_net_destroy(net);
    fn_context_destroy(ctx);
}

static const char *loss_of(const char *path)
{
    const fn_loss_kind *kind = NULL;
    EXPECT_OK(fn_weights_loss(path, &kind));
    return fn_loss_kind_name(kind);
}

static void test_weights_loss(void **state)
{
    (void)state;
    char dir[] = "/tmp/fn_binding_XXXXXX", path[64];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/w.h5", dir);
    /* train --set train.loss=huber: the file's text keeps the set as a
     * comment, the resolved config holds it. */
    write_weights(path, "[train]\nloss = mse\n; --set train.loss=huber\n",
                  "[data]\ntrain =   ; memory\n[train]\nloss = huber  ; --set train.loss=huber\n"
                  "step_size = 0\n");
    assert_string_equal(loss_of(path), "huber");
    const fn_loss_kind *kind = NULL;
    EXPECT_OK(fn_weights_loss(path, &kind));
    assert_int_equal(fn_loss_kind_targets(kind), FN_DATA_FLOATS);
    assert_int_equal(fn_loss_kind_unit_targets(kind), 0);
    /* A file without provenance: its config text; none: the default. */
    write_weights(path, "[train]\nloss = bce_with_logits\n", NULL);
    assert_string_equal(loss_of(path), "bce_with_logits");
    EXPECT_OK(fn_weights_loss(path, &kind));
    assert_int_equal(fn_loss_kind_unit_targets(kind), 1);
    write_weights(path, "", NULL);
    assert_string_equal(loss_of(path), "cross_entropy");
    EXPECT_OK(fn_weights_loss(path, &kind));
    assert_int_equal(fn_loss_kind_targets(kind), FN_DATA_LABELS);
    write_weights(path, "[train]\nloss = nadam\n", NULL);
    EXPECT_FAIL(fn_weights_loss(path, &kind), FN_ERR_INVALID, "w.h5: [train] loss: expected");
    unlink(path);
    EXPECT_FAIL(fn_weights_loss(path, &kind), FN_ERR_IO, "w.h5");
    snprintf(path, sizeof path, "%s/w.safetensors", dir);
    EXPECT_FAIL(fn_weights_loss(path, &kind), FN_ERR_FORMAT, "a safetensors export records no");
    rmdir(dir);
}

TEST_MAIN(NULL, NULL, cmocka_unit_test(test_constants_by_name), cmocka_unit_test(test_struct_sizes),
          cmocka_unit_test(test_weights_loss))
