"""Multi-label manifold regularization, ML-MR and ML-MRRW (paper 000, Eq. 5–20).

Both are Laplacian regularized least squares (LapRLS) with one output column per label. They
solve Eq. 19 for the expansion coefficients over all n training points (labelled and
unlabelled),

    Θ* = (Ψ K Ξ + l γ_A I + (l γ_I / n²) L K Ξ)⁻¹ Y = (M K Ξ + λ I)⁻¹ Y,
    M = Ψ + (l γ_I / n²) L (sparse),  λ = l γ_A,

and score new points by Eq. 20, F̃ = K_e Ξ Θ*, predicting label j where F̃_ij > 0. K is the
Gaussian kernel of Eq. 5 on standardised features, L = D − W the Laplacian of the sparsified
graph (Eq. 6–10, :mod:`mlgraph.graphs`), Ψ the diagonal indicator of labelled points (Eq. 12),
Y holds ±1 on labelled rows and 0 on unlabelled rows, and Ξ is the diagonal reliance-weight
matrix (Eq. 16): ν1 on labelled and ν2 on unlabelled points for ML-MRRW, the identity for ML-MR.

Solvers (parameter ``solver``):

- ``"exact"`` solves Eq. 19 by one LU factorisation (LAPACK ``getrf``; Cholesky where the
  symmetric form below applies) for all labels at once; no inverse is formed. With
  ``precision="mixed"`` (default) the factorisation is done in float32 and the solution refined
  in float64 (LAPACK ``dsgesv``'s scheme): x ← x + A₃₂⁻¹(Y − A x), the residual computed from the
  float64 kernel, until the error left, estimated from the last two corrections, is below
  1e-14 relative (:func:`_refined_solve`). That takes 2 corrections on the benchmarks and gives
  the float64 LU's solution to 1e-12 relative (yeast, tmc2007-500) at about half the
  factorisation time and memory; on ill-conditioned systems (cond ≈ 1e6–1e9) it takes 3–10 and
  stays within a factor 4 of the float64 LU's own error (a test checks this against an
  extended-precision solution). If the float32 factorisation fails, or the corrections stop
  shrinking before the residual passes dsgesv's backward-error test (cond ≳ 1/ε₃₂, e.g.
  γ_A ≤ 1e-9 with a wide σ), the system is factorised again in float64
  (``solver_report_["precision"]`` says which was used). ``precision="double"`` always
  factorises in float64. The fit holds two n×n matrices, 1.5 n×n float64 with ``"mixed"`` (2 with
  ``"double"``): the squared distances (one buffer serves σ and the graph and becomes K in
  place) and the system; with the graph search's row blocks and the O(n) arrays its peak
  (tracemalloc) is 1.63 n×n at n = 8,000, 1.74 at 4,000 and 2.04 at 1,611 with ``"mixed"``
  (2.12, 2.23, 2.30 with ``"double"``). The scores add blocks of at most 2²⁴ test-kernel entries.
  The system A is assembled in C order by column panels (a panel of A reads only the same
  columns of K, pieces of its rows; in float32 arithmetic for the float32 factorisation,
  :func:`_eq19`), and is then Aᵀ in Fortran order, which LAPACK factorises in place
  (``overwrite_a``); the transposed triangular solves then solve A x = b. The kernel's exp is
  applied to each panel as the first assembly reads it, and within
  :func:`mlgraph.graphs.kernels.kept_buffers` (a job's trials) both n×n buffers serve the next
  fit of the same n. The dense products after the training distances, and those of the
  scores, go through scipy's BLAS, the library of the factorisation
  (:func:`mlgraph.graphs.kernels.matmul`).
- ``"nystrom"`` is an **approximation** that scales linearly in n: K is replaced by its Nyström
  approximation K̃ = Φ Φᵀ from ``n_landmarks`` landmark points (Φ = K_nm U Λ^-½ from the
  eigenvectors of K_mm, eigenvalues below 1e-10·λ_max dropped), in Eq. 19 and in Eq. 20 alike.
  The landmarks (``landmarks``) are by default the centres of a k-means clustering of the
  training points (Zhang, Tsang & Kwok, ICML 2008: the Nyström error is bounded by the
  k-means quantisation error), :func:`_kmeans_landmarks`; ``"random"`` draws them from the
  training points. On tmc2007-500 (8,000 training rows, half labelled; two splits × two
  seeds) with 1,000 landmarks the centres put average precision 0.0008–0.0025 below the exact
  solver's, random points 0.005–0.008 (0.002–0.006 with 2,000), for about 1.2 s more.
  Eq. 19 with K̃ is then solved exactly by the Woodbury identity: with
  S = λI + Φᵀ Ξ M Φ (r×r, r ≤ m), Φᵀ Ξ Θ = S⁻¹ Φᵀ Ξ Y and F̃ = Φ_e S⁻¹ Φᵀ Ξ Y. Φ is never
  formed: Φᵀ Ξ M Φ = Tᵀ (K_mn Ξ M K_nm) T with T = U Λ^-½, accumulated over row blocks of K_nm.
  The fit costs O(n m (d + m)) time and one n×m matrix of memory (K_nm, stored in float32 above
  2²⁸ entries: 4 GB for a million rows and 1,000 landmarks, its products accumulated in
  float64), plus the graph's neighbour search: with ``knn_search="exact"`` scikit-learn's
  ``NearestNeighbors`` (trees in low dimension, otherwise brute force in chunks: no n×n matrix
  but n² time), with ``knn_search="approximate"`` an HNSW search (:mod:`mlgraph.graphs.search`,
  about n log n, its recall in ``graph_report_``), which keeps the whole fit about linear in n
  to a million rows. A prediction needs the kernel to the m landmarks only.
  With every training point a landmark (``n_landmarks ≥ n``, either rule) and K of full
  numerical rank it is the exact solution.

``solver_report_`` records the solver (and the exact solver's factorisation), the landmarks and
rank used, the Nyström kernel's relative trace error 1 − tr(K̃)/tr(K) (0 for the exact solver;
estimated on 1,000 sampled rows) and ``residual``, the largest absolute entry of
(M K Ξ + λI) Θ − Y over 16 sampled rows with the exact K (targets are ±1): the solve's backward
error for ``"exact"``, the approximation error of Eq. 19 for ``"nystrom"``.

Symmetric form and Cholesky (half the flops of LU). A symmetric P(MKΞ + λI)Q with P, Q sparse
and independent of K (anything else costs a dense product, more than LU saves) needs, for the
K term to be symmetric for every K, PM ∝ QᵀΞ, i.e. Q ∝ Ξ⁻¹MPᵀ; the λ term λPQ ∝ PΞ⁻¹MPᵀ is then
symmetric only if Ξ commutes with M: ν1 = ν2, or no edge joining a labelled to an unlabelled
point. So ML-MRRW (ν1 ≠ ν2) has none and is solved by LU. For Ξ = νI (ML-MR, or ν1 = ν2) the form exists:
(νMK + λI)M = νMKM + λM, positive definite when M is (γ_I > 0 and every connected component of
the graph holds a labelled point), with Θ = Mβ. From 4,000 training rows the exact solver then
uses Cholesky on it (K M formed over K's buffer, then νMKM + λM panel by panel), and LU otherwise
(``solver_report_["factorisation"]``): below, the second sparse × dense pass over K that the form
needs costs more than LU's extra flops (LU 2–7 % faster per fit from 1,600 to 4,000 rows). It
amplifies rounding by about cond(M), which is small here (≈50–1,000 on yeast, from γ_I/n² and
the labelling rate): on yeast it agrees with LU to 1e-14, and the tests check it against
``scipy.linalg.solve`` to 1e-10. With one BLAS thread (the runner's parallel trials) the
factorisation takes half of LU's time (1.5 s against 2.9 s at n = 5,000); with two threads on a
busy shared 2-core machine OpenBLAS's potrf was not faster.

Other notes:
- With γ_I = 0 the unlabelled coefficients vanish and the model is kernel ridge regression on
  the labelled points with ridge l·γ_A/ν1 (a test checks this against scikit-learn).
- Semi-supervised input follows scikit-learn's convention: a row of ``Y`` filled with −1 marks
  an unlabelled training point.
- ``predict`` thresholds ``decision_function``; a caller that needs both scores and labels
  should threshold the scores itself (``scores > 0``) rather than build the test kernel twice.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components
from sklearn.base import BaseEstimator
from sklearn.cluster import KMeans, kmeans_plusplus
from sklearn.neighbors import NearestNeighbors
from sklearn.utils.validation import check_is_fitted

from mlgraph.graphs import KINDS, SEARCHES, WEIGHTS, gaussian_kernel, laplacian, squared_distances
from mlgraph.graphs.cache import SharedWork, shared
from mlgraph.graphs.kernels import blas_threads, buffer, exp_scaled, matmul, one_blas_thread, row_blocks
from mlgraph.graphs.sparsify import check_k, graph_from_pairs, unique_pairs
from mlgraph.methods.base import (
    MultiLabelClassifierMixin,
    ScoreThresholdMixin,
    cached_graph,
    check_params,
    nonneg,
    positive,
    positive_int,
    shared_median_sigma,
    standardisation,
)

SOLVERS = ("exact", "nystrom")
PRECISIONS = ("mixed", "double")
LANDMARKS = ("kmeans", "random")
# Lloyd iterations of the k-means landmarks (_kmeans_landmarks).
_KMEANS_ITER = 5
# Elements of one block of the Nyström solver's kernel between training rows and landmarks.
_KERNEL_BLOCK = 1 << 24
# Elements of one block of the test kernel in decision_function (16 MB): each block's memory is
# reused by the next (a 128 MB block is fresh memory each time and made the scores at n = 8,000
# take 1.0 s instead of 0.55 s), and its exp pass runs from cache.
_SCORE_BLOCK = 1 << 21
# Largest K_nm (training rows × landmarks) the Nyström solver stores in float64; a larger one is
# stored in float32 (half the memory: 4 GB for a million rows and 1,000 landmarks), its products
# accumulated in float64.
_NYSTROM_FLOAT64_ELEMENTS = 1 << 28
# Rows per sparse-times-dense product while assembling (bounds the temporaries).
_ASSEMBLY_ROWS = 64
# Fewest training rows for the symmetric form's Cholesky: below, its second sparse × dense pass
# over K costs more than LU's extra flops (whole fit + scores, q = 14, LU 2–7 % faster from 1,600
# to 4,000 rows; Cholesky 8 % faster at 4,800 on one BLAS thread, 5 % at 6,000 on two).
_CHOLESKY_MIN_ROWS = 4000
# Rows of Eq. 19 whose residual solver_report_ records.
_RESIDUAL_ROWS = 16
# Most refinement steps of the single-precision factorisation (LAPACK dsgesv's ITERMAX), and
# the relative error, estimated from the last two corrections, at which refinement stops.
_REFINE_STEPS = 30
_REFINE_RTOL = 1e-14


def _by_panels(n: int, fn) -> None:
    """``fn(rows)`` on the panels ``rows = [p R, (p + 1) R)`` of ``R = _ASSEMBLY_ROWS`` rows (so
    ``rows.start // R`` numbers them), in :func:`row_blocks`' threads (scipy's sparse products
    release the GIL)."""

    def run(panels: slice) -> None:
        for p in range(panels.start, panels.stop):
            fn(slice(p * _ASSEMBLY_ROWS, min(n, (p + 1) * _ASSEMBLY_ROWS)))

    row_blocks(-(-n // _ASSEMBLY_ROWS), run, n * _ASSEMBLY_ROWS)


def _eq19(
    K: np.ndarray, M: sp.csr_matrix, xi: np.ndarray, lam: float, dtype=np.float64, scale: float | None = None
) -> tuple[np.ndarray, float]:
    """Eq. 19's system A = M K Ξ + λI in C order and ``dtype`` (so ``A.T`` is Aᵀ in Fortran
    order, which LAPACK factorises in place), and ‖A‖∞ (its largest row sum, for the
    refinement's stopping rule). Column panel J of A is ξ_J (M K_{:,J}): it reads K_{:,J}, a
    contiguous piece of each row of K, and writes A_{:,J}, a contiguous piece of each row of A
    (a row panel would gather the rows of K of every neighbour: ten times the memory traffic).
    The products run in ``dtype``: for the float32 system of the mixed-precision solve that
    halves the memory traffic and doubles the SIMD width, with rounding differences (about 1e-6
    relative on tmc2007-500) far below the float32 LU's own backward error; the refinement
    against the float64 K gives the same solution. With ``scale``, K holds squared distances
    and each panel becomes the kernel exp(scale · K) (Eq. 5) as it is read, in place: one pass
    over K less. A float32 system is written into the buffer ``"system"`` (:func:`buffer`)."""
    n = K.shape[0]
    A = buffer("system", K.shape, dtype) if dtype == np.float32 else np.empty(K.shape, dtype=dtype)
    M, xi = M.astype(dtype), xi.astype(dtype)
    row_sums = np.zeros((-(-n // _ASSEMBLY_ROWS), n))  # one row per panel

    def assemble(cols: slice) -> None:
        panel = K[:, cols]
        if scale is not None:
            panel *= scale
            np.exp(panel, out=panel)
        part = M @ np.ascontiguousarray(panel, dtype=dtype)
        part *= xi[cols]
        np.abs(part).sum(axis=1, dtype=np.float64, out=row_sums[cols.start // _ASSEMBLY_ROWS])
        A[:, cols] = part

    _by_panels(n, assemble)
    A.flat[:: n + 1] += lam
    return A, float(row_sums.sum(axis=0).max()) + lam


def _kernel_times_m(K: np.ndarray, M: sp.csr_matrix) -> np.ndarray:
    """U = K M over K's buffer: row panel J of U is K_J M = (M K_Jᵀ)ᵀ and reads only K_J."""

    def multiply(rows: slice) -> None:
        K[rows] = (M @ K[rows].T).T

    _by_panels(K.shape[0], multiply)
    return K


def _symmetric_matrix(
    U: np.ndarray, M: sp.csr_matrix, nu: float, lam: float, dtype=np.float64
) -> tuple[np.ndarray, float]:
    """S = ν M K M + λ M, the symmetric form of Eq. 19 for Ξ = νI, from U = K M, in ``dtype``:
    row panel J of S = ν Uᵀ M + λM is ν (M U_{:,J})ᵀ + λ M_J, products in ``dtype``
    (as in :func:`_eq19`); and ‖S‖∞."""
    n = U.shape[0]
    S = np.empty(U.shape, dtype=dtype)
    M, row_sums = M.astype(dtype), np.empty(n)

    def assemble(rows: slice) -> None:
        part = (M @ np.ascontiguousarray(U[:, rows], dtype=dtype)).T
        part *= nu
        part += lam * M[rows].toarray()
        row_sums[rows] = np.abs(part).sum(axis=1, dtype=np.float64)
        S[rows] = part

    _by_panels(n, assemble)
    return S, float(row_sums.max())


def _refined_solve(build, factorise, solve, apply, target: np.ndarray) -> tuple[np.ndarray | None, int]:
    """Solve A x = target to double precision with a single-precision factorisation of A
    (LAPACK ``dsgesv``'s scheme: half the memory and about half the time of a float64 one).
    ``build(dtype)`` gives (A, ‖A‖∞); ``apply(x)`` is A x in float64 (from K, not from the
    float32 copy). x = A₃₂⁻¹ b, then corrections x += δ = A₃₂⁻¹ (b − A x). Each contracts the
    error by ρ ≈ cond(A) ε₃₂, estimated as ρ = ‖δ_k‖/‖δ_{k−1}‖ per column, so the error left
    after δ_k is about ρ ‖δ_k‖; refinement stops when that is below ``_REFINE_RTOL`` ‖x‖ in every
    column. Corrections that stop shrinking (ρ > ½: the float64 residual's own rounding, or
    cond(A) ≳ 1/ε₃₂) end it too: x is kept if its residual passed dsgesv's backward-error test
    ‖b − A x‖∞ ≤ √n ε₆₄ ‖A‖∞ ‖x‖∞ (that of a float64 LU), else (None, corrections) is returned,
    as when the float32 factorisation fails or after ``_REFINE_STEPS`` corrections."""
    A, norm = build(np.float32)
    tol = np.sqrt(A.shape[0]) * np.finfo(np.float64).eps * norm
    try:
        factor = factorise(A)  # overwrites A
    except np.linalg.LinAlgError:
        return None, 0
    del A
    x = solve(factor, target.astype(np.float32)).astype(np.float64)
    previous = None
    for step in range(1, _REFINE_STEPS + 1):
        residual = target - apply(x)
        delta = solve(factor, residual.astype(np.float32))
        x += delta
        scale = np.abs(x).max(axis=0)
        size = np.abs(delta).max(axis=0)
        if previous is not None:
            rho = size / np.maximum(previous, np.finfo(np.float64).tiny)
            if (rho * size <= _REFINE_RTOL * scale).all():
                return x, step
            if (rho > 0.5).any():  # stagnates
                backward = np.abs(residual).max(axis=0) <= tol * scale
                return (x if backward.all() else None), step
        previous = size
    return None, _REFINE_STEPS


def _kmeans_landmarks(Xs: np.ndarray, m: int, random_state) -> np.ndarray:
    """m Nyström landmarks: k-means++ seeds (D² sampling with one candidate per centre, the work
    of one Lloyd iteration) moved by ``_KMEANS_ITER`` Lloyd iterations. On tmc2007-500
    (8,000 rows, 1,000 centres) scikit-learn's default seeding, which tries 2 + ln m candidates
    per centre, cost 1.5 s more for the same average precision, and 10 or 20 iterations gave the
    same as 5; seeds drawn uniformly were as cheap but can leave a cluster without a centre.
    The seeding's m small products (one row against all) run on one BLAS thread: two threads
    synchronise at every one of them (16,000 rows, 1,000 centres: 0.6 s on one thread, up to 20 s
    on two of a busy 2-core machine)."""
    with one_blas_thread():
        seeds, _ = kmeans_plusplus(Xs, m, n_local_trials=1, random_state=random_state)
    return KMeans(m, init=seeds, n_init=1, max_iter=_KMEANS_ITER).fit(Xs).cluster_centers_


def _every_component_labelled(W: sp.csr_matrix, labelled: np.ndarray) -> bool:
    """Whether M = Ψ + (lγ_I/n²) L is positive definite: every connected component of the graph
    (edges of non-zero weight) holds a labelled point."""
    W = W.copy()
    W.eliminate_zeros()
    _, component = connected_components(W, directed=False)
    return bool(np.isin(component, component[labelled]).all())


class _ManifoldRegularization(ScoreThresholdMixin, MultiLabelClassifierMixin, BaseEstimator):
    """Shared fit/predict of Eq. 19–20; subclasses give the reliance weights (Eq. 16)."""

    _rules = {
        "gamma_A": (positive, "a positive number (γ_A of Eq. 11)"),
        "gamma_I": (nonneg, "a non-negative number (γ_I of Eq. 11)"),
        "sigma": (lambda v: v is None or positive(v), "None (median heuristic) or > 0"),
        "sigma_scale": (positive, "a positive number"),
        "graph": (lambda v: v in KINDS, f"one of {KINDS}"),
        "weights": (lambda v: v in WEIGHTS, f"one of {WEIGHTS} (Eq. 10 as printed, or U∘B)"),
        "solver": (lambda v: v in SOLVERS, f"one of {SOLVERS} (LU of Eq. 19, or its Nyström approximation)"),
        "n_landmarks": (positive_int, "a positive integer (Nyström landmarks)"),
        "landmarks": (
            lambda v: v in LANDMARKS,
            f"one of {LANDMARKS} (k-means centres or random training points)",
        ),
        "precision": (lambda v: v in PRECISIONS, f"one of {PRECISIONS} (factorisation of the exact solver)"),
        "knn_search": (lambda v: v in SEARCHES, f"one of {SEARCHES} (the kNN graph's neighbour search)"),
    }

    def __init__(
        self,
        gamma_A=1e-2,
        gamma_I=1.0,
        sigma=None,
        sigma_scale=1.0,
        graph="knn",
        k=10,
        eps=None,
        b=None,
        weights="distance",
        random_state=0,
        memory=None,
        solver="exact",
        n_landmarks=1000,
        precision="mixed",
        landmarks="kmeans",
        knn_search="exact",
    ):
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
        self.solver = solver
        self.n_landmarks = n_landmarks
        self.precision = precision
        self.landmarks = landmarks
        self.knn_search = knn_search

    def _reliance_weights(self, labelled: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def fit(self, X, Y):
        """Fit on all training points; rows of ``Y`` equal to −1 are unlabelled."""
        check_params(self, self._rules)
        X, Y, labelled = self._check_fit_data(X, Y)
        self.mean_, self.scale_ = standardisation(X)
        Xs = (X - self.mean_) / self.scale_
        l = int(labelled.sum())
        xi = self._reliance_weights(labelled)  # Eq. 16
        target = np.where(labelled[:, None], 2.0 * Y - 1.0, 0.0)  # ±1 / 0 rows
        lam = l * self.gamma_A
        fit = self._fit_exact if self.solver == "exact" else self._fit_nystrom
        theta, cols, kernel_theta, rows, M = fit(Xs, labelled, xi, target, lam)
        # Eq. 19's residual on sampled rows: (M K Ξ Θ)_J = M_J (K Ξ Θ)_{cols of M_J}.
        residual = M[rows][:, cols] @ kernel_theta + lam * theta[rows] - target[rows]
        self.solver_report_["residual"] = float(np.abs(residual).max())
        self.n_labelled_ = l
        return self

    def _graph(self, Xs: np.ndarray, sqdist: np.ndarray | None) -> sp.csr_matrix:
        """σ (Eq. 5, median heuristic × sigma_scale) and the weight matrix W (Eq. 6–10), with
        the graph's diagnostics in ``graph_report_`` (the recall of an approximate search).
        Without ``sqdist`` (Nyström) an exact kNN graph comes from scikit-learn's neighbour
        search (trees where they help, no n×n matrix; exact ties may go to other indices than
        the exact path's)."""
        if self.sigma is None:
            base_sigma = shared_median_sigma(self.memory, Xs, self.random_state, sqdist)
        else:
            base_sigma = self.sigma
        self.sigma_ = float(base_sigma) * self.sigma_scale
        self.graph_report_ = {}
        if sqdist is None and self.graph == "knn" and self.knn_search == "exact":
            k = check_k(self.k, Xs.shape[0])
            nearest = (
                NearestNeighbors(n_neighbors=k, n_jobs=blas_threads())
                .fit(Xs)
                .kneighbors(return_distance=False)
            )
            pairs = unique_pairs(Xs.shape[0], np.repeat(np.arange(Xs.shape[0]), k), nearest.ravel())
            self.graph_ = graph_from_pairs(Xs, self.sigma_, *pairs).weights(self.weights)
            return self.graph_
        self.graph_, self.graph_report_ = cached_graph(
            self.memory,
            Xs,
            kind=self.graph,
            sigma=self.sigma_,
            weights=self.weights,
            k=self.k,
            eps=self.eps,
            b=self.b,
            random_state=self.random_state,
            sqdist=sqdist,
            search=self.knn_search,
        )
        return self.graph_

    def _shared_kernel_and_graph(self, Xs: np.ndarray) -> tuple[np.ndarray, sp.csr_matrix]:
        """K (Eq. 5) and W (Eq. 6–10) when ``memory`` is a :class:`~mlgraph.graphs.cache.SharedWork`
        (nested selection: many fits on the same rows): the squared distances and each σ's
        kernel are computed once and shared, and never written (the kNN selection restores what
        it marks)."""
        inputs, module = {"X": Xs}, "mlgraph.graphs"
        sqdist = shared(
            self.memory,
            "sqdist",
            lambda: {"D": squared_distances(Xs)},
            inputs=inputs,
            params={},
            module=module,
        )["D"]
        W = self._graph(Xs, sqdist)
        scale = -0.5 / self.sigma_**2
        K = shared(
            self.memory,
            "kernel",
            lambda: {"K": exp_scaled(sqdist.copy(), scale)},
            inputs=inputs,
            params={"scale": scale},
            module=module,
        )["K"]
        return K, W

    def _system_rows(self, W: sp.csr_matrix, labelled: np.ndarray) -> tuple[sp.csr_matrix, np.ndarray]:
        """M = Ψ + (l γ_I / n²) L (sparse) and the rows of Eq. 19 whose residual is recorded."""
        n, l = labelled.shape[0], int(labelled.sum())
        M = ((l * self.gamma_I / n**2) * laplacian(W) + sp.diags(labelled.astype(np.float64))).tocsr()
        rng = np.random.default_rng(self.random_state)
        rows = np.sort(rng.choice(n, min(n, _RESIDUAL_ROWS), replace=False))
        return M, rows

    def _fit_exact(self, Xs, labelled, xi, target, lam):
        """Eq. 19 by one factorisation of the n×n system (see the module notes): Cholesky of
        the symmetric form from ``_CHOLESKY_MIN_ROWS`` rows when Ξ = νI and M is positive
        definite, LU otherwise; in single precision refined to double (:func:`_refined_solve`),
        else in double precision."""
        n = Xs.shape[0]
        if isinstance(self.memory, SharedWork):  # a kernel other fits share, read only
            K, W = self._shared_kernel_and_graph(Xs)
            scale = None
        else:  # one n×n buffer: the squared distances serve σ and the graph, then become K (Eq. 5)
            K = squared_distances(Xs, out=buffer("kernel", (n, n), np.float64))
            W = self._graph(Xs, K)
            scale = -0.5 / self.sigma_**2
        M, rows = self._system_rows(W, labelled)
        cols = np.unique(M[rows].indices)
        symmetric = (
            n >= _CHOLESKY_MIN_ROWS
            and self.gamma_I > 0
            and np.ptp(xi) == 0
            and _every_component_labelled(self.graph_, labelled)
        )
        if symmetric:  # (ν M K M + λ M) β = Y, Θ = M β
            K = K.copy() if scale is None else exp_scaled(K, scale)
            kernel_rows = K[cols]  # for the residual
            base = _kernel_times_m(K, M)  # K M over K's buffer
            del K

            def build(dtype):
                return _symmetric_matrix(base, M, xi[0], lam, dtype)

            def apply(beta):
                return M @ (xi[0] * matmul(base, beta) + lam * beta)

            def factorise(A):
                return scipy.linalg.cho_factor(A.T, lower=True, overwrite_a=True, check_finite=False)

            def solve(factor, b):
                return scipy.linalg.cho_solve(factor, b, check_finite=False)
        else:
            base, kernel_rows = K, (K[cols] if scale is None else None)
            del K

            def build(dtype):  # the first assembly turns the distances into K as it reads them
                nonlocal kernel_rows
                system = _eq19(base, M, xi, lam, dtype, scale if kernel_rows is None else None)
                if kernel_rows is None:
                    kernel_rows = base[cols]  # for the residual
                return system

            def apply(theta):  # K Ξθ as ((Ξθ)ᵀ K)ᵀ, K being symmetric: 30 % faster in BLAS's gemm
                return M @ matmul((xi[:, None] * theta).T, base).T + lam * theta

            # A in C order is Aᵀ in Fortran order: LAPACK factorises Aᵀ in place, and its
            # transposed solves (getrs 'T', also the faster ones) solve A x = b.
            def factorise(A):
                return scipy.linalg.lu_factor(A.T, overwrite_a=True, check_finite=False)

            def solve(factor, b):
                return scipy.linalg.lu_solve(factor, b, trans=1, check_finite=False)

        x, steps = (
            _refined_solve(build, factorise, solve, apply, target) if self.precision == "mixed" else (None, 0)
        )
        precision = "mixed" if x is not None else "double"
        if x is None:
            A = build(np.float64)[0]
            del base  # one n×n matrix left
            x = solve(factorise(A), target)
        theta = M @ x if symmetric else x
        self.X_fit_ = Xs
        self.dual_coef_ = xi[:, None] * theta  # Ξ Θ*
        kernel_theta = matmul(kernel_rows, self.dual_coef_)
        self.solver_report_ = {
            "solver": "exact",
            "factorisation": "cholesky" if symmetric else "lu",
            "precision": precision,
            "refinement_steps": steps,
            "n_landmarks": len(Xs),
            "rank": len(Xs),
            "kernel_trace_error": 0.0,
        }
        return theta, cols, kernel_theta, rows, M

    def _fit_nystrom(self, Xs, labelled, xi, target, lam):
        """Eq. 19–20 with the Nyström kernel K̃ = Φ Φᵀ, by the Woodbury identity (module notes).
        K_nm is stored in float64, or in float32 beyond ``_NYSTROM_FLOAT64_ELEMENTS`` entries,
        and read by row blocks; every product over it is accumulated in float64."""
        n = Xs.shape[0]
        M, rows = self._system_rows(self._graph(Xs, None), labelled)
        rng = np.random.default_rng(self.random_state)
        if self.landmarks == "random" or self.n_landmarks >= n:  # every point when m ≥ n
            P = Xs[np.sort(rng.choice(n, min(n, self.n_landmarks), replace=False))]
        else:
            P = _kmeans_landmarks(Xs, self.n_landmarks, self.random_state)
        m = len(P)
        with one_blas_thread():  # m = 1,000: two threads gain little and stall on a busy machine
            evals, evecs = scipy.linalg.eigh(gaussian_kernel(P, sigma=self.sigma_))
        keep = evals > 1e-10 * evals[-1]
        T = evecs[:, keep] / np.sqrt(evals[keep])  # Φ = K_nm T
        dtype = np.float64 if n * m <= _NYSTROM_FLOAT64_ELEMENTS else np.float32
        C = np.empty((n, m), dtype)  # K_nm
        step = max(1, _KERNEL_BLOCK // m)
        blocks = [slice(start, start + step) for start in range(0, n, step)]
        for block in blocks:
            C[block] = gaussian_kernel(Xs[block], P, sigma=self.sigma_)
        M_c = M.astype(dtype)
        G = np.zeros((m, m))  # K_mn Ξ M K_nm, by row blocks
        R = np.zeros((m, target.shape[1]))  # K_mn Ξ Y
        MC = np.empty((step, m), dtype)  # (M K_nm) of a block, its rows in threads
        for block in blocks:
            rows_of = M_c[block]
            MC_block = MC[: rows_of.shape[0]]

            def product(part: slice, rows_of=rows_of, MC_block=MC_block, C=C) -> None:
                MC_block[part] = rows_of[part] @ C

            row_blocks(rows_of.shape[0], product, m)
            C_block = C[block].astype(np.float64, copy=False)
            G += C_block.T @ (xi[block, None] * MC_block)
            R += C_block.T @ (xi[block, None] * target[block])
        S = T.T @ G @ T  # Φᵀ Ξ M Φ
        S.flat[:: S.shape[0] + 1] += lam  # + λ I
        Z = scipy.linalg.solve(S, T.T @ R, check_finite=False)  # Φᵀ Ξ Θ
        self.X_fit_ = P
        self.dual_coef_ = T @ Z  # F̃ = K_em T Z (Eq. 20)
        fitted = np.empty_like(target)  # K̃ Ξ Θ = K_nm T Z
        for block in blocks:
            fitted[block] = C[block].astype(np.float64, copy=False) @ self.dual_coef_
        theta = (target - M @ fitted) / lam  # Θ over all n points
        sample = rng.choice(n, min(n, 1000), replace=False)  # tr(K̃)/tr(K), K_ii = 1
        features = C[sample].astype(np.float64) @ T
        trace = np.einsum("ij,ij->", features, features) / len(sample)
        del C
        cols = np.unique(M[rows].indices)
        kernel_theta = np.zeros((len(cols), target.shape[1]))  # exact K Ξ Θ, for the residual
        weighted = xi[:, None] * theta
        for block in blocks:
            kernel_theta += gaussian_kernel(Xs[cols], Xs[block], sigma=self.sigma_) @ weighted[block]
        self.solver_report_ = {
            "solver": "nystrom",
            "n_landmarks": m,
            "rank": int(keep.sum()),
            "kernel_trace_error": float(1.0 - trace),
        }
        return theta, cols, kernel_theta, rows, M

    def decision_function(self, X) -> np.ndarray:
        """Real-valued label scores F̃ = K_e Ξ Θ* (Eq. 20), with the test kernel built in blocks
        of rows; for ``solver="nystrom"``, F̃ = K_em T S⁻¹ Φᵀ Ξ Y (the landmarks only)."""
        check_is_fitted(self, "dual_coef_")
        Xs = (self._check_predict_data(X) - self.mean_) / self.scale_
        scores = np.empty((Xs.shape[0], self.dual_coef_.shape[1]))
        step = max(1, _SCORE_BLOCK // len(self.X_fit_))
        for start in range(0, Xs.shape[0], step):
            block = gaussian_kernel(Xs[start : start + step], self.X_fit_, sigma=self.sigma_)
            scores[start : start + step] = matmul(block, self.dual_coef_)
        return scores


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

    def __init__(
        self,
        gamma_A=1e-2,
        gamma_I=1.0,
        sigma=None,
        sigma_scale=1.0,
        graph="knn",
        k=10,
        eps=None,
        b=None,
        weights="distance",
        random_state=0,
        memory=None,
        solver="exact",
        n_landmarks=1000,
        precision="mixed",
        landmarks="kmeans",
        knn_search="exact",
        nu1=1.0,
        nu2=0.1,
    ):
        super().__init__(
            gamma_A=gamma_A,
            gamma_I=gamma_I,
            sigma=sigma,
            sigma_scale=sigma_scale,
            graph=graph,
            k=k,
            eps=eps,
            b=b,
            weights=weights,
            random_state=random_state,
            memory=memory,
            solver=solver,
            n_landmarks=n_landmarks,
            precision=precision,
            landmarks=landmarks,
            knn_search=knn_search,
        )
        self.nu1 = nu1
        self.nu2 = nu2

    def _reliance_weights(self, labelled: np.ndarray) -> np.ndarray:
        return np.where(labelled, float(self.nu1), float(self.nu2))
