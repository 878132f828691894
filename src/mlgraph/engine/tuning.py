"""Nested hyper-parameter selection inside each trial (``tuning=inner``).

Within every trial, before the method is fitted on the trial's training part, its
hyper-parameters are chosen over the grid declared in the method config's ``search`` block
(``search: {gamma_A: [...], gamma_I: [...], sigma_scale: [...]}``) by an inner cross-validation
that sees the trial's **labelled training rows only**:

1. The labelled training rows are cut into ``tuning.folds`` folds (``tuning.stratify``:
   iterative stratification of their labels, or shuffled), seeded by (seed, rate, repetition).
2. For every grid point and fold the method is fitted on all training rows with the fold's
   labels hidden (its rows become −1, unlabelled), so a semi-supervised method still uses every
   unlabelled training row, a transductive one propagates over the training rows only, and a
   supervised one drops the hidden rows as it drops every −1 row. Test rows are never part of
   an inner fit, not even as unlabelled rows.
3. The fold's rows are scored by ``tuning.metric`` (any metric of :mod:`mlgraph.evaluation.metrics`, its
   direction known; average precision by default), with the run's metric options; the grid
   point with the best mean over folds wins, ties to the earlier point in the order of the
   ``search`` lists.
4. The method is refitted with the winning values on the whole training part (as a plain trial
   is fitted) and scores the test rows.

Rules for degenerate folds (one warning per run, before any trial, names how many trials and
labels): an inner fold whose labelled training rows hold no positive of some label is used as
it is (the method sees that label as never relevant there, as it would with so few labels
in a plain trial); a fold on which the metric is undefined (NaN: e.g. average precision when no
validation row has a relevant label) is left out of every grid point's mean alike; when it is
undefined on every fold, the configured values are kept (``tuning_fallback`` = 1 in the row). An
inner fit that raises (e.g. MLkNN with k above the labelled rows of an inner fold at 5 %
labelled) scores NaN for that grid point and fold, like an undefined metric; the row counts
them (``tuning_failed_fits``, ``tuning_first_failure``).

Shared work: every inner fit of a trial uses the same training rows, so an estimator with a
``memory`` parameter gets one :class:`mlgraph.graphs.cache.SharedWork` store per trial: distances, σ,
graphs and (ML-MR, ML-MRRW) each σ's kernel are computed once for all grid points, folds and
the refit. Grid points are visited in the order of the ``search`` lists (first key slowest),
folds innermost, so put the parameters that change the graph or kernel (``sigma_scale``, ``k``)
first. What stays per grid point and fold is the solve itself (one factorisation of Eq. 19 for
ML-MR/ML-MRRW, one propagation for ML-GFHF/ML-LGC).

Logged per trial: ``tuned_<param>`` (the chosen value), ``tuning_score`` (its inner mean),
``tuning_fits`` and ``tuning_seconds``; per run (:func:`log_choices`): ``tuned_values.csv``
(how often each value was chosen, per labelling rate), ``tuned_values.png`` and the tags
``tuned.<param>`` (value×count over all trials) and ``tuning``.
"""

from __future__ import annotations

import itertools
import logging
import time
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from omegaconf import DictConfig, OmegaConf
from sklearn.base import clone

from mlgraph.evaluation.metrics import METRICS
from mlgraph.evaluation.protocols import STRATIFY, Trial, cross_validation_trials, rate_step
from mlgraph.graphs.cache import SharedWork

log = logging.getLogger(__name__)

# Keys of a method config that are not constructor parameters of its estimator.
NON_PARAMETER_KEYS = ("name", "search", "semi_supervised")
KINDS = ("none", "inner")
_SALT = 7717  # inner folds' seed stream, apart from the protocol's (seed, rate, repetition)


class TuningError(ValueError):
    """A tuning config that cannot run; raised before any trial, one paragraph."""


def _param_key(estimator, name: str) -> str | None:
    """The ``set_params`` key of method parameter ``name`` in ``estimator``: the estimator's
    own, or its final step's (``classify__``), or a wrapped estimator's (``estimator__``)."""
    keys = estimator.get_params(deep=True)
    for prefix in ("", "classify__", "classify__estimator__", "estimator__"):
        if prefix + name in keys:
            return prefix + name
    return None


