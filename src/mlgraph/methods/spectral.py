"""ML-FSKSC: fixed-size multi-label semi-supervised regularized kernel spectral clustering.

The baseline [33] of paper 000 (Mehrkanoon & Suykens, "Multi-label semi-supervised learning
using regularized kernel spectral clustering", IJCNN 2016). It is the multi-class
semi-supervised KSC model MSS-KSC (Mehrkanoon, Alzate, Mall, Langone & Suykens, "Multiclass
semisupervised learning based upon kernel spectral clustering", IEEE TNNLS 26(4):720–733, 2015)
with one output per label, solved in the primal on an explicit Nyström feature map built on
prototypes chosen by the fixed-size (quadratic Rényi entropy) criterion, as in the large-scale
FS-SSKSC model (Mehrkanoon & Suykens, "Large scale semi-supervised learning using KSC based
model", IJCNN 2014) and the fixed-size LS-SVM (Suykens et al., *Least Squares Support Vector
Machines*, 2002; De Brabanter et al., "Optimized fixed-size kernel models for large data sets",
CSDA 2010). Only the abstracts of the Mehrkanoon papers (MSS-KSC: a regularized KSC whose
model is a linear system; FS-SSKSC: a Nyström feature map and a solve in the primal) and
LS-SVMlab's ``kentropy`` (H = −log of the mean kernel) could be read, so no equation numbers
are quoted: the problem below is written out and its linear system derived here (and checked
by the tests against a numerical gradient and against the Lagrangian dual).

Model. Training points x_1..x_n (labelled and unlabelled alike), q labels. For label l,

    min_{w_l, b_l, e_l}  ½ w_lᵀw_l − (γ1/2) e_lᵀ V e_l + (γ2/2) (e_l − c_l)ᵀ A (e_l − c_l)
    s.t.                 e_l = Φ̂ w_l + b_l 1,                                            (P)

V = D⁻¹ the inverse degree matrix of the kernel matrix of all training points (the KSC term,
weighted variance of the scores, is *maximised*), A = diag(1 on labelled, 0 on unlabelled)
and c_l = ±1 on labelled points (label l present / absent), 0 on unlabelled ones. Eliminating
e_l and setting the gradient in (w_l, b_l) to zero gives, with R = γ2 A − γ1 V (diagonal),

    [Φ̂ᵀRΦ̂ + I   Φ̂ᵀR1] [w_l]   [γ2 Φ̂ᵀA c_l]
    [1ᵀRΦ̂       1ᵀR1 ] [b_l] = [γ2 1ᵀA c_l ],                                          (S)

an (r+1)×(r+1) system whose matrix is the same for every label: it is factorised once
(symmetric indefinite LDLᵀ, since −γ1 V makes it indefinite in general) and solved for all q
right-hand sides. The score of a point x is e_l(x) = φ̂(x)ᵀw_l + b_l and label l is predicted
where e_l(x) > 0. (S) is the stationarity condition of (P); it is a minimum in w_l for fixed
b_l whenever γ1 < 1/λ_max(Φ̂ᵀVΦ̂), and λ_max(Φ̂ᵀVΦ̂) ≈ 1 because D is the degree matrix of
Φ̂Φ̂ᵀ (the normalised affinity D^-½ Ω D^-½ of a non-negative Ω has spectral radius 1).

Fixed size. m prototypes are chosen from the training points by maximising the quadratic
Rényi entropy estimate H = −log(1/m² Σ_ij K(p_i, p_j)) with a random swap search: start from a
random m-subset; at each trial swap a random prototype for a random non-prototype and keep the
swap if H increases. The kernel sum over the working set and its row sums are maintained, so a
trial costs one kernel row (O(m·d)). With the eigendecomposition K_mm = U Λ Uᵀ, the Nyström
feature map is φ̂(x) = Λ^-½ Uᵀ k_m(x) (eigenvalues below ``eig_tol``·λ_max dropped), i.e.
Φ̂ = K_nm U Λ^-½, so Φ̂Φ̂ᵀ = K_nm K_mm⁺ K_mn; new points use the kernel to the prototypes.

Assumptions (choices the sources do not fix):
- Kernel: Gaussian exp(−‖x−y‖²/(2σ²)) on features standardised with training statistics; σ
  defaults to the median pairwise distance (:func:`mlgraph.graphs.median_sigma`) times
  ``sigma_scale``. The same σ serves the entropy criterion, the Nyström map and the degrees.
- Degrees: d = Φ̂(Φ̂ᵀ1), the row sums of the Nyström kernel over all n training points, in
  O(n·r); clipped below at 1, the smallest degree an exact Gaussian kernel matrix can have
  (K_ii = 1), so that points far from every prototype do not get a near-infinite weight 1/d.
- Eigenvalue cut-off: eigenvalues of K_mm below ``eig_tol``·λ_max (default 1e-10) are dropped.
- Entropy search: ``entropy_iterations`` swap trials (default 2000), a fixed budget with no
  early stop; draws from ``numpy.random.default_rng(random_state)``: first a permutation of the
  n points (the first m are the initial set), then all trial positions at once.
- Defaults γ1 = 0.9, just below the bound λ_max(Φ̂ᵀVΦ̂) ≈ 1 (so (P) stays convex in w while
  the unlabelled points weigh in; past the bound accuracy collapses on toy problems), and
  γ2 = 1; the papers tune both by cross-validation. γ1 and γ2 are the raw weights of (P), not
  rescaled by n or by the number of labelled points.
- Encoding: c = 2y − 1 on labelled rows, 0 on unlabelled rows (A removes them anyway), one
  output per label, each label a binary ±1 problem; the score is the latent e_l(x), threshold 0.
- Semi-supervised input follows scikit-learn's convention: a row of ``Y`` filled with −1 marks
  an unlabelled training point; all training points enter the prototype search and the degrees.
"""

