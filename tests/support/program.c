/* program.c — running the built programs from tests: fork, redirect, exec,
 * wait; paths from FN_BUILD_DIR and FN_SOURCE_DIR. */
#define _POSIX_C_SOURCE 200809L
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "program.h"

enum { PATH_CAP = 1024, ARGS_CAP = 64 };

static const char *env_path(const char *variable, const char *name, char *buf)
{
    const char *base = getenv(variable);
    if (!base)
        fail_msg("%s is not set (ctest sets FN_BUILD_DIR and FN_SOURCE_DIR)", variable);
    snprintf(buf, PATH_CAP, "%s/%s", base, name);
    return buf;
}

const char *program_path(const char *name)
{
    static char buf[PATH_CAP];
    return env_path("FN_BUILD_DIR", name, buf);
}

const char *source_path(const char *name)
{
    static char buf[PATH_CAP];
    return env_path("FN_SOURCE_DIR", name, buf);
}

pid_t program_start(const char *program, const char *const *argv, const char *cwd,
                    const char *out, const char *err)
{
    char exe[PATH_CAP];
    snprintf(exe, sizeof exe, "%s", program_path(program));
    const char *full[ARGS_CAP] = {exe};
    int n = 1;
    for (int i = 0; argv[i]; i++) {
        if (n == ARGS_CAP - 1)
            fail_msg("more than %d arguments for %s", ARGS_CAP - 2, program);
        full[n++] = argv[i];
    }
    full[n] = NULL;
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0)
        fail_msg("fork failed");
    if (pid == 0) {
        int o = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int e = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (o < 0 || e < 0 || dup2(o, 1) < 0 || dup2(e, 2) < 0 || (cwd && chdir(cwd) != 0))
            _exit(127);
        execv(exe, (char *const *)full);
        _exit(127);
    }
    return pid;
}

int program_wait(pid_t pid, int *sig)
{
    int status = 0;
    if (waitpid(pid, &status, 0) != pid)
        fail_msg("waitpid %d failed", (int)pid);
    if (sig)
        *sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
}

int program_run(const char *program, const char *const *argv, const char *cwd, const char *out,
                const char *err)
{
    int sig = 0;
    int status = program_wait(program_start(program, argv, cwd, out, err), &sig);
    if (sig) {
        char *text = program_slurp(err);
        fail_msg("%s died of signal %d; stderr:\n%s", program, sig, text);
    }
    return status;
}

char *program_slurp(const char *path)
{
    enum { CAP = 1 << 20 };
    char *text = calloc(1, CAP);
    if (!text)
        fail_msg("out of memory");
    FILE *in = fopen(path, "rb");
    if (!in)
        return text;
    size_t n = fread(text, 1, CAP - 1, in);
    text[n] = '\0';
    fclose(in);
    return text;
}

void program_temp_dir(char *dir, size_t n, const char *prefix)
{
    snprintf(dir, n, "/tmp/%sXXXXXX", prefix);
    if (!mkdtemp(dir))
        fail_msg("cannot create %s", dir);
}

void program_remove_dir(const char *dir)
{
    char cmd[PATH_CAP];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (strncmp(dir, "/tmp/", 5) != 0 || system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
}

program_files *program_files_new(const char *prefix)
{
    program_files *f = calloc(1, sizeof *f);
    assert_non_null(f);
    program_temp_dir(f->dir, sizeof f->dir, prefix);
    snprintf(f->ini, sizeof f->ini, "%s/run.ini", f->dir);
    snprintf(f->out, sizeof f->out, "%s/stdout.txt", f->dir);
    snprintf(f->err, sizeof f->err, "%s/stderr.txt", f->dir);
    return f;
}

void program_files_free(program_files *f)
{
    if (!f)
        return;
    program_remove_dir(f->dir);
    free(f);
}

const char *program_files_path(const program_files *f, const char *name, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s/%s", f->dir, name);
    return buf;
}

void program_files_ini(const program_files *f, const char *fmt, ...)
{
    FILE *out = fopen(f->ini, "w");
    assert_non_null(out);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(out, fmt, ap);
    va_end(ap);
    fclose(out);
}

char *program_files_at(const program_files *f, const char *name)
{
    static char buf[4][PROGRAM_PATH_CAP];
    static int next;
    char *p = buf[next++ % 4];
    snprintf(p, PROGRAM_PATH_CAP, "%s/%s", f->dir, name);
    return p;
}

int program_files_teardown(void **state)
{
    program_files_free(*(program_files **)*state);
    free(*state);
    return 0;
}

int program_dir_teardown(void **state)
{
    program_remove_dir((const char *)*state);
    free(*state);
    return 0;
}
