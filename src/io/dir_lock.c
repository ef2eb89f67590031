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
#include <sys/sysmacros.h>
#include <unistd.h>

#include "io/dir_lock.h"

struct fn_dir_lock {
    int fd; /* the directory, open; its flock is the lock */
};

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

fn_status fn_dir_lock_take(fn_dir_lock **lock, const char *dir)
{
    *lock = NULL;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return fn_fail(FN_ERR_IO, "%s: cannot open the directory: %s", dir, strerror(errno));
    /* A holder that ends between the two looks lets the second try in. */
    for (int attempt = 0; attempt < 2; attempt++) {
        if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
            *lock = malloc(sizeof **lock);
            if (!*lock) {
                close(fd);
                return fn_fail(FN_ERR_NOMEM, "out of memory");
            }
            (*lock)->fd = fd;
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

void fn_dir_lock_release(fn_dir_lock *lock)
{
    if (!lock)
        return;
    close(lock->fd); /* drops the flock */
    free(lock);
}
