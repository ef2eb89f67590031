"""estimators.py — scikit-learn's estimator interface over the library:
FusenetClassifier and FusenetRegressor. fit trains in-process through the
library's trainer on memory sets made from the arrays (nothing written
unless output_dir is given: the run's files go to a temporary folder,
removed before fit returns); predict runs fn_infer on the network built
from the model's weights file bytes, which are also what a pickle holds
and what save_weights writes.

The constructor's parameters are the config's keys ([model], [train],
[data], [run]; docs/configuration.md), with `layers` the hidden blocks
only: the output layer (`linear <classes or target columns>`) is added
from y. early_stopping holds out validation_fraction of the rows (split
as sklearn's MLP does) as the validation set and sets [train] patience =
n_iter_no_change and keep_best, so the model kept is the best epoch's.
"""
import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.model_selection import train_test_split
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from . import _core

_SETTINGS = [  # (parameter, config key)
    ("groups", "model.groups"), ("eps", "model.eps"),
    ("negative_slope", "model.negative_slope"), ("optimizer", "train.optimizer"),
    ("lr", "train.lr"), ("momentum", "train.momentum"),
    ("weight_decay", "train.weight_decay"), ("schedule", "train.schedule"),
    ("epochs", "train.epochs"), ("batch_size", "train.batch_size"), ("seed", "train.seed"),
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


class _FusenetBase(BaseEstimator):
    _loss = None  # the config's [train] loss

    def __init__(self, layers=(64, 64), groups=8, eps=1e-5, negative_slope=0.01,
                 optimizer="adam", lr=0.001, momentum=0.0, weight_decay=0.0,
                 schedule="constant", epochs=200, batch_size=64, seed=1, standardize=True,
                 device="auto", math="fp32", warm_start=False, early_stopping=False,
                 validation_fraction=0.1, n_iter_no_change=10, output_dir=None,
                 settings=None):
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
        self.seed = seed
        self.standardize = standardize
        self.device = device
        self.math = math
        self.warm_start = warm_start
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.n_iter_no_change = n_iter_no_change
        self.output_dir = output_dir
        self.settings = settings

    # ---- what the subclasses say about y ----
    def _encode(self, y):
        raise NotImplementedError

    def _set(self, handles, name, X, y):
        raise NotImplementedError

    # ---- fit ----
    def _config(self, outputs, init_path, with_valid):
        settings = [_core.setting("train.loss", self._loss),
                    _core.setting("model.layers", _layers_text(self.layers, outputs)),
                    _core.setting("run.log_every", 0)]
        settings += [_core.setting(key, getattr(self, name)) for name, key in _SETTINGS]
        if with_valid:
            settings += [_core.setting("train.patience", self.n_iter_no_change),
                         _core.setting("train.keep_best", True)]
        if init_path is not None:
            settings.append(_core.setting("model.init", init_path))
        for key, value in (self.settings or {}).items():
            settings.append(_core.setting(key, value))
        return settings

    def _split(self, X, y):
        if not self.early_stopping:
            return X, y, None, None
        stratify = y if isinstance(self, ClassifierMixin) else None
        X, Xv, y, yv = train_test_split(X, y, test_size=self.validation_fraction,
                                        random_state=int(self.seed) % 2**32,
                                        stratify=stratify)
        return X, y, Xv, yv

    def _fit(self, X, y):
        warm = self.warm_start and hasattr(self, "_weights")
        regress = self._loss == "mse"
        X, y = validate_data(self, X, y, dtype=np.float32, reset=not warm,
                             multi_output=regress, y_numeric=regress)
        y = self._encode(y, warm)
        Xt, yt, Xv, yv = self._split(X, y)
        with _core._Handles() as handles, _core._private_dir() as folder:
            init = None
            if warm:
                init = folder + "/init.h5"
                with open(init, "wb") as f:
                    f.write(self._weights)
            train = self._set(handles, "train", Xt, yt)
            valid = self._set(handles, "valid", Xv, yv) if Xv is not None else None
            run = _core.run_training(
                settings=self._config(self._outputs, init, valid is not None), train=train,
                valid=valid, output_dir=self.output_dir, use_best=valid is not None,
                name="fit")
        self._weights = run.weights
        self._network = _core.Network(run.weights, self.device, self.math)
        self.loss_curve_ = [row["train_loss"] for row in run.history]
        self.validation_scores_ = ([row["valid_acc" if self._loss == "cross_entropy"
                                        else "valid_loss"] for row in run.history]
                                   if valid is not None else None)
        self.n_iter_ = len(run.history)
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
        with open(path, "wb") as f:
            f.write(self._weights)

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


class FusenetClassifier(ClassifierMixin, _FusenetBase):
    """A classifier of fusenet blocks trained with softmax cross-entropy;
    any label values (numbers, strings), classes_ in sorted order."""

    _loss = "cross_entropy"

    def fit(self, X, y):
        return self._fit(X, y)

    def _encode(self, y, warm):
        check_classification_targets(y)
        classes, codes = np.unique(y, return_inverse=True)
        if warm and not np.array_equal(classes, self.classes_):
            raise ValueError("warm_start: y holds the classes %s, but the model was trained on "
                             "%s" % (list(classes), list(self.classes_)))
        self.classes_ = classes
        self._outputs = max(len(classes), 2)
        return codes.astype(np.int32)

    def _set(self, handles, name, X, y):
        return _core.memory_set(handles, name, X, labels=y)

    def predict(self, X):
        check_is_fitted(self, "_weights")
        return self.classes_[_core.argmax(self._outputs_of(X)[:, :len(self.classes_)])]

    def predict_proba(self, X):
        logits = self._outputs_of(X)
        if len(self.classes_) == 1:
            return np.ones((logits.shape[0], 1))
        return _core.softmax(logits)

    def predict_log_proba(self, X):
        with np.errstate(divide="ignore"):
            return np.log(self.predict_proba(X))

    @classmethod
    def from_weights(cls, path, classes=None, **params):
        """A classifier holding a weights file's model (from `train` or
        save_weights); classes: the labels of its outputs (0..out-1)."""
        self = cls(**params)
        with open(path, "rb") as f:
            self._weights = f.read()
        self._network = _core.Network(self._weights, self.device, self.math)
        out = self._network.out_features
        self.classes_ = np.arange(out) if classes is None else np.asarray(classes)
        self.n_features_in_ = self._network.in_features
        return self


class FusenetRegressor(RegressorMixin, _FusenetBase):
    """A regressor of fusenet blocks trained with the mean squared error;
    one target column or several."""

    _loss = "mse"

    def fit(self, X, y):
        return self._fit(X, y)

    def _encode(self, y, warm):
        y = np.asarray(y, dtype=np.float64)
        self._y_1d = y.ndim == 1
        y2 = y.reshape(len(y), -1).astype(np.float32)
        if warm and y2.shape[1] != self._outputs:
            raise ValueError("warm_start: y has %d columns, but the model was trained on %d"
                             % (y2.shape[1], self._outputs))
        self._outputs = y2.shape[1]
        return y2

    def _set(self, handles, name, X, y):
        return _core.memory_set(handles, name, X, targets=y)

    def predict(self, X):
        out = self._outputs_of(X).astype(np.float64)
        return out[:, 0] if getattr(self, "_y_1d", False) else out

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        return tags

    @classmethod
    def from_weights(cls, path, **params):
        """A regressor holding a weights file's model (from `train` or
        save_weights)."""
        self = cls(**params)
        with open(path, "rb") as f:
            self._weights = f.read()
        self._network = _core.Network(self._weights, self.device, self.math)
        self._outputs = self._network.out_features
        self._y_1d = self._outputs == 1
        self.n_features_in_ = self._network.in_features
        return self
