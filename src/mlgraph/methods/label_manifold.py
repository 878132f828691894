"""ML², multi-label manifold learning (paper 002, Hou, Geng & Zhang, Eq. 1–12).

The three steps and their solvers stay one module, longer than the project's usual 700 lines,
because they share one notation (W, M, μ, λ of Eqs. 2–12) and each step's solver is written
against the previous step's output; split, a reader would follow one equation across files.

ML² replaces the logical labels y_il ∈ {−1, +1} by numerical labels μ_il whose sign is the
logical label, reconstructed from the feature manifold, and then learns a regressor from
features to numerical labels. Three steps, each a public function:

1. :func:`lle_weights` (Eq. 1–2): the feature manifold as locally linear reconstruction
   weights. Row i of W holds the weights of x_i's K nearest neighbours, summing to one, that
   minimise ``W_iᵀ G_i W_i`` with the local Gram matrix ``G_i^{jk} = (x_i − x_j)ᵀ(x_i − x_k)``.
2. :func:`label_manifold` (Eq. 3–4): the numerical labels of the training points,
   ``min Σ_i ‖μ_i − Σ_j W_ij μ_j‖²`` subject to ``y_il μ_il ≥ λ``. The objective is
   ``tr(μᵀ M μ)`` with ``M = (I − W)ᵀ(I − W)``, so it separates into one QP per label l,
   ``min μᵀ M μ`` subject to the bounds μ_i ≥ λ (y_il = +1) and μ_i ≤ −λ (y_il = −1).
3. :func:`sign_msvr` (Eq. 5–12): a kernel multi-output SVR with a bias,

       L(β, b) = ½ Σ_j β_jᵀ K β_j + C1 Σ_i L1(‖μ_i − f(x_i)‖) + C2 Σ_ij max(0, −y_ij f_j(x_i)),

   f(x) = Σ_i β_i k(x_i, x) + b (representer theorem, θ_j = Φᵀβ_j), with the ε-insensitive
   quadratic loss L1(r) = (r − ε)² for r ≥ ε, 0 below (Eq. 6, one norm over all q outputs, so
   a point is a support vector for all outputs at once) and the sign hinge L2 (Eq. 7). It is
   minimised by IRWLS (Eq. 8–12): L1 is replaced by ½ a_i r_i² with a_i = 2(r_i − ε)/r_i
   (Eq. 10) and the hinge by its linearisation on the set {(i, j): y_ij f_j(x_i) ≤ 0},
   recomputed over *all* samples and outputs at every iteration; the minimiser of that model
   (Eq. 12, kernelised) gives a search direction, and a backtracking line search along it
   gives the next iterate.

:class:`ML2` chains the three steps: ``decision_function`` returns the predicted numerical
labels (rank labels by value) and ``predict`` their signs as a 0/1 matrix.

Kernelised Eq. 12
-----------------
With S = {i: a_i > 0} (the support vectors) and N its complement, the stationarity conditions
of the IRWLS model read, for every output j,
``β_Nj = C2 s_Nj ∘ y_Nj`` (s_ij = 1 on the hinge set) and

    [K_SS + diag(1/(C1 a_S))   1] [β_Sj]   [μ_Sj + C2 s_Sj ∘ y_Sj / (C1 a_S) − K_SN β_Nj]
    [         1ᵀ               0] [b_j ] = [              −1ᵀ β_Nj                     ],

the bias row being Eq. 12's second row after substitution (it reduces to 1ᵀβ_j = 0). The
matrix is the same for all q outputs: one Cholesky factorisation of ``K_SS + diag(1/(C1 a_S))``
(positive definite, smallest eigenvalue ≥ 1/(2 C1) since a_i < 2) per iteration, the bias by
the Schur complement. The weights a_i change at every support vector, so the whole diagonal
of the matrix does at every iteration, but less and less: while S stays that of the last
factorisation, block conjugate gradients preconditioned by that factor solve the new system
(:func:`_reused_factor_solve`; the preconditioned spectrum lies between the extreme ratios of
the new and old diagonals) when they are cheaper than a new factorisation, i.e. when the
kernel is large against the q + 1 right-hand sides (n ≥ 120 (q + 1): tmc2007-500, not bibtex,
whose 42 iterations on a half stay 42 Cholesky factorisations of 3,697²); a new factorisation
otherwise, or when CG's rate predicts more steps than that costs. When N is empty the K_SN β_N
product is skipped.

Assumptions (choices the paper leaves open)
-------------------------------------------
- Features are standardised with training statistics (:func:`mlgraph.methods.base.standardisation`);
  neighbours (Eq. 1), the Gram matrices (Eq. 2) and the kernel all use standardised features.
  Neighbours exclude the point itself; ties go to the lower index. K = q + 1 by default (paper,
  Sec. 4.1), capped at n − 1 for tiny training sets.
- Eq. 2 ridge: ``G_i += reg · trace(G_i) · I`` (``reg`` when the trace is 0), reg = 1e-3, the
  usual LLE regulariser; without it G_i is singular whenever K > d or the neighbours are
  collinear (and whenever x_i is exactly reconstructable).
- Eq. 3 solver (``solver="active-set"``, the default): primal–dual active-set iterations
  (semismooth Newton) for all labels at once, from μ = λy: with the active bounds fixed, the
  free coordinates solve ``M_FF μ_F = −M_FA μ_A`` exactly, and the next active set is
  {ν − z > 0} (multiplier ν = y∘2Mμ, slack z = y∘μ − λ), until the set reproduces itself (an
  exact KKT point). The labels share M, so the free-block solves share one factorisation: the
  inverse P = (M + c 11ᵀ)⁻¹ (c = tr M / n², which lifts M's null direction 1; Cholesky and
  potri once per fit), the block-inverse identity ``(H_FF)⁻¹ = P_FF − P_FA (P_AA)⁻¹ P_AF``
  with H = M + c 11ᵀ (a Cholesky of the |A| × |A| block P_AA, small: 500–1,000 of the 3,697
  points of a bibtex half end active), Sherman–Morrison for the rank-one c 11ᵀ, one product
  with P for a block of labels, and iterative refinement against the sparse M to rounding
  level; when more points are active than free, a Cholesky of M_FF instead. A label took 4–7
  iterations on a yeast half and 6–11 on bibtex, and ends with a relative KKT violation below
  1e-13 (μ equal to the previous solver's to 4e-9 on bibtex, whose CG polish stopped at 2e-14).
  Most of the time goes to the first iterations, whose active sets are the largest (1,400–2,000
  points on bibtex, shrinking to the final 500–1,000), so those of a cold start (dense M of at
  least 1,000 points) only steer the active set, in single precision without refinement, until
  it settles (see :func:`_pdas`); exact iterations end every label. With several BLAS threads allowed (one
  large trial in the runner) and at least 2^18 points × labels, the labels are split, interleaved,
  over as many worker processes, each iterating on its part under one thread (a second BLAS
  thread barely helps these small factorisations and gathers). On Linux the workers are forked
  once the caller has made M, P and their float32 copies with its threads, and share them
  (no copies, no imports); elsewhere they are spawned and receive the QP pickled. A bibtex
  half's QPs take 13–14 s instead of 26 s (AMD EPYC), μ equal to 3e-10.
  When M has more null directions than 1
  (several closed neighbour classes, tiny sets), M + c 11ᵀ is singular and every free block
  is factored directly.
  PDAS is not globally convergent on a PSD M that is not an M-matrix: a label whose active set
  recurs (a cycle) or that reaches 50 iterations, and every label when n > 6,000 (no dense M:
  tmc2007-500), fall back to the previous solver (with sparse M under one BLAS thread: its
  vector operations and sparse products ran 2–5× slower with two contending OpenBLAS threads;
  when the caller allows several threads, its labels go instead to as many worker processes,
  each on one thread, with the same results bit for bit),
  which ``solver="lbfgsb"`` runs for every label: L-BFGS-B on the bound-constrained problem with sparse
  matrix–vector products for value and gradient (M is singular, as (I − W)1 = 0, which
  L-BFGS-B tolerates), started from μ = λy, ftol 1e-15, projected-gradient tolerance 1e-10,
  at most 1,000 iterations; then the same active-set iterations as a polish (dense Cholesky up
  to 6,000 points; above, Jacobi-preconditioned conjugate gradients from the current iterate,
  with M_FF applied as A_Fᵀ(A_F v), and a sparse LU when CG stalls above a tenth of the KKT tolerance: on a tmc2007 half,
  14,298 points, the LU's fill-in cost minutes per label and CG 4–40 s). A cycle stops them at
  the current point when it passes the KKT test (degenerate points, at a bound with a zero
  multiplier, can otherwise flip forever: this test cut a slashdot half's fit from 76 s to
  16 s). When that fails (nearly
  degenerate W, e.g. K = 3 neighbours that extrapolate), and n ≤ 6,000, the problem is also
  solved as a non-negative least-squares problem in z = y∘μ − λ ≥ 0,
  ``min ‖(I − W) diag(y) z + λ (I − W) y‖²``, by Lawson–Hanson (an exact active-set method,
  ``scipy.optimize.nnls``), again polished. The candidate with a relative KKT violation below
  1e-8 and the lowest objective is kept; a violation above 1e-6 raises a RuntimeWarning.
  A label that is positive (negative) on every training point gets μ = λ (−λ), an exact
  minimiser.
- Eq. 6 ε = 0.1 by default (the MSVR/LDSVR setting of the authors' group; their ML² code ships
  0.001). μ has scale λ = 1, so both tubes are narrow: on ten random yeast halves the two give
  the same average precision to 1e-4.
- Kernel: Gaussian, ``k(x, x') = exp(−γ‖x − x'‖²)`` with γ = 1/(2σ²) and σ the *mean*
  pairwise Euclidean distance between the standardised training points (the authors' code:
  ``para.par = mean(pdist(X))`` with ``exp(−D/(2 par²))``). ``gamma="scale"`` gives
  scikit-learn's 1/(d·Var X) (about 4× larger on standardised features) and a number sets γ.
  ``kernel="linear"`` is ``k(x, x') = xᵀx'``. The bias b is not regularised.
- Sign hinge set: y_ij f_j(x_i) ≤ 0, so σ(−t) = 1 at t = 0, as Eq. 7 defines σ; at the start
  (β = 0, b = 0) every entry is in it. The authors' code restricts it to support vectors;
  here it is recomputed over all samples (points outside S then carry β_ij = C2 y_ij).
- IRWLS starts from β = 0, b = 0. Line search: step η = 1, halved until the objective
  strictly decreases (at most 40 halvings; if none decreases, the iteration stops at the
  current point). The objective history ``objective_`` is therefore strictly decreasing.
- Stopping rule: relative decrease (L_k − L_{k+1}) / L_k < tol (1e-5, as in the authors'
  code), or max_iter iterations (100), or no support vector left (S = ∅: no curvature).
- ML² is supervised: rows of ``Y`` equal to −1 (unlabelled, scikit-learn convention) are
  dropped before fitting.

Cost and memory: the kernel matrix is dense n × n float64 (8 n² bytes: 11.5 MB for the 1,208
training points of a yeast half, 200 MB for 5,000), plus one |S| × |S| Cholesky factor of IRWLS
(kept while it preconditions later iterations, freed before a new one) and, for n ≤ 6,000, the
dense M and its lifted inverse P of the QP, with their float32 copies from 1,000 points (2 × 109
+ 2 × 55 MB on a bibtex half, shared with the QP workers; a dense I − W when the NNLS fallback
runs); LLE works in bounded blocks and L-BFGS-B in sparse matrix–vector products.
``decision_function`` forms an n_test × n_train kernel block. Measured on yeast halves (1,208 ×
103, 14 labels, one BLAS thread, shared 2-core machine): fit 0.9–2.2 s (19–44 IRWLS
iterations), tracemalloc peak 43 MiB for fit + predict. On a bibtex half (3,697 × 1,836, 159
labels; AMD EPYC, one BLAS thread): fit + predict 54–58 s (LLE 1.7 s, QPs 26 s, 42 IRWLS
iterations 27 s) against 153–164 s for the code of commit cbb9823 (``make bench
ARGS="--only ml2_before_speedup"``); with two BLAS threads (one trial in the runner) 30–31 s,
the labels' QPs in two worker processes. On a tmc2007-500 half (14,298 × 500, 22 labels, two
BLAS threads): fit + predict 141 s (QPs 68 s in two worker processes, 12 IRWLS iterations 64 s
with one Cholesky factorisation; 3.2 GiB traced peak), against 20.5 min for the code of
commit cbb9823 on one thread. There, two contending OpenBLAS threads had slowed the small
solves of L-BFGS-B and the CG polish (three labels' QPs: 316 s against 26 s on one thread),
and reusing the IRWLS factor took 12 iterations from 225 s to 92 s (β equal to 6e-14). The dense QP path
and IRWLS use the caller's BLAS threads.
"""

