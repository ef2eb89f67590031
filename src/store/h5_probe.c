/* h5_probe.c — the probe: a loader's open-and-read path run first in a
 * forked child process, so that a crash or a hang inside HDF5 on a corrupt
 * file becomes a clean error for the caller. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "store/h5_probe.h"

/* HDF5 1.10 (Debian 12's 1.10.8) is not robust against corrupt files: a
 * damaged local or global heap or attribute message makes the library itself
 * read through a NULL or wild pointer, overrun a heap buffer or loop forever
 * (tests/fuzz/regressions/{data,weights}/hdf5_segv_*, hdf5_overflow_*,
 * hdf5_heap_overflow_*, hdf5_hang_*; h5dump fails on the same files). Those
 * are upstream bugs that no caller can test for beforehand, so each loader
 * first runs its own open-and-read path in a forked child, and a crash or a
 * hang there becomes a clean FN_ERR_FORMAT for the caller.
 *
 * The child writes nothing where the user sees it (stdout and stderr go to
 * /dev/null, so neither HDF5's nor a sanitizer's report gets out), leaves no
 * core file, runs none of the caller's signal handlers, dies with its
 * parent, never touches the device (each loader's check reads into host
 * memory only, and only the caller's process uploads) and ends with
 * _exit: the library's rule that it never prints or exits holds for the
 * caller's process, and _exit runs none of the caller's atexit handlers and
 * flushes none of the stdio buffers the child inherited. It reports over a
 * pipe in records of a few bytes, which a pipe writes atomically.
 *
 * Fork is safe here: the loaders run while no other thread of the caller
 * uses HDF5 (train and predict open their sets, weights and checkpoints
 * before fn_loader_start, and a loader's thread first calls HDF5 after
 * it: so no thread is inside HDF5, or holds a thread-safe HDF5's lock, at
 * the fork; idle worker, loader or CUDA threads do not matter (a worker
 * pool returns from its creation only once every thread is parked,
 * core/workers.c), since the child uses only malloc, which glibc keeps
 * usable across fork, HDF5 and fusenet's host code). */

/* A message as long as the library keeps (status.c); a record stays within
 * PIPE_BUF, so one write() delivers it whole. */
enum { PROBE_ALIVE = 1, PROBE_DONE = 2, PROBE_MESSAGE_CAP = 1024 };

typedef struct probe_record {
    int kind;       /* PROBE_ALIVE or PROBE_DONE */
    int status;     /* PROBE_DONE: what the check returned */
    char message[PROBE_MESSAGE_CAP]; /* PROBE_DONE: its message when it failed */
    double seconds; /* PROBE_ALIVE: the time allowed for the next step */
    uint64_t result; /* PROBE_DONE: what the check handed back (fn_h5_probe_result) */
} probe_record;
_Static_assert(sizeof(probe_record) <= PIPE_BUF, "a probe record must be one atomic write");

struct fn_h5_child {
    int fd;          /* the pipe's writing end */
    uint64_t result; /* fn_h5_probe_result's value, sent with the report */
};

static fn_h5_probe_testing probe_testing; /* set by tests and fuzz harnesses only */

void fn_h5_probe_set_testing(const fn_h5_probe_testing *testing)
{
    probe_testing = testing ? *testing : (fn_h5_probe_testing){0};
}

/* A failed write means the parent is gone; the child then dies with it. */
static void probe_send(int fd, const probe_record *r)
{
    ssize_t n;
    do
        n = write(fd, r, sizeof *r);
    while (n < 0 && errno == EINTR);
}

void fn_h5_probe_result(fn_h5_child *probe, uint64_t value)
{
    if (probe)
        probe->result = value;
}

void fn_h5_probe_alive(fn_h5_child *probe, double seconds)
{
    if (!probe)
        return;
    probe_record r = {.kind = PROBE_ALIVE, .seconds = seconds};
    probe_send(probe->fd, &r);
}

/* No handler of the caller's may run in the child: one for a crash (a test
 * runner's, which longjmps) would take the child back into the caller's
 * code, so a crash kills it and the parent reports it. Interrupts are the
 * parent's: the child, in the terminal's process group, ignores them and
 * finishes (or is killed). */
