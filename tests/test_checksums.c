/* test_checksums.c — a weights file or checkpoint with one flipped bit is
 * refused or, where the bit carried nothing, loads the very same values:
 * never a silently changed value. Data chunks carry
 * Fletcher-32 checksums and the metadata the checksums of HDF5's 1.8 file
 * format (h5util.c). Bits are flipped at positions spread over the whole
 * file by a fixed generator, each in a fresh copy. And a checkpoint whose
 * momentum dataset lacks a chunk (HDF5 would read it as zeros: a resume
 * with zero momentum) is refused naming the dataset. */
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
#include <hdf5.h>

#include "expect.h"
#include "file_bytes.h"
#include "fusenet/checkpoint.h"
#include "fusenet/layer_kind.h"
#include "fusenet/model.h"
#include "fusenet/sgd.h"
#include "fusenet/weights.h"
#include "h5_write.h"
#include "layer_specs.h"
#include "test_main.h"
#include "trainer_run.h"

enum { FLIPS = 120 };

/* A block and a linear head on the CPU; the values are what matters. */
static fn_net *small_net(fn_context *ctx)
{
    const fn_layer_spec specs[] = {kind_spec("block", 16), kind_spec("linear", 3)};
    const fn_layer_hparams hp = default_hparams(4);
    fn_net *net = NULL;
    EXPECT_OK(fn_model_create(&net, ctx, specs, 2, 8, &hp, 4, 5));
    return net;
}

typedef fn_status (*load_fn)(fn_net *net, const char *path, void *arg);

/* Flips FLIPS single bits of the file at path, each in a fresh copy, and
 * loads each copy into a net like `original`. */
static void flip_and_load(fn_context *ctx, const fn_net *original, const char *path, load_fn load,
                          void *arg)
{
    file_bytes good = file_bytes_read(path);
    char copy[] = "/tmp/fn_flip_XXXXXX";
    int fd = mkstemp(copy);
    assert_true(fd >= 0);
    close(fd);
    uint64_t state = 0x9e3779b97f4a7c15ull;
    int refused = 0, same = 0;
    for (int k = 0; k < FLIPS; k++) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        const size_t bit = (size_t)(state >> 11) % (good.size * 8);
        good.data[bit / 8] ^= (unsigned char)(1u << bit % 8);
        file_bytes_write(copy, &good);
        good.data[bit / 8] ^= (unsigned char)(1u << bit % 8);
        fn_net *net = small_net(ctx);
        if (load(net, copy, arg) != FN_OK)
            refused++;
        else if (same_weights(original, net))
            same++;
        else
            fail_msg("bit %zu of %s flipped: loaded with changed values", bit, path);
        fn_net_destroy(net);
    }
    printf("%s: %d flips refused, %d loaded unchanged\n", path, refused, same);
    unlink(copy);
    free(good.data);
}

static fn_status load_weights(fn_net *net, const char *path, void *arg)
{
    (void)arg;
    return fn_weights_load(net, path);
}

static void test_weights_bit_flips(void **state)
{
    fn_context *ctx = *state;
    fn_net *net = small_net(ctx);
    char path[] = "/tmp/fn_weights_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    EXPECT_OK(fn_weights_save(
        path, net,
        &(fn_weights_save_options){.config_text = "[model]\nlayers = block 16, linear 3\n"}));
    flip_and_load(ctx, net, path, load_weights, NULL);
    unlink(path);
    fn_net_destroy(net);
}

/* The optimiser of the checkpoint tests: SGD with momentum (a state to
 * store). */
static fn_sgd_config momentum_sgd(void)
{
    fn_sgd_config cfg = fn_sgd_config_default(0.1f);
    cfg.momentum = 0.9f;
    return cfg;
}

/* Loads the checkpoint at path into net with the momentum SGD (arg unused:
 * the load_fn of flip_and_load). */
static fn_status load_checkpoint(fn_net *net, const char *path, void *arg)
{
    (void)arg;
    const fn_sgd_config cfg = momentum_sgd();
    fn_sgd *sgd = NULL;
    FN_TRY(fn_sgd_create(&sgd, fn_net_context(net), fn_net_params(net), fn_net_n_params(net),
                         &cfg));
    fn_train_state s = {0};
    fn_status st = fn_checkpoint_load(path, net, fn_sgd_optimizer(sgd), &s);
    fn_sgd_destroy(sgd);
    return st;
}

/* A small net on ctx and its checkpoint with the momentum SGD, in a new
 * temporary file whose name goes to path (room for "/tmp/fn_ckpt_XXXXXX"). */
static fn_net *checkpointed_net(fn_context *ctx, char *path)
{
    fn_net *net = small_net(ctx);
    const fn_sgd_config cfg = momentum_sgd();
    fn_sgd *sgd = NULL;
    EXPECT_OK(fn_sgd_create(&sgd, ctx, fn_net_params(net), fn_net_n_params(net), &cfg));
    const fn_train_state s = {.epoch = 1, .seed = 5, .batch_size = 4, .rows = 40, .slab_rows = 40};
    strcpy(path, "/tmp/fn_ckpt_XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    EXPECT_OK(fn_checkpoint_save(path, net, fn_sgd_optimizer(sgd), &s, NULL));
    fn_sgd_destroy(sgd);
    return net;
}

static void test_checkpoint_bit_flips(void **state)
{
    fn_context *ctx = *state;
    char path[32];
    fn_net *net = checkpointed_net(ctx, path);
    flip_and_load(ctx, net, path, load_checkpoint, NULL);
    unlink(path);
    fn_net_destroy(net);
}

static void test_checkpoint_missing_chunk(void **state)
{
    fn_context *ctx = *state;
    char path[32];
    fn_net *net = checkpointed_net(ctx, path), *other = small_net(ctx);
    EXPECT_OK(load_checkpoint(other, path, NULL));
    h5_drop_chunk(path, "momentum/layer0.weight", 3);
    EXPECT_FAIL(load_checkpoint(other, path, NULL), FN_ERR_FORMAT,
                "group 'momentum': dataset 'layer0.weight' declares [16, 8] in 16 chunks but "
                "stores only 15 of them");
    unlink(path);
    fn_net_destroy(other);
    fn_net_destroy(net);
}

TEST_MAIN(setup_cpu_context, teardown_context, cmocka_unit_test(test_weights_bit_flips),
          cmocka_unit_test(test_checkpoint_bit_flips),
          cmocka_unit_test(test_checkpoint_missing_chunk))
