/* ini_reader.c — INI files through inih, fed line by line from memory so
 * that every key and every error comes with its line. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <ini.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "run/ini_reader.h"
#include "store/regular_file.h"

/* A config is a few hundred bytes; a file far larger is not one (and is
 * refused before it is read). */
enum { INI_MAX_BYTES = 1 << 20 };

/* Up to INI_MAX_BYTES + 1 bytes of fd into buf[cap]; -1 on a read error. */
static long long read_all(int fd, char *buf, size_t cap)
{
    size_t n = 0;
    while (n < cap) {
        ssize_t got = read(fd, buf + n, cap - n);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            return -1;
        if (got == 0)
            break;
        n += (size_t)got;
    }
    return (long long)n;
}

fn_status fn_ini_read_text(const char *path, char **text)
{
    int fd;
    long long size;
    FN_TRY(fn_open_regular_file(path, &fd, &size));
    if (size > INI_MAX_BYTES) {
        close(fd);
        return fn_fail(FN_ERR_INVALID, "%s: %lld bytes: a config has at most %d", path, size,
                       INI_MAX_BYTES);
    }
    /* The file may grow after fstat: one byte more than the limit tells. */
    char *buf = malloc((size_t)INI_MAX_BYTES + 2);
    long long got = buf ? read_all(fd, buf, (size_t)INI_MAX_BYTES + 1) : 0;
    int saved = errno;
    close(fd);
    if (!buf)
        return fn_fail(FN_ERR_NOMEM, "%s: out of memory reading the file", path);
    if (got < 0 || got > INI_MAX_BYTES) {
        free(buf);
        if (got < 0)
            return fn_fail(FN_ERR_IO, "%s: read error: %s", path, strerror(saved));
        return fn_fail(FN_ERR_INVALID, "%s: more than %d bytes: a config has at most that",
                       path, INI_MAX_BYTES);
    }
    size_t n = (size_t)got;
    /* A NUL would silently end the text: the rest of the file would be lost. */
    const char *nul = memchr(buf, '\0', n);
    if (nul) {
        int line = 1;
        for (const char *p = buf; p < nul; p++)
            line += *p == '\n';
        free(buf);
        return fn_fail(FN_ERR_INVALID, "%s:%d: a NUL byte: not a text file", path, line);
    }
    buf[n] = '\0';
    char *fitted = realloc(buf, n + 1); /* the text is kept for the run */
    *text = fitted ? fitted : buf;
    return FN_OK;
}

/* inih is built without line numbers for the handler, so the text is fed
 * through this reader, which counts them. */
typedef struct reader {
    const char *path;
    const char *next; /* the rest of the text */
    int line;         /* the line of the chunk last returned */
    int at_line_start;
    int too_long; /* first line longer than inih's buffer, or 0 */
    fn_ini_key_fn on_key;
    void *arg;
    fn_status status; /* the first error, FN_OK if none */
    int status_line;  /* its line */
} reader;

static char *read_line(char *str, int num, void *stream)
{
    reader *r = stream;
    if (!*r->next)
        return NULL;
    if (r->at_line_start)
        r->line++;
    int n = 0;
    while (n < num - 1 && r->next[n] && r->next[n] != '\n')
        n++;
    int newline = r->next[n] == '\n' && n < num - 1;
    if (newline)
        n++;
    if (!newline && r->next[n] && !r->too_long)
        r->too_long = r->line;
    memcpy(str, r->next, (size_t)n);
    str[n] = '\0';
    r->next += n;
    r->at_line_start = newline || !*r->next;
    return str;
}

static int on_pair(void *user, const char *section, const char *name, const char *value)
{
    reader *r = user;
    if (r->status != FN_OK)
        return 0;
    fn_status st = r->on_key(r->arg, section, name, value, r->line);
    if (st == FN_OK)
        return 1;
    fn_error_prefix("%s:%d: ", r->path, r->line);
    r->status = st;
    r->status_line = r->line;
    return 0;
}

fn_status fn_ini_parse(const char *path, const char *text, fn_ini_key_fn on_key, void *arg)
{
    reader r = {.path = path, .next = text, .at_line_start = 1, .on_key = on_key, .arg = arg};
    int result = ini_parse_stream(read_line, &r, on_pair, &r);
    if (r.too_long)
        return fn_fail(FN_ERR_INVALID, "%s:%d: line too long (at most %d characters)", path,
                       r.too_long, ini_max_line - 3);
    /* inih goes on after a syntax error, so a key error may come from a later
     * line (the keys after a broken [section] header land in the one before);
     * the first error in the file is the one to report. */
    if (r.status != FN_OK && !(result > 0 && result < r.status_line))
        return r.status;
    if (result > 0)
        return fn_fail(FN_ERR_INVALID, "%s:%d: syntax error: expected [section] or key = value",
                       path, result);
    if (result < 0)
        return fn_fail(FN_ERR_NOMEM, "%s: the INI parser ran out of memory", path);
    return FN_OK;
}
