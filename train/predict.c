/* predict.c — the `predict` program: the forward pass of an exported network
 * (weights.h5, with its input standardisation when it has one) over an HDF5
 * input set, written as dataset 'outputs', float32 [N, out], to a new file
 * (atomically: temporary name, then rename), or with --probabilities
 * the probabilities the loss the network was trained with links them to
 * (fn_loss_kind.probabilities); for classification also 'classes' (argmax), and with --targets the loss and accuracy, or loss,
 * MAE and R² per output, printed (evaluation.h); a classifier's with
 * --report also its confusion matrix and per-class precision, recall and
 * F1 (confusion.h).
 *
 *   predict weights.h5 inputs.h5 outputs.h5 [--inputs X] [--targets y [--report]]
 *           [--probabilities] [--device D] [--batch N] [--memory-budget-mb M]
 *   predict --info weights.h5    (one line: where the file came from)
 *
 * Exit status: 0 done, 1 a file or run error, 2 a usage error. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fusenet/confusion.h"
#include "fusenet/data.h"
#include "fusenet/evaluation.h"
#include "fusenet/export.h"
#include "fusenet/file_role.h"
#include "fusenet/input_norm.h"
#include "fusenet/loss_kind.h"
#include "fusenet/loader.h"
#include "fusenet/outputs.h"
#include "fusenet/provenance.h"
#include "fusenet/target_norm.h"
#include "fusenet/version.h"
#include "fusenet/weights.h"

enum { EXIT_ERROR = 1, EXIT_USAGE = 2 };

static const char usage[] =
    "usage: predict weights.h5 inputs.h5 outputs.h5 [options]\n"
    "       predict --info weights.h5\n"
    "\n"
    "Runs the network of weights.h5 over the inputs ([N, in], any float or integer\n"
    "type) and writes dataset 'outputs' (float32 [N, out]: the logits of a classifier,\n"
    "the predicted values of a regression) to outputs.h5.\n"
    "\n"
    "  --inputs NAME           the inputs dataset (default X)\n"
    "  --targets NAME          evaluate against this dataset of the inputs file: integer\n"
    "                          labels [N] (classification: prints loss and accuracy,\n"
    "                          writes 'classes') or values [N, out] (regression: prints\n"
    "                          loss, and MAE and R^2 per output)\n"
    "  --report                with --targets on a classifier: also the confusion matrix\n"
    "                          and per-class precision, recall and F1\n"
    "  --probabilities         'outputs' holds probabilities instead of logits, by the\n"
    "                          network's loss: a classifier's softmax across the\n"
    "                          classes (and 'classes', the argmax), a multi-label\n"
    "                          network's sigmoid of each output\n"
    "  --device D              auto (default), cpu, cuda or cuda:N\n"
    "  --batch N               rows per forward pass (default 256; at most the inputs' rows)\n"
    "  --memory-budget-mb M    host memory for the inputs before reading in slabs (1024)\n"
    "  --info                  print one line on where weights.h5 came from (its\n"
    "                          provenance: version, device, data, times) and exit\n"
    "  --help                  this text\n"
    "  --version               the version, commit, backends and GPU architectures\n";

typedef struct options {
    const char *weights, *inputs_path, *outputs_path;
    const char *inputs;
    const char *targets; /* NULL: no evaluation */
    int probabilities;
    int report; /* --report */
    const char *device;
    long batch;
    double budget_mb;
    int help, version;
    int info; /* --info: the weights file's provenance, nothing run */
} options;

static int usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "predict: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n%s", usage);
    return EXIT_USAGE;
}

static int number(const char *text, double lo, double hi, double *out)
{
    char *end = NULL;
    errno = 0;
    double v = strtod(text, &end);
    if (end == text || *end || errno == ERANGE || !(v >= lo && v <= hi))
        return 0;
    *out = v;
    return 1;
}

