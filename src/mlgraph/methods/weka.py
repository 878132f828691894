r"""Weka's ``EuclideanDistance`` and ``LinearNNSearch``: the nearest neighbours of MULAN's kNN
methods (``mulan.classifier.lazy.MLkNN``, and Weka's ``IBk`` inside MULAN's BR and classifier
chains), for results comparable with MULAN's (``profile=mulan``).

The distance (``weka.core.NormalizableDistance`` with ``EuclideanDistance.updateDistance``)
---------------------------------------------------------------------------------------
The squared distance of two instances a, b is a sum over the feature attributes, in attribute
order, of ``diff²``: ::

    numeric attribute j   diff = norm(a_j) − norm(b_j),   norm(x) = (x − min_j) / (max_j − min_j)
                          (norm(x) = 0 when max_j = min_j)
    nominal attribute     diff = 0 if a and b have the same value, else 1
    missing values        nominal: diff = 1 (one or both missing)
                          numeric, both missing: diff = 1
                          numeric, one missing: v = norm(the other value), diff = 1 − v if
                          v < 0.5, else v

``min_j`` and ``max_j`` are taken over the training instances' present values (Weka's ranges
of the instances the search holds); a test value outside the range gives a norm outside
[0, 1]. The neighbour search compares these sums (Weka's distance is their square root).

Nominal attributes reach an estimator as columns of a matrix: a two-valued attribute as one
column of codes, an attribute with more values as one-hot columns (the encoding of
:func:`mlgraph.data.load_mulan`). ``nominal_groups`` lists, for each nominal attribute, its
columns (a one-hot group, or one column of codes); a one-hot group with a missing value is NaN
in every column, and a row of zeros is a value of its own. Every other column is a numeric
attribute.

The search (``weka.core.neighboursearch.LinearNNSearch.kNearestNeighbours``)
---------------------------------------------------------------------------
The training instances are scanned in order (a query that is itself a training instance is
skipped); the first k go into a max-heap of distances, and each later instance strictly
nearer than the heap's top replaces it (``MyHeap.putBySubstitute``). Instances at the same
distance as the top are kept aside, so the search returns the heap's k instances and then every
further instance tied with the k-th distance. MULAN's ML-kNN counts the first k returned (the
heap: ``ties="heap"``, which :func:`_heap_survivors` replays exactly, heap layout included);
``IBk`` votes with all of them (``ties="all"``: every instance at most as far as the k-th).

Exactness and speed
-------------------
Distances are computed with Gram products (nominal attributes as exact integer counts of
equal values); a query whose k-th and (k+1)-th distances are further apart than the rounding
bound of that formula has Weka's k nearest whatever the order of summation. The other queries
(ties, duplicates, near-ties) are recomputed by :meth:`WekaEuclidean.exact_sq_distances`,
which adds ``diff * diff`` attribute by attribute in Weka's order with Weka's floating-point
operations, so that ties are exactly Weka's. Data with missing values take that exact path for
every query (slower, same rules).

Not reproduced: an attribute with no present training value (Weka's ranges are then infinite
and every distance NaN; here the attribute counts as constant, norm 0); the ranges of a sparse
Weka instance skip the zeros after its last stored value (``updateRanges``), here every zero
counts.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp

__all__ = ["WekaEuclidean", "weka_neighbours"]

# Query rows per block (a block holds a few dense rows × training rows arrays).
_BLOCK_ELEMENTS = 1 << 21
_EPS = np.finfo(np.float64).eps


def _check_groups(groups, d: int) -> list[np.ndarray]:
    """Validated nominal column groups: non-empty, distinct, in range, disjoint."""
    out, seen = [], set()
    for g, group in enumerate(groups or ()):
        cols = np.asarray(group, dtype=np.int64).ravel()
        if cols.size == 0 or len(set(cols.tolist())) != cols.size:
            raise ValueError(f"nominal_groups[{g}] must list distinct column indices, got {list(group)!r}")
        if cols.min() < 0 or cols.max() >= d:
            raise ValueError(f"nominal_groups[{g}] has a column outside 0..{d - 1} (X has {d} columns)")
        if seen & set(cols.tolist()):
            raise ValueError(f"nominal_groups[{g}] shares a column with an earlier group")
        seen |= set(cols.tolist())
        out.append(np.sort(cols))
    return out


class WekaEuclidean:
    """Weka's EuclideanDistance on the columns of a feature matrix (see the module docstring).

    ``fit(X)`` takes the ranges of the numeric columns from the training rows ``X`` (NaN =
    missing). :meth:`sq_distances` gives the squared distances by Gram products with a bound on
    their rounding error, :meth:`exact_sq_distances` the sums exactly as Weka computes them.
    Both take optional per-query ranges ``(lo, width)`` of shape (n_queries, n_numeric) (IBk
    widens the ranges with every test instance it classifies).
    """

    def __init__(self, nominal_groups: Sequence[Sequence[int]] = ()):
        self.nominal_groups = nominal_groups

    def fit(self, X: np.ndarray) -> WekaEuclidean:
        d = X.shape[1]
        self.groups_ = _check_groups(self.nominal_groups, d)
        in_group = np.zeros(d, dtype=bool)
        for cols in self.groups_:
            in_group[cols] = True
        self.numeric_ = np.flatnonzero(~in_group)
        # Weka's attribute order: numeric columns and nominal groups by their first column.
        firsts = [(int(c), "numeric", k) for k, c in enumerate(self.numeric_)]
        firsts += [(int(cols[0]), "nominal", g) for g, cols in enumerate(self.groups_)]
        self.order_ = [(kind, k) for _, kind, k in sorted(firsts)]
        Xn = X[:, self.numeric_]
        present = ~np.isnan(Xn)
        with np.errstate(invalid="ignore"):
            lo = np.where(present.any(axis=0), np.nanmin(np.where(present, Xn, np.inf), axis=0), 0.0)
            hi = np.where(present.any(axis=0), np.nanmax(np.where(present, Xn, -np.inf), axis=0), 0.0)
        self.min_, self.width_ = lo, hi - lo
        return self

    # -- encodings ---------------------------------------------------------------------------
    def codes(self, X: np.ndarray) -> np.ndarray:
        """n x n_groups value codes of the nominal attributes (NaN = missing): a one-column group
        as it is, a one-hot group as the index of its 1 (−1 for a row of zeros)."""
        out = np.empty((X.shape[0], len(self.groups_)))
        for g, cols in enumerate(self.groups_):
            block = X[:, cols]
            if len(cols) == 1:
                out[:, g] = block[:, 0]
                continue
            hot = block == 1
            out[:, g] = np.where(hot.any(axis=1), hot.argmax(axis=1), -1.0)
            out[np.isnan(block).any(axis=1), g] = np.nan
        return out

    def _ranges(self, n: int, ranges) -> tuple[np.ndarray, np.ndarray]:
        lo, width = (self.min_, self.width_) if ranges is None else ranges
        return np.broadcast_to(lo, (n, lo.shape[-1])), np.broadcast_to(width, (n, width.shape[-1]))

    def widened_ranges(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per-row ranges as IBk has them when it classifies the rows of X in order: the
        training ranges widened by each row's present values and those of the rows before it
        (``LinearNNSearch.addInstanceInfo``)."""
        Xn = X[:, self.numeric_]
        hi = np.fmax(self.min_ + self.width_, np.fmax.accumulate(Xn, axis=0))
        lo = np.fmin(self.min_, np.fmin.accumulate(Xn, axis=0))
        return lo, hi - lo

    # -- distances -------------------------------------------------------------------------
    def _nominal_equal(self, A: np.ndarray, B: np.ndarray) -> np.ndarray:
        """Number of nominal attributes on which each (a, b) pair has the same present value:
        exact integer counts by one sparse product of value indicators."""
        if not self.groups_:
            return np.zeros((A.shape[0], B.shape[0]))
        ca, cb = self.codes(A), self.codes(B)
        rows, cols, offset = [[], []], [[], []], 0
        for g in range(len(self.groups_)):
            values = np.unique(np.concatenate([ca[:, g], cb[:, g]]))
            values = values[~np.isnan(values)]
            for side, c in enumerate((ca[:, g], cb[:, g])):
                present = ~np.isnan(c)
                rows[side].append(np.flatnonzero(present))
                cols[side].append(offset + np.searchsorted(values, c[present]))
            offset += len(values)
        H = [
            sp.csr_array(
                (np.ones(sum(map(len, r))), (np.concatenate(r), np.concatenate(c))), shape=(n, offset)
            )
            for r, c, n in zip(rows, cols, (A.shape[0], B.shape[0]), strict=True)
        ]
        return (H[0] @ H[1].T).toarray()

    def normalise(self, X: np.ndarray) -> np.ndarray:
        """The numeric columns of X as Weka's ``norm`` (0 for a constant attribute)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(self.width_ > 0, (X[:, self.numeric_] - self.min_) / self.width_, 0.0)

    def sq_distances(self, A: np.ndarray, B: np.ndarray, ranges=None) -> tuple[np.ndarray, np.ndarray]:
        """Squared distances (rows of A × rows of B, neither with missing values) by Gram
        products, and a bound per row of A on their absolute rounding error (0 where every
        attribute is nominal: the counts are exact). With the fitted ranges the numeric part is
        a product of the norms (one symmetric product when B is A); with per-row ranges a
        product weighted by 1/width². Double precision: single precision would leave so many
        queries undecided that recomputing them costs more than it saves."""
        D = len(self.groups_) - self._nominal_equal(A, B)
        d = len(self.numeric_)
        if not d:
            return D, np.zeros(A.shape[0])
        if ranges is None:
            za = self.normalise(A)
            zb = za if B is A else self.normalise(B)
            sq_a, sq_b = np.einsum("ij,ij->i", za, za), np.einsum("ij,ij->i", zb, zb)
            D += sq_a[:, None] + sq_b[None, :] - 2.0 * (za @ zb.T)
            top_b = sq_b.max(initial=0.0)
        else:  # (a − b)² / width² with weights u = 1/width², values shifted by the training minimum
            lo, width = self._ranges(A.shape[0], ranges)
            u = np.divide(1.0, width * width, out=np.zeros(width.shape), where=width > 0)
            a, b = A[:, self.numeric_] - self.min_, B[:, self.numeric_] - self.min_
            ua = u * a
            sq_a, sq_b = np.einsum("ij,ij->i", ua, a), u @ (b * b).T
            D += sq_a[:, None] + sq_b - 2.0 * (ua @ b.T)
            top_b = sq_b.max(axis=1, initial=0.0)
        np.maximum(D, 0.0, out=D)
        # the Gram formula's error: (d + 8)/4 u (‖a‖ + ‖b‖)² (see mlgraph.methods.mlknn._screen),
        # at most (d + 8) eps (‖a‖² + ‖b‖²)
        return D, (d + 8) * _EPS * (sq_a + top_b)

    def exact_sq_distances(self, A: np.ndarray, B: np.ndarray, ranges=None) -> np.ndarray:
        """Squared distances summed as Weka does (attribute by attribute, ``result += diff *
        diff`` in double precision, norms as ``(x − min) / width``), missing values included."""
        lo, width = self._ranges(A.shape[0], ranges)
        codes_a, codes_b = (self.codes(A), self.codes(B)) if self.groups_ else (None, None)
        D = np.zeros((A.shape[0], B.shape[0]))
        for kind, k in self.order_:
            if kind == "nominal":
                ca, cb = codes_a[:, k, None], codes_b[None, :, k]
                D += ((ca != cb) | np.isnan(ca) | np.isnan(cb)).astype(np.float64)
                continue
            j, w, m = self.numeric_[k], width[:, k, None], lo[:, k, None]
            constant = w == 0.0
            with np.errstate(invalid="ignore", divide="ignore"):
                na = np.where(constant, 0.0, (A[:, j, None] - m) / w)
                nb = np.where(constant, 0.0, (B[None, :, j] - m) / w)
            diff = na - nb
            missing_a, missing_b = np.isnan(na), np.isnan(nb)
            if missing_a.any() or missing_b.any():
                other = np.where(missing_a, nb, na)  # the present value's norm
                one = np.where(other < 0.5, 1.0 - other, other)
                diff = np.where(missing_a | missing_b, np.where(missing_a & missing_b, 1.0, one), diff)
            D += diff * diff
        return D


def _heap_survivors(dist: np.ndarray, k: int) -> np.ndarray:
    """Positions (in scan order) of the k instances left in ``LinearNNSearch``'s heap after
    scanning ``dist``: ``MyHeap``'s 1-based max-heap with its ``upheap``/``downheap`` (strict
    comparisons), replayed for the first k puts and for each later distance strictly below the
    top (``putBySubstitute``); tied distances never enter the heap."""
    heap_d, heap_i = [0.0] * (k + 1), [0] * (k + 1)

    def upheap(i: int) -> None:
        while i > 1 and heap_d[i] > heap_d[i // 2]:
            heap_d[i], heap_d[i // 2] = heap_d[i // 2], heap_d[i]
            heap_i[i], heap_i[i // 2] = heap_i[i // 2], heap_i[i]
            i //= 2

    def downheap(size: int) -> None:
        i = 1
        while (2 * i <= size and heap_d[i] < heap_d[2 * i]) or (
            2 * i + 1 <= size and heap_d[i] < heap_d[2 * i + 1]
        ):
            child = 2 * i if 2 * i + 1 > size or heap_d[2 * i] > heap_d[2 * i + 1] else 2 * i + 1
            heap_d[i], heap_d[child] = heap_d[child], heap_d[i]
            heap_i[i], heap_i[child] = heap_i[child], heap_i[i]
            i = child

    for size in range(1, k + 1):  # put
        heap_d[size], heap_i[size] = float(dist[size - 1]), size - 1
        upheap(size)
    rest = np.flatnonzero(dist[k:] < heap_d[1]) + k
    while len(rest):
        j = int(rest[0])
        heap_d[1], heap_i[1] = heap_d[k], heap_i[k]  # get: the last element to the root
        downheap(k - 1)
        heap_d[k], heap_i[k] = float(dist[j]), j  # put
        upheap(k)
        rest = rest[1:][dist[rest[1:]] < heap_d[1]]
    return np.array(heap_i[1:], dtype=np.intp)


def _select(dist: np.ndarray, k: int, skip: int | None, ties: str) -> np.ndarray:
    """Weka's neighbours (columns) of one query from its exact distances to every training row."""
    scan = np.arange(len(dist)) if skip is None else np.delete(np.arange(len(dist)), skip)
    d = dist[scan]
    if ties == "all":
        return scan[d <= np.partition(d, k - 1)[k - 1]]
    return scan[_heap_survivors(d, k)]


