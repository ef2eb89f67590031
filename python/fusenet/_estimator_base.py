"""_estimator_base.py — what FusenetClassifier and FusenetRegressor share
(estimators.py): the constructor's parameters, the config a fit passes to
the library, the run (fit, partial_fit, warm starts, early stopping), the
model's network, pickling and the weights file.

The constructor's parameters are the config's keys ([model], [train],
[data], [run]; docs/configuration.md), with `layers` the hidden blocks
only: the output layer (`linear <classes, labels or target columns>`) is
added from y. Messages of the library name the parameter a setting came
from ("groups=7: groups 7 does not divide ..."), never a `--set`.
"""
import os
import sys

import numpy as np

from ._sklearn_compat import TagsMixin, validate_data  # first: names the extra
from . import _core
from sklearn.base import BaseEstimator
from sklearn.model_selection import train_test_split
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

_SETTINGS = [  # (parameter, config key)
    ("groups", "model.groups"), ("eps", "model.eps"),
    ("negative_slope", "model.negative_slope"), ("optimizer", "train.optimizer"),
    ("lr", "train.lr"), ("momentum", "train.momentum"),
    ("weight_decay", "train.weight_decay"), ("schedule", "train.schedule"),
    ("epochs", "train.epochs"), ("batch_size", "train.batch_size"),
    ("standardize", "data.standardize"), ("device", "run.device"), ("math", "run.math"),
]


def _layers_text(layers, outputs):
    """The [model] layers value: the hidden layers then `linear outputs`.
    layers: widths of blocks ((64, 64)) or a config's text ("block 64")."""
    if isinstance(layers, str):
        hidden = [layers] if layers.strip() else []
    else:
        hidden = ["block %d" % int(w) for w in layers]
    return ", ".join(hidden + ["linear %d" % outputs])


def sample_weights(sample_weight, rows):
    """fit's sample_weight as float64 [rows], or None: a number is every
    row's weight; each must be finite and >= 0, and one above 0."""
    if sample_weight is None:
        return None
    w = np.asarray(sample_weight, dtype=np.float64)
    if w.ndim == 0:
        w = np.full(rows, float(w))
    if w.shape != (rows,):
        raise ValueError("sample_weight has shape %s, expected (%d,): one weight per row of X"
                         % (w.shape, rows))
    bad = np.flatnonzero(~np.isfinite(w) | (w < 0))
    if len(bad):
        raise ValueError("sample_weight[%d] is %r: expected finite numbers >= 0"
                         % (bad[0], float(w[bad[0]])))
    if not (w > 0).any():
        raise ValueError("sample_weight: every weight is zero, so the weighted loss "
                         "sum(w l) / sum(w) is 0/0; give at least one row a weight above 0")
    return w


def seed_of(random_state):
    """[train] seed of a random_state: an int as it is; None or a
    RandomState, a number drawn from it (as scikit-learn's own estimators
    draw theirs)."""
    if isinstance(random_state, (int, np.integer)) and not isinstance(random_state, bool):
        return int(random_state) % 2**32
    return int(check_random_state(random_state).randint(0, 2**31 - 1))