def _values(name: str, values) -> tuple:
    if isinstance(values, (str, bytes)) or not isinstance(values, (list, tuple)):
        raise TuningError(
            f"method.search.{name}={values!r} is not valid: each entry of method.search must be a "
            f"non-empty list of values to try, e.g. method.search.{name}=[0.1,1,10]."
        )
    if not values:
        raise TuningError(
            f"method.search.{name}=[] is an empty grid: give at least one value (a list such as "
            f"[0.1,1,10]), or remove {name} from method.search."
        )
    return tuple(values)


@dataclass(frozen=True)
class InnerSelection:
    """The nested selection of one run: grid, folds, metric and the keys to set them."""

    space: Mapping[str, tuple]  # method parameter -> values, in declaration order
    keys: Mapping[str, str]  # method parameter -> set_params key in the run's estimator
    folds: int = 3
    metric: str = "avg_precision"
    stratify: str = "iterative"
    seed: int = 0
    evaluation: Mapping = field(default_factory=dict)
    memory_key: str | None = None  # set_params key of the estimator's `memory`, if it has one

    @property
    def points(self) -> list[dict]:
        """Every grid point, first parameter slowest (:func:`itertools.product` order)."""
        names = list(self.space)
        return [dict(zip(names, combo, strict=True)) for combo in itertools.product(*self.space.values())]

    def inner_folds(self, Y_train: np.ndarray, rate: float, repetition: int) -> list[Trial]:
        """Folds over the labelled rows of ``Y_train`` (indices into the training rows): each
        Trial's ``train`` are the labelled rows kept, ``test`` the fold's validation rows."""
        labelled = np.flatnonzero(~(Y_train == -1).all(axis=1))
        seed = int(
            np.random.SeedSequence([self.seed, rate_step(rate), repetition, _SALT]).generate_state(1)[0]
        )
        with warnings.catch_warnings():  # iterstrat warns when a label is rarer than the folds
            warnings.simplefilter("ignore")
            folds = cross_validation_trials(
                len(labelled), folds=self.folds, seed=seed, stratify=self.stratify, Y=Y_train[labelled]
            )
        return [Trial(rate, f.repetition, labelled[f.train], labelled[f.test], f.labelled) for f in folds]

    def _fold_score(self, model, X, Y_train, fold: Trial) -> float:
        from mlgraph.engine.runner import evaluate_scores, label_scores

        hidden = Y_train.copy()
        hidden[fold.test] = -1
        model.fit(X, hidden)
        if getattr(model, "transductive", False):
            scores, Y_pred = model.label_scores_[fold.test], model.transduction_[fold.test]
        else:
            X_val = X[fold.test]
            scores = label_scores(model, X_val)[0] if METRICS[self.metric].kind == "scores" else None
            from_scores = getattr(model, "predict_from_scores", None)
            Y_pred = from_scores(scores) if scores is not None and from_scores else model.predict(X_val)
        options = {**self.evaluation, "diagnostics": False}
        return float(
            evaluate_scores(Y_train[fold.test], scores, np.asarray(Y_pred), [self.metric], options)[
                self.metric
            ]
        )

    def select(self, estimator, X, Y_train: np.ndarray, trial: Trial) -> tuple[object, dict]:
        """Choose the grid point on ``trial``'s labelled training rows (``X``, ``Y_train`` with
        −1 rows are the trial's training part); return the estimator set to it (to be fitted
        on the whole training part) and the row's ``tuned_*`` columns."""
        started = time.perf_counter()
        folds = self.inner_folds(Y_train, trial.rate, trial.repetition)
        points = self.points
        store = SharedWork(folder=estimator.get_params()[self.memory_key]) if self.memory_key else None
        scores = np.full((len(points), len(folds)), np.nan)
        failed: list[str] = []  # (point, fold) fits that raised: scored NaN, as an undefined metric
        for i, point in enumerate(points):
            model = clone(estimator).set_params(**{self.keys[p]: v for p, v in point.items()})
            if store is not None:
                model.set_params(**{self.memory_key: store})
            for j, fold in enumerate(folds):
                try:
                    scores[i, j] = self._fold_score(model, X, Y_train, fold)
                except Exception as exc:  # e.g. MLkNN's k above an inner fold's labelled rows
                    failed.append(f"{point}: {type(exc).__name__}: {exc}")
        usable = ~np.isnan(scores).all(axis=0)  # a fold undefined for every point says nothing
        means = np.full(len(points), np.nan)
        if usable.any():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # a point undefined on every fold
                means = np.nanmean(scores[:, usable], axis=1)
        sign = 1.0 if METRICS[self.metric].greater_is_better else -1.0
        fallback = bool(np.isnan(means).all())
        if fallback:
            chosen = {p: estimator.get_params()[self.keys[p]] for p in self.space}
        else:
            chosen = points[int(np.nanargmax(sign * means))]  # ties: the first in grid order
        tuned = clone(estimator).set_params(**{self.keys[p]: v for p, v in chosen.items()})
        if store is not None:  # the refit on the same training rows reads the shared work too
            tuned.set_params(**{self.memory_key: store})
        row = {f"tuned_{p}": v for p, v in chosen.items()}
        row.update(
            tuning_score=float("nan") if fallback else float(np.nanmax(sign * means) * sign),
            tuning_fallback=int(fallback),
            tuning_fits=len(points) * len(folds),
            tuning_failed_fits=len(failed),
            tuning_first_failure=failed[0][:500] if failed else "",
            tuning_seconds=time.perf_counter() - started,
        )
        return tuned, row

    def describe(self) -> str:
        return (
            f"inner {self.folds}-fold selection over {len(self.points)} grid points "
            f"({', '.join(f'{p}: {len(v)}' for p, v in self.space.items())}) by {self.metric}, "
            f"on each trial's labelled training rows"
        )


