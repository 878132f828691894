"""A k-nearest-neighbour classifier for the problem-transformation baselines (paper 004's BR and
classifier chains with 3-NN): scikit-learn's ``KNeighborsClassifier`` or Weka's ``IBk`` (the
base learner those baselines have inside MULAN).

``metric="euclidean"`` (default) is ``sklearn.neighbors.KNeighborsClassifier(n_neighbors)``,
fitted and asked as it is (same predictions and probabilities).

``metric="weka"`` is ``weka.classifiers.lazy.IBk -K n_neighbors`` with its defaults (no
distance weighting, ``LinearNNSearch`` with ``EuclideanDistance``; :mod:`mlgraph.methods.weka`):

- the neighbours of a test row are its k nearest training rows and every training row tied
  with the k-th distance (IBk votes with all that the search returns);
- before searching, IBk widens the distance's ranges with the row it classifies
  (``addInstanceInfo``), so the rows of one ``predict``/``predict_proba`` call are classified
  in order with ranges widened by each row and the rows before it; each call starts from the
  training ranges (an estimator keeps no state between calls);
- the class distribution is ``(1/m + votes_c) / (C/m + n_neighbours)`` for m training rows and
  C classes (IBk's correction to the estimator);
- ``predict``: with two classes the second unless the first is strictly more probable, MULAN's
  rule for BR and classifier chains (``(d[0] > d[1]) ? 0 : 1``); with more classes the first
  most probable (Weka's ``Utils.maxIndex``).

NaN (missing values) is accepted with ``metric="weka"`` (Weka's rules); ``nominal_groups``
gives the columns of each nominal attribute. Columns a chain appends (earlier labels' 0/1
values) count as numeric: the same as Weka's nominal mismatch unless a label is constant in the
training part.
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.neighbors import KNeighborsClassifier
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from mlgraph.methods.base import check_params, dense, positive_int
from mlgraph.methods.mlknn import METRICS, _groups
from mlgraph.methods.weka import WekaEuclidean, weka_neighbours

__all__ = ["KNNClassifier"]

_CHECKS = {"dtype": np.float64, "accept_sparse": "csr", "ensure_all_finite": "allow-nan"}


class KNNClassifier(ClassifierMixin, BaseEstimator):
    """k-NN classifier: scikit-learn's (``metric="euclidean"``) or Weka's IBk (``"weka"``); see
    the module docstring.

    Parameters
    ----------
    n_neighbors : k.
    metric : "euclidean" or "weka".
    nominal_groups : for ``metric="weka"``, the columns of each nominal attribute; None: none.

    Fitted attributes: ``classes_``; ``model_`` (the scikit-learn classifier) or
    ``distance_``, ``X_fit_`` and ``y_fit_`` (class indices) for Weka's.
    """

    _rules = {
        "n_neighbors": (positive_int, "a positive integer (number of neighbours k)"),
        "metric": (lambda v: v in METRICS, " or ".join(METRICS)),
        "nominal_groups": (_groups, "None or a list of lists of column indices"),
    }

    def __init__(self, n_neighbors=3, metric="euclidean", nominal_groups=None):
        self.n_neighbors = n_neighbors
        self.metric = metric
        self.nominal_groups = nominal_groups

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = self.metric == "weka"
        tags.input_tags.sparse = True
        return tags

    def fit(self, X, y):
        check_params(self, self._rules)
        if self.metric == "euclidean":
            self.model_ = KNeighborsClassifier(n_neighbors=self.n_neighbors).fit(X, y)
            self.classes_ = self.model_.classes_
            self.n_features_in_ = self.model_.n_features_in_
            return self
        X, y = validate_data(self, X, y, reset=True, **_CHECKS)  # y: 1-D, as long as X
        X = dense(X)
        check_classification_targets(y)
        self.classes_, self.y_fit_ = np.unique(np.asarray(y).ravel(), return_inverse=True)
        self.distance_ = WekaEuclidean(self.nominal_groups or ()).fit(X)
        self.X_fit_ = X
        return self

    def predict_proba(self, X) -> np.ndarray:
        """Class probabilities (IBk's distribution with ``metric="weka"``)."""
        check_is_fitted(self, "classes_")
        if self.metric == "euclidean":
            return self.model_.predict_proba(X)
        X = dense(validate_data(self, X, reset=False, **_CHECKS))
        m, n_classes = len(self.y_fit_), len(self.classes_)
        k = min(int(self.n_neighbors), m)
        found = weka_neighbours(
            self.distance_, X, self.X_fit_, k, ranges=self.distance_.widened_ranges(X), ties="all"
        )
        votes = found @ np.eye(n_classes)[self.y_fit_]
        return (1.0 / m + votes) / (n_classes / m + votes.sum(axis=1, keepdims=True))

    def predict(self, X) -> np.ndarray:
        check_is_fitted(self, "classes_")
        if self.metric == "euclidean":
            return self.model_.predict(X)
        proba = self.predict_proba(X)
        if len(self.classes_) == 2:
            return self.classes_[(proba[:, 0] <= proba[:, 1]).astype(np.intp)]
        return self.classes_[proba.argmax(axis=1)]
