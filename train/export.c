/* export.c — the `export` program: a weights file (weights.h5, best.h5)
 * as an ONNX model or a safetensors file (export.h), written atomically;
 * with --check, beside it "<model>.check.h5": the first rows of a data
 * file's inputs and fusenet's own outputs for them (CPU, fp32), which
 * scripts/verify_export.py feeds to ONNX Runtime or PyTorch. The two are
 * published together, and an export without --check removes an earlier
 * check file of its path. An existing file is replaced only when it is an
 * earlier export of the same kind, or with --overwrite; never an input
 * (the weights file, --check's data, the data sets the weights' run read).
 *
 *   export weights.h5 model.onnx|model.safetensors [--format F]
 *          [--check data.h5] [--inputs X] [--rows N] [--overwrite]
 *   export --info weights.h5    (one line: where the file came from)
 *
 * Exit status: 0 done, 1 a file or run error, 2 a usage error. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fusenet/data.h"
#include "fusenet/export.h"
#include "fusenet/file_role.h"
#include "fusenet/inference.h"
#include "fusenet/memory_set.h"
#include "fusenet/provenance.h"
#include "fusenet/safetensors.h"
#include "fusenet/target_norm.h"
#include "fusenet/version.h"
#include "fusenet/weights.h"

enum { EXIT_ERROR = 1, EXIT_USAGE = 2, PATH_CAP = 4096 };

static const char usage[] =
    "usage: export weights.h5 model.onnx|model.safetensors [options]\n"
    "       export --info weights.h5\n"
    "\n"
    "Writes the network of weights.h5 (with its input standardisation, if any) as an\n"
    "ONNX model (opset 17, any batch size) or as safetensors (named as the state_dict\n"
    "of scripts/weights_to_torch.py's module). Both carry the architecture and the\n"
    "weights file's config and provenance as metadata.\n"
    "\n"
    "  --format F          onnx or safetensors (default: from the extension)\n"
    "  --check DATA.h5     also write <model>.check.h5: the first rows of DATA.h5's\n"
    "                      inputs and fusenet's outputs for them (CPU, fp32), for\n"
    "                      scripts/verify_export.py <model> to compare\n"
    "  --inputs NAME       the inputs dataset of --check's file (default X)\n"
    "  --rows N            rows --check stores (default 64; at most the file's)\n"
    "  --overwrite         replace a file at the model's (or check file's) path that\n"
    "                      is not an earlier export of that format (one is replaced\n"
    "                      without it); an input of the weights' run never is\n"
    "  --info              print one line on where weights.h5 came from (its\n"
    "                      provenance: version, device, data, times) and exit\n"
    "  --help              this text\n"
    "  --version           the version, commit and backends\n"
    "\n"
    "Call it by its path (./build/export): the shell's builtin `export` comes first.\n";

typedef struct options {
    const char *weights, *model;
    const char *format; /* NULL: from the extension */
    const char *check;  /* NULL: no check file */
    const char *inputs;
    long rows;
    int help, version;
    int info;      /* --info: the weights file's provenance, nothing written */
    int overwrite; /* --overwrite: replace a file that is no earlier export */
} options;

static int usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "export: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n%s", usage);
    return EXIT_USAGE;
}

static int parse_option(int argc, char **argv, int *i, options *o)
{
    const char *s = argv[*i];
    if (*i + 1 >= argc)
        return usage_error("%s needs a value", s);
    const char *v = argv[++*i];
    char *end = NULL;
    if (strcmp(s, "--format") == 0) {
        o->format = v;
    } else if (strcmp(s, "--check") == 0) {
        o->check = v;
    } else if (strcmp(s, "--inputs") == 0) {
        o->inputs = v;
    } else if (strcmp(s, "--rows") == 0) {
        errno = 0;
        o->rows = strtol(v, &end, 10);
        if (end == v || *end || errno || o->rows < 1 || o->rows > 1 << 20)
            return usage_error("--rows: bad value '%s' (expected an integer from 1 to 1048576)",
                               v);
    } else {
        return usage_error("unknown option '%s'", s);
    }
    return 0;
}