/* 0 on success, else the exit status. */
static int parse_option(int argc, char **argv, int *i, options *o)
{
    const char *s = argv[*i];
    if (*i + 1 >= argc)
        return usage_error("%s needs a value", s);
    const char *v = argv[++*i];
    double d = 0;
    if (strcmp(s, "--inputs") == 0)
        o->inputs = v;
    else if (strcmp(s, "--targets") == 0)
        o->targets = v;
    else if (strcmp(s, "--device") == 0)
        o->device = v;
    else if (strcmp(s, "--batch") == 0 && number(v, 1, 1 << 20, &d) && d == (long)d)
        o->batch = (long)d;
    else if (strcmp(s, "--memory-budget-mb") == 0 && number(v, 1e-6, 1 << 24, &d))
        o->budget_mb = d;
    else if (strcmp(s, "--batch") == 0 || strcmp(s, "--memory-budget-mb") == 0)
        return usage_error("bad value '%s'", v);
    else
        return usage_error("unknown option '%s'", s);
    return 0;
}

static int parse_args(int argc, char **argv, options *o)
{
    const char **positional[] = {&o->weights, &o->inputs_path, &o->outputs_path};
    int n = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            o->help = 1;
        } else if (strcmp(argv[i], "--version") == 0) {
            o->version = 1;
        } else if (strcmp(argv[i], "--probabilities") == 0) {
            o->probabilities = 1;
        } else if (strcmp(argv[i], "--report") == 0) {
            o->report = 1;
        } else if (strcmp(argv[i], "--info") == 0) {
            o->info = 1;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            int status = parse_option(argc, argv, &i, o);
            if (status)
                return status;
        } else if (n < 3) {
            *positional[n++] = argv[i];
        } else {
            return usage_error("unexpected argument '%s'", argv[i]);
        }
    }
    if (o->info && n != 1 && !o->help && !o->version)
        return usage_error("%s", "--info takes one file: predict --info weights.h5");
    if (n < 3 && !o->info && !o->help && !o->version)
        return usage_error("%s", "expected weights.h5 inputs.h5 outputs.h5");
    if (o->report && !o->targets && !o->help && !o->version)
        return usage_error("%s", "--report needs --targets NAME (the labels to compare with)");
    return 0;
}

static fn_status open_context(const char *device, fn_context **ctx)
{
    int gpus = fn_cuda_device_count();
    if (strcmp(device, "auto") == 0)
        return fn_context_create(ctx, gpus > 0 ? FN_CUDA : FN_CPU, gpus > 0 ? 0 : -1,
                                 FN_MATH_FP32);
    if (strcmp(device, "cpu") == 0)
        return fn_context_create(ctx, FN_CPU, -1, FN_MATH_FP32);
    double gpu = 0;
    if (strcmp(device, "cuda") == 0 ||
        (strncmp(device, "cuda:", 5) == 0 && number(device + 5, 0, 1023, &gpu) &&
         gpu == (int)gpu))
        return fn_context_create(ctx, FN_CUDA, (int)gpu, FN_MATH_FP32);
    return fn_fail(FN_ERR_INVALID, "--device %s: expected auto, cpu, cuda or cuda:N", device);
}

/* 1 when both paths exist and are one file (links followed: a symbolic or
 * hard link to it counts as the file). */
static int same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
           sa.st_ino == sb.st_ino;
}

/* The outputs replace the file at their path: it must not be an input. */
static fn_status check_output_path(const options *o)
{
    const char *inputs[2][2] = {{"weights", o->weights}, {"inputs", o->inputs_path}};
    for (int i = 0; i < 2; i++)
        if (same_file(o->outputs_path, inputs[i][1]))
            return fn_fail(FN_ERR_INVALID,
                           "%s: is the %s file %s (or a link to it): the outputs would replace "
                           "it; give another outputs path",
                           o->outputs_path, inputs[i][0], inputs[i][1]);
    return FN_OK;
}

typedef struct job {
    fn_context *ctx;
    fn_net *net;
    fn_input_norm *norm; /* the weights file's; NULL: none */
    fn_input_norm *target_norm; /* its /target_norm: outputs mapped back; NULL: none */
    fn_data *data;
    fn_loader *loader; /* synchronous: the outputs file is written between batches */
    fn_outputs *outputs;
    fn_evaluation *eval; /* --targets */
    fn_confusion *confusion; /* --report */
    const fn_loss_kind *loss; /* the network's (--probabilities, --report); else NULL */
    int classify;        /* write 'classes' */
    int probabilities;
    float *host;       /* [batch, out] */
    float *targets;    /* [batch, out]: regression targets on the host */
    int32_t *classes;  /* [batch] */
} job;

