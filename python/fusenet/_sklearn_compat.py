"""_sklearn_compat.py — the scikit-learn interfaces the estimators use
that changed between scikit-learn 1.2 (Debian 12's) and the newest, in one
place, as established libraries keep such a module:

  validate_data   sklearn.utils.validation.validate_data (1.6 on), else
                  the estimator's own _validate_data (before 1.6);
  TagsMixin       the estimator's tags as __sklearn_tags__ (1.6 on) or
                  _more_tags (before), from one dict (_fusenet_tags);
  check_estimator run every check and list the failed ones, with the
                  checks expected to fail marked in either API.

Importing it without scikit-learn is an ImportError naming the extra to
install.
"""
import re

try:
    import sklearn
    from sklearn.utils import validation as _validation
except ImportError as e:  # the estimators are an optional part of the package
    raise ImportError("fusenet's estimators need scikit-learn: pip install 'fusenet[sklearn]' "
                      "(or install scikit-learn 1.2 or newer)") from e

VERSION = tuple(int(p) for p in re.findall(r"\d+", sklearn.__version__)[:2])
NEW_TAGS = VERSION >= (1, 6)


def validate_data(estimator, X="no_validation", y="no_validation", **kwargs):
    """Checks X (and y), setting or checking n_features_in_ and
    feature_names_in_ as scikit-learn's own estimators do."""
    if hasattr(_validation, "validate_data"):
        return _validation.validate_data(estimator, X, y, **kwargs)
    return estimator._validate_data(X, y, **kwargs)


def _set_new_tag(tags, key, value):
    """One old-style tag on a 1.6 Tags object."""
    where = {"multioutput": (tags.target_tags, "multi_output"),
             "multilabel": (tags.classifier_tags, "multi_label"),
             "poor_score": (tags.regressor_tags or tags.classifier_tags, "poor_score")}
    obj, name = where[key]
    if obj is not None:
        setattr(obj, name, value)


class TagsMixin:
    """Tags from _fusenet_tags(), a dict of old-style tag names."""

    def _fusenet_tags(self):
        return {}

    if NEW_TAGS:
        def __sklearn_tags__(self):
            tags = super().__sklearn_tags__()
            for key, value in self._fusenet_tags().items():
                _set_new_tag(tags, key, value)
            return tags
    else:
        def _more_tags(self):
            return self._fusenet_tags()


def check_estimator(estimator, expected_failed):
    """Runs scikit-learn's checks on estimator; returns (failed, passed,
    skipped): the names of those that raised and were not expected to
    ({name: message}), that passed ({name}), and that were skipped
    ({name: why}): those in expected_failed ({name: why}; a check of
    several kinds under scikit-learn 1.2, "name(kind=...)") and those that
    skipped themselves."""
    from sklearn.utils import estimator_checks
    if NEW_TAGS:
        results = estimator_checks.check_estimator(estimator,
                                                   expected_failed_checks=expected_failed,
                                                   on_fail=None, on_skip=None)
        failed = {r["check_name"]: str(r["exception"])[:500] for r in results
                  if r["status"] == "failed"}
        passed = {r["check_name"] for r in results if r["status"] == "passed"}
        skipped = {r["check_name"]: str(r["exception"]) for r in results
                   if r["status"] == "skipped"}
        return failed, passed, skipped
    import unittest
    failed, passed, skipped = {}, set(), {}
    for est, check in estimator_checks.check_estimator(estimator, generate_only=True):
        name = getattr(check, "func", check).__name__
        # A check run in several kinds is expected to fail in one kind by
        # "name(kind=...)" (check_sample_weights_invariance's "zeros").
        kind = getattr(check, "keywords", {}).get("kind")
        key = "%s(kind=%s)" % (name, kind) if kind else name
        if key in expected_failed:
            skipped[key] = expected_failed[key]
            continue
        try:
            check(est)
            passed.add(name)
        except unittest.SkipTest as why:
            skipped[name] = str(why)
        except Exception as exc:  # noqa: B902 - a failed check, of any kind
            failed[name] = ("%s: %s" % (type(exc).__name__, exc))[:500]
    return failed, passed, skipped