from __future__ import annotations

import contextlib
import warnings
from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple

import numpy as np
import scipy.linalg
import scipy.sparse as sp
import scipy.sparse.linalg
from scipy.optimize import Bounds, minimize, nnls
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted
from threadpoolctl import threadpool_limits

from mlgraph.graphs import squared_distances
from mlgraph.graphs.kernels import blas_threads, matmul
from mlgraph.graphs.sparsify import check_k, check_sqdist, check_X, nearest_columns
from mlgraph.methods.base import (
    MultiLabelClassifierMixin,
    ScoreThresholdMixin,
    check_params,
    nonneg,
    positive,
    positive_int,
    standardisation,
)
from mlgraph.processes.workers import forked

__all__ = ["ML2", "SignMSVR", "label_manifold", "lle_weights", "sign_msvr", "sign_msvr_objective"]

KERNELS = ("rbf", "linear")
QP_SOLVERS = ("active-set", "lbfgsb")

_BLOCK = 1 << 22  # float64 elements per temporary block (32 MiB)
_DENSE_QP_LIMIT = 6000  # dense M (exact active-set solver) up to this many points, sparse CG above
_CG_MAXITER = 5000  # sparse polish: CG products before falling back to a sparse LU
_MAX_HALVINGS = 40  # line search: smallest step 2**-40
_CG_RTOL = 1e-14  # IRWLS solves by CG on an earlier factor: relative residual per column
_CG_MIN_STEPS = 4  # ... tried only when a Cholesky costs at least this many CG steps
_KKT_TOL = 1e-8  # relative KKT violation below which a QP solution is accepted as exact
_KKT_EXACT = 1e-13  # ... at which the active-set iterations stop without waiting for a fixed set
_KKT_WARN = 1e-6  # ... above which label_manifold warns
_REFINE_TOL = 1e-14  # free-block solves through the inverse: residual / (scale·max|μ|) ...
_REFINE_STEPS = 5  # ... reached by at most this many refinement steps
_ROUGH_CHANGES = (
    0.02  # cold-started active-set iterations in float32 while more points change than this share,
)
_ROUGH_ITER = 10  # ... for at most this many iterations,
_ROUGH_MIN = 1000  # ... from this many points (smaller factors gain little from single precision)
_SPLIT_WORK = 1 << 18  # dense M: points × labels from which spare threads become worker processes
_LBFGSB_OPTIONS = {"maxiter": 1000, "maxcor": 20, "ftol": 1e-15, "gtol": 1e-10}