/* The batch's figures, and 'outputs' (logits or probabilities) and
 * 'classes' written; y is the batch's outputs on the host. */
static fn_status write_batch(job *j, const fn_batch *b, float *y, int out)
{
    if (j->eval) {
        const float *t = NULL;
        if (!b->host_labels) {
            FN_TRY(fn_tensor_download(&b->target, j->targets, (size_t)b->rows * (size_t)out));
            t = j->targets;
        }
        FN_TRY(fn_evaluation_add(j->eval, b->rows, y, b->host_labels, t));
    }
    if (j->classify) {
        fn_argmax_rows(y, b->rows, out, j->classes);
        if (j->confusion)
            FN_TRY(fn_confusion_add(j->confusion, b->rows, b->host_labels, j->classes));
        FN_TRY(fn_outputs_write_classes(j->outputs, b->index[0], b->rows, j->classes));
    }
    if (j->probabilities)
        j->loss->probabilities(y, b->rows, out); /* the loss's link (check_task) */
    return fn_outputs_write(j->outputs, b->index[0], b->rows, y);
}

/* Batches come in file order (no shuffle), each a run of consecutive rows. */
static fn_status forward_all(job *j)
{
    int out = fn_net_out_features(j->net);
    FN_TRY(fn_loader_start(j->loader, 0, 0));
    for (;;) {
        fn_batch b;
        FN_TRY(fn_loader_next(j->loader, &b));
        if (!b.rows)
            return FN_OK;
        fn_tensor y;
        FN_TRY(fn_net_forward(j->net, &b.x, &y));
        FN_TRY(fn_tensor_download(&y, j->host, (size_t)b.rows * (size_t)out));
        if (j->target_norm)
            fn_target_norm_undo(j->target_norm, j->host, b.rows);
        FN_TRY(write_batch(j, &b, j->host, out));
    }
}

static fn_status open_inputs(job *j, const options *o)
{
    char from[512];
    snprintf(from, sizeof from, "the input columns the network of %s was trained on", o->weights);
    fn_data_options d = {.inputs = o->inputs, .targets = o->targets, .targets_by_rank = 1,
                         .inputs_key = "--inputs", .targets_key = "--targets",
                         .in_features = fn_net_in_features(j->net), .in_features_from = from,
                         .out_features = fn_net_out_features(j->net), .batch_size = (int)o->batch,
                         .memory_budget = (size_t)(o->budget_mb * 1048576.0), .shuffle = 0};
    FN_TRY(fn_data_open(&j->data, o->inputs_path, &d));
    fn_data_targets kind = fn_data_target_kind(j->data);
    /* A classifier's; a multi-label network's targets are values [N, K]. */
    const int classes = j->loss && j->loss->targets == FN_DATA_LABELS;
    if (o->probabilities && kind == FN_DATA_FLOATS && classes)
        return fn_fail(FN_ERR_INVALID, "--probabilities: dataset '%s' holds values [N, out] "
                       "(regression); probabilities are for classification (integer labels [N])",
                       o->targets);
    j->classify = (o->probabilities && classes) || kind == FN_DATA_LABELS;
    j->probabilities = o->probabilities;
    if (o->report && kind == FN_DATA_FLOATS)
        return fn_fail(FN_ERR_INVALID, "--report: dataset '%s' holds values [N, out] "
                       "(regression), whose figures --targets prints; the report is for "
                       "classification (integer labels [N])",
                       o->targets);
    if (kind != FN_DATA_NO_TARGETS)
        FN_TRY(fn_evaluation_create(&j->eval, kind, fn_net_out_features(j->net)));
    if (o->report)
        FN_TRY(fn_confusion_create(&j->confusion, fn_net_out_features(j->net)));
    if (j->norm)
        FN_TRY(fn_input_norm_check_data(j->norm, j->data, o->weights));
    const fn_loader_options sync = {.mode = FN_LOADER_SYNC};
    FN_TRY(fn_loader_create(&j->loader, j->ctx, j->data, &sync));
    return fn_loader_set_norm(j->loader, j->norm);
}