class FusenetBase(TagsMixin, BaseEstimator):
    _loss = None  # the config's [train] loss

    def __init__(self, layers=(64, 64), groups="auto", eps=1e-5, negative_slope=0.01,
                 optimizer="adam", lr=0.001, momentum=0.0, weight_decay=0.0,
                 schedule="constant", epochs=200, batch_size=64, random_state=1,
                 standardize=True, device="auto", math="fp32", warm_start=False,
                 early_stopping=False, validation_fraction=0.1, n_iter_no_change=10,
                 output_dir=None, overwrite=False, verbose=0, settings=None):
        self.layers = layers
        self.groups = groups
        self.eps = eps
        self.negative_slope = negative_slope
        self.optimizer = optimizer
        self.lr = lr
        self.momentum = momentum
        self.weight_decay = weight_decay
        self.schedule = schedule
        self.epochs = epochs
        self.batch_size = batch_size
        self.random_state = random_state
        self.standardize = standardize
        self.device = device
        self.math = math
        self.warm_start = warm_start
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.n_iter_no_change = n_iter_no_change
        self.output_dir = output_dir
        self.overwrite = overwrite
        self.verbose = verbose
        self.settings = settings

    # ---- what the subclasses say about y: its loss, encoding, sets ----
    def _encode(self, y, keep, partial):
        """y as the library takes it; keep: the classes or columns of the
        model so far must stay (partial: y may hold some of the classes)."""
        raise NotImplementedError

    def _set(self, handles, name, X, y, w=None):
        """The memory set of X, y (the library's encoding) and the rows'
        sample weights w (None: none)."""
        raise NotImplementedError

    def _loss_settings(self, y, partial, keep):
        """(loss name, extra "key=value" settings, their spellings) for y."""
        return self._loss, [], {}

    # ---- the config ----
    def _config(self, outputs, init_path, with_valid, seed, epochs, loss_settings):
        """The assignments of a fit, and how the user named each."""
        loss, extra, spelled = loss_settings
        pairs = [("train.loss", loss, "the loss %s (the estimator's choice)" % loss),
                 ("model.layers", _layers_text(self.layers, outputs),
                  "layers=%r (with the output layer linear %d)" % (self.layers, outputs)),
                 ("run.log_every", 0, None), ("train.seed", seed,
                                              "random_state=%r" % (self.random_state,)),
                 ("train.epochs", epochs, "epochs=%r" % (epochs,))]
        pairs += [(key, getattr(self, name), "%s=%r" % (name, getattr(self, name)))
                  for name, key in _SETTINGS if name != "epochs"]
        if with_valid:
            pairs += [("train.patience", self.n_iter_no_change,
                       "n_iter_no_change=%r" % (self.n_iter_no_change,)),
                      ("train.keep_best", True, "early_stopping=True")]
        if init_path is not None:
            pairs.append(("model.init", init_path, "the model so far (warm start)"))
        for key, value in (self.settings or {}).items():
            pairs.append((key, value, "settings={%r: %r}" % (key, value)))
        settings = [_core.setting(key, value) for key, value, _ in pairs] + extra
        spelled = dict(spelled)
        spelled.update({_core.setting(key, value): words for key, value, words in pairs if words})
        return settings, spelled

    def _split(self, X, y, w, seed):
        if not self.early_stopping:
            return X, y, w, None, None, None
        # A classifier's split keeps each class's share (one label a row).
        stratify = y if getattr(self, "_stratify", False) and y.ndim == 1 else None
        if w is None:
            X, Xv, y, yv = train_test_split(X, y, test_size=self.validation_fraction,
                                            random_state=seed, stratify=stratify)
            return X, y, None, Xv, yv, None
        X, Xv, y, yv, w, wv = train_test_split(X, y, w, test_size=self.validation_fraction,
                                               random_state=seed, stratify=stratify)
        if not (w > 0).any() or not (wv > 0).any():
            raise ValueError("sample_weight: early_stopping's split left every row of the %s "
                             "set with weight 0; give more rows a weight above 0"
                             % ("training" if not (w > 0).any() else "validation"))
        return X, y, w, Xv, yv, wv

    def _weights_kept(self, X, y, w):
        """Rows of weight 0 left out (a weight of 0 is the row's absence,
        scikit-learn's meaning); weights then all 1 are none (the same
        run, bit for bit, on any device). Others train on the CPU only."""
        if w is None:
            return X, y, None
        if not (w > 0).all():
            kept = w > 0
            X, y, w = X[kept], y[kept], w[kept]
        if (w == 1).all():
            return X, y, None
        if _core._device(self.device)[0] == _core._lib.DEVICE_CUDA:
            raise ValueError("sample_weight: per-row weights are supported on the CPU only, "
                             "and device=%r trains on a GPU; fit with device=\"cpu\", or "
                             "without sample_weight" % (self.device,))
        return X, y, w

    # ---- fitting ----
    def _validate(self, X, y, reset):
        return validate_data(self, X, y, dtype=np.float32, reset=reset, multi_output=True,
                             y_numeric=True)

    def _run(self, X, y, partial=False, sample_weight=None):
        """One training run over X, y: fit's (epochs, early stopping, warm
        start) or partial_fit's (one epoch from the model so far), each
        row's loss weighted by sample_weight (None: all 1)."""
        keep = hasattr(self, "_weights") and (partial or self.warm_start)
        X, y = self._validate(X, y, reset=not keep)
        w = sample_weights(sample_weight, X.shape[0])
        loss_settings = self._loss_settings(y, partial, keep)
        y = self._encode(y, keep, partial)
        seed = seed_of(self.random_state)
        if partial:  # another shuffle each call, the same calls giving the same model
            seed = (seed + getattr(self, "n_iter_", 0)) % 2**32
        Xt, yt, wt, Xv, yv, wv = (self._split(X, y, w, seed) if not partial
                                  else (X, y, w, None, None, None))
        Xt, yt, wt = self._weights_kept(Xt, yt, wt)
        if Xv is not None:
            Xv, yv, wv = self._weights_kept(Xv, yv, wv)
        if self.verbose:
            print("fusenet: %s" % _core._lib.describe(), file=sys.stderr)
        with _core._Handles() as handles, _core._private_dir() as folder:
            init = None
            if keep:
                init = os.path.join(folder, "init.h5")
                with open(init, "wb") as f:
                    f.write(self._weights)
            train = self._set(handles, "train", Xt, yt, wt)
            valid = self._set(handles, "valid", Xv, yv, wv) if Xv is not None else None
            settings, spelled = self._config(self._outputs, init, valid is not None, seed,
                                             1 if partial else self.epochs, loss_settings)
            run = _core.run_training(settings=settings, train=train, valid=valid,
                                     output_dir=self.output_dir, use_best=valid is not None,
                                     name="fit", overwrite=self.overwrite, verbose=self.verbose,
                                     spelled=spelled,
                                     paths={init: "the model so far"} if init else {})
        self._weights = run.weights
        self._network = _core.Network(run.weights, self.device, self.math)
        curve = [row["train_loss"] for row in run.history]
        self.loss_curve_ = (getattr(self, "loss_curve_", []) if partial else []) + curve
        watched = "valid_acc" if loss_settings[0] == "cross_entropy" else "valid_loss"
        self.validation_scores_ = ([row[watched] for row in run.history]
                                   if valid is not None else None)
        self.n_iter_ = (getattr(self, "n_iter_", 0) if partial else 0) + len(run.history)
        self.weights_path_ = run.weights_path
        return self

    # ---- the model ----
    def _outputs_of(self, X):
        check_is_fitted(self, "_weights")
        X = validate_data(self, X, dtype=np.float32, reset=False)
        return self._network.outputs(X)

    def save_weights(self, path):
        """Writes the model as the weights.h5 `predict` and fusenet.load read."""
        check_is_fitted(self, "_weights")
        _core.write_file(path, self._weights)

    def _read_weights(self, path):
        """Takes a weights file's model (messages name the file); returns
        the loss it records."""
        with open(path, "rb") as f:
            self._weights = f.read()
        task = _core.Task(path)
        self._network = _core.Network(device=self.device, math=self.math, path=path)
        self.n_features_in_ = self._network.in_features
        return task

    def __getstate__(self):
        state = dict(self.__dict__)
        state.pop("_network", None)
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        if "_weights" in state:
            self._network = _core.Network(self._weights, self.device, self.math)

    def __sklearn_is_fitted__(self):
        return hasattr(self, "_weights")
