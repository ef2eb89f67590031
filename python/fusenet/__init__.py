"""fusenet — Python doors to fusenet's C library (libfusenet.so, through
ctypes; nothing is computed here that the library does not compute):

  FusenetClassifier, FusenetRegressor  scikit-learn estimators (estimators.py)
  train(config, **overrides)           a config file's run, as `train` does
  load(weights)                        a weights file's model, to predict
  fusenet.torch.FusedBlock             the fused block as a torch.nn.Module

Errors of the library arrive as FusenetError (or its ValueError and OSError
kinds) carrying the library's message.
"""
from ._lib import FusenetError, FusenetIOError, FusenetValueError, version as _version
from ._model import Model, load, train

__version__ = _version()

__all__ = ["FusenetClassifier", "FusenetRegressor", "FusenetError", "FusenetIOError",
           "FusenetValueError", "Model", "load", "train", "__version__"]


def __getattr__(name):
    # The estimators need scikit-learn; import it only when they are asked for.
    if name in ("FusenetClassifier", "FusenetRegressor"):
        from . import estimators
        return getattr(estimators, name)
    raise AttributeError("module 'fusenet' has no attribute %r" % name)