def inner_selection(
    cfg: DictConfig, estimator, trials: list[Trial], Y, evaluation: Mapping
) -> InnerSelection | None:
    """The run's :class:`InnerSelection` (None for ``tuning=none``), every key checked before
    any trial runs (:class:`TuningError`, naming the key and what is allowed); warns once about
    inner folds in which some label has no positive."""
    tuning = cfg.get("tuning") or {"kind": "none"}
    kind = tuning.get("kind", "none")
    if kind not in KINDS:
        raise TuningError(f"tuning.kind={kind!r} is not valid: it must be none or inner (tuning=none|inner).")
    if kind == "none":
        return None
    method = cfg.method.get("name", "?")
    search = cfg.method.get("search")
    search = OmegaConf.to_container(search, resolve=True) if OmegaConf.is_config(search) else search
    if not search:
        raise TuningError(
            f"tuning=inner needs a search space: method {method} has no method.search (or an empty "
            "one). Declare it in the method's YAML, a list of values per constructor parameter, e.g. "
            "search: {gamma_A: [0.001, 0.01, 0.1], sigma_scale: [0.5, 1]}, or on the command line "
            "as method.search.<param>=[...]."
        )
    if not isinstance(search, Mapping):
        raise TuningError(
            f"method.search={search!r} is not valid: it must map parameter names to lists of values."
        )
    space = {name: _values(name, values) for name, values in search.items()}
    keys = {}
    for name in space:
        key = _param_key(estimator, name)
        if key is None:
            final = estimator.steps[-1][1] if hasattr(estimator, "steps") else estimator
            inner = getattr(final, "estimator", final)
            allowed = sorted(inner.get_params(deep=False))
            raise TuningError(
                f"method.search.{name}: {type(inner).__name__} (method {method}) has no parameter "
                f"{name!r}; a search space may name its constructor parameters: {', '.join(allowed)}."
            )
        keys[name] = key
    folds, metric, stratify = (
        tuning.get("folds", 3),
        tuning.get("metric", "avg_precision"),
        tuning.get("stratify", "iterative"),
    )
    if isinstance(folds, bool) or not isinstance(folds, int) or folds < 2:
        raise TuningError(f"tuning.folds={folds!r} is not valid: it must be an integer of at least 2.")
    if metric not in METRICS:
        raise TuningError(f"tuning.metric={metric!r} is not valid: it must be one of {', '.join(METRICS)}.")
    if stratify not in STRATIFY:
        raise TuningError(
            f"tuning.stratify={stratify!r} is not valid: it must be one of {', '.join(STRATIFY)}."
        )
    if METRICS[metric].kind == "scores" and not any(
        hasattr(estimator, m) for m in ("decision_function", "predict_proba")
    ):
        raise TuningError(
            f"tuning.metric={metric} ranks labels by scores, and {type(estimator).__name__} (method "
            f"{method}) has neither decision_function nor predict_proba: choose a metric of its "
            f"predictions ({', '.join(m for m, s in METRICS.items() if s.kind == 'pred')})."
        )
    selection = InnerSelection(
        space=space,
        keys=keys,
        folds=folds,
        metric=metric,
        stratify=stratify,
        seed=int(cfg.seed),
        evaluation=dict(evaluation),
        memory_key=_param_key(estimator, "memory"),
    )
    _check_trials(selection, trials, np.asarray(Y))
    return selection


