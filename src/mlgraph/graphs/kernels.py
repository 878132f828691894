"""Gaussian kernel and kernel-induced distance (paper 000, Eq. 5-6).

The graph is built from squared Euclidean distances: the kernel of Eq. 5,
``U_ij = exp(-||x_i - x_j||^2 / (2 sigma^2))``, and the kernel distance of Eq. 6,
``H_ij = sqrt(U_ii + U_jj - 2 U_ij) = sqrt(2 - 2 U_ij)`` (``U_ii = 1``).  ``H`` is a
strictly increasing function of the Euclidean distance, so nearest neighbours in ``H``
are nearest neighbours in Euclidean distance; the sparsifiers rely on this.
"""

from __future__ import annotations

import contextlib
import functools
import numbers
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import scipy.linalg.blas
from scipy.spatial.distance import cdist, pdist
from threadpoolctl import ThreadpoolController

__all__ = [
    "blas_threads",
    "buffer",
    "check_sigma",
    "gaussian_kernel",
    "kept_buffers",
    "kernel_distance",
    "matmul",
    "median_sigma",
    "row_blocks",
    "squared_distances",
]

# Rows per block of a self-Gram product. One tall A A^T (BLAS syrk) of 19,064 x 500 rows crashes
# numpy's bundled OpenBLAS 0.3.31 with 2 threads (from about 18,500 rows); blocks stay far below.
_GRAM_ROWS = 2048
# Below this many elements a pass is not worth splitting over threads.
_PARALLEL_ELEMENTS = 1 << 20
# Elements of a row panel that the passes after a Gram product finish while it is in cache.
_PANEL_ELEMENTS = 1 << 15


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


def thread_pools() -> ThreadpoolController:
    """This process's BLAS and OpenMP thread pools, found again only once more modules are
    loaded (which is how new libraries come in): ``threadpool_limits`` scans every shared
    library at each call, about 10 ms."""
    return _thread_pools(len(sys.modules))


@functools.lru_cache(maxsize=1)
def _thread_pools(n_modules: int) -> ThreadpoolController:
    return ThreadpoolController()


def blas_threads() -> int:
    """Threads the BLAS may use in this process (the runner caps them per trial); the
    elementwise and sparse passes over n x n matrices use as many."""
    counts = [lib.num_threads for lib in thread_pools().select(user_api="blas").lib_controllers]
    return max(1, min(counts, default=1))


def one_blas_thread():
    """A context in which the BLAS libraries run on one thread: for a small product in one
    library between large ones in the other, whose idle threads still spin (:func:`matmul`);
    more threads would only contend with them."""
    return thread_pools().limit(limits=1, user_api="blas")


def on_one_blas_thread(method: Callable) -> Callable:
    """Decorator: ``method`` runs under :func:`one_blas_thread`. For estimators made of many
    small products that alternate between numpy's and scipy's BLAS, which two threads slowed
    down instead of speeding up (2 cores, one trial: SSWL 2.6× and ML-RBF 1.6× on yeast, DSML
    2.1× on frequency_gender)."""

    @functools.wraps(method)
    def wrapper(*args, **kwargs):
        with one_blas_thread():
            return method(*args, **kwargs)

    return wrapper


_kept: dict | None = None  # name -> the buffer kept for the next fit, while buffers are kept


@contextlib.contextmanager
def kept_buffers():
    """Within the block, the large buffers of :func:`buffer` are kept from one call to the
    next instead of freed: a job's trials fit the same n one after another, and writing into a
    freshly allocated n×n buffer costs 1.3–1.7× more than into one already touched (the first
    write of every page faults). For one thread at a time; the buffers are freed at the end."""
    global _kept
    outer = _kept
    if outer is None:
        _kept = {}
    try:
        yield
    finally:
        if outer is None:
            _kept = None


