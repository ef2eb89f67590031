/* test_dropout_train.c — dropout in the trainer, on the CPU: its masks
 * are keyed by the run (seed, layer, step, row), so a run stopped mid-epoch
 * and resumed ends with the uninterrupted run's weights bit for bit, a
 * deferred run (the loss read late) with the eager run's, and two runs with
 * each other's; the masks are drawn in training (a run with dropout 0.5
 * ends elsewhere than with dropout 0) and not in evaluation (the trainer
 * leaves its net in an evaluation pass after validating). The GPU half
 * (graph replays drawing each step's mask): test_step_graph_cuda; several
 * processes: tests/dist/dist_check.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/test_hooks.h"
#include "expect.h"
#include "fusenet/trainer.h"
#include "program.h"
#include "sets.h"
#include "test_main.h"
#include "trainer_run.h"

enum { ROWS = 200, BATCH = 32, EPOCHS = 3, MSG_CAP = 2048 };

typedef program_files fixture;

static int32_t label_of(const float *x) { return (x[0] > 0) + (x[1] > x[2]); }

static const set_shape shape = {.cols = 4, .label = label_of};

static int setup(void **state)
{
    *state = deferred_run_files("fn_dropout_", &shape, ROWS, 13,
                                "block 16, dropout 0.5, block 16, dropout 0.2, linear 3", "cpu",
                                BATCH, EPOCHS);
    return 0;
}

static fn_trainer *run(const fixture *f, const char *out, const char *lag, const char *sets,
                       fn_config **cfg)
{
    char msg[MSG_CAP];
    fn_status st;
    fn_trainer *t = trainer_run(f->dir, f->ini, out, lag, sets, 0, -1, cfg, &st, msg, MSG_CAP);
    if (st != FN_OK)
        fail_msg("%s: %s", out, msg);
    return t;
}

static void test_runs_repeat_and_masks_act(void **state)
{
    const fixture *f = *state;
    fn_config *c[3] = {NULL, NULL, NULL};
    fn_trainer *a = run(f, "a", NULL, NULL, &c[0]);
    fn_trainer *b = run(f, "b", NULL, NULL, &c[1]);
    expect_same_weights(fn_trainer_net(a), fn_trainer_net(b));
    fn_trainer *none = run(f, "none", NULL,
                           "model.layers=block 16, dropout 0, block 16, dropout 0, linear 3", &c[2]);
    assert_false(same_weights(fn_trainer_net(a), fn_trainer_net(none)));
    /* The run's last forward passes were the validation's: not training. */
    const fn_net *net = fn_trainer_net(a);
    for (int i = 0; i < fn_net_n_layers(net); i++)
        assert_int_equal(fn_net_layer(net, i)->pass.training, 0);
    fn_trainer_destroy(a);
    fn_trainer_destroy(b);
    fn_trainer_destroy(none);
    for (int i = 0; i < 3; i++)
        fn_config_destroy(c[i]);
}

static void test_resumed_as_whole(void **state)
{
    const fixture *f = *state;
    fn_config *cfg = NULL;
    fn_trainer *t = expect_resumed_as_whole(f->dir, f->ini, NULL, NULL, 10, &cfg); /* mid epoch 2 */
    trainer_release(t, cfg);
}

static void test_deferred_is_eager(void **state)
{
    skip_without_test_hooks();
    const fixture *f = *state;
    fn_config *ce = NULL, *cd = NULL;
    fn_trainer *e = run(f, "eager", NULL, NULL, &ce);
    fn_trainer *d = run(f, "deferred", "3", NULL, &cd);
    expect_same_weights(fn_trainer_net(e), fn_trainer_net(d));
    trainer_release(e, ce);
    trainer_release(d, cd);
    fn_config *cfg = NULL;
    fn_trainer *t = expect_resumed_as_whole(f->dir, f->ini, NULL, "3", 10, &cfg);
    trainer_release(t, cfg);
}

TEST_MAIN(setup, deferred_run_teardown, cmocka_unit_test(test_runs_repeat_and_masks_act),
          cmocka_unit_test(test_resumed_as_whole), cmocka_unit_test(test_deferred_is_eager))
