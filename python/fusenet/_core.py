"""_core.py — the two things every door of the package does through the
library: a training run (a config, memory sets or files, the library's
trainer) and a network ready to predict (fn_weights_build from a weights
file's bytes, its input standardisation, fn_infer).

A model travels as the bytes of its weights.h5, the file `train` writes
and `predict` reads: a pickle holds them, `save` writes them as they are.
"""
import contextlib
import ctypes
import itertools
import os
import shutil
import signal
import sys
import tempfile
import threading

import numpy as np

from . import _lib
from ._lib import check, lib

_MAX_BATCH = 1024


def setting(key, value):
    """"section.key=value" with Python values spelt as a config file does."""
    if isinstance(value, bool):
        value = "true" if value else "false"
    elif isinstance(value, (list, tuple)):
        value = ", ".join(str(v) for v in value)
    return "%s=%s" % (key, value)


_serial = itertools.count()  # two writes of one process get two temporaries


def write_file(path, data):
    """Writes bytes as the file at path the way the library writes its own:
    into a new temporary of this process beside it, "<path>.<pid>-<n>.tmp"
    (created exclusively, so a file or link already there is never written
    through), fsynced and renamed over path; on failure the temporary is
    removed and path is as it was."""
    path = os.fspath(path)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | \
        getattr(os, "O_CLOEXEC", 0)
    while True:
        temporary = "%s.%d-%d.tmp" % (path, os.getpid(), next(_serial))
        try:
            fd = os.open(temporary, flags, 0o666)
            break
        except FileExistsError:  # a killed process's leftover: another name
            continue
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(temporary)
        raise
    with contextlib.suppress(OSError):  # the rename made durable, where a folder can be opened
        folder = os.open(os.path.dirname(os.path.abspath(path)), os.O_RDONLY)
        try:
            os.fsync(folder)
        finally:
            os.close(folder)


@contextlib.contextmanager
def _private_dir(keep=None):
    """A folder for a run's files: `keep` when given (left in place), else a
    fresh temporary one removed on leaving."""
    if keep is not None:
        yield os.fspath(keep)
        return
    path = tempfile.mkdtemp(prefix="fusenet-")
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


class _Handles:
    """Handles freed together, in reverse order, on leaving."""

    def __init__(self):
        self._items = []

    def add(self, handle, destroy):
        self._items.append((handle, destroy))
        return handle

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for handle, destroy in reversed(self._items):
            destroy(handle)
        self._items.clear()


def memory_set(handles, name, inputs, labels=None, targets=None, weights=None):
    """A memory set (copied by the library) of float32 inputs [N, in] with
    int32 labels [N], float32 targets [N, out], or neither; weights: a
    float32 sample weight [N] per row, or None."""
    inputs = np.ascontiguousarray(inputs, dtype=np.float32)
    rows, cols = inputs.shape
    out = ctypes.c_void_p()
    if labels is not None:
        labels = np.ascontiguousarray(labels, dtype=np.int32)
        st = lib.fn_memory_set_labels(ctypes.byref(out), name.encode(), _lib.floats(inputs),
                                      rows, cols,
                                      labels.ctypes.data_as(ctypes.POINTER(ctypes.c_int32)))
    elif targets is not None:
        targets = np.ascontiguousarray(targets, dtype=np.float32)
        st = lib.fn_memory_set_values(ctypes.byref(out), name.encode(), _lib.floats(inputs),
                                      rows, cols, _lib.floats(targets), targets.shape[1])
    else:
        st = lib.fn_memory_set_inputs(ctypes.byref(out), name.encode(), _lib.floats(inputs),
                                      rows, cols)
    check(st)
    handles.add(out, lib.fn_memory_set_destroy)
    if weights is not None:
        weights = np.ascontiguousarray(weights, dtype=np.float32)
        check(lib.fn_memory_set_weights(out, _lib.floats(weights)))
    return out