def buffer(name: str, shape: tuple[int, ...], dtype) -> np.ndarray:
    """An uninitialised array of ``shape`` and ``dtype``: within :func:`kept_buffers`, the
    one kept under ``name`` when it has that shape and dtype (else a new one, kept in its
    place); outside, a new one. The caller must not keep it beyond its own call."""
    if _kept is None:
        return np.empty(shape, dtype)
    found = _kept.get(name)
    if found is None or found.shape != tuple(shape) or found.dtype != np.dtype(dtype):
        _kept.pop(name, None)  # free the old one first
        found = _kept[name] = np.empty(shape, dtype)
    return found


def matmul(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """``A @ B`` (2-D, float32 or float64) in C order, by the BLAS behind ``scipy.linalg``.

    numpy and scipy wheels each bundle an OpenBLAS with its own thread pool, whose idle workers
    spin for a while after each call: a call into one library right after a call into the other
    runs on a core shared with that spinning thread (on 2 cores, a 22-column solve with the
    float32 LU of n = 4,000 took 27–34 ms after a numpy product against 15 ms after a scipy one).
    The exact solvers factorise with scipy's LAPACK, so their dense products after the training
    distances (:func:`_self_sqdist`, the first) go through this.
    C = A B is computed as Cᵀ = Bᵀ Aᵀ in Fortran order, which reads C- and Fortran-ordered
    operands without copies."""

    def transposed(X: np.ndarray) -> tuple[np.ndarray, int]:  # (Y, t): op_t(Y) = Xᵀ
        return (X.T, 0) if X.flags.c_contiguous else (X, 1)

    (b, trans_b), (a, trans_a) = transposed(B), transposed(A)
    gemm = scipy.linalg.blas.get_blas_funcs("gemm", (A, B))
    return gemm(1.0, b, a, trans_a=trans_b, trans_b=trans_a).T


def row_blocks(n: int, fn: Callable[[slice], object], cols: int = 1 << 20) -> None:
    """Call ``fn(rows)`` on consecutive row slices covering ``range(n)`` of an n x ``cols``
    array, in :func:`blas_threads` threads: numpy ufuncs and scipy's sparse products release
    the GIL, so passes over large matrices run in parallel (small ones run in one call).
    ``fn`` must write disjoint rows."""
    threads = blas_threads() if n * cols >= _PARALLEL_ELEMENTS else 1
    step = -(-n // (4 * threads)) if threads > 1 else max(n, 1)
    blocks = [slice(start, min(n, start + step)) for start in range(0, n, step)]
    if threads == 1:
        for rows in blocks:
            fn(rows)
        return
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(fn, blocks))


def squared_distances(
    A: np.ndarray, B: np.ndarray | None = None, out: np.ndarray | None = None
) -> np.ndarray:
    """Squared Euclidean distances ``||a_i - b_j||^2`` between the rows of A and B.

    Vectorised as ``||a||^2 + ||b||^2 - 2 a b^T`` and clipped at 0 (cancellation can
    make it slightly negative); the norms are added in row panels, so the only n x m array
    is the result.  With ``B is None`` the result is the exactly symmetric self-distance
    matrix of A with an exact zero diagonal, built by :func:`_self_sqdist` (into ``out``, an
    n x n float64 C-ordered buffer, if given).
    """
    A = as_float_matrix(A, "A")
    return _self_sqdist(A, out) if B is None else _cross_sqdist(A, B)


def _cross_sqdist(A: np.ndarray, B: np.ndarray, scale: float | None = None) -> np.ndarray:
    """:func:`squared_distances` of A and B, or with ``scale`` ``exp(scale * distances)``."""
    B = as_float_matrix(B, "B")
    if A.shape[1] != B.shape[1]:
        raise ValueError(f"A and B must have the same number of columns, got {A.shape[1]} and {B.shape[1]}")
    G = matmul(A, B.T)
    _finish_gram(G, np.einsum("ij,ij->i", A, A), np.einsum("ij,ij->i", B, B), scale)
    return G


def _finish_gram(G: np.ndarray, sq_a: np.ndarray, sq_b: np.ndarray, scale: float | None = None) -> None:
    """``G_ij = max(sq_a_i + sq_b_j - 2 G_ij, 0)`` in place, then ``exp(scale * G_ij)`` if
    ``scale`` is given, by row panels small enough to stay in cache between these passes (one
    trip through memory instead of five), over :func:`row_blocks`' threads."""
    step = max(1, _PANEL_ELEMENTS // max(1, G.shape[1]))

    def finish(rows: slice) -> None:
        for start in range(rows.start, rows.stop, step):
            part = slice(start, min(rows.stop, start + step))
            panel = G[part]
            panel *= -2.0
            panel += sq_a[part, None] + sq_b[None, :]
            np.maximum(panel, 0.0, out=panel)
            if scale is not None:
                panel *= scale
                np.exp(panel, out=panel)

    row_blocks(G.shape[0], finish, G.shape[1])


def _self_sqdist(A: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """Self-distances of the rows of A, by row strips of the upper triangle.

    Strip ``s:e`` is the diagonal tile ``A_s A_s^T`` (BLAS syrk, bitwise symmetric) and the
    tile row right of it (gemm); the norms ``||a_i||^2 + ||a_j||^2`` (a symmetric sum) are
    added and the strip is mirrored below the diagonal, so the result is exactly symmetric
    and no tall syrk (see ``_GRAM_ROWS``) or n x n temporary is ever formed. The products are
    numpy's, written straight into G: scipy's BLAS wrappers (:func:`matmul`) cannot write into
    a sub-block, and square tiles through a buffer measured 1.5x slower at n = 19,064.
    """
    n = A.shape[0]
    sq = np.einsum("ij,ij->i", A, A)
    G = np.empty((n, n)) if out is None else out
    for start in range(0, n, _GRAM_ROWS):
        stop = min(n, start + _GRAM_ROWS)
        tile = A[start:stop]
        np.matmul(tile, tile.T, out=G[start:stop, start:stop])
        np.matmul(tile, A[stop:].T, out=G[start:stop, stop:])
        _finish_gram(G[start:stop, start:], sq[start:stop], sq[start:])

        def mirror(rows: slice, start=start, stop=stop) -> None:
            rows = slice(stop + rows.start, stop + rows.stop)
            G[rows, start:stop] = G[start:stop, rows].T

        row_blocks(n - stop, mirror, stop - start)
    np.fill_diagonal(G, 0.0)
    return G


def median_sigma(
    X: np.ndarray, max_samples: int = 1000, random_state: int | None = 0, sqdist: np.ndarray | None = None
) -> float:
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
        # np.median of the two middle values is np.median of them all (it averages those two)
        sigma = float(np.median(middle_values(pdist(X[rows])))) if X.shape[1] < 64 else _median_pdist(X[rows])
    else:
        # the median of the square roots is the square root of the middle squared values (sqrt is
        # monotone), averaged as np.median averages: the same number, one sqrt per middle value
        squared = np.asarray(sqdist).take(rows, axis=0).take(rows, axis=1)[_upper_mask(len(rows))]
        sigma = float(np.median(np.sqrt(middle_values(squared))))
    if sigma <= 0.0:
        raise ValueError("median pairwise distance is 0 (mostly duplicate rows); pass sigma explicitly")
    return sigma


def middle_values(values: np.ndarray) -> np.ndarray:
    """The two middle order statistics of a 1-d array (one value twice when its length is odd):
    ``np.partition(values, [(N - 1) // 2, N // 2])`` at those places, exactly, about 3× faster
    at N = 500,000. A strided sample of about 4,096 values brackets them (ranks ±3√4096 around
    the sample's middle, six standard deviations of its middle's rank); one pass counts the
    values below the bracket and only the values inside it are partitioned. Should the bracket
    miss (a sample unlike the whole), the whole array is partitioned."""
    n = values.shape[0]
    middle = [(n - 1) // 2, n // 2]
    sample = values[:: max(1, n // 4096)]
    half, spread = sample.shape[0] // 2, 3 * int(np.sqrt(sample.shape[0])) + 1
    if n > 16 * sample.shape[0]:
        edges = [max(0, half - spread), min(sample.shape[0] - 1, half + spread)]
        lo, hi = np.partition(sample, edges)[edges]
        below = int(np.count_nonzero(values < lo))
        inside = values[(values >= lo) & (values <= hi)]
        if below <= middle[0] and below + inside.shape[0] > middle[1]:
            places = [middle[0] - below, middle[1] - below]
            return np.partition(inside, places)[places]
    return np.partition(values, middle)[middle]


@functools.lru_cache(maxsize=4)
def _upper_mask(m: int) -> np.ndarray:
    """The m × m mask of the pairs i < j (``np.triu(..., 1)``), read-only, kept for the next call
    of the same size: it selects them in the order of :func:`_upper_pairs`, five times faster."""
    mask = np.triu(np.ones((m, m), dtype=bool), 1)
    mask.flags.writeable = False
    return mask


@functools.lru_cache(maxsize=4)
def _upper_pairs(m: int) -> tuple[np.ndarray, np.ndarray]:
    """``np.triu_indices(m, 1)``, read-only, kept for the next call of the same size."""
    pairs = np.triu_indices(m, 1)
    for index in pairs:
        index.flags.writeable = False
    return pairs


def _median_pdist(X: np.ndarray) -> float:
    """``np.median(scipy.spatial.distance.pdist(X))``, bit for bit, without computing every
    distance exactly: squared distances by the Gram product (errors far below ``tol``) locate
    the middle order statistics; every pair whose Gram value lies within ``2 tol`` of them is
    computed as ``pdist`` computes it (``cdist`` on the pair: the same arithmetic) and the
    middle ones are taken among those. The pairs outside that band are on the same side of the
    median in both, since order statistics move at most ``tol`` under errors of at most
    ``tol``. For 1,000 rows, one thread: 10.1 against 13.5 ms at 64 features, 11.0 against
    16.9 at yeast's 103, 12.7 against 43.9 at scene's 294; ``pdist`` is faster below about 48
    features, and :func:`median_sigma` calls this from 64."""
    sq = np.einsum("ij,ij->i", X, X)
    upper = _upper_pairs(X.shape[0])
    gram = (sq[:, None] + sq[None, :] - 2.0 * (X @ X.T))[upper]
    count = gram.shape[0]
    middle = [(count - 1) // 2, count // 2]
    low, high = middle_values(gram)
    tol = 1e-10 * (4.0 * sq.max() + np.finfo(np.float64).tiny)
    below = int(np.count_nonzero(gram < low - 2 * tol))
    band = np.flatnonzero((gram >= low - 2 * tol) & (gram <= high + 2 * tol))
    first, second = upper[0][band], upper[1][band]
    exact = np.sort([cdist(X[i : i + 1], X[j : j + 1])[0, 0] for i, j in zip(first, second, strict=True)])
    return float(np.median(exact[[middle[0] - below, middle[1] - below]]))


def gaussian_kernel(A: np.ndarray, B: np.ndarray | None = None, sigma: float | None = None) -> np.ndarray:
    """Gaussian kernel matrix of Eq. 5: ``U_ij = exp(-||a_i - b_j||^2 / (2 sigma^2))``.

    ``sigma`` is required (it has no default here because the caller must decide which
    sample defines it; see :func:`median_sigma`).  With ``B is None`` the kernel of A with
    itself is returned (exact unit diagonal).
    """
    if sigma is None:
        raise ValueError("sigma must be given (e.g. sigma=median_sigma(X_train))")
    scale = -1.0 / (2.0 * check_sigma(sigma) ** 2)
    A = as_float_matrix(A, "A")
    return exp_scaled(_self_sqdist(A), scale) if B is None else _cross_sqdist(A, B, scale)


def exp_scaled(D: np.ndarray, scale: float) -> np.ndarray:
    """``D = exp(scale * D)`` in place, in row blocks over :func:`row_blocks`' threads."""

    def block(rows: slice) -> None:
        part = D[rows]
        part *= scale
        np.exp(part, out=part)

    row_blocks(D.shape[0], block, D.shape[1])
    return D


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
