/* escape.c — bytes from files made printable (escape.h). */
#include <stdio.h>
#include <string.h>

#include "core/escape.h"

/* The escaped form of byte c into out (at most 4 bytes, no NUL). */
static size_t escape_byte(unsigned char c, char *out)
{
    static const char hex[] = "0123456789abcdef";
    const char *named = c == '\\' ? "\\\\" : c == '\t' ? "\\t" : c == '\n' ? "\\n"
                        : c == '\r' ? "\\r" : NULL;
    if (named) {
        memcpy(out, named, 2);
        return 2;
    }
    if (c >= 0x20 && c < 0x7f) {
        out[0] = (char)c;
        return 1;
    }
    out[0] = '\\';
    out[1] = 'x';
    out[2] = hex[c >> 4];
    out[3] = hex[c & 15];
    return 4;
}

const char *fn_escape(const char *s, size_t n, char *buf, size_t cap)
{
    if (!buf || cap < 8)
        return "";
    if (!s)
        return snprintf(buf, cap, "(null)"), buf;
    size_t len = 0;
    for (size_t i = 0; i < n && (n != (size_t)-1 || s[i]); i++) {
        char e[4];
        const size_t k = escape_byte((unsigned char)s[i], e);
        if (len + k + 4 > cap) { /* room for "..." and the NUL */
            memcpy(buf + len, "...", 3);
            len += 3;
            break;
        }
        memcpy(buf + len, e, k);
        len += k;
    }
    buf[len] = '\0';
    return buf;
}

const char *fn_escape_str(const char *s, char *buf, size_t cap)
{
    return fn_escape(s, (size_t)-1, buf, cap);
}
