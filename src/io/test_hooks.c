/* test_hooks.c — the test-only hooks of test_hooks.h, compiled in with
 * FN_TEST_HOOKS and no-ops without it. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "io/test_hooks.h"

#ifdef FN_TEST_HOOKS

int fn_test_hooks_enabled(void) { return 1; }

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

int fn_test_defer_lag(void)
{
    const char *env = getenv("FN_TEST_DEFER_LAG");
    if (!env || !*env)
        return -1;
    long lag = strtol(env, NULL, 10);
    return lag < 0 ? 0 : lag > 8 ? 8 : (int)lag;
}

#else

int fn_test_hooks_enabled(void) { return 0; }

void fn_test_write_delay(void) {}

int fn_test_defer_lag(void) { return -1; }

#endif
