"""The memory a job's largest trial needs, estimated from its built plan before anything runs,
for the methods whose memory grows faster than their data, and the check that turns an estimate
above a budget into one :class:`~mlgraph.engine.checks.ConfigError` paragraph ("needs ~N GB").

The estimates are the dense matrices each fit holds, with the factors measured or stated in the
estimators' own documentation (n: the rows the fit sees; 8 bytes per float64 entry):

- ML-MR / ML-MRRW, ``solver=exact``: the distances that become the kernel and the system of
  Eq. 19, 1.75 n×n float64 with ``precision=mixed`` and 2.3 with ``double`` (measured 1.63–2.04
  and 2.12–2.30 from 8,000 down to 1,611 rows, 5.0 GB = 1.72 n×n at 19,064: the *Performance*
  page); ``solver=nystrom``: the n × m landmark kernel (float32 above 2²⁸ entries), 1.5 times,
  and the features.
- ML²: the n×n kernel, plus for n ≤ 6,000 the QP's dense M and its lifted inverse with their
  float32 copies (about 4 n×n in all), else the kernel and one IRWLS factor (2 n×n).
- RankSVM: the n×n kernel of the training rows.
- SSWL: C_M, E_M and the two float32 systems of (labels × (features + 1))² entries each.
- scikit-multilearn's SMiLE: seven n×n float64 matrices (its graph, degree, Laplacian, the two
  label-indicator matrices and the temporaries of its normal equations).

Methods not listed hold no matrix that grows faster than n·(features + labels) and are never
refused. The budget is per job: what one job may use while the launcher's other jobs run beside it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from sklearn.pipeline import Pipeline

from mlgraph.engine.checks import ConfigError
from mlgraph.methods import ML2, MLMR, MLMRRW, SSWL, RankSVM
from mlgraph.methods.skmultilearn import SkmlSMiLE

GB = 1e9


def gigabytes(n_bytes: float) -> str:
    """``n_bytes`` in GB as a message says it: 1,365 · 5.9 · 0.0022."""
    gb = n_bytes / GB
    return f"{gb:,.0f}" if gb >= 10 else f"{gb:.1f}" if gb >= 0.1 else f"{gb:.2g}"


@dataclass(frozen=True)
class Estimate:
    """``bytes`` a fit of ``rows`` rows needs, ``what`` holds them and what would need ``less``
    (for the message)."""

    bytes: float
    rows: int
    what: str
    less: str


def _final(estimator):
    final = estimator.steps[-1][1] if isinstance(estimator, Pipeline) else estimator
    return getattr(final, "estimator", final)  # DualSetFromMultiLabel, LabelledOnly


def _manifold(est, n: int, d: int, q: int) -> tuple[float, str]:
    if est.solver == "nystrom":
        m = min(int(est.n_landmarks), n)
        width = 4 if n * m > 2**28 else 8
        return 1.5 * n * m * width + 8.0 * n * d, f"the n × {m} Nyström kernel"
    factor = 2.3 if est.precision == "double" else 1.75
    return factor * 8.0 * n * n, f"the exact solver's n×n kernel and Eq. 19 system ({factor} n×n float64)"


def _ml2(est, n: int, d: int, q: int) -> tuple[float, str]:
    factor = 4 if n <= 6000 else 2
    return factor * 8.0 * n * n, f"the n×n kernel and the QP's dense matrices ({factor} n×n float64)"


def _ranksvm(est, n: int, d: int, q: int) -> tuple[float, str]:
    return 8.0 * n * n, "the n×n kernel of the training rows"


def _sswl(est, n: int, d: int, q: int) -> tuple[float, str]:
    side = q * (min(d, n) + 1)
    return 4 * 4.0 * side * side, f"four float32 systems of (labels × (features + 1))² = {side:,}² entries"


def _smile(est, n: int, d: int, q: int) -> tuple[float, str]:
    return 7 * 8.0 * n * n, "seven n×n float64 matrices"


ROWS = "fewer rows (dataset.subsample, protocol.test_size)"
# estimator class: (its estimate, whether the fit sees every training row or the labelled ones
# only, what makes it need less)
ESTIMATES = {
    MLMR: (_manifold, "train", ROWS),
    MLMRRW: (_manifold, "train", ROWS),
    ML2: (_ml2, "labelled", ROWS),
    RankSVM: (_ranksvm, "labelled", ROWS),
    SSWL: (_sswl, "train", "fewer features (a feature selector: selector=gmba selector.fraction=0.1)"),
    SkmlSMiLE: (_smile, "train", ROWS),
}


def estimate(plan) -> Estimate | None:
    """The memory of the largest trial of a built :class:`~mlgraph.engine.plan.Plan` (None for a
    method not in :data:`ESTIMATES`)."""
    est = _final(plan.estimator)
    found = next((entry for cls, entry in ESTIMATES.items() if isinstance(est, cls)), None)
    if found is None or not plan.trials:
        return None
    rule, rows, less = found
    n = max(int(t.labelled.sum()) if rows == "labelled" else len(t.train) for t in plan.trials)
    q = plan.data.Y.shape[1]
    needed, what = rule(est, n, int(plan.data.n_features), q)
    return Estimate(needed, n, what, less)


def machine_budget(jobs_at_once: int = 1) -> float:
    """Bytes one job may use here: 80 % of this machine's physical memory, shared by the jobs
    that run at once."""
    physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return 0.8 * physical / max(1, jobs_at_once)


def check_memory(cfg, plan, budget: float) -> Estimate | None:
    """:class:`~mlgraph.engine.checks.ConfigError` when the estimate exceeds ``budget`` bytes,
    naming the method, the data set, the rows, what holds the memory and the settings that
    need less; the estimate otherwise (None: no estimate for this method)."""
    found = estimate(plan)
    if found is None or found.bytes <= budget:
        return found
    method, dataset = cfg.method.get("name"), cfg.dataset.get("name")
    scalable = isinstance(_final(plan.estimator), MLMR | MLMRRW) and _final(plan.estimator).solver == "exact"
    raise ConfigError(
        f"method {method} on dataset {dataset} needs ~{gigabytes(found.bytes)} GB for {found.rows:,} rows "
        f"({found.what}), more than the {gigabytes(budget)} GB one job may use here. "
        + (
            "Its scalable settings need far less: method.solver=nystrom graph.search=approximate. "
            if scalable
            else ""
        )
        + f"Use {found.less} or a machine with more memory."
    )
