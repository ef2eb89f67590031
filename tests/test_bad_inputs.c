/* test_bad_inputs.c — the bad-input corpus of tests/bad_inputs/ run through
 * the real programs: one row per case, each the arguments of ./train or
 * ./predict (the corpus files named relative to tests/bad_inputs, where the
 * program runs), the exit status and a piece of the one-line message on
 * stderr. A failing run must exit with a status in 1..127 (never a signal),
 * print exactly one line "<program>: <message>" (no HDF5 error stack, no
 * sanitizer report), and write no weights, predictions or temporaries; a
 * checkpoint it was given must be left as it was. Good rows show the corpus'
 * good files work, so each bad file fails for its one defect.
 * The .h5 files come from tests/bad_inputs/make_corpus.py (committed).
 * Files that git cannot hold are made in each case's temp dir: "@/fifo"
 * (a FIFO) and "@/folder" (a directory); a row given either, or a device,
 * must fail at once (within FAST_SECONDS), saying what it is. And predict
 * must refuse an outputs path that is, or links to, one of its inputs.
 * Storage rows (x_unwritten.h5 ... x_soft_cycle.h5, weights_unwritten.h5,
 * weights_missing_chunk.h5, weights_lzf.h5): data HDF5 would read as
 * zeros, links that lead nowhere, a filter this HDF5 lacks, each refused
 * naming the dataset. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "file_bytes.h"
#include "program.h"

typedef struct bad_input {
    const char *name;
    const char *program;  /* "train" (run with --set output.dir=<temp dir>) or "predict" */
    const char *args[10]; /* "@" stands for the temp dir: "@/out.h5", "data.train=@/fifo" */
    /* corpus file copied to <temp dir>/checkpoint.h5 first, FIFO or FOLDER
     * (one made there), or NULL */
    const char *checkpoint;
    int status;
    const char *message; /* NULL: success (exit 0) with nothing on stderr */
} bad_input;

#define TRAIN(name, status, message, ...) {name, "train", {__VA_ARGS__, NULL}, NULL, status, message}
#define DATA(file, message) TRAIN("data " file, 1, message, "train.ini", "--set", "data.train=" file)
#define PREDICT(weights, inputs, message) \
    {"predict " weights " " inputs, "predict", \
     {weights, inputs, "@/out.h5", "--device", "cpu", NULL}, NULL, message ? 1 : 0, message}
#define INIT(weights, message) \
    TRAIN("init " weights, (message) ? 1 : 0, message, "train.ini", "--set", "model.init=" weights)
static const char FIFO[] = "<a FIFO>", FOLDER[] = "<a directory>";
#define RESUME(checkpoint, message) \
    {"resume from " checkpoint, "train", {"train.ini", "--resume", NULL}, checkpoint, 1, message}

