"""Multi-label manifold regularization, ML-MR and ML-MRRW (paper 000, Eq. 5–20).

Both are Laplacian regularized least squares (LapRLS) with one output column per label. They
solve Eq. 19 for the expansion coefficients over all n training points (labelled and
unlabelled),

    Θ* = (Ψ K Ξ + l γ_A I + (l γ_I / n²) L K Ξ)⁻¹ Y,

and score new points by Eq. 20, F̃ = K_e Ξ Θ*, predicting label j where F̃_ij > 0. K is the
Gaussian kernel of Eq. 5 on standardised features, L = D − W the Laplacian of the sparsified
graph (Eq. 6–10, :mod:`mlgraph.graphs`), Ψ the diagonal indicator of labelled points (Eq. 12),
Y holds ±1 on labelled rows and 0 on unlabelled rows, and Ξ is the diagonal reliance-weight
matrix (Eq. 16): ν1 on labelled and ν2 on unlabelled points for ML-MRRW, the identity for ML-MR.

Notes on the implementation:
- The system matrix is not symmetric, so it is solved by LU (LAPACK ``gesv``) in float64 for
  all labels at once; no inverse is formed.
- With γ_I = 0 the unlabelled coefficients vanish and the model is kernel ridge regression on
  the labelled points with ridge l·γ_A/ν1 (a test checks this against scikit-learn).
- Semi-supervised input follows scikit-learn's convention: a row of ``Y`` filled with −1 marks
  an unlabelled training point.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from mlgraph.graphs import KINDS, WEIGHTS, gaussian_kernel, laplacian, median_sigma, squared_distances
from mlgraph.methods.base import (
    MultiLabelClassifierMixin,
    cached_graph,
    check_params,
    nonneg,
    positive,
    standardisation,
)


class _ManifoldRegularization(MultiLabelClassifierMixin, BaseEstimator):
    """Shared fit/predict of Eq. 19–20; subclasses give the reliance weights (Eq. 16)."""

    _rules = {
        "gamma_A": (positive, "a positive number (γ_A of Eq. 11)"),
        "gamma_I": (nonneg, "a non-negative number (γ_I of Eq. 11)"),
        "sigma": (lambda v: v is None or positive(v), "None (median heuristic) or > 0"),
        "sigma_scale": (positive, "a positive number"),
        "graph": (lambda v: v in KINDS, f"one of {KINDS}"),
        "weights": (lambda v: v in WEIGHTS, f"one of {WEIGHTS} (Eq. 10 as printed, or U∘B)"),
    }

    def __init__(self, gamma_A=1e-2, gamma_I=1.0, sigma=None, sigma_scale=1.0, graph="knn",
                 k=10, eps=None, b=None, weights="distance", random_state=0, memory=None):
        self.gamma_A = gamma_A
        self.gamma_I = gamma_I
        self.sigma = sigma
        self.sigma_scale = sigma_scale
        self.graph = graph
        self.k = k
        self.eps = eps
        self.b = b
        self.weights = weights
        self.random_state = random_state
        self.memory = memory

    def _reliance_weights(self, labelled: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def fit(self, X, Y):
        """Fit on all training points; rows of ``Y`` equal to −1 are unlabelled."""
        check_params(self, self._rules)
        X, Y, labelled = self._check_fit_data(X, Y)
        self.mean_, self.scale_ = standardisation(X)
        Xs = (X - self.mean_) / self.scale_
        sqdist = squared_distances(Xs)  # one distance matrix serves σ, the graph and the kernel
        if self.sigma is None:
            base_sigma = median_sigma(Xs, random_state=self.random_state, sqdist=sqdist)
        else:
            base_sigma = self.sigma
        self.sigma_ = float(base_sigma) * self.sigma_scale

        n, l = Xs.shape[0], int(labelled.sum())
        W = cached_graph(self.memory, Xs, kind=self.graph, sigma=self.sigma_, weights=self.weights,
                         k=self.k, eps=self.eps, b=self.b, random_state=self.random_state, sqdist=sqdist)
        K = np.exp(sqdist * (-0.5 / self.sigma_**2), out=sqdist)                    # Eq. 5, in place
        xi = self._reliance_weights(labelled)                                       # Eq. 16
        K *= xi                                                                      # K Ξ, in place
        A = ((l * self.gamma_I / n**2) * laplacian(W)) @ K                           # (lγ_I/n²) L K Ξ
        np.add(A, K, out=A, where=labelled[:, None])                                 # + Ψ K Ξ
        A.flat[:: n + 1] += l * self.gamma_A                                         # + l γ_A I
        target = np.where(labelled[:, None], 2.0 * Y - 1.0, 0.0)                     # ±1 / 0 rows
        theta = scipy.linalg.solve(A, target, overwrite_a=True, check_finite=False)  # Eq. 19
        self.X_fit_ = Xs
        self.dual_coef_ = xi[:, None] * theta                                        # Ξ Θ*
        self.graph_ = W
        self.n_labelled_ = l
        return self

    def decision_function(self, X) -> np.ndarray:
        """Real-valued label scores F̃ = K_e Ξ Θ* (Eq. 20)."""
        check_is_fitted(self, "dual_coef_")
        X = self._check_predict_data(X)
        Ke = gaussian_kernel((X - self.mean_) / self.scale_, self.X_fit_, sigma=self.sigma_)
        return Ke @ self.dual_coef_

    def predict(self, X) -> np.ndarray:
        """Binary label matrix: label j is predicted where its score exceeds 0 (Eq. 20)."""
        return (self.decision_function(X) > 0).astype(np.int8)


class MLMR(_ManifoldRegularization):
    """ML-MR: multi-label LapRLS, Eq. 11–14 and 19–20 with Ξ = I (paper 000)."""

    def _reliance_weights(self, labelled: np.ndarray) -> np.ndarray:
        return np.ones(labelled.shape[0])


class MLMRRW(_ManifoldRegularization):
    """ML-MRRW: ML-MR with reliance weights Ξ = diag(ν1 on labelled, ν2 on unlabelled).

    Proposition 1 requires ν ≥ 0 for the weighted kernel to stay positive semi-definite; the
    paper fixes (ν1, ν2) = (1, 0.1). ν1 = ν2 = 1 is ML-MR. ν1 = 0 would zero every labelled
    coefficient and is rejected.
    """

    _rules = {
        **_ManifoldRegularization._rules,
        "nu1": (positive, "> 0 (reliance weight of labelled points, Proposition 1)"),
        "nu2": (nonneg, ">= 0 (reliance weight of unlabelled points, Proposition 1)"),
    }

    def __init__(self, gamma_A=1e-2, gamma_I=1.0, sigma=None, sigma_scale=1.0, graph="knn",
                 k=10, eps=None, b=None, weights="distance", random_state=0, memory=None, nu1=1.0, nu2=0.1):
        super().__init__(gamma_A=gamma_A, gamma_I=gamma_I, sigma=sigma, sigma_scale=sigma_scale,
                         graph=graph, k=k, eps=eps, b=b, weights=weights, random_state=random_state,
                         memory=memory)
        self.nu1 = nu1
        self.nu2 = nu2

    def _reliance_weights(self, labelled: np.ndarray) -> np.ndarray:
        return np.where(labelled, float(self.nu1), float(self.nu2))