from __future__ import annotations

from numbers import Integral

import numpy as np
import scipy.linalg
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from mlgraph.graphs import gaussian_kernel, median_sigma
from mlgraph.graphs.kernels import on_one_blas_thread
from mlgraph.methods.base import (
    MultiLabelClassifierMixin,
    ScoreThresholdMixin,
    check_params,
    nonneg,
    positive,
    positive_int,
    standardisation,
)

DEGREE_FLOOR = 1.0  # exact Gaussian-kernel degrees are >= K_ii = 1
_SWAP_BATCH = 64  # swap trials whose kernel rows come from one matrix product


def nonneg_int(v) -> bool:
    return isinstance(v, Integral) and not isinstance(v, bool) and v >= 0


def renyi_entropy(K: np.ndarray) -> float:
    """Quadratic Rényi entropy estimate of a prototype set from its kernel matrix,
    H = −log(1/m² Σ_ij K_ij) = −log(mean of K)."""
    return float(-np.log(np.mean(K)))


def select_prototypes(
    X: np.ndarray, n_prototypes: int, sigma: float, n_iter: int, random_state=0
) -> np.ndarray:
    """Indices of ``n_prototypes`` rows of X chosen by the quadratic Rényi entropy swap search.

    ``rng = numpy.random.default_rng(random_state)``; ``perm = rng.permutation(n)`` puts the
    initial random set in ``perm[:m]``; then ``rng.integers(m, size=n_iter)`` (prototype slot
    to leave) and ``rng.integers(m, n, size=n_iter)`` (non-prototype slot to enter) are drawn.
    Trial t swaps the two slots if that lowers the kernel sum Σ_ij K(p_i, p_j), i.e. raises the
    entropy. ``n_iter = 0`` returns the initial random set. Each trial costs one kernel row, and a
    kept swap one kernel column of the rest of its batch.
    """
    X = np.asarray(X, dtype=np.float64)
    n = X.shape[0]
    m = min(int(n_prototypes), n)
    rng = np.random.default_rng(random_state)
    perm = rng.permutation(n)
    if m == n or n_iter == 0:
        return np.sort(perm[:m])
    out_slot = rng.integers(m, size=n_iter)
    in_slot = rng.integers(m, n, size=n_iter)
    P = X[perm[:m]]  # working set, updated in place
    p_sq = np.einsum("ij,ij->i", P, P)
    K = gaussian_kernel(P, sigma=sigma)  # its kernel matrix, m x m
    rows = K.sum(axis=1)  # row sums; the kernel sum is rows.sum()
    scale = -0.5 / sigma**2

    def kernel_rows(C: np.ndarray, c_sq: np.ndarray) -> np.ndarray:  # K(c, p_i) for rows c of C
        return np.exp(np.maximum(p_sq + c_sq[:, None] - 2.0 * (C @ P.T), 0.0) * scale)

    for start in range(0, n_iter, _SWAP_BATCH):
        # The kernel rows of a batch's entering points against the working set come from one
        # product (40 % faster than one per trial; it rounds in other places than a product per
        # row, and took the same decisions on the four paper 000 datasets); a kept swap
        # refreshes the column it changed and the rows of later trials drawing from the slot it
        # refilled.
        outs, ins = out_slot[start : start + _SWAP_BATCH], in_slot[start : start + _SWAP_BATCH]
        C = X[perm[ins]]
        c_sq = np.einsum("ij,ij->i", C, C)
        Kc = kernel_rows(C, c_sq)
        for t, (a, j) in enumerate(zip(outs.tolist(), ins.tolist(), strict=True)):
            k = Kc[t]
            # Change of the kernel sum when x replaces p_a: the row and column of p_a leave,
            # those of x enter (the diagonal K(x, x) = K(p_a, p_a) = 1 cancels).
            k_in = k.sum() - k[a]  # Σ_{i≠a} K(x, p_i)
            if k_in < rows[a] - K[a, a]:  # smaller sum, larger entropy: keep the swap
                k = k.copy()
                k[a] = 1.0  # K(x, x) on the new diagonal
                rows += k - K[a]
                rows[a] = k.sum()
                K[a, :] = k
                K[:, a] = k
                P[a] = C[t]
                p_sq[a] = c_sq[t]
                perm[a], perm[j] = perm[j], perm[a]
                later = slice(t + 1, len(outs))
                Kc[later, a] = np.exp(
                    np.maximum(p_sq[a] + c_sq[later] - 2.0 * (C[later] @ P[a]), 0.0) * scale
                )
                for u in t + 1 + np.flatnonzero(ins[later] == j):  # slot j now holds the old p_a
                    C[u] = X[perm[j]]
                    c_sq[u] = C[u] @ C[u]
                    Kc[u] = kernel_rows(C[u : u + 1], c_sq[u : u + 1])[0]
    return np.sort(perm[:m])


