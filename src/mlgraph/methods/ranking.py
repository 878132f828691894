"""Pairwise-ranking multi-label baselines of paper 001 (DSML): BP-MLL and RankSVM.

Both learn one real output per label, ``c_k(x)``, so that the relevant labels of an instance
outrank its irrelevant ones, and both turn the ranking into a label set with the same learnt
size threshold. Notation: instance i has the relevant labels Y_i and the irrelevant labels
Ȳ_i (its complement among the q labels); its pairs are Y_i × Ȳ_i, |Y_i||Ȳ_i| of them.

:class:`BPMLL` (Zhang & Zhou 2006, "Multilabel neural networks with applications to
functional genomics and text categorization", IEEE TKDE 18(10)). A network with one hidden
layer of tanh units and q tanh outputs ``c = tanh(tanh(x W1 + b1) W2 + b2)`` minimises the
global error plus weight decay

    J(w) = Σ_i E_i + (α/2) ‖w‖²,   E_i = 1/(|Y_i||Ȳ_i|) Σ_{(k,l) ∈ Y_i × Ȳ_i} exp(−(c_ik − c_il)).

The pair sum factorises, E_i = (Σ_{k∈Y_i} e^{−c_ik}) (Σ_{l∈Ȳ_i} e^{c_il}) / (|Y_i||Ȳ_i|), so the
error and its gradient are O(n q) matrix operations (:func:`pairwise_exp_loss`). Instances
with an empty or full label set have no pair and are left out of training (as in the
original). ‖w‖² covers all weights and biases. Training is mini-batch gradient descent with
the batch sum: on a batch B the step is ``w ← w − η (Σ_{i∈B} ∇E_i + (|B|/m) α w)``, m the
number of instances with pairs, so one epoch applies the decay once and ``batch_size=1`` is
the online back-propagation of the paper. ``loss_curve_[t]`` is J after epoch t + 1.

:class:`RankSVM` (Elisseeff & Weston 2002, "A kernel method for multi-labelled
classification", NIPS 14; technical report 2001, "Kernel methods for multi-labelled
classification and categorical regression problems"). Linear models ``f_k(x) = ⟨w_k, φ(x)⟩ +
b_k`` solve

    min ½ Σ_k ‖w_k‖² + C Σ_i 1/(|Y_i||Ȳ_i|) Σ_{(k,l)} ξ_ikl
    s.t. ⟨w_k − w_l, φ(x_i)⟩ + b_k − b_l ≥ 1 − ξ_ikl,  ξ_ikl ≥ 0,

through its dual over one α per pair p = (i, k, l):

    max D(α) = Σ_p α_p − ½ Σ_k β_kᵀ K β_k,   0 ≤ α_p ≤ u_p = C/(|Y_i||Ȳ_i|),
    Σ_i β_ki = 0 for every label k,   β_ki = Σ_{p of i, k relevant} α_p − Σ_{p of i, k irrelevant} α_p,

with ``w_k = Σ_i β_ki φ(x_i)`` and K the kernel matrix (``kernel="linear"``: K = X Xᵀ, never
formed; ``"rbf"``: K = exp(−γ‖x − x'‖²)). Solver: Frank–Wolfe as in the original (Elisseeff &
Weston's technical report; the MATLAB code distributed by LAMDA, read in its Python port in
WORC). From α = 0, each iteration solves the linear program ``max ∇D(α)·a`` over the feasible
set (q equality rows, box bounds; HiGHS dual simplex through ``scipy.optimize.linprog``, with
presolve off, which is 10× faster here), then moves to ``α + λ(a − α)`` with the exact line search λ =
min(1, gap / (Δβᵀ K Δβ)) of the concave quadratic D. The Frank–Wolfe gap ``∇D(α)·(a − α)``
equals the duality gap P(w, b) − D(α), where b, the LP's equality multipliers, minimises the
weighted hinge loss for the current w; the solver stops when ``gap ≤ tol · P`` (a certified
relative accuracy) or after ``max_iter`` steps (the iteration cap: at most ``max_iter`` steps
and ``max_iter + 1`` LP solves; ``n_iter_`` counts the steps). No step decreases D, so
``objective_curve_`` (−D at α_0 = 0, α_1, …) never increases. Pairs are index arrays built
once (:func:`label_pairs`); β and the LP's constraint matrix come from them by ``bincount``
and one sparse matrix.

Size threshold (both; Elisseeff & Weston's, as in BP-MLL's ``get_threshold.m``): for each training
instance the target threshold is the candidate with the fewest errors (relevant labels
below plus irrelevant labels above it) among: the lowest output − 0.1, the midpoints of
consecutive sorted outputs, the highest output + 0.1 (first minimum on ties). A linear
function of the outputs, ``t(x) = [c(x), 1] · v``, is fitted to these targets by least
squares (:func:`size_threshold_targets`, :func:`fit_size_threshold`), and ``predict`` marks
label k where ``c_k(x) ≥ t(x)``.

Defaults. BPMLL: ``hidden=0.2`` (⌈0.2 d⌉ hidden units), ``learning_rate=0.05``,
``epochs=100``, ``alpha=0.1``, ``batch_size=1`` (online), ``random_state=0``,
``standardize=True``. RankSVM: ``C=1.0``, ``kernel="linear"``, ``gamma=None``
(1 / (d · Var X) on the transformed training features, scikit-learn's "scale"),
``max_iter=100``, ``tol=1e-3``, ``random_state=0`` (unused: the solver is deterministic),
``standardize=True``.

Assumptions:

- Supervised only: rows of ``Y`` filled with −1 are dropped. Training rows whose label set is
  empty or full have no pair; they are left out of BP-MLL's error and RankSVM's problem but
  kept for the threshold regression (which uses all labelled training rows, as the original
  codes do). ``fit`` raises ``ValueError`` when no row has a pair.
- Features: ``standardize=True`` z-scores them with training statistics (constant features
  become 0, :func:`mlgraph.methods.base.standardisation`); sparse input is densified. The
  original codes use raw features; ``standardize=False`` does too.
- BP-MLL defaults are the paper's and the LAMDA MATLAB code's (``BPMLL_train.m``): learning
  rate 0.05, ⌈20 %⌉ of the input dimension as hidden units, 100 epochs, regularisation cost
  0.1, tanh hidden and output units, online updates. We use J = Σ E_i + (α/2)‖w‖² with
  ``alpha=0.1``. The code is not self-consistent here: the global error it reports is
  Σ E_i + 0.1 ‖w‖² (``alpha=0.2`` in our notation), while its per-instance update subtracts
  ``(2 · 0.1 / m) w`` without the learning rate, i.e. descends Σ E_i + (0.1/η) ‖w‖²
  (``alpha=4.0`` at η = 0.05 reproduces that effective decay).
- BP-MLL visits the training instances in a new random order each epoch (the code uses a
  fixed order). Initial weights and biases are uniform in ±1/√(fan-in) (MATLAB's ``newff``
  uses Nguyen–Widrow); both come from ``random_state``. ``batch_size=None`` is full-batch
  gradient descent; the step uses the batch sum, so large batches may need a smaller
  learning rate. ``hidden``: an int is a count, a float a fraction of the input dimension
  (⌈hidden · d⌉, at least 1).
- RankSVM's bias b comes from the equality multipliers of the last LP, which minimise the
  weighted hinge loss for the final w (so it is primal optimal given w); the original averages
  the KKT equations of the pairs with 0 < α_p < u_p by least squares, which is the same at
  the exact optimum but unreliable for Frank–Wolfe's approximate α. The default cap
  ``max_iter=100`` is lower than the ported code's 500; Frank–Wolfe converges as
  O(1/t), so the solution is approximate when the cap binds (``duality_gap_`` says how much).
  Its stopping rule also differs (the code stops on λ ≤ 1e-6 or λ‖Δα‖ ≤ 1e-4).
- RankSVM memory and time: one α per pair (Σ_i |Y_i||Ȳ_i|), each LP has that many variables;
  the RBF kernel stores an n × n matrix of the training rows with pairs. Fine for the
  dual-set data of paper 001 (7 labels, |Y_i| = 2): with 2,500 × 18 training rows (25,000
  pairs) one iteration takes about 60 ms on one core, so ``max_iter=100`` costs about 6 s;
  heavy for hundreds of labels. BP-MLL's online training costs about 20-30 µs per instance
  and epoch (2-3 s for 1,000 instances and 100 epochs).
- Threshold targets use the code's ±0.1 beyond the extreme outputs for every model (RankSVM
  outputs are not bounded by 1); the least squares is the minimum-norm ``lstsq`` solution.
"""

