/* path.c — paths as text (path.h): a name joined to a directory and
 * normalised, a path's directory. Lexical only: nothing is looked up on
 * disk. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/path.h"

/* Drops "." components, empty ones and each "name/.." pair, as Python's
 * os.path.normpath does: "data/../runs/x" reads "runs/x". Lexical: ".."
 * after a symbolic link is taken as going up the link's name. Writes into
 * out, which has room for strlen(path) + 2 bytes. */
static void normalize_path(const char *path, char *out)
{
    const int absolute = path[0] == '/';
    char *base = out + absolute, *end = base; /* end: after the last kept "name/" */
    int kept = 0; /* components in out that a ".." may remove */
    if (absolute)
        out[0] = '/';
    for (const char *in = path; *in;) {
        while (*in == '/')
            in++;
        size_t len = strcspn(in, "/");
        const int dot = len == 1 && in[0] == '.', dotdot = len == 2 && !strncmp(in, "..", 2);
        if (dotdot && kept > 0) {
            end--; /* the slash after the last component, then the component */
            while (end > base && end[-1] != '/')
                end--;
            kept--;
        } else if (len > 0 && !dot && !(dotdot && absolute)) {
            memcpy(end, in, len);
            end += len;
            *end++ = '/';
            kept += !dotdot;
        }
        in += len;
    }
    if (end > base)
        end--; /* the last slash */
    *end = '\0';
    if (!out[0])
        strcpy(out, ".");
}

char *fn_path_join(const char *dir, const char *name)
{
    if (name[0] == '/' || !dir || !dir[0] || strcmp(dir, ".") == 0)
        dir = NULL;
    size_t n = (dir ? strlen(dir) : 0) + strlen(name) + 2;
    char *joined = malloc(n), *p = malloc(n + 1);
    if (joined && p) {
        snprintf(joined, n, "%s%s%s", dir ? dir : "", dir ? "/" : "", name);
        normalize_path(joined, p);
    } else {
        free(p);
        p = NULL;
    }
    free(joined);
    return p;
}

char *fn_path_dir(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        return strdup(".");
    if (slash == path)
        return strdup("/");
    size_t n = (size_t)(slash - path);
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, path, n);
        d[n] = '\0';
    }
    return d;
}