def nystrom_map(K_mm: np.ndarray, eig_tol: float = 1e-10) -> np.ndarray:
    """The m×r matrix U Λ^-½ of the Nyström feature map φ̂(x) = (U Λ^-½)ᵀ k_m(x), from the
    eigendecomposition K_mm = U Λ Uᵀ; eigenvalues below ``eig_tol``·λ_max are dropped."""
    lam, U = scipy.linalg.eigh(K_mm)
    keep = lam > eig_tol * lam[-1]
    return U[:, keep] / np.sqrt(lam[keep])


def nystrom_degrees(Phi: np.ndarray) -> np.ndarray:
    """Degrees d = Φ̂(Φ̂ᵀ1) of the Nyström kernel matrix Φ̂Φ̂ᵀ, clipped below at 1."""
    return np.maximum(Phi @ Phi.sum(axis=0), DEGREE_FLOOR)


def solve_primal(
    Phi: np.ndarray, degrees: np.ndarray, C: np.ndarray, labelled: np.ndarray, gamma1: float, gamma2: float
) -> tuple[np.ndarray, np.ndarray]:
    """(W, b) solving the stationarity system (S) of the primal (P) for every column of C.

    Phi : n×r explicit features; degrees : the n diagonal entries of D; C : n×q codes (rows of
    unlabelled points are ignored, A zeroes them); labelled : boolean mask. One symmetric
    indefinite factorisation serves all q columns. Returns W (r×q) and b (q,).
    """
    n, r = Phi.shape
    a = labelled.astype(np.float64)
    R = gamma2 * a - gamma1 / degrees  # diagonal of γ2 A − γ1 D⁻¹
    F = np.hstack([Phi, np.ones((n, 1))])  # [Φ̂ 1]
    M = F.T @ (R[:, None] * F)  # [Φ̂ 1]ᵀ R [Φ̂ 1]
    M[np.arange(r), np.arange(r)] += 1.0  # + I on the w block
    rhs = gamma2 * (F.T @ np.where(labelled[:, None], C, 0.0))  # γ2 [Φ̂ 1]ᵀ A c
    sol = scipy.linalg.solve(M, rhs, assume_a="sym", check_finite=False)
    return sol[:r], sol[r]