from __future__ import annotations

import math
from numbers import Integral, Real

import numpy as np
import scipy.linalg
import scipy.sparse as sp
from scipy.optimize import linprog
from sklearn.base import BaseEstimator
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from mlgraph.graphs import squared_distances
from mlgraph.methods.base import (
    MultiLabelClassifierMixin,
    ScoreThresholdMixin,
    check_params,
    nonneg,
    positive,
    positive_int,
    standardisation,
)

__all__ = [
    "BPMLL",
    "RankSVM",
    "bpmll_objective",
    "fit_size_threshold",
    "label_pairs",
    "pairwise_exp_loss",
    "size_threshold_targets",
]

THRESHOLD_MARGIN = 0.1  # candidate thresholds beyond the extreme outputs (original codes)


def _is_bool(v) -> bool:
    return isinstance(v, bool)


def _valid_seed(v) -> bool:
    return (
        v is None
        or isinstance(v, np.random.RandomState)
        or (isinstance(v, Integral) and not isinstance(v, bool) and v >= 0)
    )


def _valid_hidden(v) -> bool:
    return positive_int(v) or (isinstance(v, Real) and not isinstance(v, (bool, Integral)) and positive(v))


# --------------------------------------------------------------------------
# Shared pieces: pairs, size threshold
# --------------------------------------------------------------------------
def label_pairs(Y) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(row, relevant label, irrelevant label) of every pair in Y_i × Ȳ_i, rows ascending and,
    within a row, relevant then irrelevant label ascending. Rows with an empty or full label
    set give no pair. ``Y``: n × q 0/1."""
    Y = np.asarray(Y).astype(bool)
    q = Y.shape[1]
    rel_rows, rel_labels = np.nonzero(Y)  # row-major, so grouped by row
    irr_labels = np.nonzero(~Y)[1]
    n_irr = q - Y.sum(axis=1)
    irr_start = np.cumsum(n_irr) - n_irr
    reps = n_irr[rel_rows]  # each relevant (i, k) pairs with the |Ȳ_i| irrelevant labels of i
    total = int(reps.sum())
    within = np.arange(total) - np.repeat(np.cumsum(reps) - reps, reps)
    rows = np.repeat(rel_rows, reps)
    return rows, np.repeat(rel_labels, reps), irr_labels[np.repeat(irr_start[rel_rows], reps) + within]


def size_threshold_targets(outputs, Y, margin: float = THRESHOLD_MARGIN) -> np.ndarray:
    """Per-instance target threshold: among the lowest output − margin, the midpoints of
    consecutive sorted outputs and the highest output + margin, the first with the fewest
    errors (relevant labels below it plus irrelevant labels above it)."""
    outputs = np.asarray(outputs, dtype=np.float64)
    n, q = outputs.shape
    order = np.argsort(outputs, axis=1, kind="stable")
    S = np.take_along_axis(outputs, order, axis=1)
    R = np.take_along_axis(np.asarray(Y).astype(bool), order, axis=1)
    rel_below = np.zeros((n, q + 1), dtype=np.int64)  # column c: c lowest labels below the cut
    np.cumsum(R, axis=1, out=rel_below[:, 1:])
    irr_above = (q - np.arange(q + 1)) - (rel_below[:, -1:] - rel_below)
    best = np.argmin(rel_below + irr_above, axis=1)
    candidates = np.empty((n, q + 1))
    candidates[:, 0] = S[:, 0] - margin
    candidates[:, 1:q] = (S[:, :-1] + S[:, 1:]) / 2
    candidates[:, q] = S[:, -1] + margin
    return candidates[np.arange(n), best]


def fit_size_threshold(outputs, Y, margin: float = THRESHOLD_MARGIN) -> np.ndarray:
    """Coefficients v (q + 1,) of the threshold ``t(x) = [c(x), 1] · v``, least squares on the
    targets of :func:`size_threshold_targets`."""
    outputs = np.asarray(outputs, dtype=np.float64)
    A = np.column_stack([outputs, np.ones(outputs.shape[0])])
    return scipy.linalg.lstsq(A, size_threshold_targets(outputs, Y, margin))[0]


def _apply_threshold(outputs: np.ndarray, coef: np.ndarray) -> np.ndarray:
    return outputs @ coef[:-1] + coef[-1]


# --------------------------------------------------------------------------
# BP-MLL
# --------------------------------------------------------------------------
def _pair_norm(rel: np.ndarray) -> np.ndarray:
    """1/(|Y_i||Ȳ_i|), 0 for rows with an empty or full label set."""
    n_rel = rel.sum(axis=1)
    n_pairs = n_rel * (rel.shape[1] - n_rel)
    return np.divide(1.0, n_pairs, out=np.zeros(rel.shape[0]), where=n_pairs > 0)


def _exp_pairs(C, rel_f, irr_f, norm):
    """Factorised error E_i and its gradient ∂E_i/∂C (rel_f, irr_f: 0/1 float masks)."""
    e_neg = np.exp(-C) * rel_f  # e^{−c_k}, k ∈ Y_i
    e_pos = np.exp(C) * irr_f  # e^{c_l},  l ∈ Ȳ_i
    a = e_neg.sum(axis=1)
    b = e_pos.sum(axis=1)
    grad = e_pos * (norm * a)[:, None] - e_neg * (norm * b)[:, None]
    return norm * a * b, grad


def pairwise_exp_loss(outputs, Y) -> tuple[np.ndarray, np.ndarray]:
    """(E_i per instance (n,), ∂E_i/∂c_ik (n, q)) of BP-MLL's global error, in O(n q):
    E_i = (Σ_{k∈Y_i} e^{−c_ik})(Σ_{l∈Ȳ_i} e^{c_il}) / (|Y_i||Ȳ_i|); 0 for empty/full sets."""
    C = np.asarray(outputs, dtype=np.float64)
    rel = np.asarray(Y).astype(bool)
    return _exp_pairs(C, rel.astype(np.float64), (~rel).astype(np.float64), _pair_norm(rel))


def _forward(params, X):
    W1, b1, W2, b2 = params
    H = np.tanh(X @ W1 + b1)
    return H, np.tanh(H @ W2 + b2)


def bpmll_objective(params, X, Y, alpha: float) -> tuple[float, list[np.ndarray]]:
    """(J, [∂J/∂W1, ∂J/∂b1, ∂J/∂W2, ∂J/∂b2]) with J = Σ_i E_i + (α/2)‖w‖² for the network
    ``params = [W1 (d×h), b1 (h,), W2 (h×q), b2 (q,)]``."""
    rel = np.asarray(Y).astype(bool)
    return _objective(params, X, rel.astype(np.float64), (~rel).astype(np.float64), _pair_norm(rel), alpha)


def _objective(params, X, rel_f, irr_f, norm, alpha, value=True):
    W1, b1, W2, b2 = params
    H, C = _forward(params, X)
    loss, dC = _exp_pairs(C, rel_f, irr_f, norm)
    dZ2 = dC * (1.0 - C * C)
    dZ1 = (dZ2 @ W2.T) * (1.0 - H * H)
    grads = [X.T @ dZ1, dZ1.sum(axis=0), H.T @ dZ2, dZ2.sum(axis=0)]
    if alpha:
        for g, p in zip(grads, params, strict=True):
            g += alpha * p
    if not value:
        return None, grads
    penalty = 0.5 * alpha * sum(float(np.vdot(p, p)) for p in params)
    return float(loss.sum()) + penalty, grads


class _RankingModel(ScoreThresholdMixin, MultiLabelClassifierMixin, BaseEstimator):
    """Shared by BP-MLL and RankSVM: the labelled rows, z-scored with their own statistics."""

    def _labelled_training_set(self, X, Y):
        check_params(self, self._rules)
        X, Y, labelled = self._check_fit_data(X, Y)
        X, Y = X[labelled], Y[labelled].astype(bool)
        if self.standardize:
            self.mean_, self.scale_ = standardisation(X)
        else:
            self.mean_ = self.scale_ = None
        return self._transform(X), Y

    def _transform(self, X):
        return X if self.mean_ is None else (X - self.mean_) / self.scale_

    def predict_from_scores(self, scores) -> np.ndarray:
        """0/1 label matrix (int8): labels whose output is ≥ the learnt threshold t(x)."""
        scores = np.asarray(scores)
        return (scores >= _apply_threshold(scores, self.threshold_coef_)[:, None]).astype(np.int8)


class BPMLL(_RankingModel):
    """BP-MLL (Zhang & Zhou 2006): a one-hidden-layer tanh network trained on the pairwise
    exponential ranking error; see the module docstring for the equations and rules.

    Parameters
    ----------
    hidden : int (count) or float (fraction of the input dimension, ⌈hidden · d⌉), default 0.2.
    learning_rate : step η, default 0.05.
    epochs : passes over the training instances, default 100.
    alpha : weight decay α of (α/2)‖w‖² (all weights and biases), default 0.1.
    batch_size : instances per step, default 1 (online, the paper); None for full batch.
    random_state : seed of the initial weights and of the epoch orders, default 0.
    standardize : z-score the features with training statistics, default True.

    Notes
    -----
    Fitted attributes: ``coefs_`` [W1 (d×h), W2 (h×q)], ``intercepts_`` [b1, b2];
    ``threshold_coef_`` (q + 1,) of t(x) = [c(x), 1]·v; ``loss_curve_`` (epochs,) J after each
    epoch; ``n_iter_`` = epochs; ``n_hidden_``; ``mean_``, ``scale_`` (None without
    standardisation); ``n_features_in_``, ``n_labels_``.
    """

    _rules = {
        "hidden": (
            _valid_hidden,
            "a positive int (hidden units) or a positive float (fraction of the input dimension)",
        ),
        "learning_rate": (positive, "a positive number"),
        "epochs": (positive_int, "a positive integer"),
        "alpha": (nonneg, "a non-negative number (weight decay)"),
        "batch_size": (lambda v: v is None or positive_int(v), "None (full batch) or a positive integer"),
        "random_state": (_valid_seed, "None, a non-negative integer or a numpy RandomState"),
        "standardize": (_is_bool, "True or False"),
    }

    def __init__(
        self,
        hidden=0.2,
        learning_rate=0.05,
        epochs=100,
        alpha=0.1,
        batch_size=1,
        random_state=0,
        standardize=True,
    ):
        self.hidden = hidden
        self.learning_rate = learning_rate
        self.epochs = epochs
        self.alpha = alpha
        self.batch_size = batch_size
        self.random_state = random_state
        self.standardize = standardize

    def fit(self, X, Y):
        """Train on the labelled rows of (X, Y) (rows of −1 are dropped)."""
        X, Y = self._labelled_training_set(X, Y)
        d, q = X.shape[1], Y.shape[1]
        norm = _pair_norm(Y)
        keep = norm > 0
        if not keep.any():
            raise ValueError(
                "BPMLL: no training row has both relevant and irrelevant labels, so there is no pair to rank"
            )
        Xt, norm_t = X[keep], norm[keep]
        rel_f, irr_f = Y[keep].astype(np.float64), (~Y[keep]).astype(np.float64)
        m = Xt.shape[0]

        h = int(self.hidden) if isinstance(self.hidden, Integral) else max(1, math.ceil(self.hidden * d))
        rng = check_random_state(self.random_state)
        r1, r2 = 1.0 / math.sqrt(d), 1.0 / math.sqrt(h)
        params = [
            rng.uniform(-r1, r1, (d, h)),
            rng.uniform(-r1, r1, h),
            rng.uniform(-r2, r2, (h, q)),
            rng.uniform(-r2, r2, q),
        ]
        eta, alpha = float(self.learning_rate), float(self.alpha)
        batch = m if self.batch_size is None else min(int(self.batch_size), m)
        curve = []
        for _ in range(self.epochs):
            order = rng.permutation(m)  # permuted copies once per epoch, then cheap slices
            Xe, rel_e, irr_e, norm_e = Xt[order], rel_f[order], irr_f[order], norm_t[order]
            for start in range(0, m, batch):
                part = slice(start, start + batch)
                _, grads = _objective(
                    params,
                    Xe[part],
                    rel_e[part],
                    irr_e[part],
                    norm_e[part],
                    alpha * (min(start + batch, m) - start) / m,
                    value=False,
                )
                for p, g in zip(params, grads, strict=True):
                    p -= eta * g
            curve.append(_objective(params, Xt, rel_f, irr_f, norm_t, alpha)[0])

        self.coefs_ = [params[0], params[2]]
        self.intercepts_ = [params[1], params[3]]
        self.loss_curve_ = np.asarray(curve)
        self.n_iter_ = int(self.epochs)
        self.n_hidden_ = h
        self.n_labels_ = q
        self.threshold_coef_ = fit_size_threshold(_forward(params, X)[1], Y)
        return self

    def decision_function(self, X) -> np.ndarray:
        """Network outputs c(x) in (−1, 1), shape (n, q); higher = more relevant."""
        check_is_fitted(self, "threshold_coef_")
        X = self._transform(self._check_predict_data(X))
        params = [self.coefs_[0], self.intercepts_[0], self.coefs_[1], self.intercepts_[1]]
        return _forward(params, X)[1]


# --------------------------------------------------------------------------
# RankSVM
# --------------------------------------------------------------------------
class RankSVM(_RankingModel):
    """RankSVM (Elisseeff & Weston 2002): the pairwise ranking SVM solved in the dual by
    Frank–Wolfe with an iteration cap; see the module docstring for the equations and rules.

    Parameters
    ----------
    C : weight of the pairwise slacks, default 1.0.
    kernel : "linear" (default) or "rbf" (exp(−γ‖x − x'‖²)).
    gamma : γ of the RBF kernel; None: 1 / (d · Var X) on the transformed training features.
    max_iter : cap on the Frank–Wolfe steps, default 100.
    tol : stop when the duality gap is ≤ tol × primal objective, default 1e-3.
    random_state : unused (the solver is deterministic); kept for a uniform interface.
    standardize : z-score the features with training statistics, default True.

    Notes
    -----
    Fitted attributes: ``pairs_`` (3, P) rows (among the labelled training rows), relevant and
    irrelevant labels; ``alpha_`` (P,) the α; ``beta_`` (n_sv, q) the β of the
    training rows with pairs, ``support_vectors_`` those rows (transformed); ``coef_`` (d, q)
    the w_k (linear kernel only, else None); ``intercept_`` (q,) b; ``n_iter_`` Frank–Wolfe
    steps taken (≤ max_iter); ``objective_curve_`` (n_iter_ + 1,) −D after each step (from
    α = 0); ``dual_objective_``, ``primal_objective_``, ``duality_gap_`` at the end;
    ``gamma_``; ``threshold_coef_``; ``mean_``, ``scale_``; ``n_features_in_``, ``n_labels_``.
    """

    _rules = {
        "C": (positive, "a positive number"),
        "kernel": (lambda v: v in ("linear", "rbf"), "'linear' or 'rbf'"),
        "gamma": (lambda v: v is None or positive(v), "None (1 / (d · Var X)) or a positive number"),
        "max_iter": (positive_int, "a positive integer (cap on Frank–Wolfe steps)"),
        "tol": (nonneg, "a non-negative number (relative duality gap)"),
        "random_state": (_valid_seed, "None, a non-negative integer or a numpy RandomState"),
        "standardize": (_is_bool, "True or False"),
    }

    def __init__(
        self, C=1.0, kernel="linear", gamma=None, max_iter=100, tol=1e-3, random_state=0, standardize=True
    ):
        self.C = C
        self.kernel = kernel
        self.gamma = gamma
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state
        self.standardize = standardize

    def fit(self, X, Y):
        """Solve the dual on the labelled rows of (X, Y) (rows of −1 are dropped)."""
        X, Y = self._labelled_training_set(X, Y)
        d, q = X.shape[1], Y.shape[1]
        rows, rel, irr = label_pairs(Y)
        if rows.size == 0:
            raise ValueError(
                "RankSVM: no training row has both relevant and irrelevant labels, so there "
                "is no pair to rank"
            )
        sv_rows, local = np.unique(rows, return_inverse=True)
        self.support_vectors_ = X[sv_rows]
        if self.kernel == "rbf":
            var = float(X.var())
            self.gamma_ = float(self.gamma) if self.gamma is not None else 1.0 / (d * var if var > 0 else d)
            K = np.exp(-self.gamma_ * squared_distances(self.support_vectors_))

            def apply_kernel(M):
                return K @ M
        else:
            self.gamma_ = None
            S = self.support_vectors_

            def apply_kernel(M):  # K = S Sᵀ, never formed
                return S @ (S.T @ M)

        n_pairs_row = Y.sum(axis=1) * (q - Y.sum(axis=1))
        upper = self.C / n_pairs_row[rows]
        alpha, beta, b, history = self._frank_wolfe(local, rel, irr, upper, sv_rows.size, q, apply_kernel)

        self.pairs_ = np.vstack([rows, rel, irr])
        self.alpha_ = alpha
        self.beta_ = beta
        self.intercept_ = b
        self.coef_ = self.support_vectors_.T @ beta if self.kernel == "linear" else None
        self.n_iter_ = history["n_iter"]
        self.objective_curve_ = np.asarray(history["curve"])
        self.dual_objective_ = history["dual"]
        self.primal_objective_ = history["primal"]
        self.duality_gap_ = history["gap"]
        self.n_labels_ = q
        self.threshold_coef_ = fit_size_threshold(self._scores(X), Y)
        return self

    def _frank_wolfe(self, rows, rel, irr, upper, n_sv, q, apply_kernel):
        """Frank–Wolfe on the dual: at most ``max_iter`` steps from α = 0."""
        P = rows.size
        cols = np.arange(P)
        A = sp.csr_matrix(
            (np.r_[np.ones(P), -np.ones(P)], (np.r_[rel, irr], np.r_[cols, cols])), shape=(q, P)
        )  # column p: +1 at its relevant label, −1 at its irrelevant one
        bounds = np.column_stack([np.zeros(P), upper])
        zero_q = np.zeros(q)
        idx_rel, idx_irr = rows * q + rel, rows * q + irr

        def beta_of(a):
            return (np.bincount(idx_rel, a, n_sv * q) - np.bincount(idx_irr, a, n_sv * q)).reshape(n_sv, q)

        alpha = np.zeros(P)
        beta = np.zeros((n_sv, q))
        F = np.zeros((n_sv, q))  # K β: the bias-free outputs of the support rows
        curve, step = [], 0
        while True:
            grad = 1.0 - (F[rows, rel] - F[rows, irr])  # ∇D(α)
            norm_w2 = float(np.vdot(beta, F))
            dual = float(alpha.sum()) - 0.5 * norm_w2
            curve.append(-dual)
            res = linprog(
                -grad, A_eq=A, b_eq=zero_q, bounds=bounds, method="highs-ds", options={"presolve": False}
            )  # presolve costs 10x here
            if res.status != 0:
                raise RuntimeError(f"RankSVM: the Frank–Wolfe linear program failed: {res.message}")
            bias = -np.asarray(res.eqlin.marginals)  # minimises the weighted hinge loss for this w
            primal = 0.5 * norm_w2 + float(-res.fun)
            gap = float(grad @ (res.x - alpha))
            if gap <= self.tol * max(primal, 0.0) or step >= self.max_iter:
                break
            direction = res.x - alpha
            d_beta = beta_of(direction)
            d_F = apply_kernel(d_beta)
            curvature = float(np.vdot(d_beta, d_F))
            lam = 1.0 if curvature <= 0 else min(1.0, gap / curvature)
            alpha += lam * direction
            beta += lam * d_beta
            F += lam * d_F
            step += 1
        bias -= bias.mean()  # b is defined up to a constant; centre it
        return (
            alpha,
            beta,
            bias,
            {"n_iter": step, "curve": curve, "dual": dual, "primal": primal, "gap": max(gap, 0.0)},
        )

    def _scores(self, Xt: np.ndarray) -> np.ndarray:
        if self.kernel == "linear":
            return Xt @ self.coef_ + self.intercept_
        K = np.exp(-self.gamma_ * squared_distances(Xt, self.support_vectors_))
        return K @ self.beta_ + self.intercept_

    def decision_function(self, X) -> np.ndarray:
        """Ranking outputs f_k(x) = ⟨w_k, φ(x)⟩ + b_k, shape (n, q); higher = more relevant."""
        check_is_fitted(self, "threshold_coef_")
        return self._scores(self._transform(self._check_predict_data(X)))
