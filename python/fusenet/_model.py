"""_model.py — the config-file door: train(config, **overrides) runs a
config as `train config.ini --set ...` does, in-process, and load(weights)
reads a weights file (from `train`, train() or an estimator's
save_weights) into a Model that predicts from NumPy arrays."""
import ctypes
import io
import os

import numpy as np

from . import _core
from ._lib import check, lib


def _task_of(weights, task):
    """"classify" or "regress": `task` when given, else from the [train]
    loss of the config text the weights file holds (read with h5py)."""
    if task is not None:
        if task not in ("classify", "regress"):
            raise ValueError("task %r: expected 'classify' or 'regress'" % (task,))
        return task
    try:
        import h5py
    except ImportError as e:
        raise ImportError("fusenet.load: pass task='classify' or task='regress' "
                          "(reading it from the file needs h5py)") from e
    with h5py.File(io.BytesIO(weights), "r") as f:
        text = f.attrs.get("config", b"")
    text = text.encode() if isinstance(text, str) else bytes(text)
    cfg = ctypes.c_void_p()
    check(lib.fn_config_parse(ctypes.byref(cfg), b"weights", text))
    try:
        value = ctypes.create_string_buffer(64)
        check(lib.fn_config_get(cfg, b"train.loss", value, 64))
    finally:
        lib.fn_config_destroy(cfg)
    return "regress" if value.value == b"mse" else "classify"


class Model:
    """A trained network: predict (classes, or values for a regression),
    predict_proba and outputs (the last layer's values) for inputs [N, in]
    of any numeric dtype; save writes its weights file."""

    def __init__(self, weights, task=None, device="auto", history=None, weights_path=None):
        self.weights = bytes(weights)
        self.task = _task_of(self.weights, task)
        self.history = history or []       # one dict per epoch of the run that made it
        self.weights_path = weights_path   # the file it came from, if any
        self._network = _core.Network(self.weights, device)
        self.in_features = self._network.in_features
        self.out_features = self._network.out_features

    def outputs(self, X):
        X = np.asarray(X, dtype=np.float32)
        if X.ndim != 2 or X.shape[1] != self.in_features:
            raise ValueError("X has shape %s; the model takes [N, %d]"
                             % (X.shape, self.in_features))
        return self._network.outputs(X)

    def predict(self, X):
        out = self.outputs(X)
        return _core.argmax(out) if self.task == "classify" else out

    def predict_proba(self, X):
        if self.task != "classify":
            raise ValueError("predict_proba: the model is a regression (loss mse)")
        return _core.softmax(self.outputs(X))

    def save(self, path):
        with open(path, "wb") as f:
            f.write(self.weights)

    def __reduce__(self):
        return (Model, (self.weights, self.task, "auto", self.history, self.weights_path))


def load(path, task=None, device="auto"):
    """The model of a weights file, ready to predict on `device`."""
    with open(path, "rb") as f:
        weights = f.read()
    return Model(weights, task, device, weights_path=os.fspath(path))


def train(config, **overrides):
    """Runs a config file as `train config --set key=value ...` does and
    returns the trained Model. Overrides name keys as section.key
    (train(cfg, **{"train.lr": 0.1})) or section__key (train__lr=0.1)."""
    settings = [_core.setting(key.replace("__", "."), value) for key, value in overrides.items()]
    run = _core.run_training(config_path=config, settings=settings)
    return Model(run.weights, history=run.history, weights_path=run.weights_path)
