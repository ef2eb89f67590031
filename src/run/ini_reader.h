/* ini_reader.h (private) — an INI file read with inih: its text (which must
 * be text: no NUL byte), then each "key = value" handed to the caller with
 * the line it is on. Every error, the caller's included, names the file and
 * the line: "<path>:<line>: ...". */
#ifndef FUSENET_SRC_INI_READER_H
#define FUSENET_SRC_INI_READER_H

#include "fusenet/status.h"

/* One key of the file; section is "" before the first [section]. A failure
 * stops the reading; its message gets "<path>:<line>: " in front. */
typedef fn_status (*fn_ini_key_fn)(void *arg, const char *section, const char *name,
                                   const char *value, int line);

/* The whole file, NUL-terminated; *text is malloc'ed. */
fn_status fn_ini_read_text(const char *path, char **text);

/* Hands every key of text (the file at path) to on_key, in order; a line
 * may be of any length. The error returned is the file's first: a syntax
 * error or on_key's failure, whichever comes on an earlier line. */
fn_status fn_ini_parse(const char *path, const char *text, fn_ini_key_fn on_key, void *arg);

#endif