static void child_signals(void)
{
    static const int fatal[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
    struct sigaction dfl, ign;
    memset(&dfl, 0, sizeof dfl);
    sigemptyset(&dfl.sa_mask);
    ign = dfl;
    dfl.sa_handler = SIG_DFL;
    ign.sa_handler = SIG_IGN;
    for (size_t i = 0; i < sizeof fatal / sizeof fatal[0]; i++)
        sigaction(fatal[i], &dfl, NULL);
    sigaction(SIGINT, &ign, NULL);
    sigaction(SIGTERM, &ign, NULL);
    sigaction(SIGHUP, &ign, NULL);
}

static _Noreturn void run_child(int fd, pid_t parent, fn_h5_probe_fn check, void *arg)
{
#ifdef __linux__
    prctl(PR_SET_PDEATHSIG, SIGKILL);
#endif
    if (getppid() != parent)
        _exit(1);
    int null = open("/dev/null", O_RDWR);
    if (null >= 0) {
        dup2(null, STDOUT_FILENO);
        dup2(null, STDERR_FILENO);
        if (null > STDERR_FILENO)
            close(null);
    }
    struct rlimit no_core = {0, 0};
    setrlimit(RLIMIT_CORE, &no_core);
    child_signals();
    if (probe_testing.child_init)
        probe_testing.child_init();
    fn_h5_child probe = {fd, 0};
    probe_record r = {.kind = PROBE_DONE, .status = (int)check(&probe, arg)};
    r.result = probe.result;
    if (r.status != FN_OK)
        snprintf(r.message, sizeof r.message, "%s", fn_last_error());
    probe_send(fd, &r);
    _exit(0);
}

static double seconds_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* The time allowed for a step: at least a second, at most the tests' cap. */
static double allowance(double seconds)
{
    double cap = probe_testing.max_seconds;
    if (!(seconds >= 1.0))
        seconds = 1.0;
    return cap > 0 && seconds > cap ? cap : seconds;
}

/* One record; 0 at the end of the pipe (the child has exited). */
static int probe_receive(int fd, probe_record *r)
{
    size_t got = 0;
    while (got < sizeof *r) {
        ssize_t n = read(fd, (char *)r + got, sizeof *r - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return 0;
        got += (size_t)n;
    }
    return 1;
}

/* Reads the child's records until it closes the pipe: 1 when it reported
 * (*status), 0 when it ended without a report, -1 when a step ran past its
 * allowance (*limit). A signal to the caller (train's SIGINT) only
 * interrupts the poll, which then goes on. */
static int probe_wait(int fd, double timeout_s, probe_record *done_record, double *limit)
{
    int done = 0;
    *limit = allowance(timeout_s);
    double deadline = seconds_now() + *limit;
    for (;;) {
        double left = deadline - seconds_now();
        if (left <= 0)
            return -1;
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int n = poll(&p, 1, left > 1e6 ? 1000000000 : (int)(left * 1000.0) + 1);
        if (n == 0 || (n < 0 && errno == EINTR))
            continue;
        probe_record r;
        if (n < 0 || !probe_receive(fd, &r))
            return done;
        if (r.kind == PROBE_ALIVE) {
            *limit = allowance(r.seconds);
            deadline = seconds_now() + *limit;
        } else if (r.kind == PROBE_DONE) {
            done = 1;
            *done_record = r;
        }
    }
}

fn_status fn_h5_probe(const char *path, fn_h5_probe_fn check, void *arg, double timeout_s,
                      int *verified)
{
    return fn_h5_probe_for(path, check, arg, timeout_s, verified, NULL);
}

fn_status fn_h5_probe_for(const char *path, fn_h5_probe_fn check, void *arg, double timeout_s,
                          int *verified, uint64_t *result)
{
    if (verified)
        *verified = 0;
    if (result)
        *result = 0;
    if (probe_testing.in_process)
        return FN_OK;
    int fds[2];
    /* Without a pipe or a child the caller reads unprotected, as it would
     * without the probe: a full process table must not stop a run. */
    if (pipe(fds) != 0)
        return FN_OK;
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        run_child(fds[1], parent, check, arg);
    }
    close(fds[1]);
    if (pid < 0) {
        close(fds[0]);
        return FN_OK;
    }
    probe_record report = {.status = FN_OK};
    double limit = 0;
    int got = probe_wait(fds[0], timeout_s, &report, &limit);
    close(fds[0]);
    if (got < 0)
        kill(pid, SIGKILL);
    int ws = 0;
    pid_t w;
    do
        w = waitpid(pid, &ws, 0);
    while (w < 0 && errno == EINTR);
    if (got < 0)
        return fn_fail(FN_ERR_FORMAT,
                       "%s: corrupt HDF5 file: the HDF5 library did not finish reading it "
                       "within %.0f s",
                       path, limit);
    /* w < 0: the caller ignores SIGCHLD, so only the report tells. */
    if (got == 1 && (w < 0 || (WIFEXITED(ws) && WEXITSTATUS(ws) == 0))) {
        if (report.status == FN_OK) {
            if (verified)
                *verified = 1;
            if (result)
                *result = report.result;
            return FN_OK;
        }
        /* A file the child found bad is not read again here: HDF5 1.10 can
         * corrupt its own heap on a damaged file and still fail cleanly,
         * and the caller's process must not run that path. */
        report.message[sizeof report.message - 1] = '\0';
        return fn_fail((fn_status)report.status, "%s", report.message);
    }
    if (w >= 0 && WIFSIGNALED(ws) && WTERMSIG(ws) == SIGKILL)
        return fn_fail(FN_ERR_NOMEM,
                       "%s: the process checking it was killed (SIGKILL; out of memory?)", path);
    if (w >= 0 && WIFSIGNALED(ws))
        return fn_fail(FN_ERR_FORMAT,
                       "%s: corrupt HDF5 file: the HDF5 library crashed (signal %d) reading it",
                       path, WTERMSIG(ws));
    if (w >= 0 && WIFEXITED(ws))
        return fn_fail(FN_ERR_FORMAT,
                       "%s: corrupt HDF5 file: the HDF5 library crashed (exit status %d) "
                       "reading it",
                       path, WEXITSTATUS(ws));
    return fn_fail(FN_ERR_FORMAT, "%s: corrupt HDF5 file: the HDF5 library crashed reading it",
                   path);
}
