/* h5util.c — HDF5 helpers: error text, attributes, float datasets, the
 * atomic write through a temporary file, and the probe that reads a file in
 * a child process first (HDF5 1.10 can crash or hang on a corrupt file). */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "io/h5util.h"

void fn_h5_quiet(void) { H5Eset_auto2(H5E_DEFAULT, NULL, NULL); }

typedef struct h5_message {
    char text[256];
} h5_message;

static herr_t first_message(unsigned n, const H5E_error2_t *err, void *data)
{
    h5_message *m = data;
    if (n == 0 && err->desc)
        snprintf(m->text, sizeof m->text, "%s", err->desc);
    return 0;
}

fn_status fn_h5_fail(fn_status status, const char *fmt, ...)
{
    char text[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    h5_message m = {{0}};
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, first_message, &m);
    H5Eclear2(H5E_DEFAULT);
    if (m.text[0])
        return fn_fail(status, "%s: %s", text, m.text);
    return fn_fail(status, "%s", text);
}

void fn_h5_type_name(hid_t type, char *buf, size_t n)
{
    size_t bits = H5Tget_size(type) * 8;
    switch (H5Tget_class(type)) {
    case H5T_INTEGER:
        snprintf(buf, n, "%s%zu", H5Tget_sign(type) == H5T_SGN_NONE ? "uint" : "int", bits);
        break;
    case H5T_FLOAT:
        snprintf(buf, n, "float%zu", bits);
        break;
    case H5T_STRING:
        snprintf(buf, n, "string");
        break;
    case H5T_COMPOUND:
        snprintf(buf, n, "compound");
        break;
    case H5T_ENUM:
        snprintf(buf, n, "enum");
        break;
    default:
        snprintf(buf, n, "of an unsupported type class");
        break;
    }
}