static int parse_args(int argc, char **argv, options *o)
{
    const char **positional[] = {&o->weights, &o->model};
    int n = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            o->help = 1;
        } else if (strcmp(argv[i], "--version") == 0) {
            o->version = 1;
        } else if (strcmp(argv[i], "--info") == 0) {
            o->info = 1;
        } else if (strcmp(argv[i], "--overwrite") == 0) {
            o->overwrite = 1;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            int status = parse_option(argc, argv, &i, o);
            if (status)
                return status;
        } else if (n < 2) {
            *positional[n++] = argv[i];
        } else {
            return usage_error("unexpected argument '%s'", argv[i]);
        }
    }
    if (o->help || o->version)
        return 0;
    if (o->info && (n != 1 || o->format || o->check || o->rows || o->overwrite ||
                    strcmp(o->inputs, "X") != 0))
        return usage_error("%s", "--info takes one file and no other option: export --info "
                                 "weights.h5");
    if (o->info)
        return 0;
    if (n < 2)
        return usage_error("%s", "expected weights.h5 and the model's path");
    if (!o->check && (o->rows || strcmp(o->inputs, "X") != 0))
        return usage_error("%s", "--rows and --inputs go with --check");
    return 0;
}

/* 1 when both paths exist and are one file (links followed). */
static int same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    return a && b && stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
           sa.st_ino == sb.st_ino;
}

/* The data sets the weights' run read, as its provenance records them
 * ("train_path", "valid_path": every entry named *_path): an export
 * replaces none of them, even with --overwrite. */
static fn_status check_run_inputs(const char *out, const options *o)
{
    fn_provenance *prov = NULL;
    if (fn_provenance_read(&prov, o->weights) != FN_OK)
        return FN_OK; /* the weights' own loader says what is wrong with it */
    fn_status st = FN_OK;
    for (int i = 0; st == FN_OK && i < fn_provenance_count(prov); i++) {
        const char *name = fn_provenance_name(prov, i), *path = fn_provenance_value(prov, i);
        const size_t n = strlen(name);
        if (n > 5 && strcmp(name + n - 5, "_path") == 0 && same_file(out, path))
            st = fn_fail(FN_ERR_INVALID, "%s: is %s (or a link to it), which the run that made "
                         "%s read (its provenance's %s): an export never replaces an input, "
                         "--overwrite or not; give another path", out, path, o->weights, name);
    }
    fn_provenance_destroy(prov);
    return st;
}

/* An output replaces the file at its path: it must be no input, a
 * directory there is refused, and any file there but an earlier output of
 * the same kind (is_earlier) needs --overwrite; all before anything is
 * computed. */
static fn_status check_output(const char *out, const options *o, int (*is_earlier)(const char *),
                              const char *kind)
{
    const char *inputs[2][2] = {{"weights", o->weights}, {"--check data", o->check}};
    for (int i = 0; i < 2; i++)
        if (same_file(out, inputs[i][1]))
            return fn_fail(FN_ERR_INVALID, "%s: is the %s file %s (or a link to it): the export "
                           "would replace it; give another path", out, inputs[i][0],
                           inputs[i][1]);
    FN_TRY(check_run_inputs(out, o));
    struct stat st;
    if (stat(out, &st) == 0 && S_ISDIR(st.st_mode))
        return fn_fail(FN_ERR_INVALID, "%s: is a directory; give the model's file path "
                       "(model.onnx or model.safetensors)", out);
    if (o->overwrite || lstat(out, &st) != 0 || is_earlier(out))
        return FN_OK;
    char what[320];
    return fn_fail(FN_ERR_INVALID, "%s: exists and is %s, not an earlier %s: the export would "
                   "replace it; give another path, or --overwrite to replace it", out,
                   fn_file_describe(out, what, sizeof what), kind);
}

