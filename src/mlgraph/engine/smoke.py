"""A test fit of an estimator from outside mlgraph, before its MLflow run opens.

mlgraph's own methods are tested by its suite; a user's class (any ``method._target_`` outside
the package, scikit-learn's included) is fitted once on a handful of a trial's rows, the way a
trial fits it (its unlabelled rows −1, through the same wrappers), and its scores and
predictions are checked as the trial's metrics would read them. An error in ``fit``, a score
matrix of the wrong shape or with NaN, or predictions that are not 0/1 then stop the command in
one paragraph before any run exists, instead of failing every trial of a FAILED run.

A handful of rows can be too few for an estimator that works on a whole trial (more neighbours
than rows, a label with one class): a problem found on the handful is looked for again on the
whole trial, and only a problem found there too stops the command.
"""

from __future__ import annotations

import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.pipeline import Pipeline

from mlgraph.data.dual_set import DualSetDataset
from mlgraph.engine.checks import ConfigError
from mlgraph.engine.runner import evaluate_scores, label_scores
from mlgraph.evaluation.metrics import DUAL_SET_METRICS, METRICS
from mlgraph.evaluation.protocols import Trial
from mlgraph.methods.dual_set import DualSetFromMultiLabel
from mlgraph.methods.labelled_only import LabelledOnly, PlainEstimator

SMOKE_ROWS = 10  # labelled training rows, unlabelled training rows and test rows, each at most


def own_class(estimator) -> type | None:
    """The user's class behind ``estimator`` (a pipeline's last step, inside mlgraph's wrappers),
    or None when it is one of mlgraph's own methods."""
    while True:
        if isinstance(estimator, Pipeline):
            estimator = estimator.steps[-1][1]
        elif isinstance(estimator, (LabelledOnly, DualSetFromMultiLabel)):
            estimator = estimator.estimator
        elif isinstance(estimator, PlainEstimator):
            cls = estimator.estimator_class
            break
        else:
            cls = type(estimator)
            break
    return None if cls.__module__.split(".")[0] == "mlgraph" else cls


def few_rows(trial: Trial, n: int = SMOKE_ROWS) -> Trial:
    """``trial`` cut to its first ``n`` labelled and ``n`` unlabelled training rows and its
    first ``n`` test rows (in the trial's order), with the same labelled mask on them."""
    keep = np.sort(np.concatenate([np.flatnonzero(trial.labelled)[:n], np.flatnonzero(~trial.labelled)[:n]]))
    if len(keep) == len(trial.train) and len(trial.test) <= n:
        return trial
    return Trial(trial.rate, trial.repetition, trial.train[keep], trial.test[:n], trial.labelled[keep])


def smoke_fit(estimator, data, trial: Trial, method: str | None = None) -> None:
    """Fit ``estimator`` (the run's, as the plan built it) on a few rows of ``trial``
    (:func:`few_rows`) and check what it gives (:func:`fit_problem`); a problem there is looked
    for again on the whole trial, and one found there too is a
    :class:`~mlgraph.engine.checks.ConfigError` in one paragraph naming the class, the method
    (``method``, the config's name) and what was wrong. mlgraph's own methods are not fitted."""
    cls = own_class(estimator)
    if cls is None:
        return
    small = few_rows(trial)
    problem = fit_problem(estimator, data, small)
    if problem is not None and small is not trial:  # the handful may be too few: the trial decides
        problem = fit_problem(estimator, data, trial)
    if problem is None:
        return
    raise ConfigError(
        f"method {method or '?'} ({cls.__module__}.{cls.__qualname__}) failed its test fit on "
        f"dataset {getattr(data, 'name', '?')}, before any MLflow run was created: {problem}. The "
        f"test fit is the trial at rate {trial.rate:g}, repetition {trial.repetition}, as a run "
        f"fits it: {len(trial.train)} training rows ({int(trial.labelled.sum())} labelled, the "
        f"others −1), scored on {len(trial.test)} test rows."
    )


