"""SSWL, semi-supervised weak-label learning (Dong, Li & Zhou, AAAI 2018; ref. 18 of paper 000).

The encoding, objective and block updates below stay one module because every update is derived
from the one objective, so their equations belong together.

Weak-label encoding
-------------------
SSWL sees a training label matrix in which an entry is either a *known positive* or
*uncertain* (a missing positive, a negative, or any entry of an unlabelled instance). Our input
follows the project convention (labelled rows hold full 0/1 label sets, rows of −1 are
unlabelled) and is mapped as the authors' code maps its ±1 matrix ``Train_Label`` (+1 known
positive, −1 otherwise, unlabelled rows all −1)::

    P = 1 where a labelled row has Y_ij = 1, else 0       (``label_1``  in SSWL.m)
    U = 1 − P                                              (``label_F_1`` in SSWL.m)

so an unlabelled row and a labelled row without any positive label are the same to SSWL, and
known negatives carry no more information than missing labels (the weak-label assumption).

Objective (bi-convex)
---------------------
With Ã = [X_s, 1] (n × p, standardised training features plus a bias column; labelled and
unlabelled instances), the first model F = ÃW, the second model G = ÃW* (both n × m), their
combination O = P∘F + U∘G, the row-normalised kNN instance similarity S (n × n) and the label
similarity L (m × m), SSWL minimises

    J(W, W*, L) = ‖P∘F − P‖²                 (1) fit the known positives with +1
                + α ‖O − S O L‖²              (2) smoothness: each instance's predictions are
                                                  rebuilt from its neighbours' (S) through the
                                                  label similarity (L)
                + β ‖U∘(F − G)‖²              (3) consistency of the two models on uncertain entries
                + ζ ‖U∘G + U‖²                (4) the second model pulls uncertain entries to −1

(Frobenius norms; ∘ the Hadamard product). The two coupled models are the "ensemble of
multiple models" of the abstract: F alone trusts the known positives, G encodes the prior
that an uncertain entry is more likely negative, β ties them together. J is convex in W, in
W* and in L separately (each term is a squared norm of an affine function of one block when
the others are fixed), and jointly non-convex through the product S O L.

Block coordinate descent (one sweep = W, then W*, then L, as in SSWL.m)
------------------------------------------------------------------------
Write vec(·) column-wise and Ã_M = [M_1∘Ã, …, M_m∘Ã] (n × mp, column j of the mask scaling
the rows), C_M = Ã_Mᵀ S Ã_M and E_M = (S Ã_M)ᵀ (S Ã_M); J_p is the p × p matrix of ones. With
N(X) = X − S X L and its adjoint Nᵀ(R) = R − Sᵀ R Lᵀ, the normal equations are::

    W  : H_P vec(W)  = vec(Ãᵀ(P + β U∘G − α P∘Nᵀ(N(U∘G))))
    W* : H_U vec(W*) = vec(Ãᵀ(−ζ U + β U∘F − α U∘Nᵀ(N(P∘F))))
    H_M = blockdiag_j(Ãᵀ diag(D_j) Ã) + α [blockdiag_j(Ãᵀ diag(M_j) Ã)
          − (Lᵀ⊗J_p)∘C_M − ((Lᵀ⊗J_p)∘C_M)ᵀ + (LLᵀ⊗J_p)∘E_M]
      with D = P + βU for W and D = (β + ζ)U for W*;
    L  : (TᵀT) L = TᵀO with T = S O (least squares; only term (2) depends on L).

Each W / W* system is solved in whitened coordinates: with the thin SVD Ã = Q Σ Vᵀ
(numerical rank r, as in ``lstsq``) and W = T V, T = V_r Σ_r⁻¹, H_M becomes the same matrix
with Q in place of Ã (condition number ≤ 1e4 on scene and yeast instead of up to 1e10), and a
rank-deficient Ã gives the minimum-norm solution. The whitened system is solved by
preconditioned conjugate gradients (the Hessian products are never formed,
Qᵀ(D∘F + α M∘Nᵀ(N(M∘F))) with F = QV), the residual re-checked freshly computed at the end, to
the accuracy ``solver`` sets:

- ``"authors"`` (default), as SSWL.m's ``pcg(G, b, 1e-6, 5000)``, which is given no initial
  guess: from W = 0 until the relative residual of the normal equations in Ã's coordinates
  (the whitened residual scaled by Σ) is ‖b − H vec(W)‖ ≤ 1e-6 ‖b‖, two CG iterations with a
  fresh preconditioner. The preconditioner only makes CG reach that tolerance sooner, but it
  changes which point within the tolerance CG stops at, as SSWL.m's min–max scaled features
  would: no setting reproduces SSWL.m's iterates to more than the tolerance.
- ``"tight"``: from the previous sweep's solution until the whitened relative residual is
  ≤ 1e-12, so each update is the exact block minimiser up to rounding (the W of a dense
  float64 Cholesky solve agrees to ~1e-10 relative).

The preconditioner is H_M⁻¹ in float32, so CG needs 2–3 iterations:

- a Cholesky factorisation (LAPACK ``spotrf``) of H_M itself. A system keeps its factor for the
  next sweep while L has moved by at most 2 % in Frobenius norm (10 % with ``"authors"``: to
  1e-6 a stale factor costs fewer extra iterations) and CG converges with it in 20 iterations
  (of the factorisations, ``"tight"`` saves 10–65 % on scene and 0–10 % on yeast,
  ``"authors"`` 59–85 % and 10–50 %: 3 trials each at 5, 10, 20 and 50 % labelled);
- for the W system with few known positives, Woodbury's identity: H_P is βI plus a term of rank
  nnz(P), one per known positive, and while nnz(P) ≤ 0.6 m r an LU of an nnz(P) × nnz(P)
  matrix inverts it for less (``_SSWLProblem._woodbury_factor``). At paper 000's labelling
  rates (5–50 %) this holds on scene at every rate and on yeast up to 10 %; one BLAS thread, a
  scene trial at 5 % took 0.86 s instead of 1.31, at 50 % 1.15 instead of 1.32, and yeast at 5 %
  0.66 instead of 0.97.

If the float32 factorisation is singular or not positive definite (a pivot ratio below
100·eps₃₂ included) or CG does not converge in 60 iterations (a singular system, e.g. a label
positive on every row), the dense float64 system is solved by Cholesky, falling back to the
minimum-norm least-squares solution (``gelsd``), still an exact block minimiser. C_M, E_M and
the block diagonals depend only on the masks and are formed once per fit in float32 (they only
build the preconditioner): the P blocks from the rows with a known positive (cost
nnz(P)·r·mr), the U blocks from diag(U_j) S diag(U_k) = S − P_j S − S P_k + P_j S P_k. A sweep
costs two (mr)² combinations, two float32 factorisations and a few O(n r m) Hessian products
(memory O((mp)²), time O((mp)³) a sweep; this is why SSWL is practical for emotions, scene and
yeast but not for mediamill, m = 101, as paper 000 reports).

The objective after every sweep is recorded in ``objective_`` (entry 0 at the initial point).
With ``"tight"`` it cannot increase; with ``"authors"`` a step may miss its block minimiser by
rᵀH⁻¹r for its residual r (no sweep increased it in 36 trials of paper 000's protocol). The
loop stops when the relative decrease is below ``tol`` or after ``max_iter`` sweeps. Scores for new points are X̃_test W, and label j
is predicted where its score is > 0 (the sign rule of SSWL.m).

Assumptions
-----------
- Sources: the abstract of the paper and the authors' Matlab code (github.com/dhc123/SSWL,
  ``SSWL/SSWL.m``, ``SSWL/demo_SSWL.m``). The body of the paper could not be retrieved, so the
  objective is written from SSWL.m (its ``loss_2``) and the terms are numbered (1)–(4) here,
  not with the paper's equation numbers; a difference between paper and code could not be
  checked and is not claimed.
- Mapping of our labels to weak labels as above (P from labelled positives, U = 1 − P); known
  negatives are deliberately not used, as in the code, which turns its ±1 labels into P/U.
- Defaults are those of ``demo_SSWL.m``: α = 1.6, β = 0.06, ζ = 0.06; k = 5 neighbours and
  20 sweeps are hard-coded in SSWL.m.
- Instance graph: SSWL.m builds a symmetrised 5-NN heat-kernel graph (sltoolbox
  ``slaffinitymat``: w = exp(−d²/(2σ²)), σ² = mean squared distance over the kNN pairs, self
  excluded) and row-normalises it, S = D⁻¹W. We use :func:`mlgraph.graphs.build_graph`
  (exact kNN, max-symmetrised, heat weights) with that σ by default (``sigma=None``; an
  explicit ``sigma`` overrides it), then row-normalise. The code's approximate NN search and
  its (unstated) symmetrisation rule are replaced by exact kNN and the max rule.
- Features are standardised with training statistics (project convention) instead of the
  min-max scaling of the authors' preprocessing; constant features are dropped from Ã (their
  coefficients are 0) so that the block systems stay well posed.
- Initialisation as in SSWL.m: W = I_{p×m} (ones on the leading diagonal), W* = 0, L = I_m.
  Since W is updated first, its initial value only affects ``objective_[0]``.
- Block solves (``solver``): SSWL.m runs unpreconditioned ``pcg`` from 0 (no initial guess) to
  a relative residual of 1e-6, at most 5000 iterations, on the W, W* and L normal equations.
  The default ``"authors"`` follows it: W and W* from 0 to 1e-6 in Ã's coordinates with our
  float32 preconditioner (Cholesky, or Woodbury's identity for the W system with few known
  positives; dense float64 Cholesky / least-squares fallback), and L by unpreconditioned CG
  from 0 to 1e-6 on (TᵀT) L = TᵀO, its m² unknowns as one vector as ``pcg`` on kron(I, TᵀT),
  the least-residual iterate if 5000 iterations do not converge, as ``pcg`` returns.
  ``"tight"`` solves W and W* to 1e-12 from the previous sweep's solution and L exactly
  (Cholesky), each step the exact block minimiser up to rounding and the objective monotone
  up to rounding. ``label_similarity="symmetric"`` (ours) solves its L exactly under both.
  ``"authors"`` makes a scene or yeast fit about 1.2–1.3× faster.
- What ``"authors"`` moves against ``"tight"`` (paper 000's protocol, seed 0, 10 repetitions,
  the tuned hyper-parameters): on scene nothing (the same metrics in all 100 trials), on
  emotions one trial in 100 (at 50 % labelled, average precision −1.3e-3, that rate's mean
  −1.3e-4), on yeast 48 trials in 100: per rate the mean average precision by at most 1.5e-4,
  micro-F1 by 8.8e-4 and macro-F1 by 1.7e-3 (10 % labelled), one trial's by up to 2.2e-3,
  5.0e-3 and 9.0e-3. In one trial each, W differs by 2e-2 of its largest entry on yeast at 5 %
  labelled, 1e-4 at 50 %, by 1e-4 on emotions and 1e-6 on scene. Most of it is the L step: when labels have few known positives,
  TᵀT is nearly singular in the first sweeps (condition number up to 1e19 on yeast at 5–10 %
  labelled), where the exact solve returns an L shaped by rounding in the directions that CG
  from 0 does not resolve and leaves at 0. Neither setting is free of rounding there: on
  yeast at 5 and 10 % labelled, fitting the same rows in another order moved a trial's
  average precision by up to 1.7e-3 under either (8 trials). On scene and emotions (8 trials)
  it did not move; the scores moved by up to 1e-10 with ``"tight"``, 8e-4 with ``"authors"``
  (leaving aside a scene trial whose kNN graph has tied distances, so changes with the order).
- Stopping: SSWL.m stops when the absolute change of the objective is < 0.01 or after 20
  sweeps; we use a relative change < ``tol`` (default 1e-5, about 0.01 on an objective of
  order 10³ as on yeast) or ``max_iter`` = 20 sweeps.
- L is unconstrained, as in SSWL.m (a least-squares fit, not necessarily symmetric).
  ``label_similarity="symmetric"`` is an option of ours, off by default: it minimises (2)
  over symmetric L, whose normal equation is the Lyapunov/Sylvester equation
  (TᵀT) L + L (TᵀT) = TᵀO + OᵀT, solved by Bartels–Stewart (``solve_sylvester``).
- With α = 0 term (2) vanishes and L is left unchanged (any L is then a minimiser).
- Prediction uses the first model only, sign(X̃ W) with 0 → negative, as SSWL.m does; the
  second model W* serves training only. ``decision_function`` returns X̃ W for ranking.
- The algorithm is deterministic; ``random_state`` only reaches the graph builder.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg
import scipy.sparse as sp
from scipy.linalg.blas import strsv
from sklearn.base import BaseEstimator
from sklearn.neighbors import NearestNeighbors
from sklearn.utils.validation import check_is_fitted

from mlgraph.graphs import SEARCHES
from mlgraph.graphs.kernels import on_one_blas_thread
from mlgraph.methods.base import (
    MultiLabelClassifierMixin,
    ScoreThresholdMixin,
    cached_graph,
    check_params,
    nonneg,
    positive,
    positive_int,
    standardisation,
)

LABEL_SIMILARITY = ("free", "symmetric")


def weak_label_masks(Y: np.ndarray, labelled: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(P, U) of SSWL from our semi-supervised labels: P marks known positives (1 on labelled
    rows), U = 1 − P every uncertain entry (negatives, and all entries of unlabelled rows)."""
    P = ((Y == 1) & labelled[:, None]).astype(np.float64)
    return P, 1.0 - P


