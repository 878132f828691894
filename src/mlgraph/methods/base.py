"""What every estimator of mlgraph shares: declarative parameter checks, the semi-supervised
label convention, feature standardisation with training statistics, and the graph cache.

Semi-supervised input follows scikit-learn's convention: a row of ``Y`` filled with −1 marks an
unlabelled training point; labelled rows hold 0/1.

scikit-learn model selection
----------------------------
Every multi-label estimator derives from :class:`MultiLabelClassifierMixin`: it is a classifier
with one binary output per label, as scikit-learn's own multi-label classifiers
(``MultiOutputClassifier``, ``KNeighborsClassifier`` on a 2-D y) are: ``classes_`` is a list of
q arrays ``[0, 1]``, ``n_features_in_`` (and ``feature_names_in_`` for a DataFrame) is set in
``fit`` and checked at prediction time, and the tags say multi-output, not single-output,
multi-label, sparse input accepted. So ``GridSearchCV``/``cross_validate`` work with the
multi-label scorers of scikit-learn (``"f1_micro"``, ``"f1_macro"``, ``"average_precision"``,
``"roc_auc"``, which use ``predict`` or ``decision_function``) and with the project's metrics,
e.g. ``make_scorer(mlgraph.evaluation.metrics.average_precision, response_method="decision_function")``.

Grid search with unlabelled rows: every estimator accepts rows of −1 in ``Y`` (the
semi-supervised ones ML-MR, ML-MRRW, GFHF, LGC, FSKSC and SSWL use them, the supervised ones drop
them). Cross-validation then splits labelled and unlabelled rows alike, so a test fold holds
both, and a plain scorer would compare predictions with −1 rows. Wrap the scorer in
:func:`labelled_scorer`, which scores only the rows of the test fold whose ``Y`` row is not −1::

    GridSearchCV(MLMR(), {"gamma_I": [0.1, 1.0]}, cv=3,
                 scoring=labelled_scorer("f1_micro")).fit(X, Y_with_minus_one_rows)

Fitting still sees every row of the training folds (labelled and unlabelled); only scoring is
restricted. A test fold without a labelled row cannot be scored and raises ``ValueError``
(``GridSearchCV`` records its ``error_score``): use enough labelled rows or fewer folds.
"""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.metrics import check_scoring
from sklearn.utils import _safe_indexing
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_array, validate_data

from mlgraph.graphs import build_graph, median_sigma
from mlgraph.graphs.cache import SharedWork, cache_folder, cached, shared
from mlgraph.graphs.sparsify import knn_neighbours, knn_pairs_from


class MultiLabelClassifierMixin(ClassifierMixin):
    """A classifier with one binary output per label (see the module docstring).

    Subclasses call :meth:`_check_fit_data` in ``fit`` (it sets ``n_features_in_`` and
    ``classes_``) and :meth:`_check_predict_data` before predicting.
    """

    def _check_fit_data(self, X, Y, densify: bool = True, allow_nan: bool = False) -> tuple:
        """Validated (X float64, Y int8 with −1 rows, labelled mask); sparse X is kept as CSR
        when ``densify`` is False; NaN (missing values) only with ``allow_nan``."""
        X, Y = fitted_data(self, X, Y, densify=False, allow_nan=allow_nan)
        Y, labelled = split_labelled(Y)
        if X.shape[0] != Y.shape[0]:
            raise ValueError(f"X has {X.shape[0]} rows but Y has {Y.shape[0]}")
        self.classes_ = [np.array([0, 1]) for _ in range(Y.shape[1])]
        return (dense(X) if densify else X), Y, labelled

    def _check_predict_data(self, X, densify: bool = True, allow_nan: bool = False):
        """X validated against the features seen in ``fit`` (count and, for DataFrames, names)."""
        return fitted_features(self, X, reset=False, densify=densify, allow_nan=allow_nan)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        tags.target_tags.multi_output = True
        tags.target_tags.single_output = False  # y is the n × q label matrix, never 1-D
        tags.classifier_tags.multi_label = True
        tags.classifier_tags.multi_class = False  # each output is binary 0/1
        tags.input_tags.sparse = True  # CSR is accepted (densified where needed)
        return tags


class ScoreThresholdMixin:
    """``predict`` as a rule on the scores of ``decision_function``: label j where F_ij > 0,
    or the estimator's own rule in :meth:`predict_from_scores`. The runner, which needs scores
    and predictions, calls ``predict_from_scores`` on the scores it has, so a test kernel (or a
    transductive re-solve) is computed once, not twice."""

    def predict(self, X) -> np.ndarray:
        """Binary label matrix (int8) from :meth:`decision_function`."""
        return self.predict_from_scores(self.decision_function(X))

    def predict_from_scores(self, scores) -> np.ndarray:
        """:meth:`predict` from scores already computed: label j where the score exceeds 0."""
        return (np.asarray(scores) > 0).astype(np.int8)