def _check_trials(selection: InnerSelection, trials: list[Trial], Y: np.ndarray) -> None:
    """Every trial has enough labelled rows for the folds (else TuningError); one warning for
    inner folds whose labelled training rows lack a positive of some label (the module's rule)."""
    affected, worst = 0, 0
    for trial in trials:
        Y_train = trial.targets(Y)
        n_labelled = int(trial.labelled.sum())
        if n_labelled < selection.folds:
            raise TuningError(
                f"tuning.folds={selection.folds} needs at least {selection.folds} labelled training rows "
                f"in every trial; the trial at rate {trial.rate:g}, repetition {trial.repetition} has "
                f"{n_labelled}. Use fewer folds (tuning.folds=2) or higher labelling rates."
            )
        missing = [
            int((Y_train[fold.train].sum(axis=0) == 0).sum())
            for fold in selection.inner_folds(Y_train, trial.rate, trial.repetition)
        ]
        if max(missing):
            affected, worst = affected + 1, max(worst, max(missing))
    if affected:
        log.warning(
            "tuning: in %d of %d trials an inner fold's labelled training rows hold no positive of "
            "some label (up to %d labels). Rule: the fold is used as it is (the method sees those "
            "labels as never relevant there); folds where %s is undefined are left out of every grid "
            "point's mean alike, and a trial where it is undefined on every fold keeps the configured "
            "values (tuning_fallback = 1).",
            affected,
            len(trials),
            worst,
            selection.metric,
        )


def choice_counts(table: pd.DataFrame) -> pd.DataFrame:
    """How often each value of each tuned parameter was chosen, per labelling rate and overall
    (``rate`` = "all"): columns parameter, value, rate, count, share."""
    ok = table[table.status == "ok"] if "status" in table else table
    rows = []
    for column in (c for c in ok.columns if c.startswith("tuned_")):
        param = column.removeprefix("tuned_")
        for rate, group in [*ok.groupby("rate"), ("all", ok)]:
            counts = group[column].astype(str).value_counts()
            for value, count in counts.items():
                rows.append(
                    {
                        "parameter": param,
                        "value": value,
                        "rate": rate,
                        "count": int(count),
                        "share": count / len(group),
                    }
                )
    return pd.DataFrame(rows, columns=["parameter", "value", "rate", "count", "share"])


def _value_order(values) -> list:
    try:
        return sorted(values, key=float)
    except ValueError:
        return sorted(values)


def plot_choices(counts: pd.DataFrame, title: str):
    """One panel per tuned parameter: how often each value was chosen, a bar per labelling rate."""
    import matplotlib.pyplot as plt

    params = list(dict.fromkeys(counts.parameter))
    fig, axes = plt.subplots(1, len(params), figsize=(4.2 * len(params), 3.4), squeeze=False)
    for ax, param in zip(axes[0], params, strict=True):
        part = counts[(counts.parameter == param) & (counts.rate != "all")]
        wide = part.pivot_table(index="value", columns="rate", values="count", fill_value=0)
        wide = wide.reindex(_value_order(wide.index))
        wide.columns = [f"{100 * float(r):g} %" for r in wide.columns]
        wide.plot.bar(ax=ax, legend=False, width=0.85)
        ax.set_title(param)
        ax.set_xlabel("chosen value")
        ax.set_ylabel("trials")
    axes[0][-1].legend(title="labelled", fontsize="small", ncol=2)
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def log_choices(table: pd.DataFrame, run_dir: Path, title: str) -> tuple[list[Path], dict[str, str]]:
    """Write ``tuned_values.csv`` and the figure ``tuned_values`` (PNG, SVG, PDF) into ``run_dir``;
    return their paths and the run's ``tuned.<param>`` tags (``value×count`` over all trials). Nothing for a
    run without tuned columns."""
    counts = choice_counts(table)
    if counts.empty:
        return [], {}
    from mlgraph.evaluation.figures import save_figure

    counts.to_csv(run_dir / "tuned_values.csv", index=False)
    figures = save_figure(plot_choices(counts, title), run_dir / "tuned_values.png")
    overall = counts[counts.rate == "all"]
    tags = {
        f"tuned.{param}": " ".join(
            f"{v}×{c}" for v, c in sorted(zip(g.value, g["count"], strict=True), key=lambda vc: -vc[1])
        )[:5000]
        for param, g in overall.groupby("parameter", sort=False)
    }
    return [run_dir / "tuned_values.csv", *figures], tags
