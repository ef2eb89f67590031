/* dir_lock.c — the exclusive flock on a run's output directory, and the
 * holder's pid for the message when it is taken (from /proc/locks: a
 * flock records no owner, and writing one into a file would leave a file). */
#define _DEFAULT_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "core/test_hooks.h"
#include "store/dir_lock.h"

struct fn_dir_lock {
    int fd;       /* the directory, open; its flock is the lock */
    char *dir;    /* its path */
    char *made;   /* the shallowest directory the lock made, or NULL */
};

/* Removes dir and its parents up to `made` while they are empty. */
static void remove_made(char *dir, const char *made)
{
    for (;;) {
        if (rmdir(dir) != 0 || strcmp(dir, made) == 0)
            return;
        char *slash = strrchr(dir, '/');
        if (!slash || slash == dir)
            return;
        *slash = '\0';
    }
}

/* mkdir -p, noting in *made (malloc'ed) the shallowest level it created. */
static fn_status make_dirs(const char *path, char **made)
{
    *made = NULL;
    char *p = strdup(path);
    if (!p)
        return fn_fail(FN_ERR_NOMEM, "out of memory");
    for (char *s = p + 1;; s++) {
        char c = *s;
        if (c != '/' && c != '\0')
            continue;
        *s = '\0';
        if (mkdir(p, 0777) == 0) {
            if (!*made)
                *made = strdup(p);
        } else if (errno != EEXIST) {
            fn_status st =
                fn_fail(FN_ERR_IO, "%s: cannot create directory: %s", p, strerror(errno));
            char *parent = strrchr(p, '/'); /* p is the level that failed */
            if (*made && parent) {
                *parent = '\0';
                remove_made(p, *made);
            }
            free(*made);
            *made = NULL;
            free(p);
            return st;
        }
        *s = c;
        if (!c)
            break;
    }
    free(p);
    return FN_OK;
}

/* The pid holding a FLOCK on the file st describes, or 0 when /proc/locks
 * does not say (not Linux, or the holder just let go). Lines read
 * "1: FLOCK  ADVISORY  WRITE 1234 fe:00:5365761 0 EOF"; a waiter's line has
 * "->" before FLOCK and is skipped. */
static long holder_pid(const struct stat *st)
{
    FILE *f = fopen("/proc/locks", "r");
    if (!f)
        return 0;
    char line[256], kind[16];
    long pid = 0, found = 0;
    unsigned maj = 0, min = 0;
    unsigned long long ino = 0;
    while (!found && fgets(line, sizeof line, f))
        if (sscanf(line, "%*d: %15s %*s %*s %ld %x:%x:%llu", kind, &pid, &maj, &min, &ino) == 5 &&
            strcmp(kind, "FLOCK") == 0 && ino == (unsigned long long)st->st_ino &&
            maj == major(st->st_dev) && min == minor(st->st_dev))
            found = pid;
    fclose(f);
    return found;
}

/* 1 when path names the directory that fd has open: between a run's open and
 * its flock another run may have removed the directory (the last holder,
 * removing the one it made) or put a new one at its path, and a lock on
 * the old one guards nothing. */
static int still_at_path(int fd, const char *path)
{
    struct stat held, named;
    return fstat(fd, &held) == 0 && stat(path, &named) == 0 && held.st_dev == named.st_dev &&
           held.st_ino == named.st_ino;
}

/* The flock on the open directory fd, without waiting; on success *lock
 * takes fd, else fd is closed. */
static fn_status lock_fd(fn_dir_lock **lock, const char *dir, int fd);

/* Rounds of mkdir, open, flock that may find the directory replaced under
 * them before one is given up: each needs another run to remove or replace
 * the directory in the instant between its open and its flock. */
enum { TAKE_ROUNDS = 8 };

/* A lost lock removes nothing, not even a directory this call made: the
 * run that holds the lock may have found it there a moment later, and owns
 * it now. Only a holder removes what it made (fn_dir_lock_release). */
fn_status fn_dir_lock_take(fn_dir_lock **lock, const char *dir)
{
    *lock = NULL;
    for (int round = 0; round < TAKE_ROUNDS; round++) {
        char *made = NULL;
        FN_TRY(make_dirs(dir, &made));
        int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0) {
            const int err = errno;
            free(made);
            if (err == ENOENT)
                continue; /* removed since the mkdir: make it again */
            return fn_fail(FN_ERR_IO, "%s: cannot open the directory: %s", dir, strerror(err));
        }
        fn_test_lock_gate();
        fn_status st = lock_fd(lock, dir, fd);
        if (st != FN_OK) {
            free(made);
            return st;
        }
        if (still_at_path(fd, dir)) {
            (*lock)->made = made;
            return FN_OK;
        }
        free(made);
        free((*lock)->dir);
        free(*lock);
        *lock = NULL;
        close(fd);
    }
    return fn_fail(FN_ERR_IO,
                   "%s: the directory was removed or replaced %d times while this run locked it; "
                   "is another program deleting it?",
                   dir, TAKE_ROUNDS);
}

static fn_status lock_fd(fn_dir_lock **lock, const char *dir, int fd)
{
    /* A holder that ends between the two looks lets the second try in. */
    for (int attempt = 0; attempt < 2; attempt++) {
        if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
            *lock = calloc(1, sizeof **lock);
            char *copy = *lock ? strdup(dir) : NULL;
            if (!copy) {
                free(*lock);
                *lock = NULL;
                close(fd);
                return fn_fail(FN_ERR_NOMEM, "out of memory");
            }
            (*lock)->fd = fd;
            (*lock)->dir = copy;
            return FN_OK;
        }
        if (errno != EWOULDBLOCK && errno != EINTR)
            break;
        struct stat st;
        long pid = fstat(fd, &st) == 0 ? holder_pid(&st) : 0;
        if (pid > 0 || attempt == 1) {
            close(fd);
            char who[32] = "pid unknown";
            if (pid > 0)
                snprintf(who, sizeof who, "pid %ld", pid);
            return fn_fail(FN_ERR_IO, "%s is in use by another train run (%s)", dir, who);
        }
    }
    fn_status st = fn_fail(FN_ERR_IO, "%s: cannot lock the directory: %s", dir, strerror(errno));
    close(fd);
    return st;
}

/* The directories it made are removed while the flock is still held, and
 * only if the path still names the directory locked: a run that opened it
 * meanwhile finds it gone once it has the flock, and makes a new one. */
void fn_dir_lock_release(fn_dir_lock *lock)
{
    if (!lock)
        return;
    if (lock->made && still_at_path(lock->fd, lock->dir))
        remove_made(lock->dir, lock->made);
    close(lock->fd); /* drops the flock */
    free(lock->made);
    free(lock->dir);
    free(lock);
}
