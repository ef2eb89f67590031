"""_lib.py — libfusenet.so through ctypes: finding the library, checking
that it is fusenet's, of this package's version and with the struct
layouts the package mirrors, the prototypes of the calls the package
makes, and turning a failed call's status and message into a Python
exception. Enum values and struct sizes are the library's own
(fn_binding_constant, fn_binding_struct_size): nothing is copied.

The library is found, first match wins:
  1. $FUSENET_LIBRARY, a path to libfusenet.so (that one only: a library
     there that is unusable is an ImportError saying why);
  2. the copy `pip install` built into the package (fusenet/lib/);
  3. a build of the repository the package sits in (build/*/libfusenet.so,
     the newest), never a sanitizer build (ASan's runtime must be loaded
     first, which a Python process does not);
  4. an installed libfusenet (ctypes.util.find_library("fusenet")).
"""
import ctypes
import ctypes.util
import glob
import os

from ctypes import (CFUNCTYPE, POINTER, Structure, c_char_p, c_double, c_float, c_int,
                    c_int32, c_int64, c_longlong, c_size_t, c_void_p)

from ._version import VERSION


class FusenetError(RuntimeError):
    """A call of the C library failed; str() is the library's message."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status


class FusenetValueError(FusenetError, ValueError):
    """A failure of the input: a bad argument, setting or file content, or a
    value that went non-finite (FN_ERR_INVALID, FORMAT, NUMERIC)."""


class FusenetIOError(FusenetError, OSError):
    """A file is missing, unreadable or unwritable (FN_ERR_IO)."""


class TrainMetrics(Structure):
    _fields_ = [("loss", c_double), ("acc", c_double)]


class TrainEpoch(Structure):
    _fields_ = [("epoch", c_longlong), ("epochs", c_int), ("train", TrainMetrics),
                ("valid", TrainMetrics), ("seconds", c_double), ("samples_per_s", c_double),
                ("improved", c_int), ("since_best", c_longlong),
                ("epoch_seconds", c_double)]


class TrainLayer(Structure):
    _fields_ = [("kind", c_char_p), ("in_", c_int), ("out", c_int), ("groups", c_int),
                ("params", c_longlong)]


class TrainMemory(Structure):
    _fields_ = [(name, c_size_t) for name in ("weights", "gradients", "optimizer", "activations",
                                              "batches", "device", "data")]


class TrainModel(Structure):
    _fields_ = [("layers", POINTER(TrainLayer)), ("n_layers", c_int), ("params", c_longlong),
                ("device", c_int), ("gpu", c_int), ("memory", TrainMemory)]


ON_EPOCH = CFUNCTYPE(None, c_void_p, POINTER(TrainEpoch))
ON_MODEL = CFUNCTYPE(None, c_void_p, POINTER(TrainModel))
SHOULD_STOP = CFUNCTYPE(c_int, c_void_p)
ON_NOTICE = CFUNCTYPE(None, c_void_p, c_char_p)


class TrainerCallbacks(Structure):
    _fields_ = [("on_device", c_void_p), ("on_resume", c_void_p), ("on_model", ON_MODEL),
                ("on_start", c_void_p), ("on_step", c_void_p), ("on_epoch", ON_EPOCH),
                ("on_done", c_void_p), ("should_stop", SHOULD_STOP), ("on_notice", ON_NOTICE)]


class TrainerOptions(Structure):
    _fields_ = [("resume", c_int), ("overwrite", c_int),
                ("callbacks", POINTER(TrainerCallbacks)), ("user", c_void_p), ("comm", c_int)]


# The structs above, each under the C name the library gives its size by.
MIRRORED = {"fn_train_metrics": TrainMetrics, "fn_train_epoch": TrainEpoch,
            "fn_train_layer": TrainLayer, "fn_train_memory": TrainMemory,
            "fn_train_model": TrainModel,
            "fn_trainer_callbacks": TrainerCallbacks, "fn_trainer_options": TrainerOptions}

_SANITIZER_RUNTIMES = (b"libasan.so", b"libubsan.so", b"libtsan.so", b"libhwasan.so",
                       b"liblsan.so")


def _candidates():
    """(path, named by FUSENET_LIBRARY) in the order tried."""
    env = os.environ.get("FUSENET_LIBRARY")
    if env:
        return [(env, True)]
    here = os.path.dirname(os.path.abspath(__file__))
    found = [os.path.join(here, "lib", "libfusenet.so")]
    repo = os.path.dirname(os.path.dirname(here))
    builds = glob.glob(os.path.join(repo, "build", "*", "libfusenet.so"))
    builds += glob.glob(os.path.join(repo, "build", "libfusenet.so"))
    found += sorted(builds, key=os.path.getmtime, reverse=True)
    installed = ctypes.util.find_library("fusenet")
    if installed:
        found.append(installed)
    return [(path, False) for path in found]


def _sanitizer_runtime(path):
    """The sanitizer runtime a library file links (b"libasan.so"), or None."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    return next((r for r in _SANITIZER_RUNTIMES if r in data), None)


