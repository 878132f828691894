"""Gaussian kernel and kernel-induced distance (paper 000, Eq. 5-6).

The graph is built from squared Euclidean distances: the kernel of Eq. 5,
``U_ij = exp(-||x_i - x_j||^2 / (2 sigma^2))``, and the kernel distance of Eq. 6,
``H_ij = sqrt(U_ii + U_jj - 2 U_ij) = sqrt(2 - 2 U_ij)`` (``U_ii = 1``).  ``H`` is a
strictly increasing function of the Euclidean distance, so nearest neighbours in ``H``
are nearest neighbours in Euclidean distance; the sparsifiers rely on this.
"""

from __future__ import annotations

import numbers

import numpy as np
from scipy.spatial.distance import pdist

__all__ = [
    "check_sigma",
    "gaussian_kernel",
    "kernel_distance",
    "median_sigma",
    "squared_distances",
]


def check_sigma(sigma: float) -> float:
    """Return ``sigma`` as a float, or raise ``ValueError`` unless it is finite and > 0."""
    if isinstance(sigma, bool) or not isinstance(sigma, numbers.Real):
        raise ValueError(f"sigma must be a positive finite number, got {sigma!r}")
    sigma = float(sigma)
    if not np.isfinite(sigma) or sigma <= 0.0:
        raise ValueError(f"sigma must be a positive finite number, got {sigma!r}")
    return sigma


def as_float_matrix(A: np.ndarray, name: str) -> np.ndarray:
    A = np.asarray(A, dtype=np.float64)
    if A.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array, got shape {A.shape}")
    if not np.all(np.isfinite(A)):
        raise ValueError(f"{name} contains NaN or infinite values")
    return A


def squared_distances(A: np.ndarray, B: np.ndarray | None = None) -> np.ndarray:
    """Squared Euclidean distances ``||a_i - b_j||^2`` between the rows of A and B.

    Vectorised as ``||a||^2 + ||b||^2 - 2 a b^T`` and clipped at 0 (cancellation can
    make it slightly negative).  With ``B is None`` the result is the exactly symmetric
    self-distance matrix of A with an exact zero diagonal.
    """
    A = as_float_matrix(A, "A")
    same = B is None
    B = A if same else as_float_matrix(B, "B")
    if A.shape[1] != B.shape[1]:
        raise ValueError(f"A and B must have the same number of columns, got {A.shape[1]} and {B.shape[1]}")
    sq_a = np.einsum("ij,ij->i", A, A)
    sq_b = sq_a if same else np.einsum("ij,ij->i", B, B)
    # numpy computes A @ A.T with BLAS syrk, which is bitwise symmetric; adding the
    # (symmetric) sum of squared norms in one step keeps it so, without a transposed pass.
    G = A @ B.T
    G *= -2.0
    G += sq_a[:, None] + sq_b[None, :]
    np.maximum(G, 0.0, out=G)
    if same:
        np.fill_diagonal(G, 0.0)
    return G


def median_sigma(X: np.ndarray, max_samples: int = 1000, random_state: int | None = 0,
                 sqdist: np.ndarray | None = None) -> float:
    """Default bandwidth: the median pairwise Euclidean distance between rows of X.

    Only distinct pairs ``i < j`` count.  When X has more than ``max_samples`` rows, a
    subsample of ``max_samples`` rows drawn without replacement with
    ``numpy.random.default_rng(random_state)`` is used, so the value is deterministic for
    a fixed ``random_state``.  ``sqdist``, the full squared-distance matrix of X when the
    caller has it, gives the same pairs' distances without computing them again.  Raises ``ValueError`` when the median is 0 (more than half
    of the sampled pairs are duplicate points), because Eq. 5 is then undefined.
    """
    X = as_float_matrix(X, "X")
    if isinstance(max_samples, bool) or not isinstance(max_samples, numbers.Integral) or max_samples < 2:
        raise ValueError(f"max_samples must be an integer >= 2, got {max_samples!r}")
    n = X.shape[0]
    if n < 2:
        raise ValueError(f"median_sigma needs at least 2 rows in X, got n={n}")
    rows = np.arange(n)
    if n > max_samples:
        rows = np.sort(np.random.default_rng(random_state).choice(n, size=max_samples, replace=False))
    if sqdist is None:
        distances = pdist(X[rows])
    else:
        sub = np.asarray(sqdist)[np.ix_(rows, rows)]
        distances = np.sqrt(sub[np.triu_indices(len(rows), 1)])
    sigma = float(np.median(distances))
    if sigma <= 0.0:
        raise ValueError("median pairwise distance is 0 (mostly duplicate rows); pass sigma explicitly")
    return sigma


def gaussian_kernel(A: np.ndarray, B: np.ndarray | None = None, sigma: float | None = None) -> np.ndarray:
    """Gaussian kernel matrix of Eq. 5: ``U_ij = exp(-||a_i - b_j||^2 / (2 sigma^2))``.

    ``sigma`` is required (it has no default here because the caller must decide which
    sample defines it; see :func:`median_sigma`).  With ``B is None`` the kernel of A with
    itself is returned (exact unit diagonal).
    """
    if sigma is None:
        raise ValueError("sigma must be given (e.g. sigma=median_sigma(X_train))")
    sigma = check_sigma(sigma)
    U = squared_distances(A, B)
    U *= -1.0 / (2.0 * sigma**2)
    return np.exp(U, out=U)


def kernel_distance(sqdist: np.ndarray, sigma: float) -> np.ndarray:
    """Kernel distance of Eq. 6 from squared Euclidean distances, elementwise.

    ``H = sqrt(2 - 2 exp(-d^2 / (2 sigma^2)))``, evaluated as ``sqrt(-2 expm1(...))`` so
    that small distances keep full relative precision.  Works on any array, e.g. the
    ``.data`` of a sparse matrix of squared distances; ``H`` lies in ``[0, sqrt(2))``.
    """
    sigma = check_sigma(sigma)
    sqdist = np.asarray(sqdist, dtype=np.float64)
    if np.any(sqdist < 0) or not np.all(np.isfinite(sqdist)):
        raise ValueError("sqdist must contain finite non-negative squared distances")
    return np.sqrt(-2.0 * np.expm1(-sqdist / (2.0 * sigma**2)))