def knn_mean_sigma(Xs: np.ndarray, k: int) -> float:
    """σ of sltoolbox's heat kernel: σ² = mean squared distance to the k nearest neighbours."""
    dist, _ = NearestNeighbors(n_neighbors=k).fit(Xs).kneighbors()  # self excluded
    sigma = float(np.sqrt(np.mean(dist**2)))
    if sigma <= 0.0:
        raise ValueError("SSWL: the k nearest neighbours are all duplicates; pass sigma explicitly")
    return sigma


def row_normalise(W: sp.spmatrix) -> sp.csr_matrix:
    """S = D⁻¹ W (row-stochastic); a row without weight stays zero."""
    W = sp.csr_matrix(W, dtype=np.float64)
    deg = np.asarray(W.sum(axis=1)).ravel()
    inv = np.divide(1.0, deg, out=np.zeros_like(deg), where=deg > 0)
    return sp.csr_matrix(sp.diags(inv) @ W)


def _smoothness_rows(out, E, C, CT, coefs, widths, scratch) -> None:
    """out = E∘c₁ + C∘c₂ + CT∘c₃ for one block row of the smoothness term α[(LLᵀ⊗J)∘E
    − (Lᵀ⊗J)∘C − its transpose], each block's coefficient (a row of ``coefs`` =
    :func:`_smoothness_coefficients`) repeated over its ``widths`` columns: 2-D passes, 20 %
    faster than broadcasting over the blocks. ``scratch`` holds one temporary of out's size."""
    tmp = scratch[: out.size].reshape(out.shape)
    np.multiply(E, np.repeat(coefs[0], widths), out=out)
    out += np.multiply(C, np.repeat(coefs[1], widths), out=tmp)
    out += np.multiply(CT, np.repeat(coefs[2], widths), out=tmp)