def _check_library(handle, path):
    """Why the loaded library is not one this package can use, or None."""
    for name in ("fn_version", "fn_binding_constant", "fn_binding_struct_size"):
        if not hasattr(handle, name):
            return ("not fusenet's library, or one older than this package (it has no %s)"
                    % name)
    handle.fn_version.restype = c_char_p
    handle.fn_binding_struct_size.restype = c_size_t
    handle.fn_binding_struct_size.argtypes = [c_char_p]
    version = handle.fn_version().decode()
    if version != VERSION:
        return ("libfusenet %s, but this fusenet package is %s: install the package from the "
                "same checkout, or point FUSENET_LIBRARY at a %s build" % (version, VERSION,
                                                                          VERSION))
    for name, mirror in MIRRORED.items():
        size = handle.fn_binding_struct_size(name.encode())
        if size != ctypes.sizeof(mirror):
            return ("its struct %s is %d bytes, the package's mirror of it %d: the library and "
                    "the package differ" % (name, size, ctypes.sizeof(mirror)))
    return None


def _open(path):
    """(the library, None) or (None, why not)."""
    if os.path.sep in path and not os.path.exists(path):
        return None, "no such file"
    runtime = _sanitizer_runtime(path) if os.path.sep in path else None
    if runtime:
        return None, ("a sanitizer build (it links %s, whose runtime must come first in a "
                      "process); use a build without -DFN_SANITIZE" % runtime.decode())
    try:
        handle = ctypes.CDLL(path)
    except OSError as e:
        if os.path.sep not in path and not os.path.exists(path):
            return None, str(e)
        # The file is there: the loader's message names what failed, often
        # a library it needs (libhdf5, libopenblas) that is not installed.
        return None, "found, but could not be loaded: %s" % e
    why = _check_library(handle, path)
    return (None, why) if why else (handle, None)


def _load():
    tried = []
    for path, from_env in _candidates():
        handle, why = _open(path)
        if handle is not None:
            return handle, os.path.abspath(path) if os.path.sep in path else path
        if from_env:
            raise ImportError("fusenet: FUSENET_LIBRARY=%s: %s; point it at libfusenet.so or "
                              "unset it" % (path, why))
        tried.append("%s (%s)" % (path, why))
    raise ImportError(
        "fusenet: no usable libfusenet.so (tried: %s); build it (cmake -S . -B build && "
        "cmake --build build) or set FUSENET_LIBRARY to its path"
        % ("; ".join(tried) or "nothing"))


lib, library_path = _load()


def _proto(name, restype, *argtypes):
    fn = getattr(lib, name)
    fn.restype = restype
    fn.argtypes = list(argtypes)