static const bad_input cases[] = {
    /* --- configs ------------------------------------------------------------ */
    TRAIN("good config", 0, NULL, "train.ini"),
    TRAIN("unknown section", 1, "unknown_section.ini:7: unknown section [optimizer]",
          "unknown_section.ini"),
    TRAIN("unknown key", 1, "unknown_key.ini:7: train.learning_rate: unknown key; did you mean lr?",
          "unknown_key.ini"),
    TRAIN("duplicate key", 1, "duplicate_key.ini:9: train.epochs: duplicate key (first set on line 7)",
          "duplicate_key.ini"),
    TRAIN("not a number", 1, "not_a_number.ini:7: train.lr: expected a number, got 'fast'",
          "not_a_number.ini"),
    TRAIN("trailing junk", 1, "trailing_junk.ini:7: train.batch_size: expected an integer, got '8x'",
          "trailing_junk.ini"),
    TRAIN("not finite", 1, "not_finite.ini:7: train.lr: 1e999 is not a finite number",
          "not_finite.ini"),
    TRAIN("zero batch", 1, "zero_batch.ini:7: train.batch_size: 0 is out of range",
          "zero_batch.ini"),
    TRAIN("negative epochs", 1, "negative_epochs.ini:7: train.epochs: -1 is out of range",
          "negative_epochs.ini"),
    TRAIN("negative lr", 1, "negative_lr.ini:7: train.lr: -0.1 is out of range", "negative_lr.ini"),
    TRAIN("momentum with adam", 1,
          "adam_momentum.ini:8: train.momentum: applies to optimizer = sgd or rmsprop only, not adam",
          "adam_momentum.ini"),
    TRAIN("bad betas", 1, "bad_betas.ini:8: train.betas: beta2 1.5 is out of range",
          "bad_betas.ini"),
    TRAIN("zero width", 1, "zero_width.ini:4: model.layers: item 2: width '0' is not an integer",
          "zero_width.ini"),
    TRAIN("negative width", 1,
          "negative_width.ini:4: model.layers: item 1: width '-8' is not an integer",
          "negative_width.ini"),
    TRAIN("zero groups", 1, "zero_groups.ini:5: model.groups: 0 is out of range", "zero_groups.ini"),
    TRAIN("groups not dividing", 1,
          "groups_not_dividing.ini:5: model.groups: groups 8 does not divide the width 12 of layer 1",
          "groups_not_dividing.ini"),
    TRAIN("bad layer kind", 1, "bad_layer_kind.ini:4: model.layers: item 2: unknown layer kind 'conv'",
          "bad_layer_kind.ini"),
    TRAIN("bad device", 1, "bad_device.ini:7: run.device: expected auto, cpu, cuda or cuda:N, got 'tpu'",
          "bad_device.ini"),
    TRAIN("missing data file", 1,
          "missing_data.ini:2: data.train: cannot read 'nothere.h5': No such file",
          "missing_data.ini"),
    TRAIN("missing valid file", 1, "missing_valid.ini:3: data.valid: cannot read 'valid_nothere.h5'",
          "missing_valid.ini"),
    TRAIN("missing init file", 1, "missing_init.ini:6: model.init: cannot read 'init_nothere.h5'",
          "missing_init.ini"),
    TRAIN("missing layers", 1, "missing_layers.ini: [model] layers is required",
          "missing_layers.ini"),
    TRAIN("syntax error", 1, "syntax_error.ini:3: syntax error", "syntax_error.ini"),
    TRAIN("empty config", 1, "empty.ini: [data] train is required", "empty.ini"),
    TRAIN("NUL byte", 1, "binary.ini:3: a NUL byte: not a text file", "binary.ini"),
    TRAIN("missing config", 1, "nothere.ini: cannot open: No such file", "nothere.ini"),
    /* A petabyte of weights (two layers of 2^24 features) fails at once,
     * naming need and limit, before anything is allocated. */
    TRAIN("huge layers", 1, "the network needs at least 2251806.3 GB of host memory (parameters "
          "1125901.0 GB, their gradients 1125901.0 GB, activations for batches of 8 rows 4.3 GB), "
          "more than the", "train.ini",
          "--set", "model.layers=block 16777216, block 16777216, linear 4"),
    TRAIN("--set negative", 1, "--set train.batch_size=-4: -4 is out of range", "train.ini",
          "--set", "train.batch_size=-4"),
    TRAIN("--set missing data file", 1, "--set data.train=gone.h5: cannot read 'gone.h5'",
          "train.ini", "--set", "data.train=gone.h5"),

    /* --- data sets ---------------------------------------------------------- */
    DATA("missing_y.h5", "missing_y.h5: no dataset 'y'"),
    TRAIN("data: no such inputs", 1, "good.h5: no dataset 'pixels' (the file holds 'X', 't', "
          "'y'); set [data] inputs to the name of the inputs", "train.ini", "--set",
          "data.inputs=pixels"),
    /* Integer and float64 inputs are read as float32. */
    TRAIN("data x_int64.h5", 0, NULL, "train.ini", "--set", "data.train=x_int64.h5"),
    TRAIN("data x_float64.h5", 0, NULL, "train.ini", "--set", "data.train=x_float64.h5"),
    DATA("x_string.h5",
         "x_string.h5: dataset 'X' is string, expected numbers (a float or integer type)"),
    DATA("x_bool.h5", "x_bool.h5: dataset 'X' is enum, expected numbers (a float or integer type)"),
    DATA("x_beyond_float32.h5", "x_beyond_float32.h5: dataset 'X' row 7 column 4 is 1e+39, beyond "
         "float32's range (magnitude at most 3.4e38)"),
    /* Targets shaped as scikit-learn and NumPy leave them are read (with a
     * notice, test_train_cli.c); what could mean two things is refused. */
    TRAIN("data y_float.h5", 0, NULL, "train.ini", "--set", "data.train=y_float.h5"),
    TRAIN("data y_rank2.h5", 0, NULL, "train.ini", "--set", "data.train=y_rank2.h5"),
    TRAIN("data y_one_hot.h5", 0, NULL, "train.ini", "--set", "data.train=y_one_hot.h5"),
    TRAIN("data t_rank1.h5 (mse, one output)", 0, NULL, "train.ini", "--set", "train.loss=mse",
          "--set", "data.targets=t", "--set", "model.layers=block 8, linear 1", "--set",
          "data.train=t_rank1.h5"),
    TRAIN("data t_rank1.h5 (mse, four outputs)", 1,
          "t_rank1.h5: dataset 't' has rank 1 ([N]), but the model has 4 outputs: mse takes "
          "values [N, 4]", "train.ini", "--set", "train.loss=mse", "--set", "data.targets=t",
          "--set", "data.train=t_rank1.h5"),
    /* The loss configured is named, not mse. */
    TRAIN("data good.h5 y (huber, four outputs)", 1,
          "good.h5: dataset 'y' has rank 1 ([N]), but the model has 4 outputs: huber takes "
          "values [N, 4]", "train.ini", "--set", "train.loss=huber"),
    /* class_weights whose sum is 0 make every batch's weighted mean 0/0:
     * refused at set-up, naming the key; a batch whose every row weighs 0
     * stops naming the key, not the learning rate or the inputs. */
    TRAIN("class_weights all 0", 1, "--set train.class_weights=0,0,0,0: every weight is 0, so "
          "the weighted loss sum(w l) / sum(w) is 0/0 on every batch", "train.ini", "--set",
          "train.class_weights=0,0,0,0"),
    TRAIN("class_weights: a batch of weight 0", 1, "step 1 (epoch 1, batch 1): loss is nan: "
          "every row of this batch is of a class whose [train] class_weights weight is 0",
          "train.ini", "--set", "train.class_weights=1,0,0,0", "--set", "train.batch_size=1"),
    DATA("y_fraction.h5", "y_fraction.h5: dataset 'y' row 0 holds 0.5: float labels for "
         "cross_entropy must be whole numbers"),
    DATA("y_two_columns.h5", "y_two_columns.h5: dataset 'y' has rank 2 with several columns, "
         "expected class labels for cross_entropy: [N] or [N, 1] labels, or one-hot rows [N, 4]"),
    DATA("y_not_one_hot.h5", "y_not_one_hot.h5: dataset 'y' row 0 is not one-hot"),
    DATA("x_rank1.h5", "x_rank1.h5: dataset 'X' has rank 1, expected 2 ([N, in])"),
    DATA("x_rank3.h5", "x_rank3.h5: dataset 'X' has rank 3, expected 2 ([N, in])"),
    DATA("x_scalar.h5", "x_scalar.h5: dataset 'X' has rank 0, expected 2 ([N, in])"),
    DATA("x_group.h5", "x_group.h5: 'X' is not a readable dataset: not a dataset"),
    DATA("n_mismatch.h5", "n_mismatch.h5: dataset 'y' has 20 rows but 'X' has 24"),
    DATA("label_high.h5", "label_high.h5: dataset 'y' row 5 holds label 4, expected 0 to 3"),
    DATA("label_negative.h5", "label_negative.h5: dataset 'y' row 7 holds label -1, expected 0 to 3"),
    DATA("label_int64_big.h5",
         "label_int64_big.h5: dataset 'y' row 9 holds label 4294967297, expected 0 to 3"),
    DATA("label_uint64_max.h5",
         "label_uint64_max.h5: dataset 'y' row 11 holds label 18446744073709551615, expected 0 to 3"),
    DATA("label_int64_low.h5",
         "label_int64_low.h5: dataset 'y' row 2 holds label -1099511627776, expected 0 to 3"),
    DATA("x_nan.h5", "x_nan.h5: dataset 'X' row 3 column 2 is NaN"),
    DATA("x_inf.h5", "x_inf.h5: dataset 'X' row 10 column 0 is infinite"),
    TRAIN("data t_nan.h5 (mse)", 1, "t_nan.h5: dataset 't' row 17 column 3 is NaN", "train.ini",
          "--set", "train.loss=mse", "--set", "data.targets=t", "--set", "data.train=t_nan.h5"),
    TRAIN("data t_cols3.h5 (mse)", 1, "t_cols3.h5: dataset 't' has 3 columns, expected 4",
          "train.ini", "--set", "train.loss=mse", "--set", "data.targets=t", "--set",
          "data.train=t_cols3.h5"),
    TRAIN("data good.h5 (mse)", 0, NULL, "train.ini", "--set", "train.loss=mse", "--set",
          "data.targets=t"),
    TRAIN("data multilabel.h5 (bce_with_logits)", 0, NULL, "train.ini", "--set",
          "train.loss=bce_with_logits", "--set", "data.targets=p", "--set",
          "data.train=multilabel.h5"),
    TRAIN("data p_above_one.h5 (bce_with_logits)", 1,
          "p_above_one.h5: dataset 'p' row 13 column 2 is 1.5; bce_with_logits takes targets in "
          "[0, 1]", "train.ini", "--set", "train.loss=bce_with_logits", "--set", "data.targets=p",
          "--set", "data.train=p_above_one.h5"),
    TRAIN("valid p_above_one.h5 (bce_with_logits)", 1,
          "p_above_one.h5: dataset 'p' row 13 column 2 is 1.5", "train.ini", "--set",
          "train.loss=bce_with_logits", "--set", "data.targets=p", "--set",
          "data.train=multilabel.h5", "--set", "data.valid=p_above_one.h5"),
    TRAIN("data good.h5 t (bce_with_logits)", 1,
          "good.h5: dataset 't' row 0 column 0 is -0.550709; bce_with_logits takes targets in",
          "train.ini", "--set", "train.loss=bce_with_logits", "--set", "data.targets=t"),
    TRAIN("data t_nan.h5 (bce_with_logits)", 1, "t_nan.h5: dataset 't' row 17 column 3 is NaN",
          "train.ini", "--set", "train.loss=bce_with_logits", "--set", "data.targets=t", "--set",
          "data.train=t_nan.h5"),
    DATA("x_empty.h5", "x_empty.h5: dataset 'X' is empty"),
    DATA("x_no_columns.h5", "x_no_columns.h5: dataset 'X' is empty"),
    DATA("truncated.h5", "truncated.h5: not a readable HDF5 file: truncated file"),
    DATA("corrupt_signature.h5", "corrupt_signature.h5: not a readable HDF5 file: file signature"),
    DATA("corrupt_header.h5", "corrupt_header.h5: 'X' is not a readable dataset"),
    DATA("corrupt_values.h5", "corrupt_values.h5: dataset 'X' row 0 column 0 is NaN"),
    DATA("corrupt_chunk.h5", "corrupt_chunk.h5: dataset 'X': cannot read rows 0 to 23: inflate"),
    DATA("not_hdf5.h5", "not_hdf5.h5 is a text file (a CSV?), not HDF5: data sets are read "
                        "from HDF5; convert it first (docs/data.md shows how)"),
    TRAIN("valid x_nan.h5", 1, "x_nan.h5: dataset 'X' row 3 column 2 is NaN", "train.ini", "--set",
          "data.valid=x_nan.h5"),
    /* Fuzz findings (tests/fuzz/regressions/): a 4 GiB "integer" label type,
     * 72 bytes declaring 2^47 rows, and a file on which HDF5 itself crashes
     * (stopped by the probe of src/store/h5_probe.h; "(signal 11)", or "(exit
     * status 1)" where ASan reports it in the child). */
    DATA("../fuzz/regressions/data/fusenet_label_type_4gib_oom.h5",
         "fusenet_label_type_4gib_oom.h5: dataset 'y' is an integer of 4294967295 bytes, expected "
         "integer class labels of at most 8 bytes"),
    DATA("../fuzz/regressions/data/fusenet_declared_rows_2e47_oom.h5",
         "fusenet_declared_rows_2e47_oom.h5: dataset 'X' declares [140737488355334, 3] but stores "
         "only 72 bytes: truncated or corrupt"),
    DATA("../fuzz/regressions/data/hdf5_crash_segv_local_heap_H5HL_protect.h5",
         "hdf5_crash_segv_local_heap_H5HL_protect.h5: corrupt HDF5 file: the HDF5 library crashed"),
    /* Storage that is not all there (HDF5 would read zeros), links that
     * lead nowhere, a filter this HDF5 lacks; good external storage, a good
     * virtual dataset and an external link to a good file train. */
    DATA("x_unwritten.h5",
         "x_unwritten.h5: dataset 'X' declares [24, 6] but stores nothing: it was never written"),
    DATA("x_chunk_missing.h5", "x_chunk_missing.h5: dataset 'X' declares [24, 6] in 3 chunks but "
         "stores only 2 of them: the others would read as zeros"),
    DATA("x_chunk_missing_plain.h5", "x_chunk_missing_plain.h5: dataset 'X' declares [24, 6] but "
         "stores only 384 bytes"),
    TRAIN("data x_external.h5", 0, NULL, "train.ini", "--set", "data.train=x_external.h5"),
    DATA("x_external_short.h5", "x_external_short.h5: dataset 'X' declares [24, 6], which needs "
         "576 bytes from byte 0 of external file 'x_external_short.raw', a file of 288 bytes: "
         "truncated"),
    DATA("x_external_missing.h5", "x_external_missing.h5: dataset 'X' keeps its data in external "
         "file 'x_nothere.raw', which is missing"),
    TRAIN("data x_virtual.h5", 0, NULL, "train.ini", "--set", "data.train=x_virtual.h5"),
    DATA("x_virtual_no_file.h5", "x_virtual_no_file.h5: virtual dataset 'X' takes its data from "
         "'nothere.h5', which is missing"),
    DATA("x_virtual_no_dataset.h5", "x_virtual_no_dataset.h5: virtual dataset 'X' takes its data "
         "from dataset 'pixels' of 'good.h5', which is missing"),
    DATA("x_virtual_huge.h5", "x_virtual_huge.h5: virtual dataset 'X' takes its data from "
         "'nothere.h5', which is missing"),
    DATA("x_virtual_partial.h5", "x_virtual_partial.h5: virtual dataset 'X' declares "
         "[1099511627776, 6] but maps sources to only 144 of its 6597069766656 values"),
    DATA("x_virtual_short_source.h5", "x_virtual_short_source.h5: virtual dataset 'X' maps index "
         "47 in dimension 0 of dataset 'X' of 'good.h5', whose size there is 24"),
    DATA("x_lzf.h5", "x_lzf.h5: dataset 'X': cannot read rows 0 to 23: it is compressed with "
         "filter 32000 'lzf', which this HDF5 lacks"),
    TRAIN("data x_external_link.h5", 0, NULL, "train.ini", "--set",
          "data.train=x_external_link.h5"),
    DATA("x_link_no_file.h5", "x_link_no_file.h5: 'X' is a dangling external link to "
         "'nothere.h5:/X': its file cannot be opened"),
    DATA("x_link_no_object.h5", "x_link_no_object.h5: 'X' is a dangling external link to "
         "'good.h5:/pixels': no such object"),
    DATA("x_link_cycle.h5", "x_link_cycle.h5: 'X' is a cyclic external link to "
         "'x_link_cycle.h5:/X'"),
    DATA("x_soft_dangling.h5",
         "x_soft_dangling.h5: 'X' is a dangling soft link to '/pixels': no such object"),
    DATA("x_soft_cycle.h5", "x_soft_cycle.h5: 'X' is a cyclic soft link to '/Z'"),
    PREDICT("good_weights.h5", "x_virtual_huge.h5",
            "x_virtual_huge.h5: virtual dataset 'X' takes its data from 'nothere.h5'"),
    PREDICT("good_weights.h5", "x_external_link.h5", NULL),
    TRAIN("valid x_cols5.h5", 1, "x_cols5.h5: dataset 'X' has 5 columns, expected 6", "train.ini",
          "--set", "data.valid=x_cols5.h5"),

    /* --- weights files, through predict ------------------------------------- */
    PREDICT("good_weights.h5", "good.h5", NULL),
    PREDICT("weights_version2.h5", "good.h5",
            "weights_version2.h5: format_version is 2 but the group 'input_norm' is missing"),
    PREDICT("weights_version3.h5", "good.h5",
            "weights_version3.h5: format_version is 3 but the group 'target_norm' is missing"),
    PREDICT("weights_version4.h5", "good.h5",
            "weights_version4.h5: format_version is 4, this build reads 1 to 3"),
    PREDICT("weights_other_format.h5", "good.h5",
            "weights_other_format.h5: format is 'keras-weights', expected 'fusenet-weights'"),
    PREDICT("weights_no_format.h5", "good.h5",
            "weights_no_format.h5: not a fusenet-weights file: the root attribute 'format' is missing"),
    PREDICT("good.h5", "good.h5", "good.h5: not a fusenet-weights file"),
    PREDICT("weights_weight_shape.h5", "good.h5",
            "weights_weight_shape.h5: group 'layer0': dataset 'weight' has shape [8, 5], expected [8, 6]"),
    PREDICT("weights_bias_shape.h5", "good.h5",
            "weights_bias_shape.h5: group 'layer1': dataset 'bias' has shape [3], expected [4]"),
    PREDICT("weights_bad_groups.h5", "good.h5",
            "weights_bad_groups.h5: group 'layer0': block: groups 3 does not divide out_features 8"),
    PREDICT("weights_chain_mismatch.h5", "good.h5",
            "weights_chain_mismatch.h5: group 'layer1': net: layer 1 (linear) takes 7 features, layer 0 gives 8"),
    PREDICT("weights_missing_gamma.h5", "good.h5",
            "weights_missing_gamma.h5: group 'layer0': dataset 'gamma' is missing"),
    PREDICT("weights_nan.h5", "good.h5",
            "weights_nan.h5: group 'layer1': dataset 'weight' holds NaN at [2, 5]"),
    PREDICT("weights_missing_group.h5", "good.h5",
            "weights_missing_group.h5: group 'layer7' is missing"),
    PREDICT("weights_no_layers.h5", "good.h5", "weights_no_layers.h5: holds no layers"),
    PREDICT("weights_string_size.h5", "good.h5",
            "weights_string_size.h5: group 'layer0': attribute 'in_features' is string, expected a single integer"),
    PREDICT("weights_unwritten.h5", "good.h5", "weights_unwritten.h5: group 'layer1': dataset "
            "'weight' declares [4, 8] but stores nothing: it was never written"),
    PREDICT("weights_missing_chunk.h5", "good.h5", "weights_missing_chunk.h5: group 'layer1': "
            "dataset 'weight' declares [4, 8] in 4 chunks but stores only 3 of them"),
    {"predict weights_huge_layers.h5", "predict",
     {"weights_huge_layers.h5", "good.h5", "@/out.h5", "--device", "cpu", NULL}, NULL, 1,
     "weights_huge_layers.h5: the network needs at least 1125900.8 GB of host memory (parameters "
     "1125900.6 GB, activations for batches of 1 row 0.2 GB)"},
    /* Refused before the values' memory is allocated, not at the read. */
    PREDICT("weights_lzf.h5", "good.h5", "weights_lzf.h5: group 'layer1': dataset 'weight' is "
            "compressed with filter 32000 'lzf', which this HDF5 lacks"),
    PREDICT("weights_truncated.h5", "good.h5",
            "weights_truncated.h5: not a readable HDF5 file: truncated file"),
    PREDICT("weights_corrupt.h5", "good.h5",
            "weights_corrupt.h5: group 'layer1': 'weight' is not a readable dataset"),
    PREDICT("not_hdf5.h5", "good.h5", "not_hdf5.h5 is a text file (a CSV?), not HDF5"),
    /* Inputs in a text file: the message train gives for a data set. */
    PREDICT("good_weights.h5", "not_hdf5.h5",
            "not_hdf5.h5 is a text file (a CSV?), not HDF5: data sets are read from HDF5; "
            "convert it first (docs/data.md shows how)"),
    PREDICT("nothere.h5", "good.h5", "nothere.h5: cannot open: No such file"),
    PREDICT("good_weights.h5", "x_cols5.h5", "x_cols5.h5: dataset 'X' has 5 columns, expected 6"),
    PREDICT("good_weights.h5", "x_nan.h5", "x_nan.h5: dataset 'X' row 3 column 2 is NaN"),
    PREDICT("good_weights.h5", "truncated.h5", "truncated.h5: not a readable HDF5 file"),
    PREDICT("../fuzz/regressions/weights/hdf5_crash_overflow_global_heap_H5HG_read.h5", "good.h5",
            "hdf5_crash_overflow_global_heap_H5HG_read.h5: corrupt HDF5 file: the HDF5 library "
            "crashed"),
    PREDICT("good_weights.h5", "../fuzz/regressions/data/hdf5_crash_segv_local_heap_H5HL_protect.h5",
            "hdf5_crash_segv_local_heap_H5HL_protect.h5: corrupt HDF5 file: the HDF5 library "
            "crashed"),

    /* --- weights files, through [model] init -------------------------------- */
    INIT("good_weights.h5", NULL),
    INIT("weights_version2.h5",
         "weights_version2.h5: format_version is 2 but the group 'input_norm' is missing"),
    INIT("weights_version3.h5",
         "weights_version3.h5: format_version is 3 but the group 'target_norm' is missing"),
    INIT("weights_version4.h5", "weights_version4.h5: format_version is 4, this build reads 1 to 3"),
    INIT("weights_other_format.h5",
         "weights_other_format.h5: format is 'keras-weights', expected 'fusenet-weights'"),
    INIT("weights_weight_shape.h5",
         "weights_weight_shape.h5: group 'layer0': dataset 'weight' has shape [8, 5], expected [8, 6]"),
    INIT("weights_wider.h5",
         "weights_wider.h5: group 'layer0': out_features is 16, the model has 8"),
    /* The file is read whole first, for its eps and negative_slope (as
     * predict reads it), so a file broken in itself is named as predict
     * names it. */
    INIT("weights_bad_groups.h5",
         "weights_bad_groups.h5: group 'layer0': block: groups 3 does not divide out_features 8"),
    INIT("weights_no_layers.h5", "weights_no_layers.h5: holds no layers"),
    INIT("weights_nan.h5", "weights_nan.h5: group 'layer1': dataset 'weight' holds NaN at [2, 5]"),
    INIT("weights_missing_chunk.h5", "weights_missing_chunk.h5: group 'layer1': dataset 'weight' "
         "declares [4, 8] in 4 chunks but stores only 3 of them"),
    INIT("weights_truncated.h5", "weights_truncated.h5: not a readable HDF5 file: truncated file"),
    INIT("weights_corrupt.h5", "weights_corrupt.h5: group 'layer1': 'weight' is not a readable dataset"),
    INIT("../fuzz/regressions/weights/hdf5_crash_overflow_global_heap_H5HG_read.h5",
         "hdf5_crash_overflow_global_heap_H5HG_read.h5: corrupt HDF5 file: the HDF5 library crashed"),
    TRAIN("init good_weights.h5, 5 input columns", 1,
          "good_weights.h5: group 'layer0': in_features is 6, the model has 5", "train.ini", "--set",
          "model.init=good_weights.h5", "--set", "data.train=x_cols5.h5"),

    /* --- checkpoints, through --resume -------------------------------------- */
    RESUME("weights_truncated.h5", "checkpoint.h5: not a readable HDF5 file: truncated file"),
    RESUME("good_weights.h5",
           "checkpoint.h5: format is 'fusenet-weights', expected 'fusenet-checkpoint'"),
    RESUME("good.h5", "checkpoint.h5: not a fusenet-checkpoint file"),
    RESUME("../fuzz/regressions/weights/hdf5_crash_global_heap_H5HG__protect.h5",
           "checkpoint.h5: corrupt HDF5 file: the HDF5 library crashed"),

    /* --- not regular files: refused at once, saying what they are ----------- */
    TRAIN("config FIFO", 1, "fifo: is a FIFO (named pipe), not a regular file", "@/fifo"),
    TRAIN("config directory", 1, "folder: is a directory, not a regular file", "@/folder"),
    TRAIN("config device", 1, "/dev/zero: is a character device, not a regular file", "/dev/zero"),
    TRAIN("data FIFO", 1, "fifo' is a FIFO (named pipe), not a regular file", "train.ini",
          "--set", "data.train=@/fifo"),
    TRAIN("data directory", 1, "folder' is a directory, not a regular file", "train.ini", "--set",
          "data.train=@/folder"),
    TRAIN("data device", 1, "'/dev/zero' is a character device, not a regular file", "train.ini",
          "--set", "data.train=/dev/zero"),
    TRAIN("valid FIFO", 1, "fifo' is a FIFO (named pipe), not a regular file", "train.ini",
          "--set", "data.valid=@/fifo"),
    TRAIN("init FIFO", 1, "fifo' is a FIFO (named pipe), not a regular file", "train.ini", "--set",
          "model.init=@/fifo"),
    TRAIN("init directory", 1, "folder' is a directory, not a regular file", "train.ini", "--set",
          "model.init=@/folder"),
    {"predict weights FIFO", "predict", {"@/fifo", "good.h5", "@/out.h5", "--device", "cpu", NULL},
     NULL, 1, "fifo: is a FIFO (named pipe), not a regular file"},
    {"predict weights directory", "predict",
     {"@/folder", "good.h5", "@/out.h5", "--device", "cpu", NULL}, NULL, 1,
     "folder: is a directory, not a regular file"},
    {"predict inputs FIFO", "predict",
     {"good_weights.h5", "@/fifo", "@/out.h5", "--device", "cpu", NULL}, NULL, 1,
     "fifo: is a FIFO (named pipe), not a regular file"},
    {"predict inputs device", "predict",
     {"good_weights.h5", "/dev/zero", "@/out.h5", "--device", "cpu", NULL}, NULL, 1,
     "/dev/zero: is a character device, not a regular file"},
    {"resume from a FIFO", "train", {"train.ini", "--resume", NULL}, FIFO, 1,
     "checkpoint.h5: is a FIFO (named pipe), not a regular file"},
    {"resume from a directory", "train", {"train.ini", "--resume", NULL}, FOLDER, 1,
     "checkpoint.h5: is a directory, not a regular file"},
};