static int earlier_onnx(const char *path) { return fn_export_file_is(path, FN_EXPORT_ONNX); }
static int earlier_safetensors(const char *path)
{
    return fn_export_file_is(path, FN_EXPORT_SAFETENSORS);
}
static int earlier_check(const char *path) { return fn_export_check_file_is(path); }

typedef struct job {
    fn_context *ctx;
    fn_net *net;
    fn_input_norm *norm;
    fn_export_meta *meta;
    fn_export_format format;
    char check_path[PATH_CAP];
    float *x, *y; /* --check: inputs [rows, in], outputs [rows, out] */
    int rows;
} job;

/* A network trained with [data] standardize_targets gives standardised
 * outputs that predict maps back (/target_norm); the exports have no
 * mapping for it yet, and one without it would be silently off. */
static fn_status refuse_target_norm(job *j, const options *o)
{
    fn_input_norm *target = NULL;
    FN_TRY(fn_target_norm_load(&target, j->ctx, o->weights, fn_net_out_features(j->net)));
    if (!target)
        return FN_OK;
    fn_input_norm_destroy(target);
    return fn_fail(FN_ERR_INVALID,
                   "%s: trained with [data] standardize_targets: its outputs are mapped back "
                   "by /target_norm (y * std + mean), which the exports do not carry yet; "
                   "export a network trained without it",
                   o->weights);
}

/* The rows --check stores: --rows, at most the file's. */
static fn_status count_rows(job *j, const options *o)
{
    int64_t count = 0;
    const fn_data_options opt = {.inputs = o->inputs, .inputs_key = "--inputs"};
    FN_TRY(fn_data_count_rows(o->check, &opt, &count));
    j->rows = (int)(count < o->rows ? count : o->rows);
    if (j->rows < 1)
        return fn_fail(FN_ERR_INVALID, "%s: dataset '%s' has no rows", o->check, o->inputs);
    return FN_OK;
}

/* The first rows of the check file's inputs, as fusenet reads them. */
static fn_status read_rows(job *j, const options *o)
{
    fn_data_options d = {.inputs = o->inputs, .targets_by_rank = 1,
                         .in_features = fn_net_in_features(j->net),
                         .out_features = fn_net_out_features(j->net), .batch_size = j->rows,
                         .memory_budget = (size_t)1 << 30, .shuffle = 0};
    fn_data *data = NULL;
    FN_TRY(fn_data_open(&data, o->check, &d));
    fn_batch_rows b;
    fn_status st = fn_data_next_rows(data, &b);
    int64_t *index = malloc(sizeof(int64_t) * (size_t)j->rows);
    j->x = malloc(sizeof(float) * (size_t)j->rows * (size_t)fn_net_in_features(j->net));
    if (st == FN_OK && (!index || !j->x))
        st = fn_fail(FN_ERR_NOMEM, "out of memory");
    if (st == FN_OK)
        fn_batch_rows_gather(&b, 0, b.rows, j->x, NULL, NULL, index);
    free(index);
    fn_data_close(data);
    return st;
}

/* fusenet's outputs for the check rows. */
static fn_status check_outputs(job *j, const options *o)
{
    FN_TRY(read_rows(j, o));
    j->y = malloc(sizeof(float) * (size_t)j->rows * (size_t)fn_net_out_features(j->net));
    if (!j->y)
        return fn_fail(FN_ERR_NOMEM, "out of memory");
    fn_memory_set *set = NULL;
    FN_TRY(fn_memory_set_inputs(&set, o->check, j->x, j->rows, fn_net_in_features(j->net)));
    fn_status st = fn_infer(j->net, j->norm, set, j->y);
    fn_memory_set_destroy(set);
    FN_TRY(st);
    const size_t n = (size_t)j->rows * (size_t)fn_net_out_features(j->net);
    for (size_t k = 0; k < n; k++)
        if (!isfinite(j->y[k])) {
            char largest[160];
            FN_TRY(fn_export_largest_value(j->net, largest, sizeof largest));
            return fn_fail(FN_ERR_NUMERIC, "%s: fusenet's output for row %zu of %s is %g: the "
                           "network overflows float32 there (the largest value of %s is %s); "
                           "nothing written", o->weights,
                           k / (size_t)fn_net_out_features(j->net), o->check, (double)j->y[k],
                           o->weights, largest);
        }
    return FN_OK;
}

