"""estimators.py — scikit-learn's estimator interface over the library:
FusenetClassifier and FusenetRegressor (their shared part:
_estimator_base.py). fit trains in-process through the library's trainer
on memory sets made from the arrays (nothing written unless output_dir is
given: the run's files go to a temporary folder, removed before fit
returns); predict runs fn_infer on the network built from the model's
weights file bytes, which are also what a pickle holds and what
save_weights writes. Works with scikit-learn 1.2 to the newest
(_sklearn_compat.py).

early_stopping holds out validation_fraction of the rows (split as
scikit-learn's MLP does) as the validation set and sets [train] patience
= n_iter_no_change and keep_best, so the model kept is the best epoch's.
partial_fit trains one epoch over the rows it is given, from the model so
far (its optimiser state starts afresh each call).
"""
import numpy as np

# First: without scikit-learn, its ImportError names the extra to install.
from ._sklearn_compat import validate_data
from sklearn.base import ClassifierMixin, RegressorMixin
from sklearn.utils.class_weight import compute_class_weight
from sklearn.utils.multiclass import check_classification_targets, type_of_target

from . import _core
from ._estimator_base import FusenetBase, _layers_text  # noqa: F401 - _layers_text: tests
from ._model import sigmoid


def _classes_of(classes, out, where):
    """The labels of a model's outputs: 0..out-1, or classes (one each)."""
    if classes is None:
        return np.arange(out)
    classes = np.asarray(classes)
    if classes.ndim != 1 or len(classes) != out:
        raise ValueError("%s: classes has %d labels, but the model has %d outputs: give one "
                         "label per output, in the outputs' order"
                         % (where, classes.size, out))
    return classes


class FusenetClassifier(ClassifierMixin, FusenetBase):
    """A classifier of fusenet blocks: softmax cross-entropy over classes of
    any label values (numbers, strings; classes_ in sorted order), or, for
    a 0/1 matrix y (multi-label), bce_with_logits with one output per
    column. class_weight: None, "balanced" or {label: weight}."""

    _loss = "cross_entropy"
    _stratify = True

    def __init__(self, layers=(64, 64), groups="auto", eps=1e-5, negative_slope=0.01,
                 optimizer="adam", lr=0.001, momentum=0.0, weight_decay=0.0,
                 schedule="constant", epochs=200, batch_size=64, random_state=1,
                 standardize=True, device="auto", math="fp32", warm_start=False,
                 early_stopping=False, validation_fraction=0.1, n_iter_no_change=10,
                 output_dir=None, overwrite=False, verbose=0, settings=None, class_weight=None):
        super().__init__(layers, groups, eps, negative_slope, optimizer, lr, momentum,
                         weight_decay, schedule, epochs, batch_size, random_state, standardize,
                         device, math, warm_start, early_stopping, validation_fraction,
                         n_iter_no_change, output_dir, overwrite, verbose, settings)
        self.class_weight = class_weight

    def fit(self, X, y, sample_weight=None):
        """Trains on X, y; sample_weight [N] (optional): each row's weight
        in the loss, sum(w l) / sum(w) (docs/python.md)."""
        return self._run(X, y, sample_weight=sample_weight)

    def partial_fit(self, X, y, classes=None, sample_weight=None):
        """One epoch over these rows from the model so far; the first call
        fixes the labels (classes, as scikit-learn's SGD estimators take
        them; a 0/1 matrix y needs none)."""
        if not hasattr(self, "_weights"):
            if classes is None and type_of_target(y) != "multilabel-indicator":
                raise ValueError("partial_fit: the first call needs classes=, every label y "
                                 "will hold (later calls keep them)")
            self._partial_classes = None if classes is None else np.unique(classes)
        return self._run(X, y, partial=True, sample_weight=sample_weight)

    def _fusenet_tags(self):
        return {"multilabel": True}

    def _validate(self, X, y, reset):
        # A column y [N, 1] is one label per row (raveled with scikit-learn's
        # warning); a matrix of several columns, multi-label.
        shape = y.shape if hasattr(y, "shape") else np.asarray(y).shape
        several = len(shape) == 2 and shape[1] > 1
        return validate_data(self, X, y, dtype=np.float32, reset=reset, multi_output=several)

    def _loss_settings(self, y, partial, keep):
        multilabel = type_of_target(y) == "multilabel-indicator"
        if multilabel:
            if self.class_weight is not None:
                raise ValueError("class_weight applies to one label per row; y is a 0/1 "
                                 "matrix (multi-label)")
            return "bce_with_logits", [], {}
        if self.class_weight is None:
            return "cross_entropy", [], {}
        if partial and isinstance(self.class_weight, str):
            raise ValueError("partial_fit: class_weight=%r needs every row at once; give a "
                             "dict {label: weight}" % (self.class_weight,))
        check_classification_targets(y)
        classes = self._labels_for(y, keep)
        weights = compute_class_weight(self.class_weight, classes=classes, y=y)
        weights = list(weights) + [1.0] * (max(len(classes), 2) - len(classes))
        assignment = _core.setting("train.class_weights", [float(w) for w in weights])
        return "cross_entropy", [assignment], {assignment: "class_weight=%r" %
                                               (self.class_weight,)}

    def _labels_for(self, y, keep):
        """The labels the model's outputs stand for after this call."""
        if keep:
            return self.classes_
        given = getattr(self, "_partial_classes", None)
        return given if given is not None else np.unique(y)

    def _encode(self, y, keep, partial):
        self._partial_classes = getattr(self, "_partial_classes", None)
        if type_of_target(y) == "multilabel-indicator":
            return self._encode_multilabel(np.asarray(y), keep)
        check_classification_targets(y)
        classes = self._labels_for(y, keep)
        if keep and not partial and not np.array_equal(np.unique(y), classes):
            raise ValueError("warm_start: y holds the classes %s, but the model was trained on "
                             "%s" % (list(np.unique(y)), list(classes)))
        unknown = np.setdiff1d(np.unique(y), classes)
        if len(unknown):
            raise ValueError("y holds the labels %s, which the model's classes %s lack"
                             % (list(unknown), list(classes)))
        self.classes_, self._multilabel = classes, False
        self._outputs = max(len(classes), 2)
        return np.searchsorted(classes, y).astype(np.int32)

    def _encode_multilabel(self, y, keep):
        if keep and (not getattr(self, "_multilabel", False) or y.shape[1] != self._outputs):
            raise ValueError("y has %d label columns, but the model was trained on %s"
                             % (y.shape[1], "%d" % self._outputs
                                if getattr(self, "_multilabel", False)
                                else "one label per row"))
        self.classes_, self._multilabel = np.arange(y.shape[1]), True
        self._outputs = y.shape[1]
        return y.astype(np.float32)

    def _set(self, handles, name, X, y, w=None):
        if y.ndim == 2:
            return _core.memory_set(handles, name, X, targets=y, weights=w)
        return _core.memory_set(handles, name, X, labels=y, weights=w)

    def predict(self, X):
        outputs = self._outputs_of(X)
        if getattr(self, "_multilabel", False):
            return (outputs > 0).astype(np.int64)
        return self.classes_[_core.argmax(outputs[:, :len(self.classes_)])]

    def predict_proba(self, X):
        logits = self._outputs_of(X)
        if getattr(self, "_multilabel", False):
            return sigmoid(logits)
        if len(self.classes_) == 1:
            return np.ones((logits.shape[0], 1))
        return _core.softmax(logits)

    def predict_log_proba(self, X):
        with np.errstate(divide="ignore"):
            return np.log(self.predict_proba(X))

    @classmethod
    def from_weights(cls, path, classes=None, **params):
        """A classifier holding a weights file's model (from `train` or
        save_weights); classes: the labels of its outputs (0..out-1), one
        per output."""
        self = cls(**params)
        task = self._read_weights(path)
        if not task.labels and not task.multilabel:
            raise ValueError("%s: the network predicts values (it was trained with loss %s): "
                             "read it with FusenetRegressor.from_weights" % (path, task.loss))
        self._multilabel = task.multilabel
        self._outputs = self._network.out_features
        self.classes_ = _classes_of(classes, self._outputs, "from_weights(%s)" % (path,))
        return self