# --------------------------------------------------------------------------------------------
# Eq. 1–2: locally linear reconstruction weights
# --------------------------------------------------------------------------------------------
def lle_weights(X, n_neighbors: int, reg: float = 1e-3, sqdist: np.ndarray | None = None) -> sp.csr_matrix:
    """Reconstruction weights of Eq. 2 as an n × n CSR matrix W (zero diagonal, rows sum to 1).

    Row i holds the weights of the ``n_neighbors`` nearest neighbours of x_i (itself excluded,
    ties by lower index, :func:`mlgraph.graphs.sparsify.nearest_columns`), ``w = G⁻¹1 / 1ᵀG⁻¹1``
    with the local Gram matrix ``G = Z Zᵀ``, ``Z_j = x_j − x_i``, regularised by
    ``G += reg·trace(G)·I`` (``reg·I`` when the trace is 0). The Gram systems are solved by
    LAPACK in stacked blocks. ``sqdist``, the full squared-distance matrix of X when the
    caller has it, spares the neighbour search its distance computation and the Gram matrices
    their pass over the d features, ``G_jk = ½(D_ij + D_ik − D_jk)`` (n k² instead of n k² d
    operations: 7.3 s → 1.6 s on a bibtex half, K = 160, d = 1,836; weights equal to 3e-14).
    """
    X = check_X(X)
    n, d = X.shape
    k = check_k(n_neighbors, n)
    if not positive(reg):
        raise ValueError(f"reg must be a positive number (ridge of Eq. 2), got {reg!r}")
    if sqdist is not None:
        sqdist = check_sqdist(sqdist, n)

    neighbours = np.empty((n, k), dtype=np.intp)
    step = max(1, _BLOCK // n)
    for start in range(0, n, step):
        stop = min(n, start + step)
        D = sqdist[start:stop] if sqdist is not None else squared_distances(X[start:stop], X)
        _, cols = nearest_columns(D, k, start)  # row-major: exactly k columns per row
        neighbours[start:stop] = cols.reshape(stop - start, k)

    weights = np.empty((n, k))
    diag = np.arange(k)

    def block(rows: slice) -> None:
        nb = neighbours[rows]
        if sqdist is not None:  # G_jk = ½(D_ij + D_ik − D_jk): no d-loop
            d_i = np.take_along_axis(sqdist[rows], nb, axis=1)
            G = 0.5 * (d_i[:, :, None] + d_i[:, None, :] - sqdist[nb[:, :, None], nb[:, None, :]])
        else:
            Z = X[nb] - X[rows, None, :]  # (b, k, d)
            G = Z @ Z.transpose(0, 2, 1)  # (b, k, k) local Gram matrices
        trace = np.trace(G, axis1=1, axis2=2)
        G[:, diag, diag] += np.where(trace > 0, reg * trace, reg)[:, None]
        w = np.linalg.solve(G, np.ones((G.shape[0], k, 1)))[..., 0]
        weights[rows] = w / w.sum(axis=1, keepdims=True)

    # Blocks of rows in threads, each solve on one BLAS thread: numpy's stacked solves of small
    # systems and its gathers release the GIL, and gain little from BLAS threads
    # (bibtex half, two cores: 1.9 s → 0.8–1.1 s, weights equal to 3e-15).
    step = max(1, _BLOCK // (k * (k if sqdist is not None else max(k, d))))
    blocks = [slice(start, min(n, start + step)) for start in range(0, n, step)]
    threads = min(blas_threads(), len(blocks))
    with threadpool_limits(1), ThreadPoolExecutor(threads) as pool:
        list(pool.map(block, blocks))
    indptr = np.arange(0, n * k + 1, k)
    return sp.csr_matrix((weights.ravel(), neighbours.ravel(), indptr), shape=(n, n))


# --------------------------------------------------------------------------------------------
# Eq. 3–4: numerical labels, one bound-constrained QP per label
# --------------------------------------------------------------------------------------------
def _cho_factor_in_place(S: np.ndarray) -> tuple[np.ndarray, bool]:
    """Cholesky factor of a symmetric positive definite C-ordered matrix that the caller no
    longer needs (a gathered block, a sum), for ``cho_solve``, made in S's memory: Sᵀ = S is
    S in Fortran order, so LAPACK factorises it in place (``cho_factor(S)`` copies a C-ordered
    matrix first; one thread, n = 931 / 3,697: 8.6 / 372 ms against 11.3 / 426)."""
    return scipy.linalg.cho_factor(S.T, lower=True, overwrite_a=True, check_finite=False)


def _signs(Y, n: int) -> np.ndarray:
    """±1 float matrix from 0/1 or ±1 labels (positive entries are relevant)."""
    Y = np.asarray(Y)
    if Y.ndim == 1:
        Y = Y[:, None]
    if Y.ndim != 2 or Y.shape[0] != n:
        raise ValueError(f"Y must be a 2-D array with {n} rows, got shape {Y.shape}")
    if not np.isfinite(Y).all():
        raise ValueError("Y contains NaN or infinite values")
    return np.where(Y > 0, 1.0, -1.0)


def _kkt_violation(M: sp.csr_matrix, y: np.ndarray, lam: float, mu: np.ndarray, norm: float | None = None):
    """Largest violation of the KKT conditions of min μᵀMμ s.t. y∘μ ≥ λ, relative to the scale
    of the gradient terms: infeasibility, gradient on free coordinates, wrong-signed multipliers.
    One number per column when ``mu`` is n × J. ``norm``: 2‖M‖∞ (``_QP.scale``) if known."""
    g = 2.0 * (M @ mu)
    z = y * mu - lam
    norm = 2.0 * float(abs(M).sum(axis=1).max()) if norm is None else norm
    scale = norm * np.maximum(np.abs(mu).max(axis=0), lam)
    at_bound = z <= 1e-12 * max(1.0, lam)
    return np.maximum.reduce(
        [
            np.maximum(-z, 0.0).max(axis=0) / lam,
            np.where(at_bound, 0.0, np.abs(g)).max(axis=0) / scale,
            np.where(at_bound, np.maximum(-(y * g), 0.0), 0.0).max(axis=0) / scale,
        ]
    )


def _solve_free_sparse(AfT: sp.csr_matrix, rhs: np.ndarray, x0: np.ndarray, atol: float) -> np.ndarray:
    """``M_FF x = rhs`` for the sparse polish, with M_FF = A_Fᵀ A_F given by ``AfT``, the rows
    of Aᵀ (A = I − W) on the free points: conjugate gradients with a Jacobi preconditioner (the
    squared column norms, ≥ 1) from the current iterate, each product as A_Fᵀ (A_F v) (on a
    tmc2007 half A has 24 entries a row and M 231: a fifth of the work of a product with
    M_FF), until ‖M_FF x − rhs‖ ≤ 1e-4·``atol``, where rounding allows (M_FF is positive
    definite once one bound is active), and a sparse LU of M_FF when after ``_CG_MAXITER``
    products the residual is still above ``atol``. The residual is half the gradient on the
    free coordinates, so ``atol`` below the KKT tolerance keeps the KKT test exact; the LU's
    fill-in made a 14,298-point tmc2007 half take minutes per factorisation."""
    Af = AfT.T
    Mff = scipy.sparse.linalg.LinearOperator(
        (len(rhs), len(rhs)), matvec=lambda v: AfT @ (Af @ v), dtype=float
    )
    jacobi = sp.diags(1.0 / np.asarray(Af.multiply(Af).sum(axis=0)).ravel())
    x, info = scipy.sparse.linalg.cg(
        Mff, rhs, x0=x0, rtol=0.0, atol=1e-4 * atol, maxiter=_CG_MAXITER, M=jacobi
    )
    if info == 0 or np.linalg.norm(Mff @ x - rhs) <= atol:
        return x
    return scipy.sparse.linalg.splu((AfT @ Af).tocsc()).solve(rhs)


def _pdas(
    qp: _QP, y: np.ndarray, mu: np.ndarray, max_iter: int = 50, cold: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """Primal–dual active-set iterations for min μᵀMμ s.t. y∘μ ≥ λ, all columns (labels) of the
    n × J arrays ``y`` and ``mu`` (the start) at once.

    With the active bounds fixed, the free coordinates solve ``M_FF μ_F = −M_FA μ_A`` exactly
    (:meth:`_QP.solve_free`, one call for all labels still iterating); the next active set is
    {ν − z > 0} (multiplier ν = y∘2Mμ, slack z = y∘μ − λ). A label stops at the projection onto
    the bounds of the first iterate whose active set reproduces itself (an exact KKT point) or
    whose relative KKT violation is ≤ 1e-13. A set seen before (a cycle) stops it at the current
    point if its violation is ≤ 1e-8: points with zero slack *and* zero multiplier can flip in
    and out of the active set forever without changing μ (on slashdot halves 8 of 22 labels did).
    Returns (μ, iterations per label); μ's column is NaN where the label failed (no active
    bound, a singular reduced system, a cycle above 1e-8, or ``max_iter`` reached). From
    μ = λy the iterations took 4–7 free-block solves per label on a yeast half, 6–11 on bibtex.

    ``cold`` (a start far from the optimum, as μ = λy; dense M of at least ``_ROUGH_MIN``
    points): the first iterations only steer the active set, so they solve in single precision
    without refinement (half the cost of the largest factorisations: on a bibtex half |A| falls
    from about 2,000 to 550 in the first 4–5 iterations). A label leaves that phase, for exact
    iterations from the set it reached, once at most ``_ROUGH_CHANGES`` of the points change,
    its set repeats, its factorisation fails or ``_ROUGH_ITER`` iterations have passed; only
    exact iterations stop a label, so the result is that of the exact iterations (bibtex half:
    342 solves for 40 labels against 340, 5.8 s against 8.1 s, one thread).
    """
    M, lam = qp.M, qp.lam
    n, q = y.shape
    out, iterations = np.full((n, q), np.nan), np.zeros(q, dtype=int)
    active = y * (2.0 * (M @ mu)) - (y * mu - lam) > 0
    seen = [set() for _ in range(q)]
    rough = np.full(q, cold and qp.dense and n >= _ROUGH_MIN)
    todo = np.flatnonzero(active.any(axis=0))  # no active bound: M_FF = M is singular
    for it in range(1, max_iter + 1):
        if not len(todo):
            break
        iterations[todo] = it
        act, yt = active[:, todo], y[:, todo]
        m = lam * yt
        rhs = np.where(act, 0.0, -(M @ np.where(act, m, 0.0)))
        x, good = qp.solve_free(~act, rhs, mu[:, todo], rough[todo])
        m = np.where(act, m, x)
        mu[:, todo] = m  # the next sparse solve starts here
        projected = np.where(yt > 0, np.maximum(m, lam), np.minimum(m, -lam))
        kkt = _kkt_violation(M, yt, lam, projected, qp.scale)
        nu = np.where(act, yt * (2.0 * (M @ m)), 0.0)
        z = np.where(act, 0.0, yt * m - lam)
        new_active = nu - z > 0
        keep = []
        for k, j in enumerate(todo):
            if rough[j]:  # see the docstring
                settled = (
                    not good[k]
                    or new_active[:, k].tobytes() in seen[j]
                    or it == _ROUGH_ITER
                    or (new_active[:, k] != act[:, k]).sum() <= _ROUGH_CHANGES * n
                )
                if good[k]:
                    seen[j].add(act[:, k].tobytes())
                    active[:, j] = new_active[:, k]
                if settled:
                    rough[j], seen[j] = False, set()
                keep.append(j)
                continue
            if not good[k]:
                continue
            if np.array_equal(new_active[:, k], act[:, k]) or kkt[k] <= _KKT_EXACT:
                out[:, j] = projected[:, k]
                continue
            seen[j].add(act[:, k].tobytes())
            if new_active[:, k].tobytes() in seen[j]:
                if kkt[k] <= _KKT_TOL:
                    out[:, j] = projected[:, k]
                continue
            active[:, j] = new_active[:, k]
            keep.append(j)
        todo = np.asarray(keep, dtype=int)
    return out, iterations


class _QP:
    """The QPs of one weight matrix: A = I − W, M = AᵀA (sparse; dense copies on demand)."""

    def __init__(self, W: sp.csr_matrix, lam: float, dense: bool | None = None):
        n = W.shape[0]
        self.lam = lam
        self.A = (sp.identity(n, format="csr") - W).tocsr()
        self.At = self.A.T.tocsr()
        self.M = (self.At @ self.A).tocsr()
        self.dense = n <= _DENSE_QP_LIMIT if dense is None else dense
        self.Md = self.M.toarray() if self.dense else None
        self._Ad = None
        self._P = None  # (M + c 11ᵀ)⁻¹ and c (False: singular), on demand
        self._single = {}
        self.scale = 2.0 * float(abs(self.M).sum(axis=1).max())  # of the KKT test, per unit of μ

    def value_and_gradient(self, m: np.ndarray) -> tuple[float, np.ndarray]:
        v = self.A @ m
        return float(v @ v), 2.0 * (self.At @ v)

    def inverse(self) -> tuple[np.ndarray, float] | None:
        """P = (M + c 11ᵀ)⁻¹ with c = tr(M)/n² (M is singular, M1 = 0: c 11ᵀ lifts that null
        direction to the mean eigenvalue), by Cholesky and LAPACK potri, once per W. None when
        M has a larger null space (W with several closed neighbour classes, as in tiny sets)."""
        if self._P is None:
            n = self.Md.shape[0]
            c = float(np.trace(self.Md)) / n**2
            try:
                factor, _ = _cho_factor_in_place(self.Md + c)
            except np.linalg.LinAlgError:
                self._P = False
                return None
            P, info = scipy.linalg.lapack.dpotri(factor, lower=1, overwrite_c=1)
            P = P.T  # C order, P in its upper triangle
            for start in range(0, n, 256):  # mirrored by blocks (cache-sized transposes)
                rows = slice(start, start + 256)
                P[rows, :start] = P[:start, rows].T
                P[rows, rows] = np.triu(P[rows, rows]) + np.triu(P[rows, rows], 1).T
            self._P = (P, c) if info == 0 else False
        return self._P or None

    def solve_free(
        self, free: np.ndarray, rhs: np.ndarray, x0: np.ndarray, rough: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """``M_FF x_F = rhs_F`` for every column of the n × J masks and right-hand sides (x is 0
        on the active rows); returns (x, a per-column flag: solved and finite).

        Sparse M: CG or LU from ``x0`` (:func:`_solve_free_sparse`), one label at a time. Dense M
        with at least as many active as free points: Cholesky of M_FF. Fewer active points:
        through P = H⁻¹, H = M + c 11ᵀ (:meth:`inverse`) and the block-inverse identity
        ``H_FF⁻¹ = P_FF − P_FA P_AA⁻¹ P_AF`` (an |A| × |A| Cholesky instead of |F| × |F|, and
        one product with P for a block of labels), Sherman–Morrison for M_FF = H_FF − c 11ᵀ,
        and iterative refinement against the sparse M until the residual, half the free
        gradient, is at rounding level (1e-14 of the KKT scale) or stops decreasing.
        Columns flagged ``rough``: the same in single precision (float32 copies of M and P),
        without refinement (see :func:`_pdas`).
        """
        x, good = np.zeros_like(rhs), np.ones(rhs.shape[1], dtype=bool)
        n_active = (~free).sum(axis=0)
        schur = n_active < free.sum(axis=0) if self.dense else np.zeros(len(good), dtype=bool)
        if schur.any() and self.inverse() is None:
            schur[:] = False
        rough = np.zeros(len(good), dtype=bool) if rough is None else rough
        for k in np.flatnonzero(~schur):
            f = free[:, k]
            try:
                if self.dense:
                    Md = self.single("Md") if rough[k] else self.Md
                    factor = _cho_factor_in_place(Md[np.ix_(f, f)])
                    x[f, k] = scipy.linalg.cho_solve(
                        factor, rhs[f, k].astype(Md.dtype, copy=False), check_finite=False
                    )
                else:
                    atol = 0.1 * _KKT_TOL * self.scale * max(float(np.abs(x0[:, k]).max()), self.lam)
                    x[f, k] = _solve_free_sparse(self.At[f], rhs[f, k], x0[f, k], atol)
            except (np.linalg.LinAlgError, RuntimeError):
                good[k] = False
        cols, block, size = (
            np.concatenate([np.flatnonzero(schur & rough), np.flatnonzero(schur & ~rough)]),
            [],
            0,
        )
        for i, k in enumerate(cols):  # blocks of labels: P_AA factors ≤ 128 MiB
            block.append(k)
            size += n_active[k] ** 2
            if k == cols[-1] or rough[cols[i + 1]] != rough[k] or len(block) == 64 or size > 4 * _BLOCK:
                try:
                    x[:, block] = self._solve_free_schur(free[:, block], rhs[:, block], rough[k])
                except np.linalg.LinAlgError:  # P_AA not numerically positive definite
                    good[block] = False
                block, size = [], 0
        good &= np.isfinite(x).all(axis=0)
        return x, good

    def single(self, name: str) -> np.ndarray:
        """A float32 copy of ``Md`` or of P, kept, for the rough iterations of :func:`_pdas`."""
        if name not in self._single:
            self._single[name] = (self.Md if name == "Md" else self.inverse()[0]).astype(np.float32)
        return self._single[name]

    def _solve_free_schur(self, free: np.ndarray, rhs: np.ndarray, rough: bool = False) -> np.ndarray:
        """:meth:`solve_free` through P for a block of labels (see there)."""
        P, c = self.inverse()
        if rough:
            P = self.single("P")
        J = rhs.shape[1]
        actives = [np.flatnonzero(~free[:, k]) for k in range(J)]
        factors = [_cho_factor_in_place(P[np.ix_(a, a)]) for a in actives]

        def h_solve(B):  # H_FF⁻¹ B, B's column k for label k mod J
            V = matmul(P, B.astype(P.dtype, copy=False))
            Z = np.zeros_like(V)  # P_AA⁻¹ V_A per label, then P_•A by one product
            for k, (a, factor) in enumerate(zip(actives, factors, strict=True)):
                cols = slice(k, None, J)
                Z[a, cols] = scipy.linalg.cho_solve(factor, V[a, cols], check_finite=False)
            V -= matmul(P, Z)
            return np.where(np.tile(free, B.shape[1] // J), V, 0.0)

        V = h_solve(np.hstack([rhs, free.astype(float)]))  # H_FF⁻¹ [rhs, 1_F]
        ones = V[:, J:]
        gain = c / (1.0 - c * ones.sum(axis=0))

        def m_solve(R):  # M_FF⁻¹ R, Sherman–Morrison
            V = h_solve(R)
            return V + ones * (gain * V.sum(axis=0))

        x = V[:, :J] + ones * (gain * V[:, :J].sum(axis=0))
        if rough:
            return x
        atol = _REFINE_TOL * self.scale * np.maximum(np.abs(x).max(axis=0), self.lam)
        res = np.where(free, rhs - self.M @ x, 0.0)
        for _ in range(_REFINE_STEPS):  # all labels of the block: one product
            size = np.abs(res).max(axis=0)
            if (size <= atol).all():
                break
            x += m_solve(res)
            res = np.where(free, rhs - self.M @ x, 0.0)
            if (np.abs(res).max(axis=0) >= size).all():  # rounding level reached
                break
        return x

    def solve(self, y: np.ndarray) -> tuple[np.ndarray, dict]:
        """min μᵀMμ subject to y∘μ ≥ λ for one label by the previous path (the reference, and
        the fallback of :func:`label_manifold`): L-BFGS-B, the active-set polish, and NNLS."""
        lam = self.lam
        if (y > 0).all() or (y < 0).all():  # (I − W)1 = 0: μ = λy is optimal
            return lam * y, {"solver": "constant", "objective": 0.0, "kkt": 0.0}
        pos = y > 0
        lower, upper = np.where(pos, lam, -np.inf), np.where(pos, np.inf, -lam)
        res = minimize(
            self.value_and_gradient,
            lam * y,
            jac=True,
            method="L-BFGS-B",
            bounds=Bounds(lower, upper),
            options=_LBFGSB_OPTIONS,
        )
        candidates = {"L-BFGS-B": np.clip(res.x, lower, upper)}
        polished = _pdas(self, y[:, None], candidates["L-BFGS-B"][:, None].copy())[0][:, 0]
        if np.isfinite(polished).all():
            candidates["L-BFGS-B+active-set"] = polished
        if self.dense and not (
            np.isfinite(polished).all() and _kkt_violation(self.M, y, lam, polished, self.scale) <= _KKT_TOL
        ):
            # Ill-conditioned label: exact active-set NNLS in z = y∘μ − λ ≥ 0 (Lawson–Hanson),
            # min ‖A diag(y) z + λ A y‖², then the active-set polish from its solution.
            if self._Ad is None:
                self._Ad = self.A.toarray()
            z, _ = nnls(self._Ad * y, -lam * (self._Ad @ y), maxiter=50 * len(y))
            candidates["NNLS"] = y * (lam + z)
            polished = _pdas(self, y[:, None], candidates["NNLS"][:, None].copy())[0][:, 0]
            if np.isfinite(polished).all():
                candidates["NNLS+active-set"] = polished
        info = self.result(y, candidates)
        info["lbfgsb_iterations"] = int(res.nit)
        return candidates[info["solver"]], info

    def result(self, y: np.ndarray, candidates: dict) -> dict:
        """Info on the candidate kept: KKT violation ≤ 1e-8 first, then the lowest objective."""
        scored = {
            name: (self.value_and_gradient(m)[0], float(_kkt_violation(self.M, y, self.lam, m, self.scale)))
            for name, m in candidates.items()
        }
        best = min(scored, key=lambda name: (scored[name][1] > _KKT_TOL, scored[name][0]))
        return {"solver": best, "objective": scored[best][0], "kkt": scored[best][1]}


_WORKER_QP: _QP | None = None  # in a worker process of _in_workers: the QPs it solves


def _adopt(qp: _QP) -> None:
    """A worker process's start: keep ``qp``."""
    global _WORKER_QP
    _WORKER_QP = qp


def _in_workers(qp: _QP, fn, parts: list, workers: int) -> list:
    """``[fn(part) for part in parts]`` in ``workers`` processes that solve the QPs of ``qp``
    (the parts handed out as workers free up), from :func:`mlgraph.processes.workers.forked`. On Linux
    they are forked: they share the parent's imports and its M, P and float32 copies, made once
    with the parent's threads, without a copy (loky workers each imported mlgraph, 1.5 s, and
    built M and P again, 2.1 s on a bibtex half). Elsewhere they are spawned and receive ``qp``
    pickled. An exception or a signal in the parent kills them."""
    with forked(workers, _adopt, (qp,)) as pool:
        futures = [pool.submit(fn, part) for part in parts]
        return [future.result() for future in futures]


def _solve_labels(y: np.ndarray) -> list[tuple[np.ndarray, dict]]:
    """:meth:`_QP.solve` for each column of ``y`` under one BLAS thread, in a worker process.
    A sparse M's path is vector operations, sparse products and L-BFGS-B's Python callbacks,
    which contending BLAS threads only slow down (a tmc2007 half's label: 16–40 s with two
    OpenBLAS threads, 8 s with one) and the GIL would serialise in threads: the spare cores
    take other labels instead."""
    with threadpool_limits(1):
        return [_WORKER_QP.solve(y[:, k]) for k in range(y.shape[1])]


def _pdas_results(qp: _QP, y: np.ndarray) -> tuple[np.ndarray, list[dict | None]]:
    """:func:`_pdas` from μ = λy for the columns of ``y`` (dense M), and the result of each
    (:meth:`_QP.result`; None where the iterations failed)."""
    mu, iterations = _pdas(qp, y, qp.lam * y, cold=True)
    return mu, [
        {**qp.result(y[:, k], {"active-set": mu[:, k]}), "active_set_iterations": int(iterations[k])}
        if np.isfinite(mu[:, k]).all()
        else None
        for k in range(y.shape[1])
    ]


def _pdas_labels(y: np.ndarray) -> tuple[np.ndarray, list[dict | None]]:
    """:func:`_pdas_results` under one BLAS thread, in a worker process."""
    with threadpool_limits(1):
        return _pdas_results(_WORKER_QP, y)


def label_manifold(W, Y, lam: float = 1.0, *, solver: str = "active-set", return_info: bool = False):
    """Numerical labels μ (n × q) of Eq. 3–4 from the weights W of :func:`lle_weights`.

    ``Y`` holds 0/1 or ±1 logical labels (positive entries are relevant). Each label solves
    ``min μᵀMμ, M = (I − W)ᵀ(I − W)`` subject to μ_i ≥ λ where y_i = +1 and μ_i ≤ −λ where
    y_i = −1. ``solver="active-set"`` (default): primal–dual active-set iterations from μ = λy
    for all labels at once with exact free-block solves (:func:`_pdas`), the previous path for
    any label they leave above the KKT tolerance; ``"lbfgsb"``: the previous path for every
    label (L-BFGS-B on sparse products, the active-set polish, and for ill-conditioned labels an
    exact NNLS), kept as the reference. See the module's Assumptions. With ``return_info`` also
    returns one dict per label: the solver path kept, the objective, the relative KKT violation
    (``kkt``) and the iterations.
    """
    if not positive(lam):
        raise ValueError(f"lam must be a positive number (λ of Eq. 4), got {lam!r}")
    if solver not in QP_SOLVERS:
        raise ValueError(f"solver must be one of {QP_SOLVERS}, got {solver!r}")
    W = sp.csr_matrix(W, dtype=np.float64)
    n = W.shape[0]
    if W.shape != (n, n):
        raise ValueError(f"W must be square, got shape {W.shape}")
    y = _signs(Y, n)
    qp = _QP(W, float(lam))
    mu, infos = lam * y, [{"solver": "constant", "objective": 0.0, "kkt": 0.0} for _ in range(y.shape[1])]
    mixed = np.flatnonzero((y > 0).any(axis=0) & (y < 0).any(axis=0))  # constant labels: μ = λy, (I − W)1 = 0
    workers = min(blas_threads(), len(mixed)) if n * len(mixed) >= _SPLIT_WORK else 1
    if solver == "active-set" and qp.dense and workers > 1:
        # Labels split over worker processes: the iterations' small Cholesky factors, gathers
        # and Python steps gain little from a second BLAS thread (bibtex half: 37 s on 1, 36 on 2).
        if qp.inverse() is not None and n >= _ROUGH_MIN:  # made once, with this process's threads
            qp.single("Md"), qp.single("P")
        parts = [mixed[i::workers] for i in range(workers)]
        solved = zip(
            parts, _in_workers(qp, _pdas_labels, [y[:, part] for part in parts], workers), strict=True
        )
    elif solver == "active-set" and qp.dense and len(mixed):
        solved = [(mixed, _pdas_results(qp, y[:, mixed]))]
    else:
        solved = []
    for part, (exact, part_infos) in solved:
        for k, j in enumerate(part):
            if part_infos[k] is not None:
                mu[:, j], infos[j] = exact[:, k], part_infos[k]
    rest = [j for j in mixed if infos[j]["solver"] == "constant" or infos[j]["kkt"] > _KKT_TOL]
    workers = min(blas_threads(), len(rest))
    if not qp.dense and workers > 1:
        # Sparse M: the labels over worker processes (see _solve_labels), one per caller's thread.
        parts = [rest[i :: 2 * workers] for i in range(min(len(rest), 2 * workers))]
        for part, solved in zip(
            parts, _in_workers(qp, _solve_labels, [y[:, part] for part in parts], workers), strict=True
        ):
            for j, (m, info) in zip(part, solved, strict=True):
                mu[:, j], infos[j] = m, info
    else:
        with threadpool_limits(1) if not qp.dense else contextlib.nullcontext():
            for j in rest:
                mu[:, j], infos[j] = qp.solve(y[:, j])
    for j in mixed:
        if infos[j]["kkt"] > _KKT_WARN:
            warnings.warn(
                f"label {j}: the QP of Eq. 3 was solved only approximately (relative KKT "
                f"violation {infos[j]['kkt']:.1e}); the weights W are nearly degenerate, a "
                f"larger reg or n_neighbors helps",
                RuntimeWarning,
                stacklevel=2,
            )
    return (mu, infos) if return_info else mu


# --------------------------------------------------------------------------------------------
# Eq. 5–12: kernel MSVR with the sign hinge, by IRWLS
# --------------------------------------------------------------------------------------------
class SignMSVR(NamedTuple):
    """Result of :func:`sign_msvr`: f(x) = Σ_i coef_i k(x_i, x) + intercept."""

    coef: np.ndarray  # β, n × q dual coefficients
    intercept: np.ndarray  # b, q
    objective: np.ndarray  # L(β, b) of Eq. 5 at the start (β = 0, b = 0) and after each iteration
    n_iter: int
    converged: bool  # stopped by the relative-decrease rule (or no support vector left)


def _loss(F: np.ndarray, U: np.ndarray, y: np.ndarray, C1: float, C2: float, epsilon: float) -> float:
    """C1 Σ_i L1(‖μ_i − f_i‖) + C2 Σ_ij L2(y_ij f_ij) (Eq. 5–7 without the regulariser)."""
    r = np.sqrt(np.einsum("ij,ij->i", U - F, U - F))
    l1 = np.maximum(r - epsilon, 0.0)
    l2 = np.maximum(-y * F, 0.0)
    return float(C1 * (l1 @ l1) + C2 * l2.sum())


def sign_msvr_objective(
    K, U, Y, coef, intercept, C1: float = 1.0, C2: float = 10.0, epsilon: float = 0.1
) -> float:
    """L(β, b) of Eq. 5 for the kernel matrix K (n × n), targets U = μ and labels Y (0/1 or ±1)."""
    K, U, coef = (np.asarray(a, dtype=np.float64) for a in (K, U, coef))
    y = _signs(Y, U.shape[0])
    KB = K @ coef
    return 0.5 * float(np.einsum("ij,ij->", coef, KB)) + _loss(KB + intercept, U, y, C1, C2, epsilon)


def _reused_factor_solve(K: np.ndarray, sv: np.ndarray, diag: np.ndarray, factor, B: np.ndarray):
    """``(K_SS + diag(diag)) X = B`` by block conjugate gradients preconditioned with ``factor``,
    the Cholesky factor of an earlier IRWLS iteration's ``K_SS + diag(d_old)`` on the same
    support vectors S; None when that would cost more than a new factorisation.

    The preconditioned matrix has its eigenvalues between min(1, d/d_old) and max(1, d/d_old),
    so CG converges fast once the weights a_i of Eq. 10 settle. One CG step (a product with K
    and two triangular solves, m = q + 1 columns) costs 4 n² m flops, a Cholesky n³/3, but
    runs at half its speed (measured, one thread, n = 3,000 and 6,000, m = 23): CG gets
    ``n / (24 m)`` steps, and stops early when its rate predicts more. It stops at a
    residual of ``_CG_RTOL`` (relative, per column), below the rounding level of the Cholesky
    solve it replaces, so the iterates are those of a new factorisation to rounding.
    """
    n, m = K.shape[0], B.shape[1]
    budget = n // (24 * m) - 1
    if budget < _CG_MIN_STEPS:
        return None
    full = len(sv) == n

    def matvec(V):
        if full:
            KV = matmul(K, V)
        else:  # K_SS V without copying K_SS
            Z = np.zeros((n, m))
            Z[sv] = V
            KV = matmul(K, Z)[sv]
        KV += diag[:, None] * V
        return KV

    def precondition(R):
        return scipy.linalg.cho_solve(factor, R, check_finite=False)

    target = _CG_RTOL * np.linalg.norm(B, axis=0)
    X = precondition(B)
    R = B - matvec(X)
    start = np.linalg.norm(R, axis=0)
    Z = precondition(R)
    P, rz = Z, np.einsum("ij,ij->j", R, Z)
    for step in range(1, budget + 1):
        Q = matvec(P)
        pq = np.einsum("ij,ij->j", P, Q)
        alpha = np.divide(rz, pq, out=np.zeros(m), where=pq > 0)
        X += alpha * P
        R -= alpha * Q
        size = np.linalg.norm(R, axis=0)
        if (size <= target).all():
            return X
        left = size > target
        rate = np.max((size[left] / start[left]) ** (1.0 / step))  # slowest column's contraction
        if rate >= 1.0 or step + np.log(np.max(target[left] / size[left])) / np.log(rate) > budget:
            return None
        Z = precondition(R)
        rz_new = np.einsum("ij,ij->j", R, Z)
        P = Z + np.divide(rz_new, rz, out=np.zeros(m), where=rz > 0) * P
        rz = rz_new
    return None


def sign_msvr(
    K, U, Y, C1: float = 1.0, C2: float = 10.0, epsilon: float = 0.1, tol: float = 1e-5, max_iter: int = 100
) -> SignMSVR:
    """Minimise Eq. 5 over (β, b) by IRWLS with a backtracking line search (Eq. 8–12).

    ``K``: n × n kernel matrix of the training points (symmetric PSD); ``U``: n × q targets
    (the numerical labels μ); ``Y``: n × q logical labels (0/1 or ±1), used by the sign hinge.
    See the module docstring for the kernelised system solved at each iteration.
    """
    K = np.asarray(K, dtype=np.float64)
    U = np.asarray(U, dtype=np.float64)
    n, q = U.shape
    if K.shape != (n, n):
        raise ValueError(f"K must have shape ({n}, {n}), got {K.shape}")
    y = _signs(Y, n)
    if y.shape != U.shape:
        raise ValueError(f"Y must have the shape of U {U.shape}, got {y.shape}")

    beta, b = np.zeros((n, q)), np.zeros(q)
    KB = np.zeros((n, q))  # K β, kept along the iterations
    reg = 0.0  # ½ Σ_j β_jᵀ K β_j
    obj = _loss(KB + b, U, y, C1, C2, epsilon)
    history = [obj]
    converged = False
    n_iter = 0
    factor = None  # (Cholesky factor, its support vectors)
    for n_iter in range(1, max_iter + 1):
        F = KB + b
        r = np.sqrt(np.einsum("ij,ij->i", U - F, U - F))
        support = r > epsilon if epsilon > 0 else np.ones(n, dtype=bool)
        if not support.any():  # no curvature left in the IRWLS model
            converged = True
            n_iter -= 1
            break
        a = np.zeros(n)
        a[support] = 2.0 * (r[support] - epsilon) / np.where(r[support] > 0, r[support], 1.0)
        if epsilon == 0:
            a[:] = 2.0  # L1 = r²: a = 2 everywhere, also at r = 0
        hinge = C2 * y * (y * F <= 0)  # C2 D_j y_j of Eq. 12, over all samples
        sv = np.flatnonzero(support)
        target = np.where(support[:, None], 0.0, hinge)  # β_N = C2 s_N ∘ y_N
        rhs = U[sv] + hinge[sv] / (C1 * a[sv, None])
        if len(sv) < n:  # K_SN β_N (all points are support vectors on bibtex)
            rhs -= K[np.ix_(sv, np.flatnonzero(~support))] @ target[~support]
        diag, B = 1.0 / (C1 * a[sv]), np.column_stack([rhs, np.ones(len(sv))])
        sol = None
        if factor is not None and np.array_equal(sv, factor[1]):  # same S: the old factor preconditions
            sol = _reused_factor_solve(K, sv, diag, factor[0], B)
        if sol is None:
            factor = None  # freed before the new matrix: one n × n copy at a time
            H = K[np.ix_(sv, sv)] if len(sv) < n else K.copy()
            H[np.diag_indices_from(H)] += diag
            factor = _cho_factor_in_place(H), sv
            sol = scipy.linalg.cho_solve(factor[0], B, check_finite=False)
        u, V = sol[:, -1], sol[:, :-1]
        b_new = (V.sum(axis=0) + target.sum(axis=0)) / u.sum()  # 1ᵀβ_S = −1ᵀβ_N
        target[sv] = V - u[:, None] * b_new
        delta, db = target - beta, b_new - b
        K_delta = matmul(K, delta)
        cross, curv = float(np.einsum("ij,ij->", delta, KB)), float(np.einsum("ij,ij->", delta, K_delta))

        eta, accepted = 1.0, False
        for _ in range(_MAX_HALVINGS + 1):
            KB_try = KB + eta * K_delta
            obj_try = (
                reg
                + eta * cross
                + 0.5 * eta**2 * curv
                + _loss(KB_try + (b + eta * db), U, y, C1, C2, epsilon)
            )
            if obj_try < obj:
                accepted = True
                break
            eta *= 0.5
        if not accepted:  # no decrease along the direction: stop here
            converged = True
            n_iter -= 1
            break
        beta, b, KB = beta + eta * delta, b + eta * db, KB_try
        reg = 0.5 * float(np.einsum("ij,ij->", beta, KB))
        obj_new = reg + _loss(KB + b, U, y, C1, C2, epsilon)
        decrease = (obj - obj_new) / obj if obj > 0 else 0.0
        obj = obj_new
        history.append(obj)
        if decrease < tol:
            converged = True
            break
    return SignMSVR(beta, b, np.asarray(history), n_iter, converged)


# --------------------------------------------------------------------------------------------
# Estimator
# --------------------------------------------------------------------------------------------
def _mean_distance(sqdist: np.ndarray) -> float:
    """Mean Euclidean distance over distinct pairs, from a squared-distance matrix (blocked)."""
    n = sqdist.shape[0]
    step = max(1, _BLOCK // n)
    total = sum(float(np.sqrt(sqdist[s : s + step]).sum()) for s in range(0, n, step))
    return total / (n * (n - 1))


class ML2(ScoreThresholdMixin, MultiLabelClassifierMixin, BaseEstimator):
    """ML², multi-label manifold learning (paper 002): LLE weights → numerical labels → kernel
    MSVR with a sign hinge. See the module docstring for the equations and the assumptions.

    Parameters: ``n_neighbors`` (K; None → q + 1), ``lam`` (λ of Eq. 4), ``C1``, ``C2``
    (Eq. 5), ``epsilon`` (ε of Eq. 6), ``kernel`` ("rbf" or "linear"), ``gamma`` (RBF
    coefficient in exp(−γ‖x − x'‖²); None → 1/(2σ²), σ the mean pairwise distance of the
    standardised training points, as in the authors' code; "scale" → 1/(d·Var X) as in
    scikit-learn, about 4× larger; or a number), ``max_iter`` and ``tol`` (IRWLS stopping
    rule), ``reg`` (ridge of Eq. 2).

    Fitted attributes: ``mu_`` (numerical labels of the training points), ``weights_`` (W),
    ``dual_coef_`` (β), ``intercept_`` (b), ``objective_`` (IRWLS history), ``n_iter_``,
    ``n_neighbors_``, ``gamma_``, ``X_fit_`` (standardised training features), ``mean_``,
    ``scale_``, ``n_features_in_``.
    """

    _rules = {
        "n_neighbors": (lambda v: v is None or positive_int(v), "None (q + 1) or a positive integer (K)"),
        "lam": (positive, "a positive number (λ of Eq. 4)"),
        "C1": (positive, "a positive number (C1 of Eq. 5)"),
        "C2": (nonneg, "a non-negative number (C2 of Eq. 5)"),
        "epsilon": (nonneg, "a non-negative number (ε of Eq. 6)"),
        "kernel": (lambda v: v in KERNELS, f"one of {KERNELS}"),
        "gamma": (
            lambda v: v is None or (isinstance(v, str) and v == "scale") or positive(v),
            "None (mean-distance heuristic), 'scale' (1/(d·Var X)) or > 0",
        ),
        "max_iter": (positive_int, "a positive integer"),
        "tol": (nonneg, "a non-negative number"),
        "reg": (positive, "a positive number (ridge of Eq. 2)"),
    }

    def __init__(
        self,
        n_neighbors=None,
        lam=1.0,
        C1=1.0,
        C2=10.0,
        epsilon=0.1,
        kernel="rbf",
        gamma=None,
        max_iter=100,
        tol=1e-5,
        reg=1e-3,
    ):
        self.n_neighbors = n_neighbors
        self.lam = lam
        self.C1 = C1
        self.C2 = C2
        self.epsilon = epsilon
        self.kernel = kernel
        self.gamma = gamma
        self.max_iter = max_iter
        self.tol = tol
        self.reg = reg

    def _gamma(self, Xs: np.ndarray, sqdist: np.ndarray) -> float:
        if self.gamma is None:  # the authors' width: σ = mean pairwise distance
            sigma = _mean_distance(sqdist)
            if sigma <= 0:
                raise ValueError("all training rows coincide: the mean distance is 0; pass gamma explicitly")
            return 1.0 / (2.0 * sigma**2)
        if isinstance(self.gamma, str):  # "scale", as scikit-learn's SVC
            var = float(Xs.var())
            if var <= 0:
                raise ValueError("the standardised features have zero variance; pass gamma explicitly")
            return 1.0 / (Xs.shape[1] * var)
        return float(self.gamma)

    def _kernel(self, A: np.ndarray, sqdist: np.ndarray | None = None) -> np.ndarray:
        if self.kernel == "linear":
            return A @ self.X_fit_.T
        K = squared_distances(A, self.X_fit_) if sqdist is None else sqdist
        K *= -self.gamma_
        return np.exp(K, out=K)

    def fit(self, X, Y):
        """Fit on the labelled rows of (X, Y); rows of ``Y`` equal to −1 are dropped."""
        check_params(self, self._rules)
        X, Y, labelled = self._check_fit_data(X, Y)
        X, Y = X[labelled], Y[labelled]
        n, q = Y.shape
        if n < 2:
            raise ValueError(f"ML2 needs at least 2 labelled training rows, got {n}")
        self.mean_, self.scale_ = standardisation(X)
        Xs = (X - self.mean_) / self.scale_
        if self.n_neighbors is not None and self.n_neighbors > n - 1:
            raise ValueError(
                f"ML2: parameter n_neighbors={self.n_neighbors!r} must be at most n - 1 = {n - 1} "
                f"(n = {n} labelled training rows)"
            )
        self.n_neighbors_ = min(q + 1, n - 1) if self.n_neighbors is None else int(self.n_neighbors)

        sqdist = squared_distances(Xs)  # one matrix serves the neighbours, σ and the kernel
        self.weights_ = lle_weights(Xs, self.n_neighbors_, self.reg, sqdist=sqdist)  # Eq. 2
        self.mu_ = label_manifold(self.weights_, Y, self.lam)  # Eq. 3–4
        self.gamma_ = None if self.kernel == "linear" else self._gamma(Xs, sqdist)
        self.X_fit_ = Xs
        K = self._kernel(Xs, sqdist)  # in place
        res = sign_msvr(
            K, self.mu_, Y, C1=self.C1, C2=self.C2, epsilon=self.epsilon, tol=self.tol, max_iter=self.max_iter
        )  # Eq. 5–12
        self.dual_coef_, self.intercept_ = res.coef, res.intercept
        self.objective_, self.n_iter_ = res.objective, res.n_iter
        return self

    def decision_function(self, X) -> np.ndarray:
        """Predicted numerical labels f(x) = Σ_i β_i k(x_i, x) + b; rank labels by value."""
        check_is_fitted(self, "dual_coef_")
        X = self._check_predict_data(X)
        return self._kernel((X - self.mean_) / self.scale_) @ self.dual_coef_ + self.intercept_
