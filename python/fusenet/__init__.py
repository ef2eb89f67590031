"""fusenet — Python doors to fusenet's C library (libfusenet.so, through
ctypes; nothing is computed here that the library does not compute):

  FusenetClassifier, FusenetRegressor  scikit-learn estimators (estimators.py;
                                       pip install fusenet[sklearn])
  train(config, **overrides)           a config file's run, as `train` does
  load(weights)                        a weights file's model, to predict
  fusenet.torch.FusedBlock             the fused block as a torch.nn.Module
                                       (pip install fusenet[torch])

Errors of the library arrive as FusenetError (or its ValueError and OSError
kinds) carrying the library's message. `import fusenet` needs numpy alone;
`library` says which libfusenet it loaded.
"""
from ._lib import FusenetError, FusenetIOError, FusenetValueError, describe as _describe
from ._model import Model, load, train
from ._version import VERSION as __version__

library = _describe()

__all__ = ["FusenetClassifier", "FusenetRegressor", "FusenetError", "FusenetIOError",
           "FusenetValueError", "Model", "load", "train", "library", "__version__"]


def __getattr__(name):
    # The estimators need scikit-learn: imported only when asked for, and
    # without it the error names the extra that brings it.
    if name in ("FusenetClassifier", "FusenetRegressor"):
        from . import estimators
        return getattr(estimators, name)
    raise AttributeError("module 'fusenet' has no attribute %r" % name)