def weka_neighbours(
    metric: WekaEuclidean,
    A: np.ndarray,
    B: np.ndarray,
    k: int,
    exclude_self: bool = False,
    ranges: tuple[np.ndarray, np.ndarray] | None = None,
    ties: str = "heap",
) -> sp.csr_array:
    """The neighbours ``LinearNNSearch`` finds among the rows of B (the training instances,
    in scan order) for each row of A, as an n_A × n_B 0/1 CSR matrix.

    ``ties="heap"``: the k instances left in the search's heap (MULAN's ML-kNN counts these);
    ``"all"``: those and every instance tied with the k-th distance (IBk's vote). With
    ``exclude_self`` row i of A is training instance i and is skipped. ``ranges``: per-row
    ranges of the numeric attributes (default: the fitted ones). k must not exceed the number
    of candidates."""
    n, m = A.shape[0], B.shape[0]
    available = m - 1 if exclude_self else m
    if not 1 <= k <= available:
        raise ValueError(f"k={k} must lie in 1..{available} (the training instances searched)")
    has_missing = np.isnan(B).any()
    rows_out, cols_out = [], []
    step = max(1, _BLOCK_ELEMENTS // max(m, 1))
    for start in range(0, n, step):
        block = np.arange(start, min(n, start + step))
        block_ranges = None if ranges is None else (ranges[0][block], ranges[1][block])
        if has_missing or np.isnan(A[block]).any():
            hard, E = np.arange(len(block)), metric.exact_sq_distances(A[block], B, block_ranges)
        else:
            D, error = metric.sq_distances(A[block], B, block_ranges)
            if exclude_self:
                D[np.arange(len(block)), block] = np.inf
            if k == available:
                clear = np.ones(len(block), dtype=bool)
                near = np.argsort(D, axis=1)[:, :k]
            else:  # the k nearest, and the (k+1)-th: a gap above the rounding bound decides
                order = np.argpartition(D, k, axis=1)[:, : k + 1]
                near, ranked = order[:, :k], np.take_along_axis(D, order, axis=1)
                clear = ranked[:, k] - ranked[:, :k].max(axis=1) > 2.0 * error
            rows_out.append(np.repeat(block[clear], k))
            cols_out.append(near[clear].ravel())
            hard = np.flatnonzero(~clear)
            if len(metric.numeric_):  # undecided rows recomputed exactly (nominal counts are exact)
                hard_ranges = None if ranges is None else (block_ranges[0][hard], block_ranges[1][hard])
                E = metric.exact_sq_distances(A[block[hard]], B, hard_ranges)
            else:
                E = D[hard]
        for h, dist in zip(hard, E, strict=True):
            found = _select(dist, k, block[h] if exclude_self else None, ties)
            rows_out.append(np.full(len(found), block[h]))
            cols_out.append(found)
    rows, cols = np.concatenate(rows_out), np.concatenate(cols_out)
    return sp.csr_array((np.ones(len(rows), dtype=np.int32), (rows, cols)), shape=(n, m))
