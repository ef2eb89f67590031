/* escape.h (private) — bytes read from a file (a layer kind, a metadata
 * string, a tensor's name) made safe to print: a message goes to a
 * terminal, where a raw control byte moves the cursor, rewrites the
 * screen or rings the bell. */
#ifndef FUSENET_SRC_CORE_ESCAPE_H
#define FUSENET_SRC_CORE_ESCAPE_H

#include <stddef.h>

/* The first n bytes of s (to its NUL when n is (size_t)-1) into buf (cap
 * bytes, cap >= 8) with printable ASCII as is, but a backslash as "\\",
 * tab, newline and carriage return as "\t", "\n", "\r", and every other
 * byte (control characters, DEL, bytes of 0x80 and above) as "\xHH";
 * when it does not fit, as much as does, ending in "...". Returns buf. */
const char *fn_escape(const char *s, size_t n, char *buf, size_t cap);

/* fn_escape of a NUL-terminated string; NULL reads "(null)". */
const char *fn_escape_str(const char *s, char *buf, size_t cap);

/* A buffer's size for a string of n bytes escaped whole (4 bytes a byte). */
#define FN_ESCAPE_CAP(n) (4 * (n) + 1)

#endif
