/* test_hooks.c — the test-only hooks of test_hooks.h, compiled in with
 * FN_TEST_HOOKS and no-ops without it. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/test_hooks.h"

#ifdef FN_TEST_HOOKS

int fn_test_hooks_enabled(void)
{
    const char *off = getenv("FN_TEST_HOOKS_OFF");
    return !(off && strcmp(off, "1") == 0);
}

void fn_test_write_delay(void)
{
    const char *env = getenv("FN_TEST_WRITE_DELAY_MS");
    long ms = env ? strtol(env, NULL, 10) : 0;
    if (ms <= 0)
        return;
    ms = ms > 10000 ? 10000 : ms;
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

void fn_test_lock_gate(void)
{
    const char *gate = getenv("FN_TEST_LOCK_GATE");
    if (!gate || !*gate)
        return;
    char path[4096];
    snprintf(path, sizeof path, "%s/opened", gate);
    int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd >= 0)
        close(fd);
    snprintf(path, sizeof path, "%s/go", gate);
    struct timespec tick = {0, 10000000L}; /* 10 ms */
    for (int i = 0; i < 1000 && access(path, F_OK) != 0; i++)
        nanosleep(&tick, NULL);
}

/* The variable's value as a number, or -1 when unset. */
static long long env_number(const char *name)
{
    const char *env = getenv(name);
    return env && *env ? strtoll(env, NULL, 10) : -1;
}

int fn_test_rank_fails(int rank, long long step)
{
    return env_number("FN_TEST_FAIL_RANK") == rank && env_number("FN_TEST_FAIL_STEP") == step;
}

int fn_test_rank_perturbed(int rank) { return env_number("FN_TEST_PERTURB_RANK") == rank; }

void fn_test_rank_stall(int rank, long long step)
{
    if (env_number("FN_TEST_STALL_RANK") != rank || env_number("FN_TEST_STALL_STEP") != step)
        return;
    struct timespec ts = {600, 0};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

int fn_test_defer_lag(void)
{
    long long lag = env_number("FN_TEST_DEFER_LAG");
    return lag < 0 ? -1 : lag > 8 ? 8 : (int)lag;
}

int fn_test_bf16_copy_off(void) { return env_number("FN_TEST_BF16_COPY_OFF") == 1; }

int fn_test_bf16_acts_off(void) { return env_number("FN_TEST_BF16_ACTS_OFF") == 1; }
int fn_test_layer_updates(void) { return (int)env_number("FN_TEST_LAYER_UPDATES"); }

#else

int fn_test_hooks_enabled(void) { return 0; }

void fn_test_write_delay(void) {}

void fn_test_lock_gate(void) {}

int fn_test_rank_fails(int rank, long long step)
{
    (void)rank, (void)step;
    return 0;
}

int fn_test_rank_perturbed(int rank)
{
    (void)rank;
    return 0;
}

void fn_test_rank_stall(int rank, long long step)
{
    (void)rank, (void)step;
}

int fn_test_defer_lag(void) { return -1; }

int fn_test_bf16_copy_off(void) { return 0; }

int fn_test_bf16_acts_off(void) { return 0; }
int fn_test_layer_updates(void) { return -1; }

#endif
