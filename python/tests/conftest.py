"""conftest.py — where the package's tests find the repository and the build
(ctest sets FN_SOURCE_DIR and FN_BUILD_DIR, and FUSENET_LIBRARY to the
build's libfusenet.so)."""
import os
import shutil
import sys

import pytest

SOURCE = os.environ.get("FN_SOURCE_DIR",
                        os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
sys.path.insert(0, os.path.join(SOURCE, "python"))


@pytest.fixture
def source_dir():
    return SOURCE


@pytest.fixture
def build_dir():
    build = os.environ.get("FN_BUILD_DIR")
    if not build:
        lib = os.environ.get("FUSENET_LIBRARY", "")
        build = os.path.dirname(lib) if lib else None
    if not build or not os.path.exists(os.path.join(build, "train")):
        pytest.skip("FN_BUILD_DIR (a build with train and predict) is not set")
    return build


@pytest.fixture
def private_tmp(tmp_path, monkeypatch):
    """A working directory and TMPDIR of the test's own, to see every file
    a call leaves behind."""
    import tempfile
    work, temp = tmp_path / "work", tmp_path / "temp"
    work.mkdir()
    temp.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setenv("TMPDIR", str(temp))
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    yield work, temp
    shutil.rmtree(tmp_path, ignore_errors=True)