@contextlib.contextmanager
def _interrupt_flag():
    """Ctrl-C during a run: a flag the trainer's should_stop reads (the run
    stops after its step), then KeyboardInterrupt once the run is over. A
    callback cannot raise into C, so the usual handler is set aside for the
    run (main thread only: elsewhere signals do not arrive)."""
    flag = []
    if threading.current_thread() is not threading.main_thread():
        yield flag
        return
    previous = signal.signal(signal.SIGINT, lambda *_: flag.append(True))
    try:
        yield flag
    finally:
        signal.signal(signal.SIGINT, previous)
    if flag:
        raise KeyboardInterrupt


class RunResult:
    """What a training run left: its model's bytes and its epochs' figures."""

    def __init__(self, weights, history, weights_path, best_path):
        self.weights = weights            # bytes of weights.h5 (best.h5 when kept)
        self.history = history            # one dict per epoch
        self.weights_path = weights_path  # where it was written (None: removed)
        self.best_path = best_path


# The library's advice in the `train` program's words, and the caller's
# ("give --overwrite" becomes "pass overwrite=True").
_CLI_ADVICE = [
    ("give --overwrite to replace them, --resume to continue that run, or another [output] dir",
     "pass overwrite=True to replace them, or choose another folder"),
]


def _spoken(exc, spelled, paths):
    """exc with its message in the caller's words: each "--set k=v" the
    package made for a parameter named as the caller named it (spelled:
    {assignment: "groups=7"}), each of the package's own files as what it
    holds (paths: {path: "the model so far"}), the program's options as
    parameters."""
    message = str(exc)
    for assignment, words in spelled.items():
        message = message.replace("--set " + assignment, words)
    for path, words in paths.items():
        message = message.replace(path, words)
    for cli, words in _CLI_ADVICE:
        message = message.replace(cli, words)
    if message == str(exc):
        return exc
    return type(exc)(exc.status, message)


def _print_model(model, out):
    """The run's layers, as `train` prints them (groups = auto shows here)."""
    m = model.contents
    print("%-6s %-8s %17s %7s %12s" % ("layer", "kind", "in -> out", "groups", "parameters"),
          file=out)
    for i in range(m.n_layers):
        layer = m.layers[i]
        print("%-6d %-8s %17s %7s %12d" % (i, layer.kind.decode(), "%d -> %d" % (layer.in_,
                                                                               layer.out),
                                           layer.groups or "-", layer.params), file=out)
    print("total: %d parameters" % m.params, file=out)


def _epoch_line(row, epochs):
    """An epoch's line, as `train` prints it (no validation part without a
    validation set)."""
    def metric(v, percent):
        return "-" if v != v else ("%.2f%%" % (100 * v) if percent else "%.4f" % v)
    valid = ("" if row["valid_loss"] != row["valid_loss"] else ", valid loss %s acc %s"
             % (metric(row["valid_loss"], 0), metric(row["valid_acc"], 1)))
    return ("epoch %d/%d: train loss %s acc %s%s (epoch %.3f s, total %.3f s, %.0f samples/s%s)"
            % (row["epoch"], epochs, metric(row["train_loss"], 0), metric(row["train_acc"], 1),
               valid, row["epoch_seconds"], row["seconds"], row["samples_per_s"],
               ", best" if row["improved"] else ""))


class _Reporter:
    """The trainer's callbacks: the epochs' figures kept, and with verbose
    the summary, epoch lines and notices written to stderr."""

    def __init__(self, verbose, on_epoch, interrupted):
        self.history, self.errors = [], []
        self.verbose, self.on_epoch, self.interrupted = verbose, on_epoch, interrupted

    def epoch_done(self, _user, e):
        e = e.contents
        row = {"epoch": e.epoch + 1, "train_loss": e.train.loss, "train_acc": e.train.acc,
               "valid_loss": e.valid.loss, "valid_acc": e.valid.acc, "seconds": e.seconds,
               "epoch_seconds": e.epoch_seconds, "samples_per_s": e.samples_per_s,
               "improved": bool(e.improved)}
        self.history.append(row)
        if self.verbose:
            print(_epoch_line(row, e.epochs), file=sys.stderr, flush=True)
        if self.on_epoch is not None:
            try:
                self.on_epoch(row)
            except BaseException as exc:  # noqa: B902 - re-raised after the run
                self.errors.append(exc)

    def model(self, _user, m):
        if self.verbose:
            _print_model(m, sys.stderr)

    def notice(self, _user, text):
        if self.verbose:
            print("notice: %s" % text.decode("utf-8", "replace"), file=sys.stderr, flush=True)

    def should_stop(self, _user):
        return 1 if self.errors or self.interrupted else 0

    def callbacks(self):
        self._keep = _lib.TrainerCallbacks(on_epoch=_lib.ON_EPOCH(self.epoch_done),
                                           on_model=_lib.ON_MODEL(self.model),
                                           should_stop=_lib.SHOULD_STOP(self.should_stop),
                                           on_notice=_lib.ON_NOTICE(self.notice))
        return self._keep


