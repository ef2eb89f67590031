/* atomic_file.c — the commit of a file written under a temporary name:
 * fsync, rename, fsync of the directory (a rename is durable only then). */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store/atomic_file.h"
#include "core/test_hooks.h"

char *fn_atomic_tmp_name(const char *path)
{
    size_t n = strlen(path) + 5;
    char *tmp = malloc(n);
    if (tmp)
        snprintf(tmp, n, "%s.tmp", path);
    return tmp;
}

char *fn_atomic_own_tmp_name(const char *path)
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

/* Removes what is left under the name *tmp (a link itself, never its
 * target); *tmp freed and NULL on failure. */
static fn_status make_way(char **tmp)
{
    if (!*tmp)
        return fn_fail(FN_ERR_NOMEM, "out of memory");
    /* unlink removes a symbolic link itself, never its target. */
    if (unlink(*tmp) != 0 && errno != ENOENT) {
        fn_status st = fn_fail(FN_ERR_IO, "%s: cannot remove what an earlier run left there: %s",
                               *tmp, strerror(errno));
        free(*tmp);
        *tmp = NULL;
        return st;
    }
    return FN_OK;
}

fn_status fn_atomic_prepare(const char *path, char **tmp)
{
    *tmp = fn_atomic_tmp_name(path);
    return make_way(tmp);
}

fn_status fn_atomic_prepare_own(const char *path, char **tmp)
{
    *tmp = fn_atomic_own_tmp_name(path);
    return make_way(tmp);
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

fn_status fn_atomic_create_own(const char *path, char **tmp, int *fd)
{
    FN_TRY(fn_atomic_prepare_own(path, tmp));
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
