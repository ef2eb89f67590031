"""_core.py — the two things every door of the package does through the
library: a training run (a config, memory sets or files, the library's
trainer) and a network ready to predict (fn_weights_build from a weights
file's bytes, its input standardisation, fn_infer).

A model travels as the bytes of its weights.h5, the file `train` writes
and `predict` reads: a pickle holds them, `save` writes them as they are.
"""
import contextlib
import ctypes
import os
import shutil
import signal
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


def memory_set(handles, name, inputs, labels=None, targets=None):
    """A memory set (copied by the library) of float32 inputs [N, in] with
    int32 labels [N], float32 targets [N, out], or neither."""
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
    return handles.add(out, lib.fn_memory_set_destroy)


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


def run_training(config_path=None, settings=(), train=None, valid=None, output_dir=None,
                 use_best=False, on_epoch=None, name="fusenet"):
    """Trains through the library's trainer. config_path: a config file, or
    None for an empty config named `name`; settings: "section.key=value"
    assignments applied in order; train/valid: memory sets (handles) for
    [data] train and valid; output_dir: where the run's files stay (None: a
    temporary folder, removed). Returns a RunResult."""
    history = []
    errors = []

    def epoch_done(_user, e):
        e = e.contents
        row = {"epoch": e.epoch + 1, "train_loss": e.train.loss, "train_acc": e.train.acc,
               "valid_loss": e.valid.loss, "valid_acc": e.valid.acc, "seconds": e.seconds,
               "improved": bool(e.improved)}
        history.append(row)
        if on_epoch is not None:
            try:
                on_epoch(row)
            except BaseException as exc:  # noqa: B902 - re-raised after the run
                errors.append(exc)

    def should_stop(_user):
        return 1 if errors or interrupted else 0

    callbacks = _lib.TrainerCallbacks(on_epoch=_lib.ON_EPOCH(epoch_done),
                                      should_stop=_lib.SHOULD_STOP(should_stop),
                                      on_notice=_lib.ON_NOTICE(lambda _u, _t: None))
    options = _lib.TrainerOptions(overwrite=1, callbacks=ctypes.pointer(callbacks))
    with _interrupt_flag() as interrupted, _Handles() as handles, \
            _private_dir(output_dir) as folder:
        cfg = ctypes.c_void_p()
        if config_path is not None:
            check(lib.fn_config_load(ctypes.byref(cfg), os.fsencode(config_path)))
        else:
            check(lib.fn_config_parse(ctypes.byref(cfg), name.encode(), b""))
        handles.add(cfg, lib.fn_config_destroy)
        if output_dir is not None or config_path is None:
            settings = [setting("output.dir", folder)] + list(settings)
        for assignment in settings:
            check(lib.fn_config_set(cfg, assignment.encode()))
        for which, set_ in (("train", train), ("valid", valid)):
            if set_ is not None:
                check(lib.fn_config_use_memory_set(cfg, which.encode(), set_))
        check(lib.fn_config_finish(cfg))
        trainer = ctypes.c_void_p()
        check(lib.fn_trainer_create(ctypes.byref(trainer), cfg, ctypes.byref(options)))
        handles.add(trainer, lib.fn_trainer_destroy)
        check(lib.fn_trainer_run(trainer))
        if errors:
            raise errors[0]
        if interrupted:
            return None
        best = lib.fn_trainer_best_path(trainer)
        path = (best if use_best and best else lib.fn_trainer_weights_path(trainer)).decode()
        with open(path, "rb") as f:
            weights = f.read()
        kept = output_dir is not None or config_path is not None
        return RunResult(weights, history, path if kept else None,
                         best.decode() if best and kept else None)


def _device(text):
    """(fn_device, gpu) of "auto", "cpu", "cuda" or "cuda:N"."""
    if text == "cpu":
        return 0, 0
    if text == "auto":
        return (1, 0) if lib.fn_build_has_cuda() and lib.fn_cuda_device_count() > 0 else (0, 0)
    if text == "cuda":
        return 1, 0
    if text.startswith("cuda:") and text[5:].isdigit():
        return 1, int(text[5:])
    raise ValueError("device %r: expected auto, cpu, cuda or cuda:N" % (text,))


class Network:
    """A trained network in memory, built from a weights file's bytes, with
    the input standardisation it was trained with; frees its handles when
    collected."""

    def __init__(self, weights, device="auto", math="fp32"):
        dev, gpu = _device(device)
        code = ctypes.c_int()
        check(lib.fn_math_parse(math.encode(), ctypes.byref(code)))
        self._ctx = ctypes.c_void_p()
        self._net = ctypes.c_void_p()
        self._norm = ctypes.c_void_p()
        check(lib.fn_context_create(ctypes.byref(self._ctx), dev, gpu, code.value))
        with _private_dir() as folder:
            path = os.path.join(folder, "weights.h5")
            with open(path, "wb") as f:
                f.write(weights)
            check(lib.fn_weights_build(ctypes.byref(self._net), self._ctx, path.encode(),
                                       _MAX_BATCH))
            check(lib.fn_input_norm_load(ctypes.byref(self._norm), self._ctx, path.encode(),
                                         lib.fn_net_in_features(self._net)))
        self.in_features = lib.fn_net_in_features(self._net)
        self.out_features = lib.fn_net_out_features(self._net)

    def outputs(self, X):
        """The last layer's outputs [N, out] (float32) for inputs [N, in]."""
        X = np.ascontiguousarray(X, dtype=np.float32)
        out = np.empty((X.shape[0], self.out_features), dtype=np.float32)
        if X.shape[0] == 0:
            return out
        with _Handles() as handles:
            inputs = memory_set(handles, "inputs", X)
            check(lib.fn_infer(self._net, self._norm, inputs, _lib.floats(out)))
        return out

    def __del__(self):
        for name, destroy in (("_norm", "fn_input_norm_destroy"), ("_net", "fn_net_destroy"),
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