static fn_status run(job *j, const options *o)
{
    if (o->format)
        FN_TRY(fn_export_format_find(o->format, &j->format));
    else
        FN_TRY(fn_export_format_of_path(o->model, &j->format));
    if (fn_safetensors_path(o->weights))
        return fn_fail(FN_ERR_INVALID, "%s: export reads a weights file (HDF5: weights.h5, "
                       "best.h5), not a safetensors file", o->weights);
    snprintf(j->check_path, sizeof j->check_path, "%s.check.h5", o->model);
    const int onnx = j->format == FN_EXPORT_ONNX;
    FN_TRY(check_output(o->model, o, onnx ? earlier_onnx : earlier_safetensors,
                        onnx ? "ONNX export" : "safetensors export"));
    if (o->check)
        FN_TRY(check_output(j->check_path, o, earlier_check, "export's check file"));
    if (o->check)
        FN_TRY(count_rows(j, o));
    FN_TRY(fn_context_create(&j->ctx, FN_CPU, -1, FN_MATH_FP32));
    FN_TRY(fn_weights_build(&j->net, j->ctx, o->weights, o->check ? j->rows : 1));
    FN_TRY(fn_weights_input_norm(&j->norm, j->ctx, o->weights, fn_net_in_features(j->net)));
    FN_TRY(refuse_target_norm(j, o));
    FN_TRY(fn_export_meta_read(&j->meta, o->weights));
    if (o->check)
        FN_TRY(check_outputs(j, o));
    return fn_export_write_with_check(j->net, j->norm, j->meta, j->format, o->model,
                                      j->check_path, j->x, j->y, j->rows);
}

static void release(job *j)
{
    free(j->x);
    free(j->y);
    fn_export_meta_destroy(j->meta);
    fn_input_norm_destroy(j->norm);
    fn_net_destroy(j->net);
    fn_context_destroy(j->ctx);
}

/* --info: "<file>: <its provenance in one line>" (fn_file_info). */
static int print_info(const char *path)
{
    char line[4096];
    if (fn_file_info(path, line, sizeof line) != FN_OK) {
        fprintf(stderr, "export: %s\n", fn_last_error());
        return EXIT_ERROR;
    }
    printf("%s: %s\n", path, line);
    return 0;
}

int main(int argc, char **argv)
{
    options o = {.inputs = "X"};
    int status = parse_args(argc, argv, &o);
    if (status || o.help || o.version) {
        if (status == 0 && o.help)
            fputs(usage, stdout);
        else if (status == 0)
            printf("export (fusenet) %s\ncommit: %s\nbackends: %s\n", fn_version(),
                   fn_version_commit(), fn_build_backends());
        return status;
    }
    if (o.info)
        return print_info(o.weights);
    if (!o.rows)
        o.rows = 64;
    job j = {0};
    fn_status st = run(&j, &o);
    if (st != FN_OK)
        fprintf(stderr, "export: %s\n", fn_last_error());
    else
        printf("export: %s written (%s, %d layers)\n", o.model, fn_export_format_name(j.format),
               fn_net_n_layers(j.net));
    if (st == FN_OK && o.check)
        printf("export: %s written (%d rows of %s and fusenet's outputs)\n", j.check_path, j.rows,
               o.check);
    release(&j);
    return st == FN_OK ? 0 : EXIT_ERROR;
}
