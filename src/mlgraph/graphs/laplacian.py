"""Graph Laplacian ``L = D - W`` (paper 000, after Eq. 10)."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

__all__ = ["laplacian"]


def laplacian(W: sp.spmatrix | sp.sparray | np.ndarray) -> sp.csr_matrix:
    """Unnormalised Laplacian ``L = D - W`` with ``D = diag(W 1)``, as a CSR matrix.

    W must be square and symmetric (up to 1e-12 relative); ``L`` then has zero row sums
    and, for non-negative weights, is positive semi-definite.
    """
    W = sp.csr_matrix(W, dtype=np.float64)
    if W.shape[0] != W.shape[1]:
        raise ValueError(f"W must be square, got shape {W.shape}")
    scale = abs(W).max() if W.nnz else 0.0
    if W.nnz and abs(W - W.T).max() > 1e-12 * scale:
        raise ValueError("W must be symmetric")
    degree = np.asarray(W.sum(axis=1)).ravel()
    return sp.csr_matrix(sp.diags(degree) - W)
