"""test_conventions.py — the estimators' scikit-learn conventions and the
safety of what they write and read: random_state, verbose, class_weight,
partial_fit, multi-label y, groups="auto" (any width trains), an earlier
run's files kept unless overwrite=True, saves renamed into place, predictions in the targets' own
units after standardize_targets, from_weights' classes and messages that
name the user's file."""
import os
import pickle
import re
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import load_digits, make_multilabel_classification, make_regression

import fusenet


def _digits(n=600):
    X, y = load_digits(return_X_y=True)
    return X[:n], y[:n]


def test_random_state_as_scikit_learn_takes_it():
    X, y = _digits()
    fit = lambda rs: fusenet.FusenetClassifier(epochs=2, device="cpu", random_state=rs).fit(X, y)
    a, b = fit(3), fit(np.random.RandomState(0))
    np.testing.assert_array_equal(a._outputs_of(X), fit(3)._outputs_of(X))
    np.testing.assert_array_equal(b._outputs_of(X), fit(np.random.RandomState(0))._outputs_of(X))
    assert (a._outputs_of(X) != fit(4)._outputs_of(X)).any()


def test_any_width_trains_with_groups_auto(capfd):
    # scikit-learn's default width 100 and a width 8 does not divide: each
    # block takes the largest divisor of its width up to 8, as the summary
    # verbose prints says.
    X, y = _digits()
    clf = fusenet.FusenetClassifier(layers=(100, 30), epochs=5, device="cpu", verbose=1)
    assert clf.get_params()["groups"] == "auto"
    assert clf.fit(X, y).score(X, y) > 0.8
    err = capfd.readouterr().err
    assert "libfusenet %s" % fusenet.__version__ in err and fusenet._lib.library_path in err
    assert re.search(r"\n0 +block +64 -> 100 +5 +6700\n", err)
    assert re.search(r"\n1 +block +100 -> 30 +6 +3090\n", err)
    assert "epoch 5/5: train loss" in err
    clf.set_params(verbose=0).fit(X, y)
    assert capfd.readouterr().err == ""


def test_multilabel_predict_proba_is_a_sigmoid_without_overflow(monkeypatch):
    # Each output's probability on its own (the labels are independent),
    # for logits of any size: -1e4 gives 0 without numpy's overflow
    # warning, which a caller running with warnings as errors would get.
    X, Y = make_multilabel_classification(n_samples=100, n_features=8, n_classes=5,
                                          random_state=0)
    clf = fusenet.FusenetClassifier(layers=(16,), epochs=1, device="cpu").fit(X, Y)
    logits = np.array([[-1e4, -20, 0, 20, 1e4]], dtype=np.float32)
    monkeypatch.setattr(clf, "_outputs_of", lambda X: logits)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        proba = clf.predict_proba(X[:1])
    e = np.exp(-20.0)
    np.testing.assert_allclose(proba, [[0, e / (1 + e), 0.5, 1 / (1 + e), 1]], rtol=1e-15,
                               atol=0)


def test_class_weight_balanced_and_dict():
    X, y = _digits()
    keep = np.isin(y, [0, 1])
    X, y = np.vstack([X[keep & (y == 0)], X[keep & (y == 1)][:10]]), \
        np.r_[y[keep & (y == 0)], y[keep & (y == 1)][:10]]
    plain = fusenet.FusenetClassifier(epochs=1, lr=0.01, device="cpu").fit(X, y)
    balanced = clone(plain).set_params(class_weight="balanced").fit(X, y)
    # The rare class weighs more: its rows pull the first epoch's mean
    # loss, and so the model, away from the plain run's.
    assert balanced.loss_curve_[0] != plain.loss_curve_[0]
    same = clone(plain).set_params(class_weight={0: 1.0, 1: 1.0}).fit(X, y)
    np.testing.assert_array_equal(same._outputs_of(X), plain._outputs_of(X))
    with pytest.raises(fusenet.FusenetValueError, match=r"^class_weight=\{0: -1"):
        clone(plain).set_params(class_weight={0: -1.0, 1: 1.0}).fit(X, y)


