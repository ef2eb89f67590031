"""test_config_door.py — fusenet.train(config, **overrides), fusenet.load
and fusenet.__version__, against the `train` program."""
import os
import subprocess

import numpy as np
import pytest

import fusenet


def test_version_is_the_library_s(build_dir):
    out = subprocess.run([os.path.join(build_dir, "train"), "--version"], check=True,
                         capture_output=True, text=True).stdout
    assert out.splitlines()[0].split()[-1] == fusenet.__version__


def test_train_equals_the_program(build_dir, source_dir, tmp_path):
    config = os.path.join(source_dir, "data", "example.ini")
    model = fusenet.train(config, train__epochs=2, **{"output.dir": str(tmp_path / "py"),
                                                      "train.checkpoint_every": 0})
    assert [row["epoch"] for row in model.history] == [1, 2]
    assert model.weights_path == str(tmp_path / "py" / "weights.h5")
    subprocess.run([os.path.join(build_dir, "train"), config, "--set", "train.epochs=2",
                    "--set", "output.dir=%s" % (tmp_path / "cli"), "--set",
                    "train.checkpoint_every=0"], check=True, capture_output=True)
    cli = fusenet.load(str(tmp_path / "cli" / "weights.h5"), device="cpu")
    assert cli.task == "classify"
    X = np.random.default_rng(0).uniform(0, 16, size=(50, 64))
    np.testing.assert_array_equal(cli.outputs(X), model.outputs(X))
    proba = model.predict_proba(X)
    assert (proba.argmax(axis=1) == model.predict(X)).all()


def test_train_errors_carry_the_message(source_dir, tmp_path):
    config = os.path.join(source_dir, "data", "example.ini")
    # The override named as the caller wrote it, not as a --set.
    with pytest.raises(fusenet.FusenetValueError, match=r"^train__lr='fast': expected a number"):
        fusenet.train(config, train__lr="fast", output__dir=str(tmp_path))
    with pytest.raises(fusenet.FusenetError, match="nothing.ini"):
        fusenet.train(str(tmp_path / "nothing.ini"))


def test_ctrl_c_stops_the_run_and_raises(source_dir, tmp_path):
    import signal
    from fusenet import _core
    config = os.path.join(source_dir, "data", "example.ini")
    seen = []

    import threading

    def on_epoch(row):
        # The signal comes from another thread while the library runs its
        # steps, as a Ctrl-C does: Python's handler would then run inside a
        # callback, where ctypes prints and drops an exception.
        seen.append(row["epoch"])
        if len(seen) == 1:
            threading.Timer(0.2, os.kill, args=(os.getpid(), signal.SIGINT)).start()

    with pytest.raises(KeyboardInterrupt):
        _core.run_training(config_path=config, settings=["output.dir=%s" % (tmp_path / "r"),
                                                         "train.epochs=200"],
                           on_epoch=on_epoch)
    assert len(seen) < 200  # stopped early
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
