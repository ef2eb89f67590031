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

# scikit-learn's checks that a sample weight k is k repeated rows (and, in
# 1.2, that weights of 0 are rows removed, the rest shuffled) compare the
# models to float64's rtol 1e-7 and atol 1e-9: fusenet trains in float32,
# where the rows' other order or count rounds the sums otherwise. The same
# comparisons to float32's precision: test_sample_weight_is_repetition.
FLOAT32_TRAINING = ("float32 training: weights equal repeated or removed rows to float32's "
                    "precision, not float64's (test_sample_weight_is_repetition)")
SAMPLE_WEIGHT_CHECKS = {"check_sample_weights_list", "check_sample_weights_not_an_array",
                        "check_sample_weights_shape", "check_sample_weights_not_overwritten"}


@pytest.mark.parametrize("estimator", [
    fusenet.FusenetClassifier(device="cpu"), fusenet.FusenetRegressor(device="cpu"),
], ids=["classifier", "regressor"])
def test_check_estimator(estimator):
    # Through _sklearn_compat: scikit-learn 1.2's generator of checks or
    # the newest's check_estimator, whichever this environment has.
    from sklearn.utils import estimator_checks
    expected = {}
    if hasattr(estimator_checks, "check_sample_weight_equivalence_on_dense_data"):
        expected["check_sample_weight_equivalence_on_dense_data"] = FLOAT32_TRAINING
    elif isinstance(estimator, fusenet.FusenetRegressor):
        expected["check_sample_weights_invariance(kind=zeros)"] = FLOAT32_TRAINING
    failed, passed, skipped = check_estimator(estimator, expected)
    assert not failed
    # Only checks that skip themselves for a package this environment lacks (pandas under Debian's scikit-learn 1.2, the array
    # API's switch) or a method the estimators do not have, and those above.
    for name, why in skipped.items():
        assert re.search(
            r"not installed|SCIPY_ARRAY_API|decision_function|float32 training", why), (name, why)
    assert len(passed) > 30
    assert "check_fit2d_1sample" in passed and "check_supervised_y_2d" in passed
    # Predictions are the same bits in any batch, order or subset.
    assert {"check_methods_subset_invariance", "check_methods_sample_order_invariance"} <= passed
    # fit takes sample_weight: scikit-learn runs its sample-weight checks.
    assert SAMPLE_WEIGHT_CHECKS <= passed
    if hasattr(estimator_checks, "check_sample_weights_invariance"):
        assert "check_sample_weights_invariance" in passed  # kind=ones (and zeros: classifier)


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


# --- sample_weight ---------------------------------------------------------------

def _weighted_problem(seed=42, rows=15):
    """scikit-learn's own sample-weight problem: random X [15, 30], three
    classes, integer weights 0 to 4, and the rows repeated by them."""
    rng = np.random.RandomState(seed)
    X = rng.rand(rows, rows * 2)
    y = rng.randint(0, 3, size=rows)
    w = rng.randint(0, 5, size=rows)
    return X, y, w, X.repeat(w, axis=0), y.repeat(w)


@pytest.mark.parametrize("make", [fusenet.FusenetClassifier, fusenet.FusenetRegressor],
                         ids=["classifier", "regressor"])
def test_sample_weight_is_repetition(make):
    # An integer weight k trains as the row repeated k times, a weight of 0
    # as the row left out, to float32's precision: the batches' sums differ
    # in order and count only (one batch here: batch_size 64 > 30 rows).
    X, y, w, Xr, yr = _weighted_problem()
    a = make(device="cpu", epochs=50).fit(Xr, yr)
    b = make(device="cpu", epochs=50).fit(X, y, sample_weight=w)
    out = "predict_proba" if make is fusenet.FusenetClassifier else "predict"
    # float32 training: sklearn's own check sees differences of 6e-8 (of
    # probabilities near 1) to 5e-7 (of values near 2), a few roundings;
    # 1e-5 leaves room for other platforms' exp and log.
    np.testing.assert_allclose(getattr(b, out)(X), getattr(a, out)(X), rtol=1e-5, atol=1e-6)
    # Not so without the weights: the test can tell.
    c = make(device="cpu", epochs=50).fit(X, y)
    assert np.abs(getattr(c, out)(X) - getattr(a, out)(X)).max() > 1e-3