/* A failure over a file that is not a regular one must be at once: HDF5
 * given a FIFO waited for the probe's minute, a config FIFO forever. */
static const double FAST_SECONDS = 10;

enum { PATH_CAP = 1024 };

typedef struct fixture {
    char dir[64]; /* the run's temp dir: its output dir, its stdout and stderr */
    const bad_input *c;
    char corpus[PATH_CAP];
} fixture;

/* *state is the row on entry (the test's initial state), the fixture after. */
static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    f->c = *state;
    program_temp_dir(f->dir, sizeof f->dir, "fn_bad_");
    char special[PATH_CAP];
    snprintf(special, sizeof special, "%s/fifo", f->dir);
    assert_int_equal(mkfifo(special, 0600), 0);
    snprintf(special, sizeof special, "%s/folder", f->dir);
    assert_int_equal(mkdir(special, 0700), 0);
    snprintf(f->corpus, sizeof f->corpus, "%s", source_path("tests/bad_inputs"));
    *state = f;
    return 0;
}

/* The names in dir that a failed run must not leave: outputs and temporaries. */
static void expect_no_outputs(const char *dir, const char *name)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        int tmp = len > 4 && strcmp(e->d_name + len - 4, ".tmp") == 0;
        /* metrics.csv too: a failed run leaves no header-only one. */
        if (tmp || strcmp(e->d_name, "weights.h5") == 0 || strcmp(e->d_name, "out.h5") == 0 ||
            strcmp(e->d_name, "metrics.csv") == 0)
            fail_msg("%s: the failed run left %s/%s", name, dir, e->d_name);
    }
    closedir(d);
}