static fn_status alloc_host(job *j, const options *o)
{
    size_t rows = (size_t)o->batch, out = (size_t)fn_net_out_features(j->net);
    j->host = malloc(sizeof(float) * rows * out);
    j->targets = malloc(sizeof(float) * rows * out);
    j->classes = malloc(sizeof(int32_t) * rows);
    if (!j->host || !j->targets || !j->classes)
        return fn_fail(FN_ERR_NOMEM, "out of memory");
    return FN_OK;
}

/* The network for batches of o->batch rows; when its memory is short but
 * fewer rows would fit, the message says which --batch does. */
static fn_status build_net(job *j, const options *o)
{
    fn_status st = fn_weights_build(&j->net, j->ctx, o->weights, (int)o->batch);
    const char *fits = st == FN_ERR_NOMEM ? strstr(fn_last_error(), "batches of at most ") : NULL;
    long rows = 0;
    if (!fits || sscanf(fits, "batches of at most %ld rows", &rows) != 1)
        return st;
    char message[1024];
    snprintf(message, sizeof message, "%s", fn_last_error());
    return fn_fail(st, "%s: give --batch %ld or less", message, rows);
}

/* A data set, an export or a check file where predict reads weights, or
 * an export where it reads inputs: named as what it is. */
static fn_status check_foreign(const options *o, fn_file_role w, fn_file_role in)
{
    char what[320];
    if (w == FN_FILE_HDF5)
        return fn_fail(FN_ERR_INVALID, "%s: not a fusenet-weights file: the root attribute "
                       "'format' is missing; it is %s, as a data set is: predict takes "
                       "weights.h5 inputs.h5 outputs.h5, in that order", o->weights,
                       fn_file_describe(o->weights, what, sizeof what));
    if ((w != FN_FILE_WEIGHTS && (fn_export_file_is(o->weights, FN_EXPORT_ONNX) ||
                                  fn_export_file_is(o->weights, FN_EXPORT_SAFETENSORS) ||
                                  fn_export_check_file_is(o->weights))))
        return fn_fail(FN_ERR_INVALID, "%s is %s, not a weights file: predict reads the network "
                       "from a weights file (weights.h5, best.h5); predict takes weights.h5 "
                       "inputs.h5 outputs.h5, in that order",
                       o->weights, fn_file_describe(o->weights, what, sizeof what));
    if (in != FN_FILE_HDF5 && (fn_export_file_is(o->inputs_path, FN_EXPORT_ONNX) ||
                               fn_export_file_is(o->inputs_path, FN_EXPORT_SAFETENSORS)))
        return fn_fail(FN_ERR_INVALID, "%s is %s, not inputs: predict takes weights.h5 "
                       "inputs.h5 outputs.h5, in that order", o->inputs_path,
                       fn_file_describe(o->inputs_path, what, sizeof what));
    return FN_OK;
}

/* The weights argument is not a weights file, or the inputs one is: the
 * arguments swapped, a checkpoint, a CSV file of weights. Anything else is
 * left to the loaders, whose messages say what is wrong (inputs in a CSV
 * file: the data sets' message, which train gives too). */
static fn_status check_roles(const options *o)
{
    const fn_file_role w = fn_file_role_of(o->weights, NULL, 0);
    const fn_file_role in = fn_file_role_of(o->inputs_path, NULL, 0);
    const char *order = "predict takes weights.h5 inputs.h5 outputs.h5, in that order";
    if (w == FN_FILE_HDF5 && (in == FN_FILE_WEIGHTS || in == FN_FILE_CHECKPOINT))
        return fn_fail(FN_ERR_INVALID, "%s is a data file and %s a %s: the arguments are "
                       "swapped (%s)", o->weights, o->inputs_path,
                       in == FN_FILE_WEIGHTS ? "weights file" : "checkpoint", order);
    if (w == FN_FILE_CHECKPOINT)
        return fn_fail(FN_ERR_INVALID, "%s is a checkpoint (what train --resume continues), not "
                       "a weights file: give the run's weights.h5 (or best.h5)", o->weights);
    if (in == FN_FILE_WEIGHTS || in == FN_FILE_CHECKPOINT)
        return fn_fail(FN_ERR_INVALID, "%s is a %s, not inputs: %s", o->inputs_path,
                       in == FN_FILE_WEIGHTS ? "weights file" : "checkpoint", order);
    if (w == FN_FILE_TEXT)
        return fn_fail(FN_ERR_INVALID, "%s is a text file (a CSV?), not HDF5: predict reads "
                       "the weights from HDF5; %s", o->weights, order);
    return check_foreign(o, w, in);
}