def test_sample_weight_ones_and_zeros_exact():
    # Weights of 1: the unweighted model bit for bit; rows of weight 0: the
    # model of the other rows alone, bit for bit (they are left out).
    X, Xt, y, yt = _digits()
    base = fusenet.FusenetClassifier(device="cpu", epochs=3).fit(X, y)
    ones = fusenet.FusenetClassifier(device="cpu", epochs=3).fit(
        X, y, sample_weight=np.ones(len(y)))
    assert np.array_equal(base.predict_proba(Xt), ones.predict_proba(Xt))
    w = np.r_[np.ones(len(y)), np.zeros(50)]
    zeros = fusenet.FusenetClassifier(device="cpu", epochs=3).fit(
        np.r_[X, X[:50] + 3], np.r_[y, (y[:50] + 1) % 10], sample_weight=w)
    assert np.array_equal(base.predict_proba(Xt), zeros.predict_proba(Xt))


def test_sample_weight_changes_the_fit_and_validation():
    # Weights that favour one class move the predictions towards it; with
    # early_stopping the validation rows keep their weights.
    X, Xt, y, yt = _digits()
    w = np.where(y == 3, 20.0, 1.0)
    plain = fusenet.FusenetClassifier(device="cpu", epochs=3, random_state=0).fit(X, y)
    heavy = fusenet.FusenetClassifier(device="cpu", epochs=3, random_state=0).fit(
        X, y, sample_weight=w)
    assert (heavy.predict(Xt) == 3).sum() > (plain.predict(Xt) == 3).sum()
    reg = fusenet.FusenetRegressor(device="cpu", epochs=3, early_stopping=True)
    reg.fit(X, y.astype(float), sample_weight=np.linspace(0.5, 2, len(y)))
    assert len(reg.validation_scores_) == reg.n_iter_
    part = fusenet.FusenetRegressor(device="cpu").partial_fit(X, y.astype(float),
                                                                 sample_weight=w)
    assert part.n_iter_ == 1


@pytest.mark.parametrize("weights, match", [
    (lambda n: -np.ones(n), r"sample_weight\[0\] is -1.0: expected finite numbers >= 0"),
    (lambda n: np.r_[np.ones(n - 1), np.nan], r"sample_weight\[\d+\] is nan"),
    (lambda n: np.r_[np.ones(n - 1), np.inf], r"sample_weight\[\d+\] is inf"),
    (lambda n: np.zeros(n), r"sample_weight: every weight is zero"),
    (lambda n: np.ones(n + 1), r"sample_weight has shape \(\d+,\), expected"),
], ids=["negative", "nan", "inf", "zeros", "shape"])
def test_bad_sample_weight_refused(weights, match):
    X, _, y, _ = _digits()
    with pytest.raises(ValueError, match=match):
        fusenet.FusenetClassifier(device="cpu", epochs=1).fit(X, y, sample_weight=weights(len(y)))


def test_sample_weight_on_a_gpu_refused(monkeypatch):
    # The losses' GPU kernels take no per-row weights: refused before any
    # training, naming the parameter and the device that takes them.
    # (Simulated: this machine may have no GPU.)
    from fusenet import _core
    monkeypatch.setattr(_core, "_device", lambda text: (_core._lib.DEVICE_CUDA, 0))
    X, _, y, _ = _digits()
    clf = fusenet.FusenetClassifier(device="cuda", epochs=1)
    with pytest.raises(ValueError, match=r'sample_weight: .*CPU only.*device="cpu"'):
        clf.fit(X, y, sample_weight=np.linspace(1, 2, len(y)))


