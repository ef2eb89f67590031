/* regular_file.c — refusing a path that is not a regular file, before
 * anything reads it (regular_file.h says why). */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/regular_file.h"

const char *fn_file_kind(mode_t mode)
{
    if (S_ISREG(mode))
        return "a regular file";
    if (S_ISDIR(mode))
        return "a directory";
    if (S_ISFIFO(mode))
        return "a FIFO (named pipe)";
    if (S_ISCHR(mode))
        return "a character device";
    if (S_ISBLK(mode))
        return "a block device";
    if (S_ISSOCK(mode))
        return "a socket";
    if (S_ISLNK(mode))
        return "a symbolic link";
    return "not a regular file";
}

static fn_status refuse(const char *path, mode_t mode)
{
    return fn_fail(FN_ERR_IO, "%s: is %s, not a regular file", path, fn_file_kind(mode));
}

fn_status fn_require_regular_file(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return fn_fail(FN_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    return S_ISREG(st.st_mode) ? FN_OK : refuse(path, st.st_mode);
}

fn_status fn_open_regular_file(const char *path, int *fd, long long *size)
{
    *fd = -1;
    /* O_NONBLOCK: opening a FIFO for reading would wait for a writer. */
    int f = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (f < 0)
        return fn_fail(FN_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    fn_status status = FN_OK;
    if (fstat(f, &st) != 0)
        status = fn_fail(FN_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    else if (!S_ISREG(st.st_mode))
        status = refuse(path, st.st_mode);
    else if (fcntl(f, F_SETFL, fcntl(f, F_GETFL) & ~O_NONBLOCK) != 0)
        status = fn_fail(FN_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    if (status != FN_OK) {
        close(f);
        return status;
    }
    *fd = f;
    *size = (long long)st.st_size;
    return FN_OK;
}

int fn_file_looks_like_text(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
        return 0; /* a FIFO would hold the read; no message is left */
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;
    unsigned char head[512];
    const size_t n = fread(head, 1, sizeof head, f);
    fclose(f);
    for (size_t i = 0; i < n; i++)
        if (head[i] < 0x20 && head[i] != '\n' && head[i] != '\r' && head[i] != '\t')
            return 0;
    return n > 0;
}
