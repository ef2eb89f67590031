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
 * through this reader, which counts them. Debian's inih reads into a fixed
 * buffer of ini_max_line bytes; a longer line (a [model] layers list of a
 * deep network) is handed to inih cut to fit, and the value of its key is
 * then taken from the whole line here, by inih's own rules. */
typedef struct reader {
    const char *path;
    const char *next; /* the rest of the text */
    int line;         /* the line of the chunk last returned */
    const char *long_text; /* the last line cut for inih, whole, without its newline */
    size_t long_len;
    int long_line; /* its line, or 0 */
    fn_ini_key_fn on_key;
    void *arg;
    fn_status status; /* the first error, FN_OK if none */
    int status_line;  /* its line */
} reader;

/* One line a call: whole when it fits str[num], else its first num - 2
 * bytes and a newline, the rest skipped (kept in r->long_text). */
static char *read_line(char *str, int num, void *stream)
{
    reader *r = stream;
    if (!*r->next || num < 3)
        return NULL;
    r->line++;
    size_t len = 0;
    while (r->next[len] && r->next[len] != '\n')
        len++;
    const int newline = r->next[len] == '\n';
    size_t n = len + (size_t)newline;
    if (n > (size_t)num - 1) {
        r->long_text = r->next;
        r->long_len = len;
        r->long_line = r->line;
        memcpy(str, r->next, (size_t)num - 2);
        str[num - 2] = '\n';
        str[num - 1] = '\0';
    } else {
        memcpy(str, r->next, n);
        str[n] = '\0';
    }
    r->next += n;
    return str;
}

static int is_blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v'; }

/* The end of s[0, len) at the first of chars, or at an inline comment (a
 * ';' after a blank), as inih's find_chars_or_comment. */
static size_t find_chars_or_comment(const char *s, size_t len, const char *chars)
{
    int was_blank = 0;
    size_t i = 0;
    while (i < len && !(chars && strchr(chars, s[i])) && !(was_blank && s[i] == ';')) {
        was_blank = is_blank(s[i]);
        i++;
    }
    return i;
}

/* The value of a cut line, as inih would have read it whole: after the
 * first '=' or ':' (or all of it, for a continuation line, which starts
 * with a blank), up to an inline comment, without the blanks around it.
 * malloc'ed; NULL when out of memory. */
static char *whole_value(const reader *r)
{
    const char *s = r->long_text;
    size_t len = r->long_len;
    if (len > 0 && !is_blank(s[0])) {
        const size_t eq = find_chars_or_comment(s, len, "=:");
        s += eq + (eq < len);
        len -= eq + (eq < len);
    }
    while (len > 0 && is_blank(*s))
        s++, len--;
    len = find_chars_or_comment(s, len, NULL);
    while (len > 0 && is_blank(s[len - 1]))
        len--;
    char *value = malloc(len + 1);
    if (value) {
        memcpy(value, s, len);
        value[len] = '\0';
    }
    return value;
}

static int on_pair(void *user, const char *section, const char *name, const char *value)
{
    reader *r = user;
    if (r->status != FN_OK)
        return 0;
    char *whole = NULL;
    fn_status st = FN_OK;
    if (r->long_line == r->line && !(whole = whole_value(r)))
        st = fn_fail(FN_ERR_NOMEM, "out of memory for a line of %zu bytes", r->long_len);
    if (st == FN_OK)
        st = r->on_key(r->arg, section, name, whole ? whole : value, r->line);
    free(whole);
    if (st == FN_OK)
        return 1;
    fn_error_prefix("%s:%d: ", r->path, r->line);
    r->status = st;
    r->status_line = r->line;
    return 0;
}

fn_status fn_ini_parse(const char *path, const char *text, fn_ini_key_fn on_key, void *arg)
{
    reader r = {.path = path, .next = text, .on_key = on_key, .arg = arg};
    int result = ini_parse_stream(read_line, &r, on_pair, &r);
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