def test_partial_fit_one_epoch_classes_fixed_by_the_first_call():
    X, y = _digits()
    clf = fusenet.FusenetClassifier(device="cpu", lr=0.01)
    with pytest.raises(ValueError, match="the first call needs classes="):
        clf.partial_fit(X, y)
    clf.partial_fit(X[y < 5], y[y < 5], classes=np.arange(10))
    assert list(clf.classes_) == list(range(10)) and clf.n_iter_ == 1
    assert clf._network.out_features == 10
    first = clf.loss_curve_[0]
    for _ in range(4):
        clf.partial_fit(X, y)
    assert clf.n_iter_ == 5 and len(clf.loss_curve_) == 5 and clf.loss_curve_[-1] < first
    assert clf.score(X, y) > 0.8
    with pytest.raises(ValueError, match=r"labels \[42\]"):
        clf.partial_fit(X[:3], [1, 2, 42])
    reg = fusenet.FusenetRegressor(device="cpu").partial_fit(X, y.astype(float))
    assert reg.n_iter_ == 1 and reg.predict(X).shape == (len(X),)


def test_multilabel_y_trains_with_bce_with_logits():
    X, Y = make_multilabel_classification(n_samples=400, n_features=20, n_classes=5,
                                          random_state=0)
    clf = fusenet.FusenetClassifier(epochs=40, device="cpu").fit(X, Y)
    assert list(clf.classes_) == [0, 1, 2, 3, 4]
    pred = clf.predict(X)
    assert pred.shape == Y.shape and set(np.unique(pred)) <= {0, 1}
    assert (pred == Y).mean() > 0.85
    proba = clf.predict_proba(X)
    assert proba.shape == Y.shape and ((proba > 0.5) == pred).all()
    stopped = fusenet.FusenetClassifier(epochs=200, early_stopping=True, n_iter_no_change=3,
                                        device="cpu").fit(X, Y)  # no stratified split here
    assert stopped.n_iter_ < 200 and len(stopped.validation_scores_) == stopped.n_iter_
    path = "%s/ml.h5" % os.environ.get("TMPDIR", "/tmp")
    clf.save_weights(path)
    try:
        model = fusenet.load(path)
        assert model.loss == "bce_with_logits" and model.task == "multilabel"
        np.testing.assert_array_equal(model.predict(X), pred)
    finally:
        os.remove(path)


def test_an_earlier_run_is_kept_unless_overwrite(private_tmp, source_dir):
    work, _ = private_tmp
    X, y = _digits()
    clf = fusenet.FusenetClassifier(epochs=1, device="cpu", output_dir="out").fit(X, y)
    before = {name: open(work / "out" / name, "rb").read() for name in os.listdir(work / "out")}
    with pytest.raises(fusenet.FusenetValueError,
                       match="holds another run's weights.h5, checkpoint.h5, metrics.csv; pass "
                             "overwrite=True to replace them"):
        clone(clf).set_params(random_state=2).fit(X, y)
    assert {n: open(work / "out" / n, "rb").read() for n in os.listdir(work / "out")} == before
    again = clone(clf).set_params(random_state=2, overwrite=True).fit(X, y)
    assert open(work / "out" / "weights.h5", "rb").read() == again._weights != before["weights.h5"]
    # fusenet.train: the same refusal, and overwrite=True.
    config = os.path.join(source_dir, "data", "example.ini")
    sets = {"output.dir": str(work / "out"), "train.epochs": 1}
    with pytest.raises(fusenet.FusenetValueError, match="pass overwrite=True"):
        fusenet.train(config, **sets)
    fusenet.train(config, overwrite=True, **sets)


def test_standardized_targets_predict_in_the_targets_units():
    X, y = make_regression(n_samples=300, n_features=6, noise=1.0, random_state=0)
    y = 178 + 5 * y / y.std()
    reg = fusenet.FusenetRegressor(epochs=60, device="cpu",
                                   settings={"data.standardize_targets": True}).fit(X, y)
    assert abs(reg.predict(X).mean() - 178) < 1
    assert reg.score(X, y) > 0.9
    back = pickle.loads(pickle.dumps(reg))
    np.testing.assert_array_equal(back.predict(X), reg.predict(X))