_fp = POINTER(c_float)
_vp = c_void_p
for _name, _res, _args in [
    ("fn_last_error", c_char_p, []),
    ("fn_status_name", c_char_p, [c_int]),
    ("fn_version", c_char_p, []),
    ("fn_version_commit", c_char_p, []),
    ("fn_build_backends", c_char_p, []),
    ("fn_build_has_cuda", c_int, []),
    ("fn_binding_constant", c_int, [c_char_p, POINTER(c_longlong)]),
    ("fn_cuda_device_count", c_int, []),
    ("fn_config_load", c_int, [POINTER(_vp), c_char_p]),
    ("fn_config_parse", c_int, [POINTER(_vp), c_char_p, c_char_p]),
    ("fn_config_set", c_int, [_vp, c_char_p]),
    ("fn_config_use_memory_set", c_int, [_vp, c_char_p, _vp]),
    ("fn_config_finish", c_int, [_vp]),
    ("fn_config_get", c_int, [_vp, c_char_p, ctypes.c_char_p, c_size_t]),
    ("fn_config_destroy", None, [_vp]),
    ("fn_memory_set_labels", c_int, [POINTER(_vp), c_char_p, _fp, c_int64, c_int,
                                     POINTER(c_int32)]),
    ("fn_memory_set_values", c_int, [POINTER(_vp), c_char_p, _fp, c_int64, c_int, _fp, c_int]),
    ("fn_memory_set_inputs", c_int, [POINTER(_vp), c_char_p, _fp, c_int64, c_int]),
    ("fn_memory_set_weights", c_int, [_vp, _fp]),
    ("fn_memory_set_destroy", None, [_vp]),
    ("fn_trainer_create", c_int, [POINTER(_vp), _vp, POINTER(TrainerOptions)]),
    ("fn_trainer_run", c_int, [_vp]),
    ("fn_trainer_destroy", None, [_vp]),
    ("fn_trainer_outcome", c_int, [_vp]),
    ("fn_trainer_weights_path", c_char_p, [_vp]),
    ("fn_trainer_best_path", c_char_p, [_vp]),
    ("fn_context_create", c_int, [POINTER(_vp), c_int, c_int, c_int]),
    ("fn_context_destroy", None, [_vp]),
    ("fn_math_parse", c_int, [c_char_p, POINTER(c_int)]),
    ("fn_weights_build", c_int, [POINTER(_vp), _vp, c_char_p, c_int]),
    ("fn_weights_loss", c_int, [c_char_p, POINTER(_vp)]),
    ("fn_loss_kind_name", c_char_p, [_vp]),
    ("fn_loss_kind_targets", c_int, [_vp]),
    ("fn_loss_kind_unit_targets", c_int, [_vp]),
    ("fn_net_destroy", None, [_vp]),
    ("fn_net_in_features", c_int, [_vp]),
    ("fn_net_out_features", c_int, [_vp]),
    ("fn_input_norm_load", c_int, [POINTER(_vp), _vp, c_char_p, c_int]),
    ("fn_input_norm_destroy", None, [_vp]),
    ("fn_target_norm_load", c_int, [POINTER(_vp), _vp, c_char_p, c_int]),
    ("fn_target_norm_undo", None, [_vp, _fp, c_longlong]),
    ("fn_infer", c_int, [_vp, _vp, _vp, _fp]),
    ("fn_softmax_rows", None, [_fp, c_int, c_int]),
    ("fn_argmax_rows", None, [_fp, c_int, c_int, POINTER(c_int32)]),
]:
    _proto(_name, _res, *_args)


def constant(name):
    """The library's value of a public enum constant ("FN_ERR_IO")."""
    value = c_longlong()
    if lib.fn_binding_constant(name.encode(), ctypes.byref(value)) != 0:
        raise ImportError("fusenet: %s: %s" % (library_path, lib.fn_last_error().decode()))
    return value.value


STATUS_INVALID, STATUS_IO, STATUS_FORMAT, STATUS_NUMERIC = (
    constant(n) for n in ("FN_ERR_INVALID", "FN_ERR_IO", "FN_ERR_FORMAT", "FN_ERR_NUMERIC"))
DEVICE_CPU, DEVICE_CUDA = constant("FN_CPU"), constant("FN_CUDA")
TARGETS_LABELS, TARGETS_FLOATS = constant("FN_DATA_LABELS"), constant("FN_DATA_FLOATS")


def check(status):
    """Raises the exception of a failed call, carrying the library's message."""
    if status == 0:
        return
    message = lib.fn_last_error().decode("utf-8", "replace")
    if not message:
        message = lib.fn_status_name(status).decode()
    if status in (STATUS_INVALID, STATUS_FORMAT, STATUS_NUMERIC):
        raise FusenetValueError(status, message)
    if status == STATUS_IO:
        raise FusenetIOError(status, message)
    raise FusenetError(status, message)


def floats(array):
    """A float32 C-contiguous NumPy array's data as float *."""
    return array.ctypes.data_as(_fp)


def version():
    return lib.fn_version().decode()


def describe():
    """Which library the package took: "libfusenet 0.1.0 (commit abc1234,
    backends cpu cuda) at /path/libfusenet.so"."""
    return "libfusenet %s (commit %s, backends %s) at %s" % (
        version(), lib.fn_version_commit().decode(), lib.fn_build_backends().decode(),
        library_path)