def _configure(handles, config_path, name, folder, settings, train, valid):
    cfg = ctypes.c_void_p()
    if config_path is not None:
        check(lib.fn_config_load(ctypes.byref(cfg), os.fsencode(config_path)))
    else:
        check(lib.fn_config_parse(ctypes.byref(cfg), name.encode(), b""))
    handles.add(cfg, lib.fn_config_destroy)
    if folder is not None:
        settings = [setting("output.dir", folder)] + list(settings)
    for assignment in settings:
        check(lib.fn_config_set(cfg, assignment.encode()))
    for which, set_ in (("train", train), ("valid", valid)):
        if set_ is not None:
            check(lib.fn_config_use_memory_set(cfg, which.encode(), set_))
    check(lib.fn_config_finish(cfg))
    return cfg


def run_training(config_path=None, settings=(), train=None, valid=None, output_dir=None,
                 use_best=False, on_epoch=None, name="fusenet", overwrite=False, verbose=0,
                 spelled=None, paths=None):
    """Trains through the library's trainer. config_path: a config file, or
    None for an empty config named `name`; settings: "section.key=value"
    assignments applied in order; train/valid: memory sets (handles) for
    [data] train and valid; output_dir: where the run's files stay (None: a
    temporary folder, removed); overwrite: a run may replace an earlier
    run's files there (else refused, as `train` refuses); verbose: the
    summary, epoch lines and notices to stderr; spelled, paths: how the
    caller named each assignment, and what each of the package's own files
    is, for messages (_spoken). Returns a RunResult."""
    with _interrupt_flag() as interrupted, _Handles() as handles, \
            _private_dir(output_dir) as folder:
        report = _Reporter(verbose, on_epoch, interrupted)
        options = _lib.TrainerOptions(overwrite=1 if overwrite else 0,
                                      callbacks=ctypes.pointer(report.callbacks()))
        try:
            cfg = _configure(handles, config_path, name,
                             folder if output_dir is not None or config_path is None else None,
                             settings, train, valid)
            trainer = ctypes.c_void_p()
            check(lib.fn_trainer_create(ctypes.byref(trainer), cfg, ctypes.byref(options)))
            handles.add(trainer, lib.fn_trainer_destroy)
            check(lib.fn_trainer_run(trainer))
        except _lib.FusenetError as exc:
            raise _spoken(exc, spelled or {}, paths or {}) from None
        if report.errors:
            raise report.errors[0]
        if interrupted:
            return None
        best = lib.fn_trainer_best_path(trainer)
        path = (best if use_best and best else lib.fn_trainer_weights_path(trainer)).decode()
        with open(path, "rb") as f:
            weights = f.read()
        kept = output_dir is not None or config_path is not None
        return RunResult(weights, report.history, path if kept else None,
                         best.decode() if best and kept else None)


def _device(text):
    """(fn_device, gpu) of "auto", "cpu", "cuda" or "cuda:N"."""
    cpu, cuda = _lib.DEVICE_CPU, _lib.DEVICE_CUDA
    if text == "cpu":
        return cpu, 0
    if text == "auto":
        return (cuda, 0) if lib.fn_build_has_cuda() and lib.fn_cuda_device_count() > 0 \
            else (cpu, 0)
    if text == "cuda":
        return cuda, 0
    if text.startswith("cuda:") and text[5:].isdigit():
        return cuda, int(text[5:])
    raise ValueError("device %r: expected auto, cpu, cuda or cuda:N" % (text,))