static void expect_one_line(const bad_input *c, const char *err)
{
    char prefix[32];
    snprintf(prefix, sizeof prefix, "%s: ", c->program);
    if (strncmp(err, prefix, strlen(prefix)) != 0 || !strstr(err, c->message))
        fail_msg("%s: stderr is not '%s...%s...'; it holds:\n%s", c->name, prefix, c->message,
                 err);
    const char *newline = strchr(err, '\n');
    if (!newline || newline[1] != '\0')
        fail_msg("%s: stderr is not one line; it holds:\n%s", c->name, err);
}

static void run_case(void **state)
{
    fixture *f = *state;
    const bad_input *c = f->c;
    char out[PATH_CAP], err[PATH_CAP], checkpoint[PATH_CAP], set_out[PATH_CAP], args[12][PATH_CAP];
    snprintf(out, sizeof out, "%s/stdout.txt", f->dir);
    snprintf(err, sizeof err, "%s/stderr.txt", f->dir);
    snprintf(checkpoint, sizeof checkpoint, "%s/checkpoint.h5", f->dir);
    const char *argv[16];
    int n = 0;
    for (int i = 0; c->args[i]; i++) {
        const char *a = c->args[i], *at = strchr(a, '@');
        if (at)
            snprintf(args[i], PATH_CAP, "%.*s%s%s", (int)(at - a), a, f->dir, at + 1);
        else
            snprintf(args[i], PATH_CAP, "%s", a);
        argv[n++] = args[i];
    }
    if (strcmp(c->program, "train") == 0) {
        snprintf(set_out, sizeof set_out, "output.dir=%s", f->dir);
        argv[n++] = "--set";
        argv[n++] = set_out;
    }
    argv[n] = NULL;
    char *before = NULL;
    if (c->checkpoint == FIFO) {
        assert_int_equal(mkfifo(checkpoint, 0600), 0);
    } else if (c->checkpoint == FOLDER) {
        assert_int_equal(mkdir(checkpoint, 0700), 0);
    } else if (c->checkpoint) {
        char from[2 * PATH_CAP];
        snprintf(from, sizeof from, "%s/%s", f->corpus, c->checkpoint);
        file_bytes_copy(from, checkpoint);
        before = program_slurp(checkpoint);
    }

    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int status = program_run(c->program, argv, f->corpus, out, err);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double seconds = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    char *text = program_slurp(err);
    if (strstr(text, "Sanitizer") || strstr(text, "runtime error") || strstr(text, "HDF5-DIAG"))
        fail_msg("%s: a report on stderr:\n%s", c->name, text);
    if (status != c->status)
        fail_msg("%s: exit status %d, expected %d; stderr:\n%s", c->name, status, c->status, text);
    if (c->message) {
        assert_true(status > 0 && status < 128);
        expect_one_line(c, text);
        expect_no_outputs(f->dir, c->name);
    } else if (text[0]) {
        fail_msg("%s: succeeded but wrote to stderr:\n%s", c->name, text);
    }
    /* "huge": 2^40 virtual rows whose source is missing (HDF5 would fill
     * them for hours). */
    int special = strstr(c->name, "FIFO") || strstr(c->name, "directory") ||
                  strstr(c->name, "device") || strstr(c->name, "huge") ||
                  c->checkpoint == FIFO || c->checkpoint == FOLDER;
    if (special && seconds > FAST_SECONDS)
        fail_msg("%s: took %.1f s to fail, expected at once", c->name, seconds);
    if (before) {
        char *after = program_slurp(checkpoint);
        if (memcmp(before, after, 1 << 20) != 0)
            fail_msg("%s: the run changed the checkpoint it was given", c->name);
        free(after);
        free(before);
    }
    free(text);
}

