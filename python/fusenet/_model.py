"""_model.py — the config-file door: train(config, **overrides) runs a
config as `train config.ini --set ...` does, in-process, and load(weights)
reads a weights file (from `train`, train() or an estimator's
save_weights) into a Model that predicts from NumPy arrays. What a model
predicts (classes, values, or several 0/1 labels) is the library's word:
the loss its weights file records (fn_weights_loss)."""
import os

import numpy as np

from . import _core

_TASKS = ("classify", "regress", "multilabel")


def _task_of(task, found):
    """The task given (checked), else the file's."""
    if task is None:
        return "classify" if found.labels else "multilabel" if found.multilabel else "regress"
    if task not in _TASKS:
        raise ValueError("task %r: expected one of %s" % (task, ", ".join(map(repr, _TASKS))))
    return task


def sigmoid(logits):
    """Each output's probability, float64, in the form whose exp cannot
    overflow (e^-|x|), so a logit of -1e4 gives 0 without a warning."""
    x = np.asarray(logits, dtype=np.float64)
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


class Model:
    """A trained network: predict (classes; values for a regression; 0/1
    per output for a multi-label model), predict_proba and outputs (the
    last layer's values) for inputs [N, in] of any numeric dtype; save
    writes its weights file."""

    def __init__(self, weights, task=None, device="auto", history=None, weights_path=None,
                 _path=None):
        self.weights = bytes(weights)
        self.history = history or []       # one dict per epoch of the run that made it
        self.weights_path = weights_path   # the file it came from, if any
        with _core.weights_file(self.weights, _path) as path:
            found = _core.Task(path)
            self._network = _core.Network(device=device, path=path)
        self.loss = found.loss             # the [train] loss it was trained with
        self.task = _task_of(task, found)
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
        if self.task == "classify":
            return _core.argmax(out)
        return (out > 0).astype(np.int32) if self.task == "multilabel" else out

    def predict_proba(self, X):
        if self.task == "regress":
            raise ValueError("predict_proba: the model predicts values (it was trained with "
                             "loss %s)" % self.loss)
        out = self.outputs(X)
        return _core.softmax(out) if self.task == "classify" else sigmoid(out)

    def save(self, path):
        _core.write_file(path, self.weights)

    def __reduce__(self):
        return (Model, (self.weights, self.task, "auto", self.history, self.weights_path))


def load(path, task=None, device="auto"):
    """The model of a weights file, ready to predict on `device`; messages
    name the file."""
    with open(path, "rb") as f:
        weights = f.read()
    return Model(weights, task, device, weights_path=os.fspath(path), _path=path)


def train(config, overwrite=False, **overrides):
    """Runs a config file as `train config --set key=value ...` does and
    returns the trained Model. Overrides name keys as section.key
    (train(cfg, **{"train.lr": 0.1})) or section__key (train__lr=0.1). A
    folder ([output] dir) holding an earlier run's files is refused unless
    overwrite=True, as `train` refuses it without --overwrite."""
    settings, spelled = [], {}
    for key, value in overrides.items():
        assignment = _core.setting(key.replace("__", "."), value)
        settings.append(assignment)
        spelled[assignment] = "%s=%r" % (key, value)
    run = _core.run_training(config_path=config, settings=settings, overwrite=overwrite,
                             spelled=spelled)
    return Model(run.weights, history=run.history, weights_path=run.weights_path,
                 _path=run.weights_path)
