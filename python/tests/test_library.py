"""test_library.py — the package asks the library instead of copying it:
the library it loads is checked (fusenet's, of the package's version,
with the struct sizes the package mirrors, never a sanitizer build) and
named; enums come from the library; `import fusenet` needs neither
scikit-learn, PyTorch nor h5py, and the part that needs one names the
extra to install."""
import ctypes
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

import fusenet
from fusenet import _lib

PYTHON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _python(code, library=None, env=None):
    """Runs code in a fresh interpreter with the package on its path;
    returns (exit status, stderr)."""
    environ = dict(os.environ, PYTHONPATH=PYTHON_DIR, **(env or {}))
    if library is not None:
        environ["FUSENET_LIBRARY"] = library
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=environ,
                          capture_output=True, text=True, timeout=120)
    return done.returncode, done.stdout + done.stderr


def test_the_library_taken_is_named():
    assert fusenet.library == _lib.describe()
    assert fusenet.library.startswith("libfusenet %s (commit " % fusenet.__version__)
    assert fusenet.library.endswith(" at %s" % _lib.library_path)
    assert os.path.samefile(_lib.library_path, os.environ["FUSENET_LIBRARY"])


def test_another_library_gives_the_import_error():
    libm = ctypes.util.find_library("m")
    path = next(p for p in ("/lib/x86_64-linux-gnu/libm.so.6", "/usr/lib/x86_64-linux-gnu/libm.so.6")
                if os.path.exists(p)) if libm else None
    if path is None:
        pytest.skip("no libm.so.6 to point at")
    status, out = _python("import fusenet", library=path)
    assert status != 0
    assert ("ImportError: fusenet: FUSENET_LIBRARY=%s: not fusenet's library, or one older "
            "than this package (it has no fn_version)" % path) in out
    status, out = _python("import fusenet", library="/nonexistent/libfusenet.so")
    assert "ImportError: fusenet: FUSENET_LIBRARY=/nonexistent/libfusenet.so: no such file" in out


def test_a_library_whose_dependency_is_missing_is_named_as_found(tmp_path):
    # A libfusenet.so that is there but needs a library the loader cannot
    # find: the message says the file was found, naming its path and the
    # loader's own words (the missing dependency), not that it is missing.
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler to make the libraries")
    (tmp_path / "dep.c").write_text("int fn_test_dep(void) { return 1; }\n")
    (tmp_path / "lib.c").write_text("int fn_test_dep(void);\n"
                                    "int fn_version(void) { return fn_test_dep(); }\n")
    subprocess.run([cc, "-shared", "-fPIC", "-o", str(tmp_path / "libfn_test_dep.so"),
                    str(tmp_path / "dep.c")], check=True)
    library = tmp_path / "libfusenet.so"
    subprocess.run([cc, "-shared", "-fPIC", "-o", str(library), str(tmp_path / "lib.c"),
                    "-L%s" % tmp_path, "-lfn_test_dep"], check=True)
    (tmp_path / "libfn_test_dep.so").unlink()
    status, out = _python("import fusenet", library=str(library))
    assert status != 0
    assert ("ImportError: fusenet: FUSENET_LIBRARY=%s: found, but could not be loaded: "
            % library) in out
    assert "libfn_test_dep.so: cannot open shared object file" in out


def test_a_sanitizer_build_is_never_taken(tmp_path):
    # A library that links ASan's runtime (here: a copy carrying its name)
    # is refused before it is loaded: loading it would abort the process.
    fake = tmp_path / "libfusenet.so"
    shutil.copyfile(_lib.library_path, fake)
    with open(fake, "ab") as f:
        f.write(b"\0libasan.so.8\0")
    status, out = _python("import fusenet", library=str(fake))
    assert status != 0 and "a sanitizer build (it links libasan.so" in out
    assert _lib._sanitizer_runtime(_lib.library_path) is None


def test_a_version_mismatch_names_both_and_the_path(monkeypatch):
    monkeypatch.setattr(_lib, "VERSION", "9.8.7")
    monkeypatch.setenv("FUSENET_LIBRARY", _lib.library_path)
    with pytest.raises(ImportError) as info:
        _lib._load()
    assert ("FUSENET_LIBRARY=%s: libfusenet %s, but this fusenet package is 9.8.7"
            % (_lib.library_path, fusenet.__version__)) in str(info.value)


def test_a_struct_of_another_size_is_refused():
    handle = ctypes.CDLL(_lib.library_path)
    for name, mirror in _lib.MIRRORED.items():
        assert handle.fn_binding_struct_size(name.encode()) == ctypes.sizeof(mirror), name

    class Short(ctypes.Structure):
        _fields_ = [("resume", ctypes.c_int)]
    saved = _lib.MIRRORED["fn_trainer_options"]
    _lib.MIRRORED["fn_trainer_options"] = Short
    try:
        why = _lib._check_library(handle, _lib.library_path)
    finally:
        _lib.MIRRORED["fn_trainer_options"] = saved
    assert "its struct fn_trainer_options is %d bytes, the package's mirror of it 4" % (
        ctypes.sizeof(saved)) in why


def test_enums_are_the_library_s():
    value = ctypes.c_longlong()
    assert _lib.lib.fn_binding_constant(b"FN_ERR_IO", ctypes.byref(value)) == 0
    assert _lib.STATUS_IO == value.value == 3
    assert (_lib.DEVICE_CPU, _lib.DEVICE_CUDA) == (0, 1)
    with pytest.raises(ImportError, match="the library has no constant 'FN_NO_SUCH'"):
        _lib.constant("FN_NO_SUCH")


def test_import_needs_no_optional_package(source_dir, tmp_path):
    # sklearn, torch and h5py made unimportable: the package imports,
    # trains, loads a weights file and tells its task; the estimators and
    # the PyTorch door name the extras that bring their packages.
    config = os.path.join(source_dir, "data", "example.ini")
    status, out = _python("""
        import sys
        for name in ("sklearn", "torch", "h5py", "pandas"):
            sys.modules[name] = None
        import fusenet
        model = fusenet.train(%r, train__epochs=1, **{"output.dir": %r})
        again = fusenet.load(model.weights_path, device="cpu")
        assert again.task == "classify" and again.loss == "cross_entropy", again.task
        try:
            fusenet.FusenetClassifier
        except ImportError as e:
            print("estimators:", e)
        try:
            import fusenet.torch
        except ImportError as e:
            print("torch door:", e)
        """ % (config, str(tmp_path / "run")), library=_lib.library_path)
    assert status == 0, out
    assert "estimators: fusenet's estimators need scikit-learn: pip install " \
        "'fusenet[sklearn]'" in out
    assert "torch door: fusenet.torch needs PyTorch: pip install 'fusenet[torch]'" in out


def test_the_package_version_is_the_project_s(source_dir):
    # _version.py against CMake's project version, which the library reports.
    import re
    with open(os.path.join(source_dir, "CMakeLists.txt")) as f:
        project = re.search(r"project\(fusenet VERSION (\S+)", f.read()).group(1)
    assert fusenet.__version__ == project == _lib.version()
