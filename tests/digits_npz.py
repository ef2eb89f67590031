"""digits_npz.py — the digits (data/digits_{train,valid}.h5) as one .npz of
X_train, y_train, X_valid, y_valid, read with Debian's h5py, for the
install tests' environments that have no h5py (python_install.sh,
python_wheel.sh).

    /usr/bin/python3 digits_npz.py DATA_DIR OUT.npz
"""
import sys

import h5py
import numpy as np

parts = {}
for part in ("train", "valid"):
    with h5py.File(f"{sys.argv[1]}/digits_{part}.h5", "r") as f:
        parts["X_" + part], parts["y_" + part] = f["X"][...], f["y"][...]
np.savez(sys.argv[2], **parts)