/* Non-finite outputs: the message names the weights file's largest
 * value, the usual cause (a weight of 3e38 overflows any sum it enters). */
static fn_status name_largest(job *j, const options *o, fn_status st)
{
    char message[1024], largest[160];
    snprintf(message, sizeof message, "%s", fn_last_error());
    if (fn_export_largest_value(j->net, largest, sizeof largest) != FN_OK)
        return fn_fail(st, "%s", message);
    return fn_fail(st, "%s; the largest value of %s is %s", message, o->weights, largest);
}

/* The network's task as its file says: regression when it was trained with
 * a loss whose outputs are values, not probabilities (mse, huber), or
 * with [data] standardize_targets (/target_norm); into why, "loss = mse". */
static int is_regression(const job *j, char *why, size_t cap)
{
    if (!j->loss->probabilities) {
        snprintf(why, cap, "loss = %s", j->loss->name);
        return 1;
    }
    if (j->target_norm) {
        snprintf(why, cap, "[data] standardize_targets");
        return 1;
    }
    return 0;
}

/* --probabilities and --report are a classifier's (or a multi-label
 * network's): a network whose file says it is a regression's gives
 * values, which neither may treat as class scores. */
static fn_status check_task(job *j, const options *o)
{
    char why[96];
    if (!o->probabilities && !o->report)
        return FN_OK;
    FN_TRY(fn_weights_loss(o->weights, &j->loss)); /* the default loss for a file naming none */
    if (!is_regression(j, why, sizeof why))
        return FN_OK;
    if (o->probabilities)
        return fn_fail(FN_ERR_INVALID, "--probabilities: %s is a regression network (trained "
                       "with %s): its outputs are values, not class scores; probabilities are "
                       "for a classifier (loss = cross_entropy) or a multi-label network "
                       "(loss = bce_with_logits)", o->weights, why);
    return fn_fail(FN_ERR_INVALID, "--report: %s is a regression network (trained with %s); "
                   "the report is for a classifier (loss = cross_entropy): --targets alone "
                   "prints a regression's figures", o->weights, why);
}

/* The inputs' rows are counted first: a batch never holds more. */
static fn_status predict(job *j, const options *given)
{
    FN_TRY(check_output_path(given));
    options sized = *given;
    const options *o = &sized;
    FN_TRY(check_roles(o));
    int64_t rows = 0;
    const fn_data_options count = {.inputs = o->inputs, .inputs_key = "--inputs"};
    FN_TRY(fn_data_count_rows(o->inputs_path, &count, &rows));
    if (rows < sized.batch)
        sized.batch = (long)rows;
    FN_TRY(open_context(o->device, &j->ctx));
    FN_TRY(build_net(j, o));
    FN_TRY(fn_input_norm_load(&j->norm, j->ctx, o->weights, fn_net_in_features(j->net)));
    FN_TRY(fn_target_norm_load(&j->target_norm, j->ctx, o->weights, fn_net_out_features(j->net)));
    FN_TRY(check_task(j, o));
    FN_TRY(open_inputs(j, o));
    FN_TRY(alloc_host(j, o));
    FN_TRY(fn_outputs_create(&j->outputs, o->outputs_path, fn_data_rows(j->data),
                             fn_net_out_features(j->net)));
    if (j->classify)
        FN_TRY(fn_outputs_add_classes(j->outputs));
    fn_status st = forward_all(j);
    if (st == FN_ERR_NUMERIC)
        return name_largest(j, o, st);
    FN_TRY(st);
    return fn_outputs_commit(j->outputs);
}

static void print_evaluation(const fn_evaluation *eval, const char *targets)
{
    fn_evaluation_result r;
    fn_evaluation_get(eval, &r);
    if (!r.mae) {
        printf("predict: against '%s': loss %.6f, accuracy %.2f%% (%lld of %lld rows)\n",
               targets, r.loss, 100.0 * r.accuracy, r.correct, r.rows);
        return;
    }
    printf("predict: against '%s': loss (mse) %.6f over %lld rows\n", targets, r.loss, r.rows);
    for (int k = 0; k < r.outputs; k++)
        printf("predict: output %d: MAE %.6f, R2 %.6f\n", k, r.mae[k], r.r2[k]);
}