def test_task_from_the_library_huber_is_a_regression(tmp_path):
    X, y = make_regression(n_samples=200, n_features=4, random_state=0)
    reg = fusenet.FusenetRegressor(epochs=3, device="cpu",
                                   settings={"train.loss": "huber"}).fit(X, y / 100)
    reg.save_weights(tmp_path / "huber.h5")
    model = fusenet.load(tmp_path / "huber.h5", device="cpu")
    assert model.task == "regress" and model.loss == "huber"
    assert model.predict(X).dtype == np.float32
    np.testing.assert_array_equal(model.predict(X)[:, 0], reg.predict(X).astype(np.float32))
    with pytest.raises(ValueError, match="huber.h5: the network predicts values"):
        fusenet.FusenetClassifier.from_weights(tmp_path / "huber.h5")


def test_from_weights_refuses_classes_of_another_length(tmp_path):
    X, y = _digits()
    fusenet.FusenetClassifier(epochs=1, device="cpu").fit(X, y).save_weights(tmp_path / "w.h5")
    with pytest.raises(ValueError, match="classes has 3 labels, but the model has 10 outputs"):
        fusenet.FusenetClassifier.from_weights(tmp_path / "w.h5", classes=["a", "b", "c"])
    names = ["c%d" % i for i in range(10)]
    clf = fusenet.FusenetClassifier.from_weights(tmp_path / "w.h5", classes=names)
    assert set(clf.predict(X)) <= set(names)


def test_saves_are_renamed_into_place(tmp_path):
    """save_weights and Model.save write a temporary of their own and rename
    it: an earlier file at the path is replaced, never rewritten in place
    (its other name keeps it), a link there is replaced, not written
    through, and a file at "<path>.tmp" is not theirs to touch."""
    X, y = _digits()
    clf = fusenet.FusenetClassifier(epochs=1, device="cpu").fit(X, y)
    path, victim = tmp_path / "w.h5", tmp_path / "victim.txt"
    path.write_bytes(b"an earlier file")
    os.link(path, tmp_path / "earlier.h5")
    (tmp_path / "w.h5.tmp").write_bytes(b"the user's")
    clf.save_weights(path)
    victim.write_bytes(b"the user's own")
    os.symlink(victim, tmp_path / "m.h5")
    fusenet.load(path, device="cpu").save(tmp_path / "m.h5")
    assert path.read_bytes() == clf._weights and (tmp_path / "m.h5").read_bytes() == clf._weights
    assert not (tmp_path / "m.h5").is_symlink()
    assert (tmp_path / "earlier.h5").read_bytes() == b"an earlier file"
    assert (tmp_path / "w.h5.tmp").read_bytes() == b"the user's"
    assert victim.read_bytes() == b"the user's own"
    assert sorted(os.listdir(tmp_path)) == ["earlier.h5", "m.h5", "victim.txt", "w.h5", "w.h5.tmp"]


def test_messages_name_the_users_file(tmp_path):
    bad = tmp_path / "my_model.h5"
    bad.write_bytes(b"not an HDF5 file at all")
    for read in (lambda: fusenet.load(bad), lambda: fusenet.FusenetClassifier.from_weights(bad),
                 lambda: fusenet.FusenetRegressor.from_weights(bad)):
        with pytest.raises(fusenet.FusenetError) as info:
            read()
        assert str(bad) in str(info.value) and "fusenet-" not in str(info.value)


def test_a_warm_start_s_messages_name_the_model_not_a_temporary_copy():
    X, y = _digits()
    clf = fusenet.FusenetClassifier(epochs=1, device="cpu", warm_start=True).fit(X, y)
    with pytest.raises(fusenet.FusenetValueError) as info:
        clf.set_params(eps=1e-3).fit(X, y)
    assert "init the model so far has eps = 1e-05" in str(info.value)
    assert "fusenet-" not in str(info.value) and "init.h5" not in str(info.value)
