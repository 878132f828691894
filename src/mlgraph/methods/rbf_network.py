"""RBF neural networks: the multi-class base learner of paper 001 (DSML) and ML-RBF (Zhang 2009).

Both networks have the same two layers (paper 001, "Compared Methods": RBF networks are the base
classifiers of DSML and of the three decomposition baselines; ML-RBF is a compared method):

1. Hidden layer: Gaussian units ``φ_k(x) = exp(−‖x − c_k‖² / (2σ²))`` around centres found by
   k-means (scikit-learn ``KMeans``, k-means++ seeding, one initialisation) on standardised
   features, with one shared width ``σ = width_factor × mean distance between two centres``
   (Zhang 2009's μ; ML-RBF keeps his μ = 1, the multi-class network defaults to 0.5).
2. Output layer: linear with a bias unit, fitted by (weighted) least squares with a small ridge
   on the non-bias weights, solved by LAPACK ``gelsd`` (``scipy.linalg.lstsq``) on the stacked
   system ``[√w Φ; √(λn) [0 I]] W = [√w T; 0]``.  With weights normalised to mean 1 this is

       W = argmin_W  Σ_i w_i ‖φ_i W − t_i‖² + λ n ‖W_centres‖²_F ,

   i.e. ``(Φᵀ D Φ + λ n J) W = Φᵀ D T`` with D = diag(w) and J the identity minus its bias entry.

:class:`RBFNetwork` (multi-class): centres by k-means on all training rows (weighted by
``sample_weight``), targets the one-hot class indicators, prediction the class of the largest
output.  ``n_centres`` is a fraction of the training rows (float in (0, 1]) or a count (int);
either is capped at the number of distinct training rows (a resample with replacement has
duplicates).

:class:`MLRBF` (multi-label, Zhang 2009): for each label j, ``ceil(α |U_j|)`` centres by k-means
on the instances U_j that have label j, all pooled into one hidden layer; targets ±1; label j is
predicted where its output exceeds 0.  ``decision_function`` gives the real outputs, which the
dual-set wrapper of :mod:`mlgraph.methods.dual_set` compares within each label set.

Assumptions:
- Features are standardised with the (weighted) training mean and standard deviation before
  k-means; constant features drop out.  Zhang's MATLAB code uses raw features; the voice table
  mixes scales from 1e-2 to 1e3, where raw Euclidean distances would be dominated by ``kurt``.
  ``standardize=False`` restores the raw behaviour.
- ``sample_weight`` enters the standardisation, k-means and the least squares; rows of zero
  weight are ignored.  Weights are normalised to mean 1, so scaling them changes nothing.
- ``RBFNetwork.decision_function`` returns the n × K matrix of outputs (one column per class in
  ``classes_``, also when K = 2) -- a score, not a probability.
- ML-RBF's output layer is the minimum-norm least-squares solution (Zhang uses a pseudo-inverse)
  plus the optional ridge ``ridge`` (0 by default).
- ML-RBF drops unlabelled rows (all −1, the package's semi-supervised convention); a label with no
  positive training instance contributes no centre.
"""

from __future__ import annotations

import math
from numbers import Integral, Real

import numpy as np
import scipy.linalg
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.cluster import KMeans
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import _check_sample_weight, check_is_fitted, column_or_1d

from mlgraph.graphs import squared_distances
from mlgraph.graphs.kernels import on_one_blas_thread
from mlgraph.methods.base import (
    MultiLabelClassifierMixin,
    ScoreThresholdMixin,
    check_params,
    fitted_data,
    fitted_features,
    nonneg,
    positive,
    positive_int,
)

__all__ = ["MLRBF", "RBFNetwork", "rbf_design", "weighted_least_squares"]