class MLFSKSC(ScoreThresholdMixin, MultiLabelClassifierMixin, TransformerMixin, BaseEstimator):
    """ML-FSKSC [33]: fixed-size multi-label semi-supervised regularized KSC (see the module).

    Parameters
    ----------
    gamma1 : weight γ1 ≥ 0 of the (maximised) KSC term eᵀD⁻¹e over all training points; the
        unlabelled points act through it. Below ≈1 the primal stays convex in w.
    gamma2 : weight γ2 > 0 of the squared error on the labelled points.
    sigma, sigma_scale : Gaussian bandwidth (None: median pairwise distance of the standardised
        training features), multiplied by ``sigma_scale``.
    n_prototypes : m, number of prototypes (capped at n). entropy_iterations : swap trials of
        the Rényi entropy search (0: a random subset). eig_tol : relative eigenvalue cut-off of
        the Nyström map. random_state : seeds the σ subsample and the prototype search.
    """

    _rules = {
        "gamma1": (nonneg, "a non-negative number (weight of the KSC term)"),
        "gamma2": (positive, "a positive number (weight of the labelled-data term)"),
        "sigma": (lambda v: v is None or positive(v), "None (median heuristic) or > 0"),
        "sigma_scale": (positive, "a positive number"),
        "n_prototypes": (positive_int, "a positive integer"),
        "entropy_iterations": (nonneg_int, "a non-negative integer (0: random prototypes)"),
        "eig_tol": (lambda v: nonneg(v) and v < 1, "a number in [0, 1)"),
    }

    def __init__(
        self,
        gamma1=0.9,
        gamma2=1.0,
        sigma=None,
        sigma_scale=1.0,
        n_prototypes=200,
        entropy_iterations=2000,
        eig_tol=1e-10,
        random_state=0,
    ):
        self.gamma1 = gamma1
        self.gamma2 = gamma2
        self.sigma = sigma
        self.sigma_scale = sigma_scale
        self.n_prototypes = n_prototypes
        self.entropy_iterations = entropy_iterations
        self.eig_tol = eig_tol
        self.random_state = random_state

    @on_one_blas_thread
    def fit(self, X, Y):
        """Fit on all training points; rows of ``Y`` equal to −1 are unlabelled."""
        check_params(self, self._rules)
        X, Y, labelled = self._check_fit_data(X, Y)
        self.mean_, self.scale_ = standardisation(X)
        Xs = (X - self.mean_) / self.scale_
        base_sigma = median_sigma(Xs, random_state=self.random_state) if self.sigma is None else self.sigma
        self.sigma_ = float(base_sigma) * self.sigma_scale

        idx = select_prototypes(
            Xs, self.n_prototypes, self.sigma_, self.entropy_iterations, random_state=self.random_state
        )
        P = Xs[idx]
        K_mm = gaussian_kernel(P, sigma=self.sigma_)
        self.components_ = nystrom_map(K_mm, self.eig_tol)  # U Λ^-½, m×r
        Phi = gaussian_kernel(Xs, P, sigma=self.sigma_) @ self.components_  # Φ̂ = K_nm U Λ^-½
        self.degrees_ = nystrom_degrees(Phi)
        C = np.where(labelled[:, None], 2.0 * Y - 1.0, 0.0)  # ±1 / 0 codes
        self.coef_, self.intercept_ = solve_primal(Phi, self.degrees_, C, labelled, self.gamma1, self.gamma2)
        self.prototype_indices_ = idx
        self.prototypes_ = P
        self.entropy_ = renyi_entropy(K_mm)
        self.n_labelled_ = int(labelled.sum())
        return self

    @on_one_blas_thread
    def transform(self, X) -> np.ndarray:
        """Nyström features φ̂(x) = (U Λ^-½)ᵀ k_m(x) of new points."""
        check_is_fitted(self, "coef_")
        X = self._check_predict_data(X)
        Xs = (X - self.mean_) / self.scale_
        return gaussian_kernel(Xs, self.prototypes_, sigma=self.sigma_) @ self.components_

    @on_one_blas_thread
    def decision_function(self, X) -> np.ndarray:
        """Label scores e_l(x) = φ̂(x)ᵀw_l + b_l, one column per label."""
        return self.transform(X) @ self.coef_ + self.intercept_