fn_status fn_h5_open_read(hid_t *file, const char *path)
{
    fn_h5_quiet();
    if (access(path, R_OK) != 0)
        return fn_fail(FN_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    *file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (*file < 0)
        return fn_h5_fail(FN_ERR_FORMAT, "%s: not a readable HDF5 file", path);
    return FN_OK;
}

fn_status fn_h5_create_tmp(hid_t *file, const char *path, char **tmp)
{
    fn_h5_quiet();
    size_t n = strlen(path) + 5;
    *tmp = malloc(n);
    if (!*tmp)
        return fn_fail(FN_ERR_NOMEM, "out of memory");
    snprintf(*tmp, n, "%s.tmp", path);
    *file = H5Fcreate(*tmp, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    if (*file < 0) {
        fn_status st = fn_h5_fail(FN_ERR_IO, "%s: cannot create", *tmp);
        free(*tmp);
        *tmp = NULL;
        return st;
    }
    return FN_OK;
}

static fn_status fsync_path(const char *path, int flags)
{
    int fd = open(path, flags);
    if (fd < 0)
        return fn_fail(FN_ERR_IO, "%s: cannot open for fsync: %s", path, strerror(errno));
    int failed = fsync(fd) != 0;
    int saved = errno;
    close(fd);
    if (failed)
        return fn_fail(FN_ERR_IO, "%s: fsync failed: %s", path, strerror(saved));
    return FN_OK;
}

static char *parent_dir(const char *path)
{
    const char *slash = strrchr(path, '/');
    size_t n = slash ? (size_t)(slash - path) : 1;
    char *d = malloc(n + 1);
    if (!d)
        return NULL;
    if (!slash)
        d[0] = '.';
    else if (n == 0)
        d[n++] = '/';
    else
        memcpy(d, path, n);
    d[n] = '\0';
    return d;
}

/* TEST-ONLY hook: FN_TEST_WRITE_DELAY_MS=N makes every commit wait N ms
 * (at most 10 s) between the temporary's fsync and the rename, so
 * tests/test_faults.c can SIGKILL a run inside a write window of known
 * length instead of hoping to hit a ~10 ms one. Not for users: unset, it
 * costs one getenv per file written. */
static void test_write_delay(void)
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

fn_status fn_h5_commit(hid_t file, const char *tmp, const char *path)
{
    if (H5Fclose(file) < 0) {
        fn_status st = fn_h5_fail(FN_ERR_IO, "%s: cannot close", tmp);
        remove(tmp);
        return st;
    }
    fn_status st = fsync_path(tmp, O_RDONLY);
    if (st == FN_OK)
        test_write_delay();
    if (st == FN_OK && rename(tmp, path) != 0)
        st = fn_fail(FN_ERR_IO, "%s: cannot rename to %s: %s", tmp, path, strerror(errno));
    if (st != FN_OK) {
        remove(tmp);
        return st;
    }
    /* The rename itself is durable only once the directory is synced. */
    char *dir = parent_dir(path);
    if (!dir)
        return fn_fail(FN_ERR_NOMEM, "out of memory");
    st = fsync_path(dir, O_RDONLY);
    free(dir);
    return st;
}

void fn_h5_abandon(hid_t file, const char *tmp)
{
    if (file >= 0)
        H5Fclose(file);
    if (tmp)
        remove(tmp);
}

/* --- attributes --------------------------------------------------------- */

static fn_status put_attr(hid_t obj, const char *where, const char *name, hid_t type,
                          const void *value)
{
    hid_t space = H5Screate(H5S_SCALAR);
    hid_t attr = space < 0 ? -1 : H5Acreate2(obj, name, type, space, H5P_DEFAULT, H5P_DEFAULT);
    herr_t w = attr < 0 ? -1 : H5Awrite(attr, type, value);
    if (attr >= 0)
        H5Aclose(attr);
    if (space >= 0)
        H5Sclose(space);
    if (w < 0)
        return fn_h5_fail(FN_ERR_IO, "%s: cannot write attribute '%s'", where, name);
    return FN_OK;
}

fn_status fn_h5_put_string(hid_t obj, const char *where, const char *name, const char *value)
{
    /* Variable-length UTF-8, as h5py writes str: h5py reads it back as str. */
    hid_t type = H5Tcopy(H5T_C_S1);
    if (type < 0 || H5Tset_size(type, H5T_VARIABLE) < 0 || H5Tset_cset(type, H5T_CSET_UTF8) < 0) {
        if (type >= 0)
            H5Tclose(type);
        return fn_h5_fail(FN_ERR_IO, "%s: cannot make a string type", where);
    }
    fn_status st = put_attr(obj, where, name, type, &value);
    H5Tclose(type);
    return st;
}

fn_status fn_h5_put_int(hid_t obj, const char *where, const char *name, long long value)
{
    int64_t v = value;
    hid_t type = value >= INT32_MIN && value <= INT32_MAX ? H5T_STD_I32LE : H5T_STD_I64LE;
    return put_attr(obj, where, name, type, type == H5T_STD_I32LE ? (void *)&(int32_t){(int32_t)v}
                                                                   : (void *)&v);
}

fn_status fn_h5_put_double(hid_t obj, const char *where, const char *name, double value)
{
    hid_t space = H5Screate(H5S_SCALAR);
    hid_t attr = space < 0 ? -1
                           : H5Acreate2(obj, name, H5T_IEEE_F64LE, space, H5P_DEFAULT, H5P_DEFAULT);
    herr_t w = attr < 0 ? -1 : H5Awrite(attr, H5T_NATIVE_DOUBLE, &value);
    if (attr >= 0)
        H5Aclose(attr);
    if (space >= 0)
        H5Sclose(space);
    if (w < 0)
        return fn_h5_fail(FN_ERR_IO, "%s: cannot write attribute '%s'", where, name);
    return FN_OK;
}

/* Opens attribute `name` and checks its class; the caller closes it. */
static fn_status open_attr(hid_t obj, const char *where, const char *name, H5T_class_t want,
                           const char *want_text, hid_t *attr)
{
    htri_t exists = H5Aexists(obj, name);
    if (exists <= 0)
        return fn_h5_fail(FN_ERR_FORMAT, "%s: attribute '%s' is missing", where, name);
    *attr = H5Aopen(obj, name, H5P_DEFAULT);
    if (*attr < 0)
        return fn_h5_fail(FN_ERR_FORMAT, "%s: cannot open attribute '%s'", where, name);
    hid_t type = H5Aget_type(*attr);
    hid_t space = H5Aget_space(*attr);
    H5T_class_t cls = type < 0 ? H5T_NO_CLASS : H5Tget_class(type);
    hssize_t n = space < 0 ? -1 : H5Sget_simple_extent_npoints(space);
    char tname[32];
    if (type >= 0)
        fn_h5_type_name(type, tname, sizeof tname);
    if (type >= 0)
        H5Tclose(type);
    if (space >= 0)
        H5Sclose(space);
    if (cls != want || n != 1) {
        H5Aclose(*attr);
        return fn_fail(FN_ERR_FORMAT, "%s: attribute '%s' is %s%s, expected a single %s", where,
                       name, n != 1 ? "not a single value of type " : "",
                       cls == H5T_NO_CLASS ? "unreadable" : tname, want_text);
    }
    return FN_OK;
}

static fn_status read_string_attr(hid_t attr, const char *where, const char *name, char **value)
{
    hid_t type = H5Aget_type(attr);
    if (type < 0)
        return fn_h5_fail(FN_ERR_FORMAT, "%s: attribute '%s'", where, name);
    htri_t vlen = H5Tis_variable_str(type);
    size_t size = H5Tget_size(type);
    hid_t mem = H5Tcopy(type);
    herr_t r = -1;
    char *text = NULL;
    if (vlen > 0) {
        char *p = NULL;
        r = H5Aread(attr, mem, &p);
        if (r >= 0 && p)
            text = strdup(p);
        if (r >= 0)
            H5free_memory(p);
    } else if (vlen == 0 && (text = calloc(size + 1, 1))) {
        r = H5Aread(attr, mem, text);
    }
    H5Tclose(mem);
    H5Tclose(type);
    if (r < 0 || !text) {
        free(text);
        return fn_h5_fail(FN_ERR_FORMAT, "%s: cannot read attribute '%s'", where, name);
    }
    *value = text;
    return FN_OK;
}

fn_status fn_h5_get_string(hid_t obj, const char *where, const char *name, char **value)
{
    hid_t attr = -1;
    FN_TRY(open_attr(obj, where, name, H5T_STRING, "string", &attr));
    fn_status st = read_string_attr(attr, where, name, value);
    H5Aclose(attr);
    return st;
}

fn_status fn_h5_get_int(hid_t obj, const char *where, const char *name, long long *value)
{
    hid_t attr = -1;
    FN_TRY(open_attr(obj, where, name, H5T_INTEGER, "integer", &attr));
    int64_t v = 0;
    fn_status st = H5Aread(attr, H5T_NATIVE_INT64, &v) < 0
                       ? fn_h5_fail(FN_ERR_FORMAT, "%s: cannot read attribute '%s'", where, name)
                       : FN_OK;
    H5Aclose(attr);
    if (st == FN_OK)
        *value = v;
    return st;
}

fn_status fn_h5_get_double(hid_t obj, const char *where, const char *name, double *value)
{
    hid_t attr = -1;
    FN_TRY(open_attr(obj, where, name, H5T_FLOAT, "float", &attr));
    fn_status st = H5Aread(attr, H5T_NATIVE_DOUBLE, value) < 0
                       ? fn_h5_fail(FN_ERR_FORMAT, "%s: cannot read attribute '%s'", where, name)
                       : FN_OK;
    H5Aclose(attr);
    return st;
}

/* --- float datasets ----------------------------------------------------- */

/* "[i, j]" or "[i]" of the first non-finite value of data, or "" if none. */
static void first_non_finite(const float *data, int rank, const long long *dims, char *at,
                             size_t n, const char **what)
{
    long long cols = rank > 1 ? dims[1] : 1, count = dims[0] * cols;
    at[0] = '\0';
    for (long long i = 0; i < count; i++) {
        if (isfinite(data[i]))
            continue;
        if (rank > 1)
            snprintf(at, n, "[%lld, %lld]", i / cols, i % cols);
        else
            snprintf(at, n, "[%lld]", i);
        *what = isnan(data[i]) ? "NaN" : "an infinity";
        return;
    }
}

fn_status fn_h5_put_floats(hid_t loc, const char *where, const char *name, const float *data,
                           int rank, const long long *dims)
{
    char at[64];
    const char *what = "";
    first_non_finite(data, rank, dims, at, sizeof at, &what);
    if (at[0])
        return fn_fail(FN_ERR_NUMERIC, "%s: dataset '%s' would hold %s at %s; not written", where,
                       name, what, at);
    hsize_t d[2] = {(hsize_t)dims[0], rank > 1 ? (hsize_t)dims[1] : 1};
    hid_t space = H5Screate_simple(rank, d, NULL);
    hid_t set = space < 0 ? -1
                          : H5Dcreate2(loc, name, H5T_IEEE_F32LE, space, H5P_DEFAULT, H5P_DEFAULT,
                                       H5P_DEFAULT);
    herr_t w = set < 0 ? -1 : H5Dwrite(set, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, data);
    if (set >= 0)
        H5Dclose(set);
    if (space >= 0)
        H5Sclose(space);
    if (w < 0)
        return fn_h5_fail(FN_ERR_IO, "%s: cannot write dataset '%s'", where, name);
    return FN_OK;
}

static fn_status check_float_set(hid_t set, const char *where, const char *name, int rank,
                                 const long long *dims)
{
    hid_t type = H5Dget_type(set);
    hid_t space = H5Dget_space(set);
    char tname[32] = "unreadable";
    int is_f32 = type >= 0 && H5Tget_class(type) == H5T_FLOAT && H5Tget_size(type) == 4;
    if (type >= 0)
        fn_h5_type_name(type, tname, sizeof tname);
    hsize_t d[H5S_MAX_RANK] = {0};
    int r = space < 0 ? -1 : H5Sget_simple_extent_dims(space, d, NULL);
    if (type >= 0)
        H5Tclose(type);
    if (space >= 0)
        H5Sclose(space);
    if (!is_f32)
        return fn_fail(FN_ERR_FORMAT, "%s: dataset '%s' is %s, expected float32", where, name,
                       tname);
    int same = r == rank && (long long)d[0] == dims[0] && (rank < 2 || (long long)d[1] == dims[1]);
    if (!same) {
        char want[64], got[64] = "";
        snprintf(want, sizeof want, rank > 1 ? "[%lld, %lld]" : "[%lld]", dims[0],
                 rank > 1 ? dims[1] : 0);
        int len = 0;
        for (int i = 0; i < r && len < (int)sizeof got - 24; i++)
            len += snprintf(got + len, sizeof got - (size_t)len, "%s%llu", i ? ", " : "",
                            (unsigned long long)d[i]);
        return fn_fail(FN_ERR_FORMAT, "%s: dataset '%s' has shape [%s], expected %s", where, name,
                       got, want);
    }
    return FN_OK;
}

fn_status fn_h5_get_floats(hid_t loc, const char *where, const char *name, float *data, int rank,
                           const long long *dims)
{
    if (H5Lexists(loc, name, H5P_DEFAULT) <= 0)
        return fn_fail(FN_ERR_FORMAT, "%s: dataset '%s' is missing", where, name);
    hid_t set = H5Dopen2(loc, name, H5P_DEFAULT);
    if (set < 0)
        return fn_h5_fail(FN_ERR_FORMAT, "%s: '%s' is not a readable dataset", where, name);
    fn_status st = check_float_set(set, where, name, rank, dims);
    if (st == FN_OK && H5Dread(set, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0)
        st = fn_h5_fail(FN_ERR_FORMAT, "%s: cannot read dataset '%s'", where, name);
    H5Dclose(set);
    FN_TRY(st);
    /* fusenet never writes a non-finite value, so one means a damaged file. */
    char at[64];
    const char *what = "";
    first_non_finite(data, rank, dims, at, sizeof at, &what);
    if (at[0])
        return fn_fail(FN_ERR_FORMAT, "%s: dataset '%s' holds %s at %s", where, name, what, at);
    return FN_OK;
}

/* --- the probe: reading a file in a child process first ------------------ */

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
 * parent, never touches the device (the loaders ask
 * fn_h5_probe_child() and keep what they read on the host) and ends with
 * _exit: the library's rule that it never prints or exits holds for the
 * caller's process, and _exit runs none of the caller's atexit handlers and
 * flushes none of the stdio buffers the child inherited. It reports over a
 * pipe in records of a few bytes, which a pipe writes atomically.
 *
 * Fork is safe here: the loaders run while no other thread of the caller
 * uses HDF5 (train and predict open their sets, weights and checkpoints
 * before fn_loader_start; idle loader or CUDA threads do not matter, since
 * the child uses only malloc, which glibc keeps usable across fork, HDF5
 * and fusenet's host code). */

enum { PROBE_ALIVE = 1, PROBE_DONE = 2 };

typedef struct probe_record {
    int kind;       /* PROBE_ALIVE or PROBE_DONE */
    int status;     /* PROBE_DONE: what the check returned */
    double seconds; /* PROBE_ALIVE: the time allowed for the next step */
} probe_record;

struct fn_h5_child {
    int fd; /* the pipe's writing end */
};

static int probe_child;                   /* 1 in a probe's child process only */
static fn_h5_probe_testing probe_testing; /* set by tests and fuzz harnesses only */

int fn_h5_probe_child(void) { return probe_child; }

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
}

static _Noreturn void run_child(int fd, pid_t parent, fn_h5_probe_fn check, void *arg)
{
    probe_child = 1;
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
    fn_h5_child probe = {fd};
    probe_record r = {.kind = PROBE_DONE, .status = (int)check(&probe, arg)};
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
static int probe_wait(int fd, double timeout_s, int *status, double *limit)
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
            *status = r.status;
        }
    }
}

fn_status fn_h5_probe(const char *path, fn_h5_probe_fn check, void *arg, double timeout_s,
                      int *verified)
{
    if (verified)
        *verified = 0;
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
    int status = FN_OK;
    double limit = 0;
    int got = probe_wait(fds[0], timeout_s, &status, &limit);
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
        if (verified)
            *verified = status == FN_OK;
        return FN_OK;
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
