"""test_estimators.py — FusenetClassifier and FusenetRegressor: scikit-learn's
own check_estimator, labels of any kind, pandas and integer inputs, pickling,
warm starts, early stopping, the library's errors as exceptions, no files
left behind, and the weights file shared with `train` and `predict`."""
import os
import pickle
import re
import subprocess

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import load_digits, make_classification, make_regression
from sklearn.model_selection import train_test_split

import fusenet
from fusenet._sklearn_compat import check_estimator

@pytest.mark.parametrize("estimator", [
    fusenet.FusenetClassifier(device="cpu"), fusenet.FusenetRegressor(device="cpu"),
], ids=["classifier", "regressor"])
def test_check_estimator(estimator):
    # Through _sklearn_compat: scikit-learn 1.2's generator of checks or
    # the newest's check_estimator, whichever this environment has.
    failed, passed, skipped = check_estimator(estimator, {})
    assert not failed
    # Only checks that skip themselves for a package this environment lacks (pandas under Debian's scikit-learn 1.2, the array
    # API's switch) or a method the estimators do not have.
    for name, why in skipped.items():
        assert re.search(
            r"not installed|SCIPY_ARRAY_API|decision_function", why), (name, why)
    assert len(passed) > 30
    assert "check_fit2d_1sample" in passed and "check_supervised_y_2d" in passed
    # Predictions are the same bits in any batch, order or subset.
    assert {"check_methods_subset_invariance", "check_methods_sample_order_invariance"} <= passed


def _digits():
    X, y = load_digits(return_X_y=True)
    return train_test_split(X, y, test_size=0.25, random_state=0)


def test_string_labels_pandas_and_integer_inputs():
    pd = pytest.importorskip("pandas")
    X, Xt, y, yt = _digits()
    names = np.array(["zero", "one", "two", "three", "four", "five", "six", "seven", "eight",
                      "nine"])
    frame = pd.DataFrame(X.astype(np.int16), columns=["p%d" % i for i in range(64)])
    clf = fusenet.FusenetClassifier(epochs=10, device="cpu").fit(frame, names[y])
    assert list(clf.classes_) == sorted(names)
    assert clf.n_features_in_ == 64
    assert list(clf.feature_names_in_) == list(frame.columns)
    assert clf.score(pd.DataFrame(Xt.astype(np.int16), columns=frame.columns), names[yt]) > 0.9
    proba = clf.predict_proba(Xt.astype(np.uint8))
    assert proba.shape == (len(Xt), 10)
    np.testing.assert_allclose(proba.sum(axis=1), 1, atol=1e-6)
    assert (clf.classes_[proba.argmax(axis=1)] == clf.predict(Xt)).all()


def test_same_seed_same_model_any_input_dtype():
    X, _, y, _ = _digits()
    a = fusenet.FusenetClassifier(epochs=3, device="cpu").fit(X, y)
    b = fusenet.FusenetClassifier(epochs=3, device="cpu").fit(X.astype(np.int64), y + 10)
    np.testing.assert_array_equal(a._outputs_of(X), b._outputs_of(X))
    c = fusenet.FusenetClassifier(epochs=3, device="cpu", random_state=2).fit(X, y)
    assert (a._outputs_of(X) != c._outputs_of(X)).any()


def test_pickle_holds_the_model():
    X, Xt, y, _ = _digits()
    clf = fusenet.FusenetClassifier(epochs=3, device="cpu").fit(X, y)
    data = pickle.dumps(clf)
    assert clf._weights in data  # the weights file's bytes themselves
    back = pickle.loads(data)
    np.testing.assert_array_equal(back.predict_proba(Xt), clf.predict_proba(Xt))
    params = clone(clf).get_params()
    assert params == clf.get_params()
    assert not hasattr(clone(clf), "classes_")


def test_regressor_multi_output():
    X, y = make_regression(n_samples=400, n_features=8, n_targets=3, noise=0.1, random_state=0)
    reg = fusenet.FusenetRegressor(epochs=60, device="cpu").fit(X, y / 100)
    assert reg.predict(X).shape == (400, 3)
    assert reg.score(X, y / 100) > 0.9
    one = fusenet.FusenetRegressor(epochs=5, device="cpu").fit(X, y[:, 0] / 100)
    assert one.predict(X).shape == (400,)


def test_warm_start_continues_from_the_weights():
    X, _, y, _ = _digits()
    cold = fusenet.FusenetClassifier(epochs=2, device="cpu").fit(X, y)
    warm = clone(cold).set_params(warm_start=True).fit(X, y)
    first = warm.loss_curve_[0]
    warm.fit(X, y)  # starts from the 2 epochs before
    assert warm.loss_curve_[0] < first / 2
    assert clone(cold).set_params(warm_start=True).fit(X, y).loss_curve_[0] == first
    with pytest.raises(ValueError, match="warm_start: y holds the classes"):
        warm.fit(X[y < 5], y[y < 5])


