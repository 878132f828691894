"""What every estimator of mlgraph shares: declarative parameter checks, the semi-supervised
label convention, feature standardisation with training statistics, and the graph cache.

Semi-supervised input follows scikit-learn's convention: a row of ``Y`` filled with −1 marks an
unlabelled training point; labelled rows hold 0/1.
"""

from __future__ import annotations

import os
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_array, check_memory

from mlgraph.graphs import build_graph


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


def check_features(X, n_features: int | None = None) -> np.ndarray:
    """Validated float64 dense features; ``n_features`` is the count seen in ``fit``."""
    X = dense(check_array(X, dtype=np.float64, accept_sparse="csr", input_name="X"))
    if n_features is not None and X.shape[1] != n_features:
        raise ValueError(f"X has {X.shape[1]} features, the model was fitted on {n_features}")
    return X


def split_labelled(Y) -> tuple[np.ndarray, np.ndarray]:
    """Return (Y as int8 with −1 rows kept, boolean mask of labelled rows); validate values."""
    Y = check_array(Y, dtype=None, ensure_2d=True, input_name="Y")  # validate before casting
    unlabelled = (Y == -1).all(axis=1)
    if not np.isin(Y[~unlabelled], (0, 1)).all():
        raise ValueError("Y must hold 0/1 on labelled rows and −1 on every entry of unlabelled rows")
    Y = Y.astype(np.int8)
    if unlabelled.all():
        raise ValueError("Y has no labelled row: at least one training instance needs labels")
    return Y, ~unlabelled


def check_X_Y(X, Y) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Validated (X float64 dense, Y int8 with −1 rows, labelled mask) with matching rows."""
    X = check_features(X)
    Y, labelled = split_labelled(Y)
    if X.shape[0] != Y.shape[0]:
        raise ValueError(f"X has {X.shape[0]} rows but Y has {Y.shape[0]}")
    return X, Y, labelled


def standardisation(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(mean, scale) of the training features; constant features get scale = inf, so they
    drop out of every distance, for training and test rows alike."""
    scale = X.std(axis=0)
    return X.mean(axis=0), np.where(scale > 0, scale, np.inf)


def cached_graph(memory, X: np.ndarray, **params):
    """:func:`mlgraph.graphs.build_graph` through a joblib ``memory`` (a folder, a
    ``joblib.Memory`` or None for no cache), keyed by the content of ``X`` and ``params``.

    Methods that share a graph for a split (ML-MR and ML-MRRW on the training points; ML-GFHF
    and ML-LGC on training plus test points) then build it once, even across the processes of
    a Hydra sweep. A precomputed ``sqdist`` is a function of ``X`` and is left out of the key.
    """
    memory = str(memory) if isinstance(memory, os.PathLike) else memory
    return check_memory(memory).cache(build_graph, ignore=["sqdist"])(X, **params)