class FusenetRegressor(RegressorMixin, FusenetBase):
    """A regressor of fusenet blocks trained with the mean squared error;
    one target column or several."""

    _loss = "mse"

    def fit(self, X, y, sample_weight=None):
        """Trains on X, y; sample_weight [N] (optional): each row's weight
        in the loss, sum(w l) / sum(w) (docs/python.md)."""
        return self._run(X, y, sample_weight=sample_weight)

    def partial_fit(self, X, y, sample_weight=None):
        """One epoch over these rows from the model so far."""
        return self._run(X, y, partial=True, sample_weight=sample_weight)

    def _fusenet_tags(self):
        return {"multioutput": True}

    def _encode(self, y, keep, partial):
        y = np.asarray(y, dtype=np.float64)
        y2 = y.reshape(len(y), -1).astype(np.float32)
        if keep and y2.shape[1] != self._outputs:
            raise ValueError("y has %d columns, but the model was trained on %d"
                             % (y2.shape[1], self._outputs))
        self._y_1d = y.ndim == 1
        self._outputs = y2.shape[1]
        return y2

    def _set(self, handles, name, X, y, w=None):
        return _core.memory_set(handles, name, X, targets=y, weights=w)

    def predict(self, X):
        out = self._outputs_of(X).astype(np.float64)
        return out[:, 0] if getattr(self, "_y_1d", False) else out

    @classmethod
    def from_weights(cls, path, **params):
        """A regressor holding a weights file's model (from `train` or
        save_weights)."""
        self = cls(**params)
        task = self._read_weights(path)
        if task.labels:
            raise ValueError("%s: the network predicts classes (it was trained with loss %s): "
                             "read it with FusenetClassifier.from_weights" % (path, task.loss))
        self._outputs = self._network.out_features
        self._y_1d = self._outputs == 1
        return self
