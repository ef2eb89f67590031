"""python_install_check.py — run by an installed fusenet package from
outside the checkout (tests/python_install.sh, tests/python_wheel.sh):
checks that it loaded the library of its own installation (or the one
FUSENET_LIBRARY names), that numpy is the major version the test expects,
and trains the digits briefly through the estimators or through
fusenet.train, asserting the validation accuracy.

    python python_install_check.py --site DIR [--numpy 2] --digits DIGITS.npz
    python python_install_check.py --site DIR [--numpy 1] --repo REPO --run-dir DIR

--site is the folder the package's library must come from; DIGITS.npz holds
the digits' X_train, y_train, X_valid, y_valid (read with Debian's h5py
beforehand: the environment under test has no h5py).
"""
import argparse
import os

import numpy as np

import fusenet


def check_library(site):
    loaded = os.path.realpath(fusenet._lib.lib._name)
    assert loaded.startswith(os.path.realpath(site) + os.sep), \
        f"the package loaded {loaded}, not one under {site}"
    return loaded


def check_numpy(major):
    if major is not None:
        assert np.__version__.split(".")[0] == major, \
            f"numpy {np.__version__} from {np.__file__}; expected {major}.x"


def by_estimators(digits):
    d = np.load(digits)
    clf = fusenet.FusenetClassifier(layers=(64,), epochs=5, device="cpu")
    clf.fit(d["X_train"], d["y_train"])
    return clf.score(d["X_valid"], d["y_valid"])


def by_train(repo, run_dir):
    import h5py  # Debian's, in the environment with its site packages
    model = fusenet.train(os.path.join(repo, "data", "example.ini"), train__epochs=3,
                          **{"output.dir": run_dir})
    with h5py.File(os.path.join(repo, "data", "digits_valid.h5"), "r") as f:
        X, y = f["X"][...], f["y"][...]
    return (model.predict(X) == y).mean()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--site", required=True)
    parser.add_argument("--numpy", help="the numpy major version expected")
    parser.add_argument("--digits", help="estimators: the digits' .npz")
    parser.add_argument("--repo", help="fusenet.train: the checkout (data/example.ini)")
    parser.add_argument("--run-dir", help="fusenet.train: the run's output folder")
    args = parser.parse_args()
    loaded = check_library(args.site)
    check_numpy(args.numpy)
    if args.digits:
        mode, accuracy = "estimators", by_estimators(args.digits)
    else:
        mode, accuracy = "fusenet.train", by_train(args.repo, args.run_dir)
    assert accuracy > 0.8, accuracy
    print(f"fusenet {fusenet.__version__} (numpy {np.__version__}) from {loaded}: "
          f"{mode}: validation accuracy {accuracy:.3f}")


if __name__ == "__main__":
    main()
