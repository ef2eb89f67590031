/* train_from_memory.c — fusenet's C API in one program: a classifier
 * trained from arrays the program holds (no data file), then asked for
 * the classes of points it has not seen. Usage: train_from_memory [dir]
 * (its weights.h5 and metrics.csv go to dir, runs/from_memory by default).
 * Exits 1 when a call fails, naming it and the library's message, or when
 * the network classifies fewer than 90 % of the new points right. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "fusenet/config.h"
#include "fusenet/evaluation.h"
#include "fusenet/inference.h"
#include "fusenet/memory_set.h"
#include "fusenet/trainer.h"

enum { TRAIN_ROWS = 2000, VALID_ROWS = 400, TEST_ROWS = 500, IN = 2, CLASSES = 2 };

/* Points of [-1, 1]^2, labelled 1 inside the circle x^2 + y^2 < 0.5: no
 * linear model separates them. */
static void make_points(float *x, int32_t *y, int rows, uint64_t *rng)
{
    for (int i = 0; i < rows * IN; i++) {
        *rng = *rng * 6364136223846793005u + 1442695040888963407u;
        x[i] = (float)((*rng >> 40) / (double)(1u << 24) * 2 - 1);
    }
    for (int i = 0; i < rows; i++)
        y[i] = x[i * IN] * x[i * IN] + x[i * IN + 1] * x[i * IN + 1] < 0.5f;
}

static void on_epoch(void *user, const fn_train_epoch *e)
{
    (void)user;
    printf("epoch %lld/%d: train loss %.4f, valid accuracy %.3f\n", e->epoch + 1, e->epochs,
           e->train.loss, e->valid.acc);
}

/* The settings a config file would hold; the sets are the program's. */
static const char settings[] =
    "[data]\nstandardize = true\n"
    "[model]\nlayers = block 32, block 32, linear 2\ngroups = 4\n"
    "[train]\nbatch_size = 32\nepochs = 10\nlr = 0.05\nmomentum = 0.9\nseed = 1\n"
    "[run]\ndevice = auto\nlog_every = 0\n";

typedef struct program {
    float x[TRAIN_ROWS * IN], vx[VALID_ROWS * IN], tx[TEST_ROWS * IN];
    int32_t y[TRAIN_ROWS], vy[VALID_ROWS], ty[TEST_ROWS], predicted[TEST_ROWS];
    float logits[TEST_ROWS * CLASSES];
    fn_memory_set *train, *valid, *test;
    fn_config *cfg;
    fn_trainer *trainer;
} program;

/* Every step in order; the first failure's status is returned, with its
 * message in fn_last_error(). */
static fn_status run(program *p, const char *out_dir)
{
    char output[1024];
    snprintf(output, sizeof output, "output.dir=%s", out_dir);
    const fn_trainer_callbacks callbacks = {.on_epoch = on_epoch};
    const fn_trainer_options options = {.overwrite = 1, .callbacks = &callbacks};
    FN_TRY(fn_memory_set_labels(&p->train, "train", p->x, TRAIN_ROWS, IN, p->y));
    FN_TRY(fn_memory_set_labels(&p->valid, "valid", p->vx, VALID_ROWS, IN, p->vy));
    FN_TRY(fn_config_parse(&p->cfg, "from_memory", settings));
    FN_TRY(fn_config_set(p->cfg, output));
    FN_TRY(fn_config_use_memory_set(p->cfg, "train", p->train));
    FN_TRY(fn_config_use_memory_set(p->cfg, "valid", p->valid));
    FN_TRY(fn_config_finish(p->cfg));
    FN_TRY(fn_trainer_create(&p->trainer, p->cfg, &options));
    FN_TRY(fn_trainer_run(p->trainer));
    /* The trained network and the standardisation it learnt with. */
    FN_TRY(fn_memory_set_inputs(&p->test, "test", p->tx, TEST_ROWS, IN));
    FN_TRY(fn_infer(fn_trainer_net(p->trainer), fn_trainer_input_norm(p->trainer), p->test,
                    p->logits));
    fn_argmax_rows(p->logits, TEST_ROWS, CLASSES, p->predicted);
    return FN_OK;
}

int main(int argc, char **argv)
{
    program *p = calloc(1, sizeof *p);
    if (!p)
        return 1;
    uint64_t rng = 42;
    make_points(p->x, p->y, TRAIN_ROWS, &rng);
    make_points(p->vx, p->vy, VALID_ROWS, &rng);
    make_points(p->tx, p->ty, TEST_ROWS, &rng);
    fn_status st = run(p, argc > 1 ? argv[1] : "runs/from_memory");
    int right = 0;
    for (int i = 0; st == FN_OK && i < TEST_ROWS; i++)
        right += p->predicted[i] == p->ty[i];
    if (st != FN_OK)
        fprintf(stderr, "train_from_memory: %s: %s\n", fn_status_name(st), fn_last_error());
    else
        printf("%d of %d new points classified right; weights in %s\n", right, TEST_ROWS,
               fn_trainer_weights_path(p->trainer));
    fn_trainer_destroy(p->trainer); /* every destroy takes NULL */
    fn_config_destroy(p->cfg);
    fn_memory_set_destroy(p->train);
    fn_memory_set_destroy(p->valid);
    fn_memory_set_destroy(p->test);
    free(p);
    return st == FN_OK && right >= TEST_ROWS * 9 / 10 ? 0 : 1;
}