def _smoothness_coefficients(L: np.ndarray, alpha: float) -> np.ndarray:
    """α LLᵀ, −α Lᵀ and −α L in float32, the per-block coefficients of :func:`_smoothness_rows`."""
    L32, a = L.astype(np.float32), np.float32(alpha)
    return np.stack([a * (L32 @ L32.T), -a * L32.T, -a * L32])


def _solve_spd(H: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Exact minimiser of ½xᵀHx − bᵀx for symmetric PSD H: Cholesky, or the minimum-norm
    least-squares solution (``gelsd``; if its SVD does not converge, as on some genbase trials
    with a finite H, from the eigendecomposition with ``gelsd``'s cut-off, eps · the largest)."""
    try:
        return scipy.linalg.cho_solve(scipy.linalg.cho_factor(H, check_finite=False), b, check_finite=False)
    except np.linalg.LinAlgError:
        pass
    try:
        return scipy.linalg.lstsq(H, b, check_finite=False)[0]
    except np.linalg.LinAlgError:
        w, V = scipy.linalg.eigh(H, check_finite=False)
        keep = np.abs(w) > np.finfo(float).eps * np.abs(w).max()
        return (V[:, keep] / w[keep]) @ (V[:, keep].T @ b)


def _cg_from_zero(H: np.ndarray, B: np.ndarray, tol: float, maxiter: int) -> np.ndarray:
    """X with ‖B − HX‖_F ≤ tol ‖B‖_F by CG from X = 0 on all columns at once, as Matlab's
    ``pcg(kron(I, H), B(:), tol, maxiter)`` (H symmetric PSD); without convergence (``maxiter``
    iterations, or a direction of zero curvature) the iterate of least residual, as ``pcg``."""
    X, R = np.zeros_like(B), B.copy()
    bound = tol * np.linalg.norm(B)
    rr = np.vdot(R, R)
    best, X_best = np.sqrt(rr), X
    D = R.copy()
    for _ in range(maxiter):
        if best <= bound:
            break
        HD = H @ D
        curvature = np.vdot(D, HD)
        if not curvature > 0:
            break
        X = X + (rr / curvature) * D
        R -= (rr / curvature) * HD
        rr_new = np.vdot(R, R)
        if np.sqrt(rr_new) <= bound:
            R = B - H @ X  # confirm with the true residual, as pcg does
            rr_new = np.vdot(R, R)
        if np.sqrt(rr_new) < best:
            best, X_best = np.sqrt(rr_new), X
        D = R + (rr_new / rr) * D
        rr = rr_new
    return X_best


# Block solves: "authors" follows SSWL.m, pcg(G, b, 1e-6, 5000) from 0 for W, W* and L (our W and
# W* solves are preconditioned); "tight" solves W and W* to 1e-12 from the previous sweep's
# solution and L exactly. Tolerances are relative residuals ‖b − Hx‖ ≤ tol ‖b‖.
SOLVERS = ("authors", "tight")
AUTHORS_TOL = 1e-6  # of the W and W* systems in Ã's coordinates, and of the L system
AUTHORS_L_MAXITER = 5000  # SSWL.m's pcg limit
CG_TOL = 1e-12  # "tight": of the whitened W and W* systems
CG_MAXITER = 60  # then the dense float64 solve takes over
REUSE_DL = 0.02  # keep a system's float32 factor while ‖L − L_factor‖_F ≤ REUSE_DL ‖L_factor‖_F …
AUTHORS_REUSE_DL = 0.1  # … or this with "authors": to 1e-6 a stale factor costs fewer iterations …
REUSE_MAXITER = 20  # … and CG with it converges within this many iterations
# The W system's preconditioner by Woodbury's identity while nnz(P) ≤ this × m r: an LU of
# nnz(P)² (2/3 nnz(P)³ flops) then costs less than the Cholesky factor of H_P ((m r)³/3).
WOODBURY_SHARE = 0.6


class _SSWLProblem:
    """The SSWL objective on fixed data (design Ã, masks P/U, instance similarity S) and its
    three exact block updates. Arrays: A (n × p), P, U (n × m), S sparse (n × n).

    The W and W* systems are solved in whitened coordinates: Ã = Q Σ Vᵀ (thin SVD, numerical
    rank r), W = T V with T = V_r Σ_r⁻¹, so H_M becomes (I⊗T)ᵀ H_M (I⊗T), the same matrix with
    Q in place of Ã (see the module docstring)."""

    def __init__(self, A, P, U, S, alpha, beta, zeta, label_similarity="free", solver="authors"):
        self.A, self.P, self.U, self.S = A, P, U, sp.csr_matrix(S)
        self.St = self.S.T.tocsr()
        self.alpha, self.beta, self.zeta = float(alpha), float(beta), float(zeta)
        self.label_similarity = label_similarity
        self.solver = solver
        self.n, self.p = A.shape
        self.m = P.shape[1]
        self.Q, self.T, self.r = self._basis(A)
        # The "authors" solves measure residuals in Ã's coordinates, as SSWL.m's normal equations:
        # there b − H vec(W) = V Σ R for the whitened residual R, and ‖T_i‖ = 1/σ_i.
        self._sigma = 1.0 / np.linalg.norm(self.T, axis=0)
        # Per system: (mask M, data weights D) of H_M; warm starts (whitened); dense parts on demand.
        self._masks = {"P": (P, P + self.beta * U), "U": (U, (self.beta + self.zeta) * U)}
        self._start = dict.fromkeys(self._masks)
        self._dense = {}
        self._factors = {}
        self._woodbury = self._woodbury_parts() if self.alpha > 0 else None
        self._parts = self._mask_parts32()

    @staticmethod
    def _basis(A: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
        """(Q, T, r) of the whitening Ã = Q Σ Vᵀ, T = V_r Σ_r⁻¹ (numerical rank r)."""
        Qf, s, Vt = np.linalg.svd(A, full_matrices=False)
        r = int(np.sum(s > s[0] * max(A.shape) * np.finfo(float).eps))
        return Qf[:, :r], Vt[:r].T / s[:r], r

    def _mask_parts32(self) -> dict:
        """Mask-only parts of both whitened systems, in float32 as they only build the
        preconditioner: diagonal blocks K_j = Qᵀ diag(D_j + α M_j) Q and, for α > 0, the
        blocks C_jk, E_jk of C_M, E_M and the blockwise transpose of C. The P blocks use only
        the rows with a known positive (cost nnz(P)·r·mr); the U blocks follow from
        diag(U_j) S diag(U_k) = S − P_j S − S P_k + P_j S P_k (P_j = diag of column j)."""
        n, m, r, a = self.n, self.m, self.r, self.alpha
        Q = self.Q.astype(np.float32)
        rows = [np.flatnonzero(self.P[:, j]) for j in range(m)]
        G = np.stack([Q[i].T @ Q[i] for i in rows])  # Qᵀ diag(P_j) Q
        eye = np.eye(r, dtype=np.float32)
        K = {
            "P": self.beta * eye + (1.0 + a - self.beta) * G,  # QᵀQ = I
            "U": (self.beta + self.zeta + a) * (eye - G),
        }
        if a == 0:
            return {key: (None, None, None, K[key]) for key in K}
        S, St = self.S.astype(np.float32), self.St.astype(np.float32)
        QP = (self.P[:, :, None].astype(np.float32) * Q[:, None, :]).reshape(n, m * r)
        SQP = S @ QP  # S [P_1∘Q, …, P_m∘Q]
        SSQP = St @ SQP  # SᵀS [P_j∘Q]
        SQ, StQ = S @ Q, St @ Q
        SSQ = St @ SQ
        CP = np.stack([Q[i].T @ SQP[i] for i in rows]).reshape(m, r, m, r)
        EP = np.stack([Q[i].T @ SSQP[i] for i in rows]).reshape(m, r, m, r)
        X = np.stack([Q[i].T @ SQ[i] for i in rows])  # Qᵀ P_j S Q
        Y = np.stack([StQ[i].T @ Q[i] for i in rows])  # Qᵀ S P_k Q
        Xe = np.stack([Q[i].T @ SSQ[i] for i in rows])  # Qᵀ P_j SᵀS Q
        CU = CP + (Q.T @ SQ)[None, :, None, :] - X[:, :, None, :] - Y.transpose(1, 0, 2)[None]
        EU = EP + (SQ.T @ SQ)[None, :, None, :] - Xe[:, :, None, :] - Xe.transpose(2, 0, 1)[None]
        return {
            key: (E, C, np.ascontiguousarray(C.transpose(2, 3, 0, 1)), K[key])
            for key, C, E in (("P", CP, EP), ("U", CU, EU))
            if key == "U" or self._woodbury is None  # else H_P is not formed (Woodbury)
        }

    def _woodbury_parts(self) -> dict | None:
        """The L-independent parts of H_P = βI + W T Wᵀ (see :meth:`_woodbury_factor`), in
        float32, or None when nnz(P) > ``WOODBURY_SHARE`` m r (the Cholesky factor is cheaper).
        The known positives e = (i, j) are taken label by label, so WᵀW is block diagonal."""
        labels, rows = np.nonzero(self.P.T)
        if labels.size == 0 or labels.size > WOODBURY_SHARE * self.m * self.r:
            return None
        QP = self.Q[rows].astype(np.float32)  # column e of W is e_j ⊗ Q_iᵀ
        starts = np.searchsorted(labels, np.arange(self.m + 1))
        Sc = self.S[:, rows]
        S_pp = self.S[rows][:, rows].toarray().astype(np.float32)  # S_ii'
        return {
            "labels": labels,
            "QP": QP,
            "starts": starts,
            "S": S_pp,
            "St": np.ascontiguousarray(S_pp.T),
            "StS": (Sc.T @ Sc).toarray().astype(np.float32),  # (SᵀS)_ii'
            "WtW": [QP[a:b] @ QP[a:b].T for a, b in zip(starts[:-1], starts[1:], strict=True)],
        }

    # -- pieces of the objective -------------------------------------------------------------
    def N(self, X: np.ndarray, L: np.ndarray) -> np.ndarray:
        """X − S X L."""
        return X - (self.S @ X) @ L

    def Nt(self, R: np.ndarray, L: np.ndarray) -> np.ndarray:
        """Adjoint of N: R − Sᵀ R Lᵀ."""
        return R - (self.St @ R) @ L.T

    def objective(self, W: np.ndarray, Ws: np.ndarray, L: np.ndarray) -> float:
        P, U = self.P, self.U
        F, G = self.A @ W, self.A @ Ws
        O = P * F + U * G
        return float(
            np.sum((P * F - P) ** 2)
            + self.alpha * np.sum(self.N(O, L) ** 2)
            + self.beta * np.sum((U * (F - G)) ** 2)
            + self.zeta * np.sum((U * G + U) ** 2)
        )

    # -- the W and W* systems (whitened) ------------------------------------------------------
    def _hessian_times(self, key: str, V: np.ndarray, L: np.ndarray) -> np.ndarray:
        """H_M vec(V) without forming H_M: Qᵀ(D∘F + α M∘Nᵀ(N(M∘F))), F = QV."""
        M, D = self._masks[key]
        F = self.Q @ V
        out = D * F
        if self.alpha > 0:
            out += self.alpha * M * self.Nt(self.N(M * F, L), L)
        return self.Q.T @ out

    def _preconditioner(self, key: str, L: np.ndarray):
        """H_M⁻¹ in float32 as a function of the residual (r × m), or None if the float32
        factorisation fails (then the dense float64 solve decides)."""
        if key == "P" and self._woodbury is not None:
            return self._woodbury_factor(L)
        c = self._factor32(key, L)
        if c is None:
            return None
        m, r = self.m, self.r

        def prec(R):  # two triangular solves: LAPACK's spotrs with one column took 8× longer
            z = strsv(c, R.T.reshape(-1).astype(np.float32), lower=1)
            z = strsv(c, z, lower=1, trans=1, overwrite_x=1)
            return z.reshape(m, r).T.astype(np.float64)

        return prec

    def _woodbury_factor(self, L: np.ndarray):
        """H_P⁻¹ by Woodbury's identity, H_P having rank nnz(P) above βI. Column e = (i, j) of
        W (m r × nnz(P)) is e_j ⊗ Q_iᵀ, one per known positive, so Qᵀ(D∘F) = βV + (1 − β) W Wᵀv
        (D = β + (1 − β) P) and the smoothness term is α W G Wᵀ, G_ee' = ⟨N(E_ij), N(E_i'j')⟩
        = δ_ee' − S_ii' L_j'j − S_i'i L_jj' + (SᵀS)_ii' (LLᵀ)_jj' (E_ij a unit matrix). With
        T = (1 − β)I + αG: H_P = βI + W T Wᵀ and
        H_P⁻¹ = (I − W (βI + T WᵀW)⁻¹ T Wᵀ) / β, an LU of nnz(P)² (WᵀW is block diagonal,
        one block per label). None if the LU is singular."""
        w, m = self._woodbury, self.m
        starts, QP = w["starts"], w["QP"]
        coefs = _smoothness_coefficients(L, self.alpha)
        counts = np.diff(starts)
        T, scratch = np.empty_like(w["S"]), np.empty(w["S"].size, np.float32)
        for j in range(m):  # label j's rows of T, one block per label
            rows = slice(starts[j], starts[j + 1])
            _smoothness_rows(
                T[rows], w["StS"][rows], w["S"][rows], w["St"][rows], coefs[:, j], counts, scratch
            )
        T.flat[:: T.shape[0] + 1] += np.float32(1.0 - self.beta + self.alpha)
        A = np.empty_like(T)
        for j, WtW in enumerate(w["WtW"]):  # T WᵀW, block by block
            np.matmul(T[:, starts[j] : starts[j + 1]], WtW, out=A[:, starts[j] : starts[j + 1]])
        A.flat[:: A.shape[0] + 1] += np.float32(self.beta)
        lu, piv, info = scipy.linalg.lapack.sgetrf(A, overwrite_a=1)
        if info != 0 or not np.isfinite(lu.diagonal()).all():
            return None
        nonempty = np.flatnonzero(counts)
        beta = self.beta

        def prec(R):
            y = np.einsum("er,er->e", QP, R.T[w["labels"]].astype(np.float32))  # Wᵀ r
            u = scipy.linalg.lapack.sgetrs(lu, piv, T @ y)[0]
            Wu = np.zeros((m, QP.shape[1]), np.float32)
            Wu[nonempty] = np.add.reduceat(QP * u[:, None], starts[nonempty], axis=0)
            return (R - Wu.T) / beta

        return prec

    def _factor32(self, key: str, L: np.ndarray):
        """float32 Cholesky factor of H_M, or None if H_M is not positive definite to float32
        precision."""
        E, C, CT, K = self._parts[key]
        m, r = self.m, self.r
        # LAPACK reads one triangle: only the blocks H_jk, k ≥ j, of the symmetric H are formed
        # (row by row, each in cache), the others are left unset and never read.
        H = np.empty((m, r, m, r), np.float32)
        if self.alpha > 0:
            coefs = _smoothness_coefficients(L, self.alpha)
            scratch = np.empty(m * r * r, np.float32)
            for j in range(m):  # blocks k ≥ j of block row j: r rows of (m − j) r values
                w = (m - j) * r
                blocks = [M[j, :, j:, :].reshape(r, w) for M in (E, C, CT)]
                _smoothness_rows(H[j, :, j:, :].reshape(r, w), *blocks, coefs[:, j, j:], r, scratch)
        else:
            for j in range(m):
                H[j, :, j:, :] = 0.0
        j = np.arange(m)
        H[j, :, j, :] += K
        # H.T is the Fortran view of H: LAPACK factors it in place from its lower triangle,
        # the blocks k ≥ j of H.
        c, info = scipy.linalg.lapack.spotrf(H.reshape(m * r, m * r).T, lower=1, overwrite_a=1, clean=0)
        if info != 0:
            return None
        d = np.diagonal(c) ** 2  # pivots of H
        return c if d.min() > 100 * np.finfo(np.float32).eps * d.max() else None  # else ~singular

    def _residual_norm(self, R: np.ndarray) -> float:
        """Norm of a whitened residual R as the stopping rule of ``solver`` measures it."""
        return np.linalg.norm(R if self.solver == "tight" else self._sigma[:, None] * R)

    def _pcg(self, key, b, V, L, prec, maxiter):
        """Preconditioned CG (Polak–Ribière form, as the float32 preconditioner is not exactly
        linear) from V (None: from 0) until ‖b − HV‖ ≤ tol ‖b‖ (``CG_TOL`` whitened, or
        ``AUTHORS_TOL`` in Ã's coordinates), the residual recomputed at the end. Returns
        (V, converged); at most ``maxiter`` iterations."""
        norm = self._residual_norm
        bound = (CG_TOL if self.solver == "tight" else AUTHORS_TOL) * norm(b)
        if V is None:
            V, R = np.zeros_like(b), b.copy()
        else:
            R = b - self._hessian_times(key, V, L)
        it = 0
        while norm(R) > bound:
            Z = prec(R)
            D, rz = Z, np.vdot(R, Z)
            while it < maxiter:
                it += 1
                HD = self._hessian_times(key, D, L)
                step = rz / np.vdot(D, HD)
                V = V + step * D
                R -= step * HD
                if norm(R) <= bound:
                    break
                Zn = prec(R)
                rzn = np.vdot(R, Zn)
                D = Zn + ((rzn - np.vdot(R, Z)) / rz) * D
                Z, rz = Zn, rzn
            else:
                return V, False
            R = b - self._hessian_times(key, V, L)  # drift check
        return V, True

    def _system(self, key: str, L: np.ndarray) -> np.ndarray:
        """Dense float64 H_M (whitened): the fallback when the float32 preconditioner is not
        positive definite or CG stalls (a singular system, e.g. a label positive on every row)."""
        m, r = self.m, self.r
        if key not in self._dense:
            M, D = self._masks[key]
            QM = (M[:, :, None] * self.Q[:, None, :]).reshape(self.n, m * r)
            SQM = self.S @ QM
            K = np.stack([self.Q.T @ ((D[:, j] + self.alpha * M[:, j])[:, None] * self.Q) for j in range(m)])
            self._dense[key] = ((QM.T @ SQM).reshape(m, r, m, r), (SQM.T @ SQM).reshape(m, r, m, r), K)
        C, E, K = self._dense[key]
        cross = L.T[:, None, :, None] * C
        H = (L @ L.T)[:, None, :, None] * E
        H -= cross
        H -= cross.transpose(2, 3, 0, 1)
        H *= self.alpha
        j = np.arange(m)
        H[j, :, j, :] += K
        H = H.reshape(m * r, m * r)
        return 0.5 * (H + H.T)

    def _solve(self, key: str, rhs: np.ndarray, L: np.ndarray) -> np.ndarray:
        """Coefficients (p × m) from the normal equations of block ``key``; rhs = Qᵀ(target)."""
        V = self._start[key] if self.solver == "tight" else None  # None: from 0
        prec, L_c = self._factors.get(key, (None, None))
        done = False
        reuse = REUSE_DL if self.solver == "tight" else AUTHORS_REUSE_DL
        if prec is not None and np.linalg.norm(L - L_c) <= reuse * np.linalg.norm(L_c):
            V, done = self._pcg(key, rhs, V, L, prec, REUSE_MAXITER)  # L barely moved: old factor
        if not done:
            prec = self._preconditioner(key, L)
            self._factors[key] = (prec, L.copy())
            if prec is not None:
                V, done = self._pcg(key, rhs, V, L, prec, CG_MAXITER)
        if not done:
            V = _solve_spd(self._system(key, L), rhs.T.ravel()).reshape(self.m, self.r).T
        self._start[key] = V
        return self.T @ V

    # -- exact block updates ------------------------------------------------------------------
    def update_W(self, Ws: np.ndarray, L: np.ndarray) -> np.ndarray:
        P, U = self.P, self.U
        G = self.A @ Ws
        target = P + self.beta * U * G
        if self.alpha > 0:
            target -= self.alpha * P * self.Nt(self.N(U * G, L), L)
        return self._solve("P", self.Q.T @ target, L)

    def update_Wstar(self, W: np.ndarray, L: np.ndarray) -> np.ndarray:
        P, U = self.P, self.U
        F = self.A @ W
        target = -self.zeta * U + self.beta * U * F
        if self.alpha > 0:
            target -= self.alpha * U * self.Nt(self.N(P * F, L), L)
        return self._solve("U", self.Q.T @ target, L)

    def update_L(self, W: np.ndarray, Ws: np.ndarray, L: np.ndarray) -> np.ndarray:
        if self.alpha == 0:
            return L
        O = self.P * (self.A @ W) + self.U * (self.A @ Ws)
        T = self.S @ O
        TtT, TtO = T.T @ T, T.T @ O
        if self.label_similarity == "free" and self.solver == "tight":
            return _solve_spd(TtT, TtO)
        if self.label_similarity == "free":
            return _cg_from_zero(TtT, TtO, AUTHORS_TOL, AUTHORS_L_MAXITER)
        try:
            Ln = scipy.linalg.solve_sylvester(TtT, TtT, TtO + TtO.T)
        except (np.linalg.LinAlgError, scipy.linalg.LinAlgError):
            Ln = None
        if Ln is None or not np.all(np.isfinite(Ln)):  # singular TᵀT: least squares on vec(L)
            m = self.m
            K = np.kron(np.eye(m), TtT) + np.kron(TtT, np.eye(m))
            Ln = scipy.linalg.lstsq(K, (TtO + TtO.T).T.ravel(), check_finite=False)[0].reshape(m, m).T
        return 0.5 * (Ln + Ln.T)


class SSWL(ScoreThresholdMixin, MultiLabelClassifierMixin, BaseEstimator):
    """Semi-supervised weak-label learning (SSWL) as a scikit-learn estimator; the defaults are
    those of the authors' ``demo_SSWL.m`` / ``SSWL.m``.

    Parameters
    ----------
    alpha : weight of the instance/label smoothness term (2).
    beta : weight of the consistency of the two models on uncertain entries (3).
    zeta : weight pulling the second model to −1 on uncertain entries (4).
    k : neighbours of the instance graph; sigma : heat-kernel bandwidth on standardised
        features (None: σ² = mean squared kNN distance, as sltoolbox).
    max_iter, tol : at most ``max_iter`` BCD sweeps; stop when the relative objective
        decrease of a sweep is below ``tol``.
    label_similarity : "free" (SSWL.m) or "symmetric" (L constrained symmetric; ours).
    solver : "authors" (SSWL.m's: the W and W* systems from 0 to a relative residual of 1e-6,
        preconditioned, and L by CG from 0 to 1e-6) or "tight" (W and W* to 1e-12, warm-started,
        and L exactly: each step the exact block minimiser up to rounding).
    random_state, memory, knn_search : passed to the graph builder / graph cache (``knn_search``:
        "exact" or "approximate" neighbours of the instance graph).

    Notes
    -----
    Fitted attributes: ``coef_`` (W, (n_features + 1) × m, bias last), ``coef_star_`` (W*),
    ``label_similarity_`` (L), ``graph_`` (row-normalised S), ``sigma_``, ``objective_``
    (after 0, 1, … sweeps), ``n_iter_``, ``mean_``, ``scale_``, ``n_features_in_``,
    ``graph_report_`` (the recall of an approximate neighbour search; ``{}`` for the exact one).
    """

    _rules = {
        "alpha": (nonneg, "a non-negative number (weight of the smoothness term)"),
        "beta": (positive, "a positive number (weight of the two-model consistency term)"),
        "zeta": (positive, "a positive number (weight of the second model's −1 prior)"),
        "k": (positive_int, "a positive integer (neighbours of the instance graph)"),
        "sigma": (lambda v: v is None or positive(v), "None (mean kNN distance) or > 0"),
        "max_iter": (positive_int, "a positive integer"),
        "tol": (nonneg, "a non-negative number"),
        "label_similarity": (lambda v: v in LABEL_SIMILARITY, f"one of {LABEL_SIMILARITY}"),
        "solver": (lambda v: v in SOLVERS, f"one of {SOLVERS} (the block solves' accuracy)"),
        "knn_search": (lambda v: v in SEARCHES, f"one of {SEARCHES} (the instance graph's neighbour search)"),
    }

    def __init__(
        self,
        alpha=1.6,
        beta=0.06,
        zeta=0.06,
        k=5,
        sigma=None,
        max_iter=20,
        tol=1e-5,
        label_similarity="free",
        solver="authors",
        random_state=0,
        memory=None,
        knn_search="exact",
    ):
        self.alpha = alpha
        self.beta = beta
        self.zeta = zeta
        self.k = k
        self.sigma = sigma
        self.max_iter = max_iter
        self.tol = tol
        self.label_similarity = label_similarity
        self.solver = solver
        self.random_state = random_state
        self.memory = memory
        self.knn_search = knn_search

    def _problem(self, X, Y) -> _SSWLProblem:
        """Validate, standardise, build the graph and the masks (sets the preprocessing
        attributes); the fitted problem is what :meth:`fit` runs BCD on."""
        check_params(self, self._rules)
        X, Y, labelled = self._check_fit_data(X, Y)
        if self.k >= X.shape[0]:
            raise ValueError(
                f"SSWL: parameter k={self.k!r} must be smaller than the number of "
                f"training points ({X.shape[0]})"
            )
        self.mean_, self.scale_ = standardisation(X)
        Xs = (X - self.mean_) / self.scale_
        self.sigma_ = knn_mean_sigma(Xs, self.k) if self.sigma is None else float(self.sigma)
        W, self.graph_report_ = cached_graph(
            self.memory,
            Xs,
            kind="knn",
            sigma=self.sigma_,
            weights="heat",
            k=self.k,
            random_state=self.random_state,
            search=self.knn_search,
        )
        self.graph_ = row_normalise(W)
        self.active_ = np.isfinite(self.scale_)  # constant features drop out
        A = np.hstack([Xs[:, self.active_], np.ones((X.shape[0], 1))])
        P, U = weak_label_masks(Y, labelled)
        return _SSWLProblem(
            A, P, U, self.graph_, self.alpha, self.beta, self.zeta, self.label_similarity, self.solver
        )

    @on_one_blas_thread
    def fit(self, X, Y):
        """Fit on all training points; rows of ``Y`` equal to −1 are unlabelled."""
        prob = self._problem(X, Y)
        W = np.eye(prob.p, prob.m)  # initial point of SSWL.m
        Ws = np.zeros((prob.p, prob.m))
        L = np.eye(prob.m)
        history = [prob.objective(W, Ws, L)]
        for _ in range(self.max_iter):
            W = prob.update_W(Ws, L)
            Ws = prob.update_Wstar(W, L)
            L = prob.update_L(W, Ws, L)
            history.append(prob.objective(W, Ws, L))
            if history[-2] - history[-1] <= self.tol * abs(history[-2]):
                break
        self.coef_ = self._full(W)
        self.coef_star_ = self._full(Ws)
        self.label_similarity_ = L
        self.objective_ = np.asarray(history)
        self.n_iter_ = len(history) - 1
        return self

    def _full(self, W: np.ndarray) -> np.ndarray:
        """Coefficients over all features (zeros for constant ones), bias last."""
        out = np.zeros((self.n_features_in_ + 1, W.shape[1]))
        out[np.append(self.active_, True)] = W
        return out

    @on_one_blas_thread
    def decision_function(self, X) -> np.ndarray:
        """Real-valued scores [X_s, 1] W of the first model (used for ranking)."""
        check_is_fitted(self, "coef_")
        X = self._check_predict_data(X)
        return ((X - self.mean_) / self.scale_) @ self.coef_[:-1] + self.coef_[-1]