class _LabelledScorer:
    """Callable ``(estimator, X, Y)`` scorer of :func:`labelled_scorer`; a class, so that a
    fitted ``GridSearchCV`` holding it can be pickled."""

    def __init__(self, scoring):
        self.scorer = check_scoring(estimator=None, scoring=scoring)

    def __call__(self, estimator, X, Y, sample_weight=None):
        Y = np.asarray(Y)
        labelled = ~(Y == -1).all(axis=1)
        if not labelled.any():
            raise ValueError("labelled_scorer: the scored rows hold no labelled row (every Y row is −1)")
        kwargs = {} if sample_weight is None else {"sample_weight": np.asarray(sample_weight)[labelled]}
        return self.scorer(estimator, _safe_indexing(X, labelled), Y[labelled], **kwargs)

    def __repr__(self) -> str:
        return f"labelled_scorer({self.scorer!r})"


def labelled_scorer(scoring) -> _LabelledScorer:
    """A scorer that scores only the rows whose ``Y`` row is not all −1 (unlabelled).

    ``scoring`` is anything :func:`sklearn.metrics.check_scoring` takes (a name such as
    ``"f1_micro"`` or a scorer from ``make_scorer``). Use it as ``GridSearchCV(...,
    scoring=labelled_scorer("f1_micro"))`` when ``Y`` holds unlabelled rows.
    """
    return _LabelledScorer(scoring)


def check_params(est: BaseEstimator, rules: dict) -> None:
    """Declarative checks: ``rules`` maps a parameter to (predicate, requirement text)."""
    for name, (ok, text) in rules.items():
        value = getattr(est, name)
        if not ok(value):
            raise ValueError(f"{type(est).__name__}: parameter {name}={value!r} must be {text}")


def nonneg(v) -> bool:
    return isinstance(v, Real) and not isinstance(v, bool) and np.isfinite(v) and v >= 0


def positive(v) -> bool:
    return nonneg(v) and v > 0


def positive_int(v) -> bool:
    return isinstance(v, Integral) and not isinstance(v, bool) and v >= 1


def in_open_unit(v) -> bool:
    return nonneg(v) and 0 < v < 1


def dense(X) -> np.ndarray:
    """Kernel and graph methods form dense n×n matrices anyway, so sparse features are densified."""
    return X.toarray() if sp.issparse(X) else X


_X_CHECKS = {"dtype": np.float64, "accept_sparse": "csr"}


def _x_checks(allow_nan: bool) -> dict:
    return {**_X_CHECKS, "ensure_all_finite": "allow-nan"} if allow_nan else _X_CHECKS


def fitted_features(est: BaseEstimator, X, reset: bool, densify: bool = True, allow_nan: bool = False):
    """X as float64 (dense, or CSR when not ``densify``) through scikit-learn's ``validate_data``:
    ``reset`` (in ``fit``) sets ``n_features_in_`` (and ``feature_names_in_`` for a DataFrame),
    otherwise they are checked, with scikit-learn's error message. NaN only with ``allow_nan``."""
    X = validate_data(est, X, reset=reset, **_x_checks(allow_nan))
    return dense(X) if densify else X


def fitted_data(est: BaseEstimator, X, Y, densify: bool = True, allow_nan: bool = False) -> tuple:
    """(X, Y) in ``fit``: X as :func:`fitted_features` with ``reset``, Y an array of any shape
    (the caller checks it); a missing Y gets scikit-learn's "requires y to be passed" error."""
    X, Y = validate_data(
        est, X, Y, reset=True, validate_separately=(_x_checks(allow_nan), {"dtype": None, "ensure_2d": False})
    )
    return (dense(X) if densify else X), Y


def check_features(X, n_features: int | None = None) -> np.ndarray:
    """Validated float64 dense features; ``n_features`` is the count seen in ``fit``."""
    X = dense(check_array(X, dtype=np.float64, accept_sparse="csr", input_name="X"))
    if n_features is not None and X.shape[1] != n_features:
        raise ValueError(f"X has {X.shape[1]} features, the model was fitted on {n_features}")
    return X


def split_labelled(Y) -> tuple[np.ndarray, np.ndarray]:
    """Return (Y as int8 with −1 rows kept, boolean mask of labelled rows); validate values."""
    Y = check_array(Y, dtype=None, ensure_2d=False, input_name="Y")  # validate before casting
    check_classification_targets(Y)  # "Unknown label type" for continuous values
    if Y.ndim != 2:
        raise ValueError(
            f"Y must be the n × q label matrix (one 0/1 column per label), got a {Y.ndim}-D "
            f"array; a single label is Y.reshape(-1, 1)"
        )
    unlabelled = (Y == -1).all(axis=1)
    if not np.isin(Y[~unlabelled], (0, 1)).all():
        raise ValueError("Y must hold 0/1 on labelled rows and −1 on every entry of unlabelled rows")
    Y = Y.astype(np.int8)
    if unlabelled.all():
        raise ValueError("Y has no labelled row: at least one training instance needs labels")
    return Y, ~unlabelled


