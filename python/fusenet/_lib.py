"""_lib.py — libfusenet.so through ctypes: finding the library, the
prototypes of the calls the package makes, the C structs it reads, and
turning a failed call's status and message into a Python exception.

The library is found, first match wins:
  1. $FUSENET_LIBRARY, a path to libfusenet.so;
  2. the copy `pip install` built into the package (fusenet/lib/);
  3. a build of the repository the package sits in (build/*/libfusenet.so,
     the newest);
  4. an installed libfusenet (ctypes.util.find_library("fusenet")).
"""
import ctypes
import ctypes.util
import glob
import os

from ctypes import (CFUNCTYPE, POINTER, Structure, c_char_p, c_double, c_float, c_int,
                    c_int32, c_int64, c_longlong, c_size_t, c_void_p)


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


_STATUS_INVALID, _STATUS_IO, _STATUS_FORMAT, _STATUS_NUMERIC = 1, 3, 4, 7


def _candidates():
    env = os.environ.get("FUSENET_LIBRARY")
    if env:
        return [env]
    here = os.path.dirname(os.path.abspath(__file__))
    found = [os.path.join(here, "lib", "libfusenet.so")]
    repo = os.path.dirname(os.path.dirname(here))
    builds = glob.glob(os.path.join(repo, "build", "*", "libfusenet.so"))
    builds += glob.glob(os.path.join(repo, "build", "libfusenet.so"))
    found += sorted(builds, key=os.path.getmtime, reverse=True)
    installed = ctypes.util.find_library("fusenet")
    if installed:
        found.append(installed)
    return found


def _load():
    tried = []
    for path in _candidates():
        if os.path.sep in path and not os.path.exists(path):
            tried.append(path)
            continue
        try:
            return ctypes.CDLL(path)
        except OSError as e:
            tried.append("%s (%s)" % (path, e))
    raise ImportError(
        "fusenet: libfusenet.so not found (tried: %s); build it (cmake -S . -B build && "
        "cmake --build build) or set FUSENET_LIBRARY to its path" % ", ".join(tried) or "nothing")


lib = _load()


class TrainMetrics(Structure):
    _fields_ = [("loss", c_double), ("acc", c_double)]


class TrainEpoch(Structure):
    _fields_ = [("epoch", c_longlong), ("epochs", c_int), ("train", TrainMetrics),
                ("valid", TrainMetrics), ("seconds", c_double), ("samples_per_s", c_double),
                ("improved", c_int), ("since_best", c_longlong)]


ON_EPOCH = CFUNCTYPE(None, c_void_p, POINTER(TrainEpoch))
SHOULD_STOP = CFUNCTYPE(c_int, c_void_p)
ON_NOTICE = CFUNCTYPE(None, c_void_p, c_char_p)


class TrainerCallbacks(Structure):
    _fields_ = [("on_device", c_void_p), ("on_resume", c_void_p), ("on_model", c_void_p),
                ("on_start", c_void_p), ("on_step", c_void_p), ("on_epoch", ON_EPOCH),
                ("on_done", c_void_p), ("should_stop", SHOULD_STOP), ("on_notice", ON_NOTICE)]


class TrainerOptions(Structure):
    _fields_ = [("resume", c_int), ("overwrite", c_int),
                ("callbacks", POINTER(TrainerCallbacks)), ("user", c_void_p), ("comm", c_int)]


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
    ("fn_build_has_cuda", c_int, []),
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
    ("fn_net_destroy", None, [_vp]),
    ("fn_net_in_features", c_int, [_vp]),
    ("fn_net_out_features", c_int, [_vp]),
    ("fn_input_norm_load", c_int, [POINTER(_vp), _vp, c_char_p, c_int]),
    ("fn_input_norm_destroy", None, [_vp]),
    ("fn_infer", c_int, [_vp, _vp, _vp, _fp]),
    ("fn_softmax_rows", None, [_fp, c_int, c_int]),
    ("fn_argmax_rows", None, [_fp, c_int, c_int, POINTER(c_int32)]),
]:
    _proto(_name, _res, *_args)


def check(status):
    """Raises the exception of a failed call, carrying the library's message."""
    if status == 0:
        return
    message = lib.fn_last_error().decode("utf-8", "replace")
    if not message:
        message = lib.fn_status_name(status).decode()
    if status in (_STATUS_INVALID, _STATUS_FORMAT, _STATUS_NUMERIC):
        raise FusenetValueError(status, message)
    if status == _STATUS_IO:
        raise FusenetIOError(status, message)
    raise FusenetError(status, message)


def floats(array):
    """A float32 C-contiguous NumPy array's data as float *."""
    return array.ctypes.data_as(_fp)


def version():
    return lib.fn_version().decode()