/* "0.9804", or "-" where a score is undefined. */
static const char *score_text(double v, char *buf, size_t n)
{
    snprintf(buf, n, isnan(v) ? "-" : "%.4f", v);
    return buf;
}

static void print_scores(const char *name, fn_class_scores s)
{
    char p[16], r[16], f[16];
    printf("%14s %9s %9s %9s %9lld\n", name, score_text(s.precision, p, sizeof p),
           score_text(s.recall, r, sizeof r), score_text(s.f1, f, sizeof f), s.support);
}

/* As scikit-learn's confusion_matrix and classification_report print them. */
static void print_report(const fn_confusion *c)
{
    const int n = fn_confusion_classes(c);
    int width = 5;
    for (int i = 0; i < n; i++)
        for (int k = 0; k < n; k++) {
            char cell[32];
            const int w = snprintf(cell, sizeof cell, "%lld", fn_confusion_count(c, i, k)) + 1;
            width = w > width ? w : width;
        }
    printf("predict: confusion matrix (rows: the label, columns: the predicted class)\n");
    printf("%7s", "");
    for (int k = 0; k < n; k++)
        printf("%*d", width, k);
    printf("\n");
    for (int i = 0; i < n; i++) {
        printf("%7d", i);
        for (int k = 0; k < n; k++)
            printf("%*lld", width, fn_confusion_count(c, i, k));
        printf("\n");
    }
    printf("predict: per class (\"-\": no row predicted or labelled so)\n");
    printf("%14s %9s %9s %9s %9s\n", "class", "precision", "recall", "f1", "support");
    for (int k = 0; k < n; k++) {
        char name[16];
        snprintf(name, sizeof name, "%d", k);
        print_scores(name, fn_confusion_scores(c, k));
    }
    print_scores("macro avg", fn_confusion_average(c, 0));
    print_scores("weighted avg", fn_confusion_average(c, 1));
}

static void release(job *j)
{
    fn_outputs_destroy(j->outputs);
    fn_evaluation_destroy(j->eval);
    fn_confusion_destroy(j->confusion);
    free(j->host);
    free(j->targets);
    free(j->classes);
    fn_loader_destroy(j->loader);
    fn_data_close(j->data);
    fn_input_norm_destroy(j->norm);
    fn_input_norm_destroy(j->target_norm);
    fn_net_destroy(j->net);
    fn_context_destroy(j->ctx);
}

/* --info: "<file>: <its provenance in one line>". */
static int print_info(const char *path)
{
    char line[4096];
    if (fn_file_info(path, line, sizeof line) != FN_OK) {
        fprintf(stderr, "predict: %s\n", fn_last_error());
        return EXIT_ERROR;
    }
    printf("%s: %s\n", path, line);
    return 0;
}

int main(int argc, char **argv)
{
    options o = {.inputs = "X", .device = "auto", .batch = 256, .budget_mb = 1024};
    int status = parse_args(argc, argv, &o);
    if (status || o.help || o.version) {
        if (status == 0 && o.help)
            fputs(usage, stdout);
        else if (status == 0)
            printf("predict (fusenet) %s\ncommit: %s\nbackends: %s\nGPU architectures: %s\n",
                   fn_version(), fn_version_commit(), fn_build_backends(), fn_build_cuda_archs());
        return status;
    }
    if (o.info)
        return print_info(o.weights);
    job j = {0};
    fn_status st = predict(&j, &o);
    if (st != FN_OK)
        fprintf(stderr, "predict: %s\n", fn_last_error());
    long long rows = j.data ? (long long)fn_data_rows(j.data) : 0;
    if (st == FN_OK && j.eval)
        print_evaluation(j.eval, o.targets);
    if (st == FN_OK && j.confusion)
        print_report(j.confusion);
    release(&j);
    if (st != FN_OK)
        return EXIT_ERROR;
    printf("predict: %lld rows written to %s\n", rows, o.outputs_path);
    return 0;
}
