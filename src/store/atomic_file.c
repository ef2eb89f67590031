/* atomic_file.c — a file written under a temporary name of its process
 * and committed: fsync, rename, fsync of the directory (a rename is
 * durable only then); and the removal of killed writers' leftovers. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/atomic_file.h"
#include "core/test_hooks.h"

char *fn_atomic_tmp_name(const char *path)
{
    /* n: two writes to one path within one process get two names too. */
    static _Atomic unsigned serial;
    const unsigned n = serial++;
    size_t cap = strlen(path) + 48;
    char *tmp = malloc(cap);
    if (tmp)
        snprintf(tmp, cap, "%s.%ld-%u.tmp", path, (long)getpid(), n);
    return tmp;
}

fn_status fn_atomic_prepare(const char *path, char **tmp)
{
    /* A name taken already (a killed run's leftover whose process id this
     * one has now, or a user's file) is left alone: the next one is tried.
     * Whatever takes the name between this check and the exclusive create
     * makes the create fail; it is never replaced. */
    for (int tries = 0; tries < 1000; tries++) {
        *tmp = fn_atomic_tmp_name(path);
        if (!*tmp)
            return fn_fail(FN_ERR_NOMEM, "out of memory");
        struct stat st;
        if (lstat(*tmp, &st) != 0)
            return FN_OK; /* free, or the create says why it cannot make it */
        free(*tmp);
        *tmp = NULL;
    }
    return fn_fail(FN_ERR_IO, "%s: no free name for a temporary beside it (%s.<pid>-<n>.tmp): "
                   "remove the leftovers of killed runs there", path, path);
}

/* The prepared temporary *tmp, created exclusively. */
static fn_status create_prepared(char **tmp, int *fd)
{
    *fd = open(*tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (*fd < 0) {
        fn_status st = fn_fail(FN_ERR_IO, "%s: cannot create: %s", *tmp, strerror(errno));
        free(*tmp);
        *tmp = NULL;
        return st;
    }
    return FN_OK;
}

fn_status fn_atomic_create(const char *path, char **tmp, int *fd)
{
    FN_TRY(fn_atomic_prepare(path, tmp));
    return create_prepared(tmp, fd);
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

fn_status fn_atomic_commit(const char *tmp, const char *path)
{
    fn_status st = fsync_path(tmp, O_RDONLY | O_NOFOLLOW);
    if (st == FN_OK)
        fn_test_write_delay();
    if (st == FN_OK && rename(tmp, path) != 0)
        st = fn_fail(FN_ERR_IO, "%s: cannot rename to %s: %s", tmp, path, strerror(errno));
    if (st != FN_OK) {
        remove(tmp);
        return st;
    }
    char *dir = parent_dir(path);
    if (!dir)
        return fn_fail(FN_ERR_NOMEM, "out of memory");
    st = fsync_path(dir, O_RDONLY);
    free(dir);
    return st;
}

void fn_atomic_abandon(const char *tmp)
{
    if (tmp)
        remove(tmp);
}

/* Skips a run of decimal digits at *p, its value (capped past INT_MAX)
 * into *v; 0 when there is none. */
static int digits(const char **p, long *v)
{
    const char *s = *p;
    *v = 0;
    while (*s >= '0' && *s <= '9') {
        *v = *v > INT_MAX ? *v : *v * 10 + (*s - '0');
        s++;
    }
    if (s == *p)
        return 0;
    *p = s;
    return 1;
}

/* The process id of name when it is "<base>.<pid>-<n>.tmp"; else 0. */
static pid_t leftover_pid(const char *name, const char *base)
{
    const size_t b = strlen(base);
    if (strncmp(name, base, b) != 0 || name[b] != '.')
        return 0;
    const char *p = name + b + 1;
    long pid, n;
    if (!digits(&p, &pid) || *p++ != '-' || !digits(&p, &n) || strcmp(p, ".tmp") != 0)
        return 0;
    return pid > 0 && pid <= INT_MAX ? (pid_t)pid : 0;
}

fn_status fn_atomic_remove_leftovers(const char *path,
                                     int (*keep)(const struct stat *leftover, void *arg),
                                     void *arg)
{
    char *dir = parent_dir(path);
    if (!dir)
        return fn_fail(FN_ERR_NOMEM, "out of memory");
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    DIR *d = opendir(dir);
    free(dir);
    if (!d)
        return FN_OK; /* nothing can be listed there: nothing is removed */
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        const pid_t pid = leftover_pid(e->d_name, base);
        struct stat st;
        /* A process that is gone (kill: ESRCH), a regular file (never a
         * link, nor what one points to) that the caller does not keep. */
        if (!pid || (kill(pid, 0) == 0 || errno != ESRCH) ||
            fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
            !S_ISREG(st.st_mode) || (keep && keep(&st, arg)))
            continue;
        unlinkat(dirfd(d), e->d_name, 0); /* one that cannot be removed stays */
    }
    closedir(d);
    return FN_OK;
}