def standardisation(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(mean, scale) of the training features; constant features get scale = inf, so they
    drop out of every distance, for training and test rows alike."""
    scale = X.std(axis=0)
    return X.mean(axis=0), np.where(scale > 0, scale, np.inf)


def cached_graph(memory, X: np.ndarray, **params) -> tuple[sp.csr_matrix, dict]:
    """:func:`mlgraph.graphs.build_graph` through the graph cache of :mod:`mlgraph.graphs.cache` in
    folder ``memory`` (a str or path, a ``joblib.Memory`` whose ``location`` is the folder, or
    None for no cache), keyed by the content of ``X``, ``params`` and the source of
    ``mlgraph.graphs`` (and everything it imports): the weight matrix W and the graph's
    diagnostics (``{"knn_recall": ...}`` for an approximate search).

    Methods that share a graph for a split (ML-MR and ML-MRRW on the training points; ML-GFHF
    and ML-LGC on training plus test points) then build it once, even across the processes of
    a Hydra sweep. A precomputed ``sqdist`` is a function of ``X`` and is left out of the key,
    as is ``pairs``, a function returning the kNN graph's pairs (:func:`order_free_knn_pairs`),
    called only when the graph is built.
    """
    sqdist, pairs = params.pop("sqdist", None), params.pop("pairs", None)

    def compute() -> dict:
        found = pairs() if pairs is not None else None
        W, info = build_graph(X, sqdist=sqdist, pairs=found, return_info=True, **params)
        return {"W": W, **{f"info.{key}": float(value) for key, value in info.items()}}

    fields = cached(memory, "graphs", compute, inputs={"X": X}, params=params, module="mlgraph.graphs")
    return fields["W"], {key[5:]: value for key, value in fields.items() if key.startswith("info.")}


def order_free_knn_pairs(memory, X: np.ndarray, Xs: np.ndarray, k: int):
    """A function giving the undirected pairs of the exact kNN graph of ``Xs``, X's rows
    standardised (``(X − mean) / scale``, :func:`standardisation`), that reuses the neighbours
    found for the same rows in any order, through the cache in folder ``memory``; None without
    a cache. A transductive method fits on training + test rows, every trial in another order:
    the rows are put in the order of their bytes, each row's neighbours
    (:func:`~mlgraph.graphs.sparsify.knn_neighbours`) are computed once for that content and
    mapped back, and only the rows whose choice could depend on the order (a tie at the k-th
    neighbour) are chosen again (:func:`~mlgraph.graphs.sparsify.knn_pairs_from`): the same
    pairs as a search in this order, found 10–15× faster on yeast and scene."""
    if cache_folder(memory) is None and not isinstance(memory, SharedWork):
        return None

    def pairs() -> tuple[np.ndarray, np.ndarray]:
        order = np.argsort(
            np.ascontiguousarray(X).view(np.dtype((np.void, X.dtype.itemsize * X.shape[1]))).ravel()
        )
        sorted_rows = X[order]

        def compute() -> dict:
            mean, scale = standardisation(sorted_rows)
            neighbours, unsure = knn_neighbours((sorted_rows - mean) / scale, k)
            return {"neighbours": neighbours, "unsure": unsure}

        found = cached(
            memory,
            "knn_neighbours",
            compute,
            inputs={"X": sorted_rows},
            params={"k": int(k)},
            module="mlgraph.methods.base",
        )
        neighbours, unsure = np.empty_like(found["neighbours"]), np.empty_like(found["unsure"])
        neighbours[order], unsure[order] = order[found["neighbours"]], found["unsure"]
        return knn_pairs_from(Xs, k, neighbours, unsure)

    return pairs


def shared_median_sigma(memory, X: np.ndarray, random_state, sqdist: np.ndarray | None = None) -> float:
    """:func:`mlgraph.graphs.median_sigma` of ``X``, computed once per
    :class:`~mlgraph.graphs.cache.SharedWork` ``memory`` (the grid points and inner folds of a nested
    selection fit on the same rows), else directly."""
    return shared(
        memory,
        "median_sigma",
        lambda: {"sigma": median_sigma(X, random_state=random_state, sqdist=sqdist)},
        inputs={"X": X},
        params={"random_state": random_state},
        module="mlgraph.graphs",
    )["sigma"]