@contextlib.contextmanager
def weights_file(weights=None, path=None):
    """A path the library can read: the caller's file itself (so messages
    name it), or the bytes written to a private temporary file, whose name
    is taken out of any message ("the model's weights")."""
    if path is not None:
        yield os.fspath(path)
        return
    with _private_dir() as folder:
        temporary = os.path.join(folder, "weights.h5")
        with open(temporary, "wb") as f:
            f.write(weights)
        try:
            yield temporary
        except _lib.FusenetError as exc:
            raise type(exc)(exc.status, str(exc).replace(
                temporary, "the model's weights (held in memory)")) from None


class Task:
    """What a weights file's network predicts, from the loss its run trained
    with as the library records it (fn_weights_loss): classes (labels),
    values, or 0/1 labels of several outputs (values in [0, 1])."""

    def __init__(self, path):
        kind = ctypes.c_void_p()
        check(lib.fn_weights_loss(os.fsencode(path), ctypes.byref(kind)))
        self.loss = lib.fn_loss_kind_name(kind).decode()
        self.labels = lib.fn_loss_kind_targets(kind) == _lib.TARGETS_LABELS
        self.multilabel = not self.labels and bool(lib.fn_loss_kind_unit_targets(kind))


class Network:
    """A trained network in memory, built from a weights file (its bytes,
    or the caller's path), with the input standardisation it was trained
    with and the target standardisation its outputs are mapped back by;
    frees its handles when collected."""

    def __init__(self, weights=None, device="auto", math="fp32", path=None):
        dev, gpu = _device(device)
        code = ctypes.c_int()
        check(lib.fn_math_parse(math.encode(), ctypes.byref(code)))
        self._ctx = ctypes.c_void_p()
        self._net = ctypes.c_void_p()
        self._norm = ctypes.c_void_p()
        self._target_norm = ctypes.c_void_p()
        check(lib.fn_context_create(ctypes.byref(self._ctx), dev, gpu, code.value))
        with weights_file(weights, path) as file:
            encoded = os.fsencode(file)
            check(lib.fn_weights_build(ctypes.byref(self._net), self._ctx, encoded, _MAX_BATCH))
            self.in_features = lib.fn_net_in_features(self._net)
            self.out_features = lib.fn_net_out_features(self._net)
            check(lib.fn_input_norm_load(ctypes.byref(self._norm), self._ctx, encoded,
                                         self.in_features))
            check(lib.fn_target_norm_load(ctypes.byref(self._target_norm), self._ctx, encoded,
                                          self.out_features))

    def outputs(self, X):
        """The last layer's outputs [N, out] (float32) for inputs [N, in],
        in the targets' own units for a network trained on standardised
        targets (as `predict` maps them back)."""
        X = np.ascontiguousarray(X, dtype=np.float32)
        out = np.empty((X.shape[0], self.out_features), dtype=np.float32)
        if X.shape[0] == 0:
            return out
        with _Handles() as handles:
            inputs = memory_set(handles, "inputs", X)
            check(lib.fn_infer(self._net, self._norm, inputs, _lib.floats(out)))
        if self._target_norm:
            lib.fn_target_norm_undo(self._target_norm, _lib.floats(out), out.shape[0])
        return out

    def __del__(self):
        for name, destroy in (("_target_norm", "fn_input_norm_destroy"),
                              ("_norm", "fn_input_norm_destroy"), ("_net", "fn_net_destroy"),
                              ("_ctx", "fn_context_destroy")):
            handle = getattr(self, name, None)
            if handle:
                getattr(lib, destroy)(handle)


def softmax(logits):
    """Row-wise softmax by the library (float64 inside), as float64."""
    p = np.ascontiguousarray(logits, dtype=np.float32).copy()
    if p.size:
        lib.fn_softmax_rows(_lib.floats(p), p.shape[0], p.shape[1])
    return p.astype(np.float64)


def argmax(logits):
    """The column of each row's largest value, the lower on ties."""
    x = np.ascontiguousarray(logits, dtype=np.float32)
    out = np.empty(x.shape[0], dtype=np.int32)
    if x.size:
        lib.fn_argmax_rows(_lib.floats(x), x.shape[0], x.shape[1],
                           out.ctypes.data_as(ctypes.POINTER(ctypes.c_int32)))
    return out