def test_weighted_loss_is_torchs():
    # The training and validation losses a fit reports are PyTorch's
    # reduction="none" losses summed with the weights over sum(w) * columns.
    # lr 1e-30 leaves the initial weights as they are (an update of ~1e-30
    # is below float32's resolution of any weight), so the model after the
    # one epoch gives the predictions the losses were taken on; one batch
    # (batch_size above the rows).
    torch = pytest.importorskip("torch")
    from sklearn.model_selection import train_test_split as split
    rng = np.random.RandomState(3)
    X = rng.rand(120, 6)
    y = np.c_[X[:, 0] * 3 - X[:, 1], X[:, 2] + 0.5]
    w = rng.rand(120) * 3 + 0.1
    reg = fusenet.FusenetRegressor(device="cpu", epochs=1, lr=1e-30, batch_size=512,
                                   early_stopping=True, random_state=7, standardize=False)
    reg.fit(X, y, sample_weight=w)
    Xt, Xv, yt, yv, wt, wv = split(X, y, w, test_size=0.1, random_state=7)

    def torch_loss(Xs, ys, ws):
        p = torch.tensor(reg.predict(Xs.astype(np.float32)), dtype=torch.float64)
        t = torch.tensor(ys.astype(np.float32), dtype=torch.float64)
        ww = torch.tensor(ws.astype(np.float32), dtype=torch.float64)
        none = torch.nn.functional.mse_loss(p, t, reduction="none")
        return float((ww[:, None] * none).sum() / (ww.sum() * t.shape[1]))
    # float32 values of float64 means: one rounding each (1e-6 is 8 ulps)
    np.testing.assert_allclose(reg.loss_curve_[0], torch_loss(Xt, yt, wt), rtol=1e-6)
    np.testing.assert_allclose(reg.validation_scores_[0], torch_loss(Xv, yv, wv), rtol=1e-6)
    # ... which the unweighted mean is not.
    assert abs(torch_loss(Xv, yv, np.ones(len(wv))) - reg.validation_scores_[0]) > 1e-4


def test_weighted_cross_entropy_with_class_weight_is_torchs():
    # class_weight and sample_weight multiply, as PyTorch's reduction="none"
    # loss with weight=cw times w, summed, over sum(w * cw[y]); the first
    # epoch's training loss of one batch at the initial weights (lr 1e-30,
    # as above), the log-probabilities from predict_proba.
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    rng = np.random.RandomState(5)
    X = rng.rand(90, 5)
    y = rng.randint(0, 3, size=90)
    w = rng.rand(90) * 2 + 0.2
    cw = {0: 1.0, 1: 3.0, 2: 0.5}
    clf = fusenet.FusenetClassifier(device="cpu", epochs=1, lr=1e-30, batch_size=512,
                                    class_weight=cw, random_state=2)
    clf.fit(X, y, sample_weight=w)
    logp = torch.log(torch.tensor(clf.predict_proba(X.astype(np.float32)), dtype=torch.float64))
    t, ww = torch.tensor(y), torch.tensor(w.astype(np.float32), dtype=torch.float64)
    cwt = torch.tensor([cw[0], cw[1], cw[2]], dtype=torch.float64)
    none = F.nll_loss(logp, t, weight=cwt, reduction="none")  # = cross_entropy's
    want = float((ww * none).sum() / (ww * cwt[t]).sum())
    # probabilities in float32 (their logs to ~1e-7 relative), one float32
    # rounding of the library's float64 mean: 1e-5 leaves room for both
    np.testing.assert_allclose(clf.loss_curve_[0], want, rtol=1e-5)
    # ... which neither weight alone gives.
    assert abs(float((ww * none / cwt[t]).sum() / ww.sum()) - want) > 1e-4
    assert abs(float(none.sum() / cwt[t].sum()) - want) > 1e-4