# --------------------------------------------------------------------------
# Shared layers
# --------------------------------------------------------------------------
def _weighted_standardisation(X: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(mean, scale) under weights ``w``; constant features get scale = inf (they drop out)."""
    mean = np.average(X, axis=0, weights=w)
    scale = np.sqrt(np.average((X - mean) ** 2, axis=0, weights=w))
    return mean, np.where(scale > 1e-12 * np.maximum(1.0, np.abs(mean)), scale, np.inf)


def _n_distinct(X: np.ndarray) -> int:
    return int(np.unique(X, axis=0).shape[0])


def kmeans_centres(
    X: np.ndarray, k: int, sample_weight: np.ndarray | None, random_state, max_iter: int = 100
) -> np.ndarray:
    """k-means centres (k-means++, one initialisation); k is capped at the distinct rows of X."""
    k = max(1, min(int(k), _n_distinct(X)))
    km = KMeans(n_clusters=k, n_init=1, max_iter=max_iter, random_state=random_state)
    km.fit(X, sample_weight=sample_weight)
    return km.cluster_centers_


def mean_centre_distance(C: np.ndarray) -> float:
    """Mean Euclidean distance over the pairs of centres (0 for a single centre)."""
    if C.shape[0] < 2:
        return 0.0
    d = np.sqrt(squared_distances(C)[np.triu_indices(C.shape[0], k=1)])
    return float(d.mean())


def _width(C: np.ndarray, X: np.ndarray, factor: float) -> float:
    """σ = factor × mean inter-centre distance; with one centre (or coincident centres) the RMS
    distance of the training rows to the centres, and 1 if that is 0 as well."""
    spread = mean_centre_distance(C)
    if spread <= 0:
        spread = float(np.sqrt(squared_distances(X, C).min(axis=1).mean()))
    return factor * (spread if spread > 0 else 1.0)


def rbf_design(X: np.ndarray, centres: np.ndarray, sigma: float) -> np.ndarray:
    """Design matrix ``[1, exp(−‖x − c_k‖² / (2σ²))]`` (n × (1 + K)), the bias unit first."""
    G = squared_distances(X, centres)
    G *= -0.5 / sigma**2
    np.exp(G, out=G)
    return np.hstack([np.ones((X.shape[0], 1)), G])


def weighted_least_squares(
    Phi: np.ndarray, T: np.ndarray, sample_weight: np.ndarray | None = None, ridge: float = 0.0
) -> np.ndarray:
    """argmin_W Σ_i w_i ‖Φ_i W − T_i‖² + ridge · n · ‖W[1:]‖²  (the bias row, Φ[:, 0], is not
    penalised), with w normalised to mean 1 over the n rows; LAPACK gelsd on the stacked system."""
    n, p = Phi.shape
    w = np.ones(n) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
    w = w * (n / w.sum())
    root = np.sqrt(w)[:, None]
    A, B = root * Phi, root * T
    if ridge > 0:
        penalty = np.zeros((p - 1, p))
        penalty[:, 1:] = math.sqrt(ridge * n) * np.eye(p - 1)
        A = np.vstack([A, penalty])
        B = np.vstack([B, np.zeros((p - 1, T.shape[1]))])
    W, *_ = scipy.linalg.lstsq(A, B, lapack_driver="gelsd", check_finite=False)
    return W


def _centre_count(value, n: int) -> int:
    if isinstance(value, Integral):
        return int(value)
    return max(1, int(round(value * n)))


def _is_centre_spec(v) -> bool:
    return positive_int(v) or (isinstance(v, Real) and not isinstance(v, (bool, Integral)) and 0 < v <= 1)


# --------------------------------------------------------------------------
# Multi-class RBF network
# --------------------------------------------------------------------------
class RBFNetwork(ClassifierMixin, BaseEstimator):
    """Multi-class RBF network: k-means centres, shared Gaussian width, least-squares outputs.

    Parameters
    ----------
    n_centres : float in (0, 1] or int >= 1, default 0.1
        Hidden units: a fraction of the (positively weighted) training rows, or a count; capped
        at the number of distinct training rows.
    width_factor : float > 0, default 0.5
        σ = width_factor × mean distance between two centres (μ of Zhang 2009, who uses 1 with
        far fewer centres; on Frequency-Gender 1.0 underfits, see the README).
    ridge : float >= 0, default 1e-6
        λ of the output layer (per training row, see the module docstring).
    standardize : bool, default True
        Standardise features with the weighted training statistics before the hidden layer.
    max_iter : int, default 100
        k-means iterations.
    random_state : int, RandomState or None, default 0
        k-means++ seeding.

    Notes
    -----
    Fitted attributes: ``classes_``, ``centres_`` (standardised space), ``sigma_``, ``coef_``
    ((1 + K_centres) × n_classes, bias row first), ``mean_``, ``scale_``, ``n_features_in_``.
    """

    _rules = {
        "n_centres": (_is_centre_spec, "a fraction in (0, 1] or a positive int"),
        "width_factor": (positive, "a positive number"),
        "ridge": (nonneg, "a non-negative number"),
        "standardize": (lambda v: isinstance(v, bool), "True or False"),
        "max_iter": (positive_int, "a positive int"),
    }

    def __init__(
        self, n_centres=0.1, width_factor=0.5, ridge=1e-6, standardize=True, max_iter=100, random_state=0
    ):
        self.n_centres = n_centres
        self.width_factor = width_factor
        self.ridge = ridge
        self.standardize = standardize
        self.max_iter = max_iter
        self.random_state = random_state

    @on_one_blas_thread
    def fit(self, X, y, sample_weight=None):
        """Fit on (X, y); ``sample_weight`` (non-negative, not all 0) weights every stage."""
        check_params(self, self._rules)
        X, y = fitted_data(self, X, y)
        y = column_or_1d(y, warn=True)
        if y.shape[0] != X.shape[0]:
            raise ValueError(f"X has {X.shape[0]} rows but y has {y.shape[0]}")
        check_classification_targets(y)
        w = _check_sample_weight(sample_weight, X, dtype=np.float64, ensure_non_negative=True)
        if not w.sum() > 0:
            raise ValueError("sample_weight sums to 0: no training row has weight")
        keep = w > 0
        X, y, w = X[keep], y[keep], w[keep]
        self.classes_, y_idx = np.unique(y, return_inverse=True)
        if self.standardize:
            self.mean_, self.scale_ = _weighted_standardisation(X, w)
        else:
            self.mean_, self.scale_ = np.zeros(X.shape[1]), np.ones(X.shape[1])
        Xs = (X - self.mean_) / self.scale_
        k = _centre_count(self.n_centres, X.shape[0])
        self.centres_ = kmeans_centres(Xs, k, w, self.random_state, self.max_iter)
        self.sigma_ = _width(self.centres_, Xs, self.width_factor)
        T = np.zeros((X.shape[0], self.classes_.size))
        T[np.arange(X.shape[0]), y_idx] = 1.0
        self.coef_ = weighted_least_squares(rbf_design(Xs, self.centres_, self.sigma_), T, w, self.ridge)
        return self

    @on_one_blas_thread
    def decision_function(self, X) -> np.ndarray:
        """Network outputs, n × n_classes (columns in the order of ``classes_``)."""
        check_is_fitted(self, "coef_")
        X = fitted_features(self, X, reset=False)
        return rbf_design((X - self.mean_) / self.scale_, self.centres_, self.sigma_) @ self.coef_

    def predict(self, X) -> np.ndarray:
        """The class with the largest output (first one on ties)."""
        scores = self.decision_function(X)  # checks that the model is fitted
        return self.classes_[np.argmax(scores, axis=1)]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True  # CSR is accepted (densified)
        return tags


# --------------------------------------------------------------------------
# ML-RBF (Zhang 2009)
# --------------------------------------------------------------------------
class MLRBF(ScoreThresholdMixin, MultiLabelClassifierMixin, BaseEstimator):
    """ML-RBF (Zhang 2009): per-label k-means centres pooled into one RBF layer, ±1 targets.

    Parameters
    ----------
    alpha : float in (0, 1], default 0.01
        Label j gets ``ceil(alpha × |U_j|)`` centres, U_j its positive training instances.
    mu : float > 0, default 1.0
        σ = mu × mean distance between two centres.
    ridge : float >= 0, default 0.0
        λ of the output layer (0: minimum-norm least squares, Zhang's pseudo-inverse).
    standardize, max_iter, random_state
        As in :class:`RBFNetwork`.

    Notes
    -----
    ``fit(X, Y)`` takes the n × q 0/1 label matrix (rows of −1 are unlabelled and dropped);
    ``decision_function`` returns the n × q outputs and ``predict`` the 0/1 matrix ``outputs > 0``.
    """

    _rules = {
        "alpha": (lambda v: nonneg(v) and 0 < v <= 1, "in (0, 1]"),
        "mu": (positive, "a positive number"),
        "ridge": (nonneg, "a non-negative number"),
        "standardize": (lambda v: isinstance(v, bool), "True or False"),
        "max_iter": (positive_int, "a positive int"),
    }

    def __init__(self, alpha=0.01, mu=1.0, ridge=0.0, standardize=True, max_iter=100, random_state=0):
        self.alpha = alpha
        self.mu = mu
        self.ridge = ridge
        self.standardize = standardize
        self.max_iter = max_iter
        self.random_state = random_state

    @on_one_blas_thread
    def fit(self, X, Y):
        """Fit on the labelled rows of (X, Y)."""
        check_params(self, self._rules)
        X, Y, labelled = self._check_fit_data(X, Y)
        X, Y = X[labelled], Y[labelled].astype(bool)
        if not Y.any():
            raise ValueError("MLRBF: no label has a positive training instance, so there is no centre")
        if self.standardize:
            self.mean_, self.scale_ = _weighted_standardisation(X, np.ones(X.shape[0]))
        else:
            self.mean_, self.scale_ = np.zeros(X.shape[1]), np.ones(X.shape[1])
        Xs = (X - self.mean_) / self.scale_
        centres, counts = [], []
        for j in range(Y.shape[1]):
            positives = Xs[Y[:, j]]
            if positives.shape[0] == 0:
                counts.append(0)
                continue
            C = kmeans_centres(
                positives, math.ceil(self.alpha * positives.shape[0]), None, self.random_state, self.max_iter
            )
            centres.append(C)
            counts.append(C.shape[0])
        self.centres_ = np.vstack(centres)
        self.centres_per_label_ = np.asarray(counts)
        self.sigma_ = _width(self.centres_, Xs, self.mu)
        T = np.where(Y, 1.0, -1.0)
        self.coef_ = weighted_least_squares(rbf_design(Xs, self.centres_, self.sigma_), T, None, self.ridge)
        self.n_labels_ = Y.shape[1]
        return self

    @on_one_blas_thread
    def decision_function(self, X) -> np.ndarray:
        """Real-valued outputs, n × q (higher = more relevant)."""
        check_is_fitted(self, "coef_")
        X = self._check_predict_data(X)
        return rbf_design((X - self.mean_) / self.scale_, self.centres_, self.sigma_) @ self.coef_