/* --- predict's outputs over one of its inputs -------------------------------- */

static void expect_same_bytes(const char *path, const char *original, const char *what)
{
    char *a = program_slurp(path), *b = program_slurp(original);
    if (strcmp(a, b) != 0 || !a[0])
        fail_msg("%s: %s was changed", what, path);
    free(a);
    free(b);
}

/* `predict w.h5 in.h5 in.h5` and the like, links included, must leave every
 * input as it was and say why. */
static void test_predict_output_is_an_input(void **state)
{
    fixture *f = *state;
    char w[PATH_CAP], in[PATH_CAP], sym[PATH_CAP], hard[PATH_CAP], dotted[PATH_CAP],
        out[PATH_CAP], err[PATH_CAP], good_w[2 * PATH_CAP], good_in[2 * PATH_CAP];
    snprintf(w, sizeof w, "%s/w.h5", f->dir);
    snprintf(in, sizeof in, "%s/in.h5", f->dir);
    snprintf(sym, sizeof sym, "%s/sym.h5", f->dir);
    snprintf(hard, sizeof hard, "%s/hard.h5", f->dir);
    snprintf(dotted, sizeof dotted, "%s/./folder/../in.h5", f->dir);
    snprintf(out, sizeof out, "%s/stdout.txt", f->dir);
    snprintf(err, sizeof err, "%s/stderr.txt", f->dir);
    snprintf(good_w, sizeof good_w, "%s/good_weights.h5", f->corpus);
    snprintf(good_in, sizeof good_in, "%s/good.h5", f->corpus);
    file_bytes_copy(good_w, w);
    file_bytes_copy(good_in, in);
    assert_int_equal(symlink("in.h5", sym), 0);
    assert_int_equal(link(w, hard), 0);
    const struct {
        const char *output, *message;
    } rows[] = {
        {in, "in.h5: is the inputs file"},  {w, "w.h5: is the weights file"},
        {sym, "sym.h5: is the inputs file"}, {hard, "hard.h5: is the weights file"},
        {dotted, "in.h5: is the inputs file"},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        const char *argv[] = {w, in, rows[i].output, "--device", "cpu", NULL};
        int status = program_run("predict", argv, f->corpus, out, err);
        char *text = program_slurp(err);
        if (status != 1 || strncmp(text, "predict: ", 9) != 0 || !strstr(text, rows[i].message) ||
            !strstr(text, "the outputs would replace it"))
            fail_msg("predict w.h5 in.h5 %s: exit status %d, stderr:\n%s", rows[i].output, status,
                     text);
        free(text);
        expect_same_bytes(w, good_w, rows[i].output);
        expect_same_bytes(in, good_in, rows[i].output);
        expect_no_outputs(f->dir, rows[i].output);
    }
    char other[PATH_CAP];
    snprintf(other, sizeof other, "%s/other.h5", f->dir);
    const char *fine[] = {w, in, other, "--device", "cpu", NULL};
    assert_int_equal(program_run("predict", fine, f->corpus, out, err), 0);
}

int main(void)
{
    enum { N_CASES = sizeof cases / sizeof cases[0] };
    struct CMUnitTest tests[N_CASES + 1];
    for (size_t i = 0; i < N_CASES; i++)
        tests[i] = (struct CMUnitTest){.name = cases[i].name, .test_func = run_case,
                                       .setup_func = setup, .teardown_func = program_dir_teardown,
                                       .initial_state = (void *)&cases[i]};
    static const bad_input none = {.name = "predict outputs over an input"};
    tests[N_CASES] = (struct CMUnitTest){.name = none.name,
                                         .test_func = test_predict_output_is_an_input,
                                         .setup_func = setup, .teardown_func = program_dir_teardown,
                                         .initial_state = (void *)&none};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
