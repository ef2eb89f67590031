/* program.h — runs the built programs (train, predict) as a user does, for
 * the tests of their exit status, messages and files: the programs live in
 * $FN_BUILD_DIR and the source tree in $FN_SOURCE_DIR (ctest sets both). */
#ifndef FN_TEST_PROGRAM_H
#define FN_TEST_PROGRAM_H

#include <stddef.h>
#include <sys/types.h>

/* "$FN_BUILD_DIR/<name>" or "$FN_SOURCE_DIR/<name>" in a static buffer that
 * the next call of the same function overwrites; fails the test when the
 * variable is not set. */
const char *program_path(const char *name);
const char *source_path(const char *name);

/* Starts $FN_BUILD_DIR/<program> with argv (NULL-terminated, without the
 * program's name) in directory cwd (NULL: this one), its stdout and stderr
 * written to the files out and err. */
pid_t program_start(const char *program, const char *const *argv, const char *cwd,
                    const char *out, const char *err);

/* Waits for pid: its exit status, or 128 + the signal that ended it (then
 * *sig, when not NULL, is set to that signal; else to 0). */
int program_wait(pid_t pid, int *sig);

/* program_start + program_wait; a death by signal fails the test. */
int program_run(const char *program, const char *const *argv, const char *cwd, const char *out,
                const char *err);

/* The file's text (at most 1 MiB), "" when it cannot be read; free it. */
char *program_slurp(const char *path);

/* A new directory /tmp/<prefix>XXXXXX (dir holds at least 64 bytes) and
 * its removal with everything in it. */
void program_temp_dir(char *dir, size_t n, const char *prefix);
void program_remove_dir(const char *dir);

/* A test's run of the programs: a new directory /tmp/<prefix>XXXXXX and the
 * paths of a config and of the programs' output in it (not created). */
enum { PROGRAM_PATH_CAP = 1024 };
typedef struct program_files {
    char dir[64];
    char ini[PROGRAM_PATH_CAP];                        /* <dir>/run.ini */
    char out[PROGRAM_PATH_CAP], err[PROGRAM_PATH_CAP]; /* <dir>/stdout.txt, stderr.txt */
} program_files;

/* A new one (fails the test when the directory cannot be made), and its
 * end: the directory removed with everything in it, the struct freed. */
program_files *program_files_new(const char *prefix);
void program_files_free(program_files *f);
/* "<f->dir>/<name>" into buf (cap bytes); returns buf. */
const char *program_files_path(const program_files *f, const char *name, char *buf, size_t cap);
/* "<f->dir>/<name>" in one of four static buffers used in turn, so up to
 * four such paths can be held at once (one call's arguments). */
char *program_files_at(const program_files *f, const char *name);
/* A cmocka teardown for a fixture that is a program_files, or a calloc'ed
 * struct whose first member is a program_files *: both freed. */
int program_files_teardown(void **state);
/* A cmocka teardown for a calloc'ed struct whose first member is a
 * char[64] directory from program_temp_dir: the directory removed with
 * everything in it, the struct freed. */
int program_dir_teardown(void **state);
/* Writes the config f->ini from fmt and its arguments (printf's). */
void program_files_ini(const program_files *f, const char *fmt, ...)
#ifdef __GNUC__
    __attribute__((format(printf, 2, 3)))
#endif
    ;

#endif