def fit_problem(estimator, data, trial: Trial) -> str | None:
    """What goes wrong when ``trial`` fits and scores a clone of ``estimator`` as the runner
    does (None: nothing): the error of ``fit``, ``decision_function``/``predict_proba`` or
    ``predict``, scores that are not an n × q finite matrix, predictions that are not n × q 0/1
    (n × 2 class indices for dual-set data), or what the metrics refuse."""
    X, Y = data.X, data.Y
    X = X.tocsr() if sp.issparse(X) else X
    Y_test = Y[trial.test]
    dual = isinstance(data, DualSetDataset)
    metrics = list(DUAL_SET_METRICS) if dual else list(METRICS)
    try:
        model = clone(estimator)
    except Exception as exc:
        return f"it cannot be copied for a trial by sklearn.base.clone ({type(exc).__name__}: {exc})"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the trials say them, once each
        if getattr(model, "transductive", False):
            return _transductive_problem(model, X, Y, trial, metrics)
        try:
            model.fit(X[trial.train], trial.targets(Y))
        except Exception as exc:
            return f"fit raised {type(exc).__name__}: {exc}"
        X_test = X[trial.test]
        scores, source = None, ""
        if not dual:
            source = "decision_function" if hasattr(model, "decision_function") else "predict_proba"
            try:
                scores, _ = label_scores(model, X_test)
            except Exception as exc:
                return f"{source} raised {type(exc).__name__}: {exc}"
            problem = _scores_problem(scores, Y_test.shape, source)
            if problem:
                return problem
        from_scores = getattr(model, "predict_from_scores", None)
        try:
            Y_pred = from_scores(scores) if scores is not None and from_scores else model.predict(X_test)
        except Exception as exc:
            return f"predict raised {type(exc).__name__}: {exc}"
        return _predictions_problem(Y_pred, Y_test, dual) or _metrics_problem(Y_test, scores, Y_pred, metrics)


def _transductive_problem(model, X, Y, trial: Trial, metrics) -> str | None:
    rows = np.concatenate([trial.train, trial.test])
    targets = np.vstack([trial.targets(Y), np.full((len(trial.test), Y.shape[1]), -1, dtype=np.int8)])
    try:
        model.fit(X[rows], targets)
        scores = np.asarray(model.label_scores_, dtype=np.float64)[len(trial.train) :]
        Y_pred = model.transduction_[len(trial.train) :]
    except Exception as exc:
        return f"its transductive fit raised {type(exc).__name__}: {exc}"
    Y_test = Y[trial.test]
    return (
        _scores_problem(scores, Y_test.shape, "label_scores_")
        or _predictions_problem(Y_pred, Y_test, dual=False)
        or _metrics_problem(Y_test, scores, Y_pred, metrics)
    )


def _scores_problem(scores, shape: tuple[int, int], source: str) -> str | None:
    if scores is None:  # neither decision_function nor predict_proba: the ranking metrics are NaN
        return None
    if scores.shape != shape:
        return (
            f"{source} gave scores of shape {scores.shape} for {shape[0]} test rows and {shape[1]} "
            f"labels; it must give one score per test row and label, shape {shape}"
        )
    bad = ~np.isfinite(scores)
    if bad.any():
        return f"{source} gave {int(bad.sum())} NaN or infinite scores of {scores.size}; every score must be finite"
    return None


def _predictions_problem(Y_pred, Y_test, dual: bool) -> str | None:
    try:
        Y_pred = np.asarray(Y_pred.toarray() if sp.issparse(Y_pred) else Y_pred)
    except Exception as exc:
        return f"predict gave {type(Y_pred).__name__}, which is not an array ({exc})"
    if Y_pred.shape != Y_test.shape:
        what = "class indices of both sets" if dual else "0/1 labels"
        return (
            f"predict gave an array of shape {Y_pred.shape} for {Y_test.shape[0]} test rows; it must "
            f"give {what}, shape {Y_test.shape}"
        )
    if not dual:
        if Y_pred.dtype.kind not in "biuf":
            return (
                f"predict gave values of dtype {Y_pred.dtype}; it must give 0/1 labels (integers or booleans)"
            )
        other = Y_pred[~np.isin(Y_pred, (0, 1))]
        if other.size:
            return (
                f"predict gave values other than 0 and 1 (e.g. {other.flat[0].item()!r}); it must give 0/1 "
                "labels, one column per label"
            )
    return None


def _metrics_problem(Y_test, scores, Y_pred, metrics) -> str | None:
    try:
        evaluate_scores(Y_test, scores, np.asarray(Y_pred), metrics, {})
    except Exception as exc:
        return f"its predictions cannot be scored ({type(exc).__name__}: {exc})"
    return None