def test_early_stopping_keeps_the_best_epoch():
    X, _, y, _ = _digits()
    clf = fusenet.FusenetClassifier(epochs=200, early_stopping=True, n_iter_no_change=3,
                                    validation_fraction=0.2, lr=0.01, device="cpu").fit(X, y)
    scores = clf.validation_scores_
    assert clf.n_iter_ < 200 and len(scores) == clf.n_iter_
    best = int(np.argmax(scores))
    assert clf.n_iter_ == best + 1 + 3  # patience ran out 3 epochs after the best
    # The held-out rows, split as fit splits them: the kept model scores the best.
    _, Xv, _, yv = train_test_split(X.astype(np.float32), y, test_size=0.2, random_state=1,
                                    stratify=y)
    assert clf.score(Xv, yv) == pytest.approx(max(scores), abs=1e-12)


def test_library_errors_arrive_with_their_message():
    # The library's message, with the setting named as the caller named it.
    X, y = make_classification(n_samples=50, random_state=0)
    with pytest.raises(fusenet.FusenetError,
                       match=r"^groups=7: groups 7 does not divide the width 30"):
        fusenet.FusenetClassifier(layers=(30,), groups=7, device="cpu").fit(X, y)
    with pytest.raises(fusenet.FusenetValueError, match=r"^lr='fast': expected a number"):
        fusenet.FusenetClassifier(lr="fast", device="cpu").fit(X, y)
    with pytest.raises(fusenet.FusenetValueError,
                       match=r"^settings=\{'train.clip_grad_norm': -1\}: -1 is out of range"):
        fusenet.FusenetClassifier(settings={"train.clip_grad_norm": -1}, device="cpu").fit(X, y)
    with pytest.raises(ValueError):
        fusenet.FusenetClassifier(optimizer="nadam", device="cpu").fit(X, y)


def test_fit_writes_no_file(private_tmp):
    work, temp = private_tmp
    X, _, y, _ = _digits()
    clf = fusenet.FusenetClassifier(epochs=2, device="cpu", early_stopping=True).fit(X, y)
    pickle.loads(pickle.dumps(clf)).predict(X)
    assert os.listdir(work) == [] and os.listdir(temp) == []
    assert clf.weights_path_ is None


def test_output_dir_keeps_the_run(private_tmp):
    work, _ = private_tmp
    X, _, y, _ = _digits()
    clf = fusenet.FusenetClassifier(epochs=2, device="cpu", output_dir="run").fit(X, y)
    assert sorted(os.listdir(work / "run")) == ["checkpoint.h5", "metrics.csv", "weights.h5"]
    assert open(work / "run" / "weights.h5", "rb").read() == clf._weights


def _predict_cli(build_dir, weights, X, folder):
    h5py = pytest.importorskip("h5py")
    inputs, out = os.path.join(folder, "inputs.h5"), os.path.join(folder, "out.h5")
    with h5py.File(inputs, "w") as f:
        f["X"] = X.astype(np.float32)
    # One batch of every row, as the package's (up to 1024 rows): the same
    # products, so the same bits.
    subprocess.run([os.path.join(build_dir, "predict"), weights, inputs, out, "--device", "cpu",
                    "--batch", "1024"], check=True, capture_output=True)
    with h5py.File(out, "r") as f:
        return f["outputs"][...]


def test_weights_file_shared_with_train_and_predict(build_dir, source_dir, tmp_path):
    X, Xt, y, _ = _digits()
    # Python to predict: the file save_weights writes, predict's outputs.
    clf = fusenet.FusenetClassifier(epochs=3, device="cpu").fit(X, y)
    clf.save_weights(tmp_path / "py.h5")
    outputs = _predict_cli(build_dir, str(tmp_path / "py.h5"), Xt, str(tmp_path))
    np.testing.assert_array_equal(outputs, clf._outputs_of(Xt))
    assert (clf.predict(Xt) == outputs.argmax(axis=1)).all()
    # train to Python: a config's run read back by from_weights and load.
    config = os.path.join(source_dir, "data", "example.ini")
    subprocess.run([os.path.join(build_dir, "train"), config, "--set", "train.epochs=1",
                    "--set", "output.dir=%s" % (tmp_path / "cli"), "--set",
                    "train.checkpoint_every=0"], check=True, capture_output=True)
    weights = str(tmp_path / "cli" / "weights.h5")
    expected = _predict_cli(build_dir, weights, Xt, str(tmp_path))
    back = fusenet.FusenetClassifier.from_weights(weights, device="cpu")
    np.testing.assert_array_equal(back._outputs_of(Xt), expected)
    assert (fusenet.load(weights, device="cpu").predict(Xt) == expected.argmax(axis=1)).all()
