"""``make bench``: speed and overhead as ratios against references measured in the same run.

    python benchmarks/bench.py                 # all benchmarks (= make bench)
    python benchmarks/bench.py --only arff     # those whose name contains "arff"

Each benchmark returns rows (what, measured, reference, ratio, target); timings are the best
of a few repeats, so the ratios are stable on a busy machine. Nothing here is a test: targets
are printed with the result, never asserted.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import io
import itertools
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from mlgraph.cli import settle_blas_threads

settle_blas_threads()  # as the commands do, before numpy loads

import numpy as np  # noqa: E402
import scipy.linalg  # noqa: E402

from mlgraph.data import find_file, load_dataset, read_arff

ROOT = Path(__file__).resolve().parents[1]  # the checkout: conf/, src/run.py, git history


def best_time(fn: Callable[[], object], repeats: int = 3) -> float:
    """Best wall time of ``repeats`` calls."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


# --- ML-MRRW (paper 000) -------------------------------------------------------------------

_MLMRRW_THREADS = 2  # BLAS threads of the targets' measurements (a 2-core machine)
_SETTLE = 0.3  # s of idle before each interleaved timing (see _interleaved)


def _split(X, Y, n_train: int, n_test: int, seed: int = 0):
    """Random n_train / n_test rows of (X, Y), half of the training rows unlabelled (−1)."""
    rng = np.random.default_rng(seed)
    order = rng.permutation(X.shape[0])
    train, test = order[:n_train], order[n_train : n_train + n_test]
    Y_train = Y[train].astype(np.int8)
    Y_train[rng.random(n_train) < 0.5] = -1
    return X[train], Y_train, X[test], Y[test]


def _mlmrrw_problems():
    """(name, params, X_train, Y_train, X_test, Y_test): yeast's 2/3 training split at rate 0.5
    (n = 1,611; its tuned hyper-parameters) and tmc2007-500 subsets of n = 4,000 and 8,000
    training and n/2 test rows (method defaults)."""
    from mlgraph.evaluation.protocols import labelling_rate_trials
    from mlgraph.methods.base import dense

    yeast = load_dataset("yeast", "yeast.arff.gz", "yeast.xml")
    trial = labelling_rate_trials(yeast.n_samples, rates=[0.5], repeats=1, seed=0)[0]
    yield (
        "yeast",
        {"gamma_A": 1e-3, "gamma_I": 10.0, "sigma_scale": 0.35},
        yeast.X[trial.train],
        trial.targets(yeast.Y),
        yeast.X[trial.test],
        yeast.Y[trial.test],
    )
    tmc = load_dataset("tmc2007-500", "tmc2007-500.arff.gz", "tmc2007-500.xml")
    for n in (4000, 8000):
        yield ("tmc2007-500", {}, *_split(dense(tmc.X), tmc.Y, n, n // 2))


def _interleaved(fns: dict[str, Callable[[], object]], repeats: int) -> dict[str, tuple[float, float]]:
    """Run the functions in turn, ``repeats`` rounds: per function the best wall time and the
    CPU use over all rounds (process CPU time ÷ wall time ÷ BLAS threads). Each call starts
    after a pause of ``_SETTLE`` s, untimed, so that it does not share the cores with the
    OpenBLAS workers of the call before, which spin for about 0.1 s after it returns."""
    wall = {name: [] for name in fns}
    cpu = dict.fromkeys(fns, 0.0)
    for _ in range(repeats):
        for name, fn in fns.items():
            time.sleep(_SETTLE)
            c0, t0 = time.process_time(), time.perf_counter()
            fn()
            wall[name].append(time.perf_counter() - t0)
            cpu[name] += time.process_time() - c0
    return {name: (min(wall[name]), cpu[name] / sum(wall[name]) / _MLMRRW_THREADS) for name in fns}


def _bare_lu(n: int, q: int, dtype) -> tuple[Callable[[], None], Callable[[], object]]:
    """(prepare, run): the bare floor of an n×n solve with q right-hand sides in ``dtype``:
    ``prepare`` copies a well-conditioned matrix into a Fortran-ordered buffer (untimed),
    ``run`` factorises it in place (``lu_factor(overwrite_a=True)``) and solves (``lu_solve``)."""
    rng = np.random.default_rng(0)
    A = (rng.normal(size=(n, n)) + n * np.eye(n)).astype(dtype)
    B = rng.normal(size=(n, q)).astype(dtype)
    held = {}

    def prepare() -> None:
        held.pop("A", None)
        held["A"] = np.asfortranarray(A)

    def run():
        factor = scipy.linalg.lu_factor(held["A"], overwrite_a=True, check_finite=False)
        return scipy.linalg.lu_solve(factor, B, check_finite=False)

    return prepare, run


class _Stages:
    """Wall time of each stage of one ML-MRRW fit + scores: the module functions the exact
    solver calls, wrapped for the duration (:meth:`timed`)."""

    NAMES = {
        "distances": "training distances (Gram product, norms, mirror)",
        "graph": "σ and the kNN graph",
        "system_rows": "M = Ψ + (lγ_I/n²) L",
        "assembly": "the float32 system, the kernel's exp fused",
        "factorise": "float32 LU",
        "solves": "the refinement's triangular solves",
        "products": "the refinement's products with K",
        "scores": "scores: test kernel and product",
    }

    def __init__(self):
        self.seconds = dict.fromkeys(self.NAMES, 0.0)
        self.scoring = False  # the scores' own product is part of "scores"

    def _wrap(self, stage: str, fn: Callable) -> Callable:
        def timed(*args, **kwargs):
            if stage == "products" and self.scoring:
                return fn(*args, **kwargs)
            self.scoring |= stage == "scores"
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.seconds[stage] += time.perf_counter() - start
                self.scoring &= stage != "scores"

        return timed

    @contextlib.contextmanager
    def timed(self):
        from unittest import mock

        import mlgraph.methods.manifold as manifold

        cls = manifold._ManifoldRegularization
        with contextlib.ExitStack() as stack:
            for stage, owner, name in (
                ("distances", manifold, "squared_distances"),
                ("graph", cls, "_graph"),
                ("system_rows", cls, "_system_rows"),
                ("assembly", manifold, "_eq19"),
                ("factorise", scipy.linalg, "lu_factor"),
                ("solves", scipy.linalg, "lu_solve"),
                ("products", manifold, "matmul"),
                ("scores", cls, "decision_function"),
            ):
                stack.enter_context(mock.patch.object(owner, name, self._wrap(stage, getattr(owner, name))))
            yield self


def _stage_bounds(model, X_train, X_test, steps: int) -> dict[str, float]:
    """Each stage's floor on this machine, at the same threads: the Gram products alone for the
    distances and the scores (numpy's ``X Xᵀ`` and ``X_test Xᵀ``); one threaded read of the n×n
    float64 matrix for σ and the graph; for the fused assembly one threaded pass that reads it
    and writes it (the exp) and one that writes the float32 copy; for the solves, ``steps + 1``
    reads of the float32 factor; for the products, ``steps`` reads of K (q = 22 columns, memory-
    bound)."""
    from mlgraph.graphs.kernels import row_blocks

    Xs = (X_train - model.mean_) / model.scale_
    Xt = (X_test - model.mean_) / model.scale_
    n = Xs.shape[0]
    K = np.ones((n, n))
    A = np.ones((n, n), np.float32)
    sink = np.zeros(n)

    def read(M):
        def pass_(rows):
            sink[rows.start] = M[rows].max()

        return lambda: row_blocks(n, pass_, n)

    def exp_pass(rows):
        np.exp(K[rows], out=K[rows])

    def cast_pass(rows):
        A[rows] = K[rows]

    def timed(fn) -> float:
        start = time.perf_counter()
        fn()
        return time.perf_counter() - start

    read64, read32 = timed(read(K)), timed(read(A))
    return {
        "distances": timed(lambda: Xs @ Xs.T),
        "graph": read64,
        "assembly": timed(lambda: row_blocks(n, exp_pass, n)) + timed(lambda: row_blocks(n, cast_pass, n)),
        "solves": (steps + 1) * read32,
        "products": steps * read64,
        "scores": timed(lambda: Xt @ Xs.T),
    }


def _cpu_and_blas() -> str:
    """The CPU model (with family and model numbers, which name a generation where the model
    name is hidden) and each BLAS library's kernel, version and threads (threadpoolctl)."""
    import platform

    from threadpoolctl import threadpool_info

    info = {}
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            info.setdefault(key.strip(), value.strip())
    cpu = info.get("model name") or platform.processor() or platform.machine()
    if "cpu family" in info:
        cpu += f" (family {info['cpu family']}, model {info.get('model', '?')})"
    flags = info.get("flags", "").split()
    cpu += ", " + ("AVX-512" if "avx512f" in flags else "AVX2" if "avx2" in flags else "no AVX2")
    blas = "; ".join(
        f"{Path(lib['filepath']).name.split('-')[0]} {lib.get('version')} {lib.get('architecture')} "
        f"kernel, {lib['num_threads']} threads"
        for lib in threadpool_info()
        if lib["user_api"] == "blas"
    )
    import os

    return f"{cpu}; {os.cpu_count()} CPUs; BLAS: {blas}"


def bench_mlmrrw_vs_lu(repeats: int = 5) -> list[tuple]:
    """ML-MRRW fit + scores (fit, decision_function, predictions by thresholding the scores:
    everything the user waits for), exact solver, against the bare floor of its factorisation:
    an in-place float32 LU of the same n with q right-hand sides (``lu_factor(overwrite_a=True)``
    of a Fortran-ordered copy made before the timer, and ``lu_solve``), and the same in float64;
    at n = 1,611 (yeast's training split, its tuned hyper-parameters) and 4,000 and 8,000
    (tmc2007-500 subsets, method defaults), 2 BLAS threads; fit, ``precision="double"`` and both
    LUs interleaved in one process, ``repeats`` each (3 at 8,000), best of each. Targets: ≤ 2.0×
    the float32 LU at 4,000, ≤ 1.5× at 8,000, ≤ 2× the float64 LU on yeast.

    Then each stage of the best fit against its own floor (:func:`_stage_bounds`) and the peak
    traced memory of a fit and of fit + scores, in n×n float64 matrices. The fits run within
    ``kept_buffers`` as a job's trials do (each after the first reuses the n×n buffers)."""
    from threadpoolctl import threadpool_limits

    from mlgraph.graphs.kernels import kept_buffers
    from mlgraph.methods import MLMRRW

    rows = []
    for name, params, X_train, Y_train, X_test, _ in _mlmrrw_problems():
        n, q = Y_train.shape
        model, model_double = MLMRRW(**params), MLMRRW(precision="double", **params)
        lu32, lu64 = _bare_lu(n, q, np.float32), _bare_lu(n, q, np.float64)
        best: dict = {}

        def staged():
            with _Stages().timed() as stages:
                start = time.perf_counter()
                scores = model.fit(X_train, Y_train).decision_function(X_test)
                total = time.perf_counter() - start
            if "stages" not in best or total < best["total"]:
                best.update(total=total, stages=dict(stages.seconds))
            return scores, scores > 0

        def double():
            scores = model_double.fit(X_train, Y_train).decision_function(X_test)
            return scores, scores > 0

        with threadpool_limits(_MLMRRW_THREADS), kept_buffers():
            times = {key: [] for key in ("fit", "double", "lu32", "lu64")}
            for _ in range(repeats if n < 5000 else 3):
                for key, (prepare, run) in {
                    "fit": (None, staged),
                    "double": (None, double),
                    "lu32": lu32,
                    "lu64": lu64,
                }.items():
                    if prepare is not None:
                        prepare()
                    time.sleep(_SETTLE)
                    start = time.perf_counter()
                    run()
                    times[key].append(time.perf_counter() - start)
            t = {key: min(v) for key, v in times.items()}
            steps = model.solver_report_["refinement_steps"]
            found = [_stage_bounds(model, X_train, X_test, steps) for _ in range(3)]
            bounds = {stage: min(b[stage] for b in found) for stage in found[0]}
            bounds["factorise"] = t["lu32"]
        with threadpool_limits(_MLMRRW_THREADS):  # fresh buffers: the memory a single fit needs
            fit_peak = _time_and_peak(lambda: model.fit(X_train, Y_train))[1] / (8 * n * n)
            all_peak = _time_and_peak(lambda: staged())[1] / (8 * n * n)
        mixed, exact = model.decision_function(X_test), model_double.decision_function(X_test)
        gap = np.abs(mixed - exact).max() / np.abs(exact).max()
        goal32 = {4000: "≤ 2.0× float32 LU", 8000: "≤ 1.5× float32 LU"}.get(n, "")
        rows += [
            (
                f"ML-MRRW fit+scores {name} n={n} q={q} ÷ float32 LU",
                t["fit"],
                t["lu32"],
                t["fit"] / t["lu32"],
                goal32,
            ),
            (
                "  the same ÷ float64 LU",
                t["fit"],
                t["lu64"],
                t["fit"] / t["lu64"],
                "≤ 2× float64 LU" if name == "yeast" else "",
            ),
            (
                "  precision=double ÷ float64 LU",
                t["double"],
                t["lu64"],
                t["double"] / t["lu64"],
                f"scores differ from mixed by {gap:.0e} relative; {steps} corrections",
            ),
        ]
        stages = best["stages"]
        for stage, label in _Stages.NAMES.items():
            bound = bounds.get(stage)
            rows.append(
                (
                    f"  stage: {label}",
                    stages[stage],
                    bound if bound is not None else float("nan"),
                    stages[stage] / bound if bound else float("nan"),
                    "÷ its floor" if bound else f"{stages[stage] / best['total']:.0%} of the fit",
                )
            )
        floor = sum(bounds.values())  # the float32 LU and each stage at its own floor
        rows.append(
            (
                "  every stage at its floor ÷ float32 LU",
                floor,
                t["lu32"],
                floor / t["lu32"],
                "the least any fit of these stages can take",
            )
        )
        rows.append(
            (
                "  peak memory n×n float64: fit, fit+scores",
                fit_peak,
                all_peak,
                fit_peak / all_peak,
                "tracemalloc above what was allocated before",
            )
        )
    return rows


def bench_mlmrrw_nystrom() -> list[tuple]:
    """ML-MRRW ``solver="nystrom"`` (approximate, linear in n) against the exact solver on
    tmc2007-500 (method defaults, half of the training rows labelled, 2 BLAS threads): fit +
    scores time and the average-precision gap at n = 8,000 (test 4,000) for 1,000 and 2,000
    landmarks, k-means centres (the default) and random training points (goal: gap ≤ 0.005),
    then the Nyström solver alone (defaults) on the whole 2/3 training split (19,064 rows, test
    9,532; the exact solver needs 2 × 2.9 GB and minutes there): time and peak traced memory
    against one n×n matrix."""
    from threadpoolctl import threadpool_limits

    from mlgraph.evaluation.metrics import average_precision
    from mlgraph.methods import MLMRRW
    from mlgraph.methods.base import dense

    tmc = load_dataset("tmc2007-500", "tmc2007-500.arff.gz", "tmc2007-500.xml")
    X = dense(tmc.X)
    rows = []
    with threadpool_limits(_MLMRRW_THREADS):
        X_train, Y_train, X_test, Y_test = _split(X, tmc.Y, 8000, 4000)
        exact = MLMRRW()
        t_exact = best_time(lambda: exact.fit(X_train, Y_train).decision_function(X_test), 1)
        ap_exact = average_precision(Y_test, exact.decision_function(X_test))
        for rule, m in itertools.product(("kmeans", "random"), (1000, 2000)):
            nys = MLMRRW(solver="nystrom", n_landmarks=m, landmarks=rule)
            t_nys = best_time(lambda: nys.fit(X_train, Y_train).decision_function(X_test), 1)
            gap = ap_exact - average_precision(Y_test, nys.decision_function(X_test))
            rows.append(
                (
                    f"ML-MRRW nystrom {rule} m={m} tmc2007 n=8000",
                    t_nys,
                    t_exact,
                    t_nys / t_exact,
                    f"time; ref = exact. AP gap {gap:+.4f} (goal ≤ 0.005), exact AP {ap_exact:.4f}, "
                    f"residual {nys.solver_report_['residual']:.2g}",
                )
            )
        n_train = (2 * X.shape[0]) // 3
        X_train, Y_train, X_test, Y_test = _split(X, tmc.Y, n_train, X.shape[0] - n_train)
        nys = MLMRRW(solver="nystrom")
        t_nys, peak = _time_and_peak(lambda: nys.fit(X_train, Y_train).decision_function(X_test))
        ap = average_precision(Y_test, nys.decision_function(X_test))
        rows.append(
            (
                f"ML-MRRW nystrom kmeans m=1000 tmc2007 n={n_train} peak GiB",
                peak / 2**30,
                8 * n_train**2 / 2**30,
                peak / (8 * n_train**2),
                f"ref = one n×n matrix; {t_nys:.1f} s fit+scores, AP {ap:.4f}",
            )
        )
    return rows


def bench_mlmrrw_nystrom_100k() -> list[tuple]:
    """ML-MRRW ``solver="nystrom"`` (defaults: 1,000 k-means landmarks) on 100,000 synthetic training rows (20
    features: a mixture of 20 Gaussian clusters, 10 labels from noisy random hyperplanes, 10 %
    labelled) and 20,000 test rows: fit + scores time and peak traced memory against one n×n
    matrix (80 GB, which the exact solver would need twice). 2 BLAS threads."""
    from threadpoolctl import threadpool_limits

    from mlgraph.evaluation.metrics import average_precision
    from mlgraph.methods import MLMRRW

    rng = np.random.default_rng(0)
    n, n_test, d, q = 100_000, 20_000, 20, 10
    centres = 3.0 * rng.normal(size=(20, d))
    X = centres[rng.integers(0, 20, n + n_test)] + rng.normal(size=(n + n_test, d))
    Y = ((X @ rng.normal(size=(d, q)) + rng.normal(size=(n + n_test, q))) > 0).astype(np.int8)
    Y_train = Y[:n].copy()
    Y_train[rng.random(n) >= 0.1] = -1
    model = MLMRRW(solver="nystrom")
    with threadpool_limits(_MLMRRW_THREADS):
        t, peak = _time_and_peak(lambda: model.fit(X[:n], Y_train).decision_function(X[n:]))
    ap = average_precision(Y[n:], model.decision_function(X[n:]))
    return [
        (
            f"ML-MRRW nystrom kmeans m=1000 synthetic n={n} peak GiB",
            peak / 2**30,
            8 * n * n / 2**30,
            peak / (8 * n * n),
            f"ref = one n×n matrix; {t:.1f} s fit+scores, AP {ap:.4f}, "
            f"kernel trace error {model.solver_report_['kernel_trace_error']:.3f}",
        )
    ]


_NYSTROM_RUN = """
import json, sys, time
import numpy as np
from threadpoolctl import threadpool_limits
from mlgraph.methods import MLMRRW
from mlgraph.methods.manifold import _ManifoldRegularization
from mlgraph.evaluation.metrics import average_precision
n, n_test, search = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
rng = np.random.default_rng(0)                  # the clusters and labels of every size
d, q = 20, 10
centres, planes = 3.0 * rng.normal(size=(20, d)), rng.normal(size=(d, q))
rng = np.random.default_rng(n)
X = centres[rng.integers(0, 20, n + n_test)] + rng.normal(size=(n + n_test, d))
Y = ((X @ planes + rng.normal(size=(n + n_test, q))) > 0).astype(np.int8)
Y_train = Y[:n].copy()
Y_train[rng.random(n) >= 0.1] = -1
graph, seconds = _ManifoldRegularization._graph, {"graph": 0.0}
def timed_graph(self, *args):
    start = time.perf_counter()
    try:
        return graph(self, *args)
    finally:
        seconds["graph"] += time.perf_counter() - start
_ManifoldRegularization._graph = timed_graph
model = MLMRRW(solver="nystrom", knn_search=search)
with threadpool_limits(2):
    start = time.perf_counter()
    model.fit(X[:n], Y_train)
    fit = time.perf_counter() - start
    start = time.perf_counter()
    scores = model.decision_function(X[n:])
    predict = time.perf_counter() - start
import resource
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e9   # kB on Linux
print(json.dumps({"fit": fit, "scores": predict, "graph": seconds["graph"], "peak_gb": peak,
                  "ap": average_precision(Y[n:], scores), **model.graph_report_}))
"""


def _nystrom_run(n: int, n_test: int, search: str) -> dict:
    """:data:`_NYSTROM_RUN` in a fresh process: its times, average precision, recall, and its
    peak resident memory (the whole process: faiss's index and every library included)."""
    import json
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", _NYSTROM_RUN, str(n), str(n_test), search], capture_output=True, cwd=ROOT
    )
    if done.returncode:
        raise RuntimeError(f"n={n} {search}: {done.stderr.decode()[-2000:]}")
    return json.loads(done.stdout.decode().splitlines()[-1])


_NYSTROM_SIZES = (16_000, 32_000, 64_000, 128_000, 256_000, 512_000, 1_000_000)


def bench_nystrom_scaling(sizes: tuple[int, ...] = _NYSTROM_SIZES, n_test: int = 20_000) -> list[tuple]:
    """ML-MRRW ``solver="nystrom"`` (1,000 k-means landmarks) with ``graph.search=approximate``
    on synthetic data (20 features, a mixture of 20 Gaussian clusters, 10 labels from noisy
    hyperplanes, 10 % of the training rows labelled, ``n_test`` test rows) from 16,000 to
    1,000,000 training rows, each size in a fresh process, 2 BLAS threads: fit time (and of it
    the σ, neighbour search and graph), scores time, peak resident memory, the kNN recall, and
    the scaling exponent of the fit time from the previous size, log t₂/t₁ ÷ log n₂/n₁ (goal
    ≤ 1.1 throughout; 1,000,000 rows in ≤ 5 min and ≤ 8 GB). At 128,000 rows also the exact
    neighbour search (scikit-learn's), for the average-precision gap (goal ≤ 0.002). About
    15 minutes, most of it the largest sizes."""
    rows, previous = [], None
    for n in sizes:
        run = _nystrom_run(n, n_test, "approximate")
        slope = (
            np.log(run["fit"] / previous[1]) / np.log(n / previous[0])
            if previous is not None
            else float("nan")
        )
        rows.append(
            (
                f"ML-MRRW nystrom n={n:,} approximate graph: fit s",
                run["fit"],
                previous[1] if previous else float("nan"),
                slope,
                f"ratio = exponent from the previous size (≤ 1.1); graph {run['graph']:.1f} s, scores "
                f"{run['scores']:.1f} s, peak {run['peak_gb']:.2f} GB, recall {run['knn_recall']:.4f}, "
                f"AP {run['ap']:.4f}",
            )
        )
        previous = (n, run["fit"])
        if n == 128_000:
            exact = _nystrom_run(n, n_test, "exact")
            rows.append(
                (
                    f"  n={n:,} exact graph (scikit-learn): fit s, AP gap approximate − exact",
                    exact["fit"],
                    run["fit"],
                    run["ap"] - exact["ap"],
                    f"gap goal |·| ≤ 0.002; exact AP {exact['ap']:.4f}, graph {exact['graph']:.1f} s, "
                    f"peak {exact['peak_gb']:.2f} GB",
                )
            )
    first, last = rows[0][1], previous[1]
    rows.append(
        (
            f"fit time {sizes[0]:,} → {sizes[-1]:,} rows, overall exponent",
            last,
            first,
            np.log(last / first) / np.log(sizes[-1] / sizes[0]),
            "≤ 1.1; the last size in ≤ 300 s",
        )
    )
    return rows


def bench_arff_vs_liac() -> list[tuple]:
    """ARFF parsing of scene (dense) and bibtex (sparse) vs liac-arff on the same
    decompressed file (target ≥ 3× faster)."""
    import arff as liac

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in ("scene", "bibtex"):
            plain = Path(tmp) / f"{name}.arff"
            with gzip.open(find_file(f"{name}.arff.gz"), "rb") as src, plain.open("wb") as dst:
                shutil.copyfileobj(src, dst)
            sparse = name == "bibtex"
            t_ours = best_time(lambda: read_arff(plain))
            t_liac = best_time(
                lambda: liac.load(plain.open(), return_type=liac.COO if sparse else liac.DENSE), 2
            )
            rows.append(
                (
                    f"read_arff {name} ({'sparse' if sparse else 'dense'})",
                    t_ours,
                    t_liac,
                    t_liac / t_ours,
                    "≥ 3× faster than liac-arff",
                )
            )
    return rows


def bench_mlflow_overhead() -> list[tuple]:
    """MLflow logging time (params, tags, metrics, artifacts, figure) as a share of the trial
    time of the main job, ML-MRRW on yeast with the default protocol (target < 5 %)."""
    import mlflow
    from hydra import compose, initialize_config_dir

    from mlgraph.engine.experiment import run_experiment

    conf = ROOT / "conf"
    with tempfile.TemporaryDirectory() as tmp:
        uri = f"sqlite:///{tmp}/mlflow.db"
        with initialize_config_dir(version_base="1.3", config_dir=str(conf)):
            cfg = compose(
                "config",
                overrides=[
                    "method=mlmrrw",
                    "dataset=yeast",
                    "progress=false",
                    f"tracking.uri={uri}",
                    f"tracking.artifact_location={tmp}/art",
                ],
            )
        with contextlib.redirect_stdout(io.StringIO()):
            run_experiment(cfg, output_dir=tmp)
        client = mlflow.MlflowClient(uri)
        run = client.search_runs([client.get_experiment_by_name(cfg.tracking.experiment).experiment_id])[0]
        metrics = run.data.metrics
        spent, trials = metrics["run/logging_seconds"], metrics["run/trials_seconds"]
    return [("MLflow logging / trial time, yeast main job", spent, trials, spent / trials, "< 5 %")]


def bench_mlknn_vs_skmultilearn() -> list[tuple]:
    """MLkNN fit + scores + predictions on yeast and scene (2/3 train, 1/3 test, seed 0) vs
    scikit-multilearn's MLkNN(k=10, s=1.0) (``pip install scikit-multilearn-ng``) on the same
    arrays (target ≥ 30× faster), and the count of differing predictions (target 0). Features
    are z-scored with the training statistics beforehand; ours runs with standardize=False,
    self_neighbour=True, the reference's counting rule, and is called as the runner calls it
    (``decision_function``, then ``predict_from_scores``); the reference runs ``predict`` and
    ``predict_proba``. One BLAS thread, as in the runner; the two interleaved, best of 5 each.
    Also the floor of any brute-force search at that precision: its two float32 Gram products
    alone (training rows with themselves, test rows with training rows), interleaved with them,
    and the ratio the reference's time allows over it."""
    from threadpoolctl import threadpool_limits

    from mlgraph.methods.base import standardisation
    from mlgraph.methods.mlknn import MLkNN

    target = "≥ 30× faster than scikit-multilearn"
    try:
        from skmultilearn.adapt import MLkNN as ReferenceMLkNN
    except ImportError:
        ReferenceMLkNN = None
    rows = []
    for name in ("yeast", "scene"):
        data = load_dataset(name)
        order = np.random.default_rng(0).permutation(data.n_samples)
        n_train = (2 * data.n_samples) // 3
        train, test = order[:n_train], order[n_train:]
        mean, scale = standardisation(data.X[train])
        X_train, X_test = (data.X[train] - mean) / scale, (data.X[test] - mean) / scale
        Y_train = data.Y[train]
        what = f"MLkNN fit+scores+predict, {name} n={n_train} q={data.n_labels}"
        model = MLkNN(k=10, s=1.0, standardize=False, self_neighbour=True)

        def ours():
            model.fit(X_train, Y_train)
            scores = model.decision_function(X_test)
            return model.predict_from_scores(scores), scores

        with threadpool_limits(1):
            if ReferenceMLkNN is None:
                rows.append(
                    (
                        f"{what} (scikit-multilearn not installed)",
                        best_time(ours, 5),
                        float("nan"),
                        float("nan"),
                        target,
                    )
                )
                continue
            reference = ReferenceMLkNN(k=10, s=1.0)

            def theirs():
                reference.fit(X_train, Y_train)
                return reference.predict(X_test).toarray(), reference.predict_proba(X_test).toarray()

            B, Q = X_train.astype(np.float32), X_test.astype(np.float32)
            res = _interleaved({"ours": ours, "theirs": theirs, "grams": lambda: (B @ B.T, Q @ B.T)}, 5)
        t_ours, t_ref, t_grams = res["ours"][0], res["theirs"][0], res["grams"][0]
        (pred, score), (pred_ref, score_ref) = ours(), theirs()
        differ = int((pred != pred_ref).sum())
        gap = float(np.abs(score - score_ref).max())
        rows += [
            (what, t_ours, t_ref, t_ref / t_ours, target),
            (
                f"  floor: the two float32 Gram products, {name}",
                t_grams,
                t_ref,
                t_ref / t_grams,
                "the reference ÷ the floor: the most any brute-force search reaches",
            ),
            (
                f"MLkNN predictions differing, {name} (max |Δscore| {gap:.1e})",
                differ,
                pred.size,
                differ / pred.size,
                "0 of the entries",
            ),
        ]
    return rows


def bench_comparison_yeast() -> list[tuple]:
    """The whole paper 000 comparison on yeast (seven methods, ten rates, ten repetitions:
    ``python -m run experiment=ssl_comparison dataset=yeast``), wall time on
    this machine's cores, against the main job alone (ML-MRRW on yeast) in the same run. Fresh
    store and empty graph cache, so shared graphs are built once, as in a first run."""
    import os
    import subprocess
    import sys

    def wall(args: list[str]) -> float:
        with tempfile.TemporaryDirectory() as tmp:
            env = {**os.environ, "MLGRAPH_OUTPUT_DIR": tmp}
            start = time.perf_counter()
            subprocess.run(
                [sys.executable, "-m", "run", *args, "progress=false"],
                env=env,
                check=True,
                capture_output=True,
                cwd=ROOT,
            )
            return time.perf_counter() - start

    t_all = wall(["experiment=ssl_comparison", "dataset=yeast"])
    t_main = wall(["method=mlmrrw", "dataset=yeast"])
    cores = os.cpu_count()
    return [
        (
            f"paper 000 comparison, yeast, 7 methods ({cores} cores)",
            t_all,
            t_main,
            t_all / t_main,
            "wall time; reference = ML-MRRW job alone",
        )
    ]


def _paper000_sweeps(repeats: int) -> dict:
    """Paper 000's protocol as ``make compare ARGS="protocol.repeats=<repeats>"`` runs it (the
    presets ssl_comparison and ssl_comparison_mediamill, one after the other, each a parallel
    Hydra sweep), with a fresh store and an empty graph cache: wall and CPU seconds of each,
    how many of its runs FINISHED with every trial and none failed, and each method's share of
    the trials' time (Σ fit + predict seconds of its trials, read back from ``trials.csv``)."""
    import os
    import resource
    import subprocess
    import sys

    import mlflow
    import pandas as pd

    from mlgraph.tracking.store import quiet_artifact_downloads

    quiet_artifact_downloads()
    found = {"wall": {}, "cpu": {}}
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "MLGRAPH_OUTPUT_DIR": tmp}
        for preset in ("ssl_comparison", "ssl_comparison_mediamill"):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "run",
                    f"experiment={preset}",
                    f"protocol.repeats={repeats}",
                    "progress=false",
                ],
                env=env,
                check=True,
                capture_output=True,
                cwd=ROOT,
            )
            found["wall"][preset] = time.perf_counter() - start
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            found["cpu"][preset] = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
        client = mlflow.MlflowClient(f"sqlite:///{tmp}/mlflow.db")
        runs = client.search_runs(
            [client.get_experiment_by_name("ssl_comparison").experiment_id],
            "tags.method != ''",
            max_results=1000,
        )
        found["runs"] = len(runs)
        found["trial_seconds"] = {}
        for run in runs:
            trials = pd.read_csv(client.download_artifacts(run.info.run_id, "trials.csv", tmp))
            method = run.data.tags["method"]
            seconds = float((trials.fit_seconds.fillna(0) + trials.predict_seconds.fillna(0)).sum())
            found["trial_seconds"][method] = found["trial_seconds"].get(method, 0.0) + seconds
        found["complete"] = sum(
            r.info.status == "FINISHED"
            and r.data.metrics.get("n_failed") == 0
            and r.data.metrics.get("n_trials") == 10 * repeats
            for r in runs
        )
    return found


def _method_shares(run: dict) -> list[tuple]:
    """One row per method of a :func:`_paper000_sweeps` result: its trials' seconds (fit +
    predict, summed over their workers) and share of all trials' seconds, largest first."""
    seconds = run["trial_seconds"]
    total = sum(seconds.values())
    return [
        (f"  {method}: share of the trials' time", s, total, s / total, "ratio = share")
        for method, s in sorted(seconds.items(), key=lambda item: -item[1])
    ]


def bench_paper000_protocol(calibration: tuple[int, int] = (5, 15), target: int = 100) -> list[tuple]:
    """Paper 000's whole protocol (7 methods × emotions, scene, yeast, 6 on mediamill-small, 10
    labelling rates, ``target`` = 100 repetitions) extrapolated from two calibration runs of
    the same sweeps with fewer repetitions (:func:`_paper000_sweeps`): every cost of a sweep is
    either fixed (start-up of the sweep and its jobs, the store, the report of each run) or
    grows with the repetitions (the trials, their checkpoints, the graphs), so the wall time at
    r repetitions is a + b r, fitted on the two runs; likewise the CPU seconds. Prints the
    extrapolated wall time against the 30-minute goal, the CPU use (CPU s ÷ wall s ÷ cores,
    goal ≥ 95 %), whether every run finished with all its trials, and each method's share of the
    trials' time at the larger calibration. About 15 minutes on 2 cores; ``paper000_full`` runs
    the 100 repetitions themselves (about 40 min)."""
    import os

    cores = os.cpu_count()
    low, high = (_paper000_sweeps(r) for r in calibration)
    rows = []
    for preset in ("ssl_comparison", "ssl_comparison_mediamill"):
        walls = [run["wall"][preset] for run in (low, high)]
        cpus = [run["cpu"][preset] for run in (low, high)]
        slope = (walls[1] - walls[0]) / (calibration[1] - calibration[0])
        wall = walls[0] + slope * (target - calibration[0])
        cpu = cpus[0] + (cpus[1] - cpus[0]) / (calibration[1] - calibration[0]) * (target - calibration[0])
        rows.append(
            (
                f"  {preset}: extrapolated to {target} repetitions",
                wall,
                walls[1],
                cpu / wall / cores,
                f"ratio = CPU use; measured {walls[0]:.0f} s at {calibration[0]}, {walls[1]:.0f} s at "
                f"{calibration[1]} repetitions; fixed {walls[0] - slope * calibration[0]:.0f} s",
            )
        )
    total = sum(r[1] for r in rows)
    cpu_use = sum(r[1] * r[3] for r in rows) / total
    complete = f"{high['complete']} of {high['runs']} runs FINISHED with every trial at {calibration[1]}"
    return [
        (
            f"paper 000 protocol, {target} repetitions (extrapolated), minutes",
            total / 60,
            30.0,
            total / 60 / 30.0,
            f"≤ 30 min on {cores} cores; CPU use {cpu_use:.0%} (≥ 95 %); {complete}",
        ),
        *rows,
        *_method_shares(high),
    ]


def bench_paper000_protocol_full(repeats: int = 100) -> list[tuple]:
    """Paper 000's whole protocol, measured: :func:`_paper000_sweeps` at 100 repetitions, and
    each method's share of the trials' time."""
    import os

    cores = os.cpu_count()
    run = _paper000_sweeps(repeats)
    wall, cpu = sum(run["wall"].values()), sum(run["cpu"].values())
    return [
        (
            f"paper 000 protocol, {repeats} repetitions, minutes",
            wall / 60,
            30.0,
            wall / 60 / 30.0,
            f"≤ 30 min on {cores} cores; CPU use {cpu / wall / cores:.0%}; "
            f"{run['complete']} of {run['runs']} runs FINISHED with every trial",
        ),
        *_method_shares(run),
    ]


def _command_phases(out: Path, root: Path) -> dict[str, float]:
    """Run ``python -m run method=mlmrrw dataset=yeast progress=false`` of checkout ``root``
    with ``out`` as MLGRAPH_OUTPUT_DIR (a fresh folder: new store and graph cache; a used one:
    warm) and split its wall time against the trial time read back from the run it recorded:
    T = Σ(fit + predict seconds) / n_jobs, the trials' share of the wall clock on its workers."""
    import os
    import subprocess
    import sys

    import mlflow
    import pandas as pd

    env = {**os.environ, "MLGRAPH_OUTPUT_DIR": str(out), "PYTHONPATH": str(root / "src")}
    launched = time.time()
    subprocess.run(
        [sys.executable, "-m", "run", "method=mlmrrw", "dataset=yeast", "progress=false"],
        env=env,
        check=True,
        capture_output=True,
        cwd=root,
    )
    ended = time.time()
    client = mlflow.MlflowClient(f"sqlite:///{out}/mlflow.db")
    run = client.search_runs(
        [client.get_experiment_by_name("mlgraph").experiment_id],
        order_by=["attributes.start_time DESC"],
        max_results=1,
    )[0]
    table = pd.read_csv(out / "mlartifacts" / run.info.run_id / "artifacts" / "trials.csv")
    trials = float((table.fit_seconds + table.predict_seconds).sum()) / int(run.data.tags["n_jobs"])
    opened, closed = run.info.start_time / 1000, run.info.end_time / 1000
    return {
        "wall": ended - launched,
        "trials": trials,
        "before the run": opened - launched,
        "in the run": closed - opened - trials,
        "after the run": ended - closed,
    }


def command_overhead(root: Path | None = None, repeats: int = 3) -> dict[str, list[dict[str, float]]]:
    """:func:`_command_phases` ``repeats`` times with a fresh store and with a warm one (primed
    by a first run), interleaved."""
    root = root or ROOT
    found: dict[str, list[dict[str, float]]] = {"fresh": [], "warm": []}
    with tempfile.TemporaryDirectory() as warm:
        _command_phases(Path(warm), root)
        for _ in range(repeats):
            with tempfile.TemporaryDirectory() as fresh:
                found["fresh"].append(_command_phases(Path(fresh), root))
            found["warm"].append(_command_phases(Path(warm), root))
    return found


_MLFLOW_IMPORT = """
import time
import hydra, joblib, matplotlib.pyplot, numpy, pandas, scipy.sparse, sklearn.base  # the run's other imports
start = time.perf_counter()
import mlflow
print(time.perf_counter() - start)
"""


def _mlflow_import_seconds(repeats: int = 3) -> float:
    """``import mlflow`` alone in a fresh interpreter that has made the run's other imports
    (what they share with MLflow is not counted), the least of ``repeats``."""
    import subprocess
    import sys

    return min(
        float(
            subprocess.run(
                [sys.executable, "-c", _MLFLOW_IMPORT], check=True, capture_output=True, text=True
            ).stdout
        )
        for _ in range(repeats)
    )


def bench_command_overhead() -> list[tuple]:
    """Everything the user of the main job waits for beyond its trials: (wall time of
    ``python -m run method=mlmrrw dataset=yeast`` − T) / T, T being the trials' fit + predict
    seconds over the workers, with a fresh SQLite store and with an existing one (
    target < 5 %); then where it goes (before the run opens: interpreter, imports, store;
    in the run beyond T: workers' start-up, scoring, dispatch, logging; after it closes: exit).
    Of three interleaved runs each, the one with the least overhead (the least disturbed). Last,
    the floor of MLflow's cost as counted (import, store, run, logging, artifacts):
    ``import mlflow`` alone, against the least T."""
    rows, found = [], command_overhead()
    for kind, runs in found.items():
        best = min(runs, key=lambda r: r["wall"] - r["trials"])
        rows.append(
            (
                f"main job overhead, {kind} store (wall − T) / T",
                best["wall"] - best["trials"],
                best["trials"],
                (best["wall"] - best["trials"]) / best["trials"],
                "< 5 %",
            )
        )
        rows += [
            (f"  {phase}", best[phase], best["trials"], best[phase] / best["trials"], "share of T")
            for phase in ("before the run", "in the run", "after the run")
        ]
    trials = min(r["trials"] for runs in found.values() for r in runs)
    spent = _mlflow_import_seconds()
    rows.append(
        ("floor: import mlflow alone ÷ T", spent, trials, spent / trials, "< 5 % needs T ≥ 20 × this")
    )
    return rows


_BARE_MAIN_JOB = """
import importlib, json, sys
spec = json.loads(sys.argv[1])                    # the resolved config, composed by the bench
from mlgraph.data import load_dataset
from mlgraph.evaluation.metrics import METRICS
from mlgraph.evaluation.protocols import labelling_rate_trials
from mlgraph.engine.runner import resolve_parallelism, run_trials
module, name = spec["target"].rsplit(".", 1)
estimator = getattr(importlib.import_module(module), name)(**spec["params"])
data = load_dataset(spec["dataset"])
trials = labelling_rate_trials(data.n_samples, seed=spec["seed"], **spec["protocol"])
parallelism = resolve_parallelism("auto", False, n_trials=len(trials))
table = run_trials(estimator, data.X, data.Y, trials, list(METRICS), parallelism, progress=False,
                   evaluation=spec["evaluation"])
assert (table.status == "ok").all(), table.error.unique()
"""


def _main_job_spec(overrides: list[str], cache: str) -> str:
    """The estimator, protocol and evaluation of the main job's resolved config, as JSON for
    :data:`_BARE_MAIN_JOB` (``graph_cache`` set to ``cache``, a fresh folder as the command's)."""
    import json

    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    import mlgraph.config  # noqa: F401  (the abspath resolver of the config)
    from mlgraph.engine.tuning import NON_PARAMETER_KEYS

    with initialize_config_dir(version_base="1.3", config_dir=str(ROOT / "conf")):
        cfg = compose("config", overrides=[*overrides, f"graph_cache={cache}"])
    method = OmegaConf.to_container(cfg.method, resolve=True)
    protocol = OmegaConf.to_container(cfg.protocol, resolve=True)
    protocol.pop("_target_")
    metrics = OmegaConf.to_container(cfg.metrics, resolve=True)
    return json.dumps(
        {
            "target": method.pop("_target_"),
            "params": {k: v for k, v in method.items() if k not in NON_PARAMETER_KEYS},
            "dataset": cfg.dataset.name,
            "seed": cfg.seed,
            "protocol": protocol,
            "evaluation": {**metrics, "diagnostics": True},
        }
    )


def bench_main_job_vs_bare(repeats: int = 5) -> list[tuple]:
    """The main job as the user runs it, ``python -m run method=mlmrrw dataset=yeast
    progress=false`` (fresh store and graph cache), against a bare script running the same
    100 trials with the same estimator and :func:`mlgraph.engine.runner.run_trials`, no Hydra and no
    MLflow (:data:`_BARE_MAIN_JOB`; its own interpreter, imports and data loading included,
    graph cache in a fresh folder too): wall time of each whole process, interleaved,
    ``repeats`` each, with mlgraph's bytecode compiled first as on a user's second run; the
    ratio of the medians and of the best. Target ≤ 1.15."""
    import compileall
    import os
    import statistics
    import subprocess
    import sys

    overrides = ["method=mlmrrw", "dataset=yeast"]
    # a user's second run reads mlgraph's bytecode from __pycache__; with PYTHONDONTWRITEBYTECODE
    # set (as in some containers) every run would compile it again, about 0.2 s of CPU
    compileall.compile_dir(ROOT / "src", quiet=1)

    def wall(command: list[str], env: dict | None = None) -> float:
        time.sleep(_SETTLE)
        start = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True, cwd=ROOT, env=env)
        return time.perf_counter() - start

    times = {"command": [], "bare": []}
    for _ in range(repeats):
        with tempfile.TemporaryDirectory() as tmp:
            spec = _main_job_spec(overrides, f"{tmp}/bare-cache")
            times["bare"].append(wall([sys.executable, "-c", _BARE_MAIN_JOB, spec]))
            env = {**os.environ, "MLGRAPH_OUTPUT_DIR": f"{tmp}/out"}
            times["command"].append(wall([sys.executable, "-m", "run", *overrides, "progress=false"], env))
    median = {k: statistics.median(v) for k, v in times.items()}
    best = {k: min(v) for k, v in times.items()}
    return [
        (
            "main job (mlmrrw, yeast, 100 trials) ÷ bare script, medians",
            median["command"],
            median["bare"],
            median["command"] / median["bare"],
            f"≤ 1.15; {repeats} each, interleaved; "
            f"command {min(times['command']):.1f}–{max(times['command']):.1f} s, "
            f"bare {min(times['bare']):.1f}–{max(times['bare']):.1f} s",
        ),
        ("  the same, best of each", best["command"], best["bare"], best["command"] / best["bare"], "≤ 1.15"),
    ]


def bench_gmba_ranking() -> list[tuple]:
    """GMBA feature ranking (paper 004) on yeast and on bibtex (sparse, 7,395 × 1,836), against
    MLFS (a one-pass filter) on the same data, and its scaling with n on bibtex subsets: the
    ratio t(2n)/t(n) (2 = linear, 4 = quadratic). One BLAS thread."""
    from threadpoolctl import threadpool_limits

    from mlgraph.methods.selection import GMBA, MLFS

    rows = []
    with threadpool_limits(1):
        for name in ("yeast", "bibtex"):
            data = load_dataset(name, f"{name}.arff.gz", f"{name}.xml")
            t_gmba = best_time(lambda: GMBA(random_state=0).fit(data.X, data.Y), 1)
            t_mlfs = best_time(lambda: MLFS().fit(data.X, data.Y), 3)
            rows.append(
                (
                    f"GMBA ranking {name} {data.n_samples}x{data.n_features}",
                    t_gmba,
                    t_mlfs,
                    t_gmba / t_mlfs,
                    "time; reference = MLFS",
                )
            )
        order = np.random.default_rng(0).permutation(data.n_samples)
        for n in (1000, 2000):
            half, full = order[: n // 2], order[:n]
            t_half = best_time(lambda: GMBA(random_state=0).fit(data.X[half], data.Y[half]), 2)
            t_full = best_time(lambda: GMBA(random_state=0).fit(data.X[full], data.Y[full]), 2)
            rows.append(
                (
                    f"GMBA scaling bibtex n={n // 2}->{n}",
                    t_full,
                    t_half,
                    t_full / t_half,
                    "t(2n)/t(n): 2 linear, 4 quadratic",
                )
            )
    return rows


def _time_and_peak(fn: Callable[[], object]) -> tuple[float, int]:
    """Wall time and peak traced allocation (numpy buffers included) of one call."""
    import tracemalloc

    tracemalloc.start()
    try:
        start = time.perf_counter()
        fn()
        return time.perf_counter() - start, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _ml2_stage_times(run: Callable[[], object]) -> tuple[float, int, dict[str, float]]:
    """Wall time and peak traced memory of one ML² fit + predict, and the time in each stage
    (the module functions ``ML2.fit`` calls, wrapped for the call)."""
    from unittest import mock

    import mlgraph.methods.label_manifold as module

    stages = {"lle_weights": 0.0, "label_manifold": 0.0, "sign_msvr": 0.0}

    def timed(name: str, fn: Callable) -> Callable:
        def wrapper(*args, **kwargs):
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                stages[name] += time.perf_counter() - start

        return wrapper

    with contextlib.ExitStack() as stack:
        for name in stages:
            stack.enter_context(mock.patch.object(module, name, timed(name, getattr(module, name))))
        total, peak = _time_and_peak(run)
    return total, peak, stages


@contextlib.contextmanager
def _previous_ml2():
    """PREVIOUS ML² (before its last speed-up), the benchmark's reference, by patching the
    module for the duration: the QPs by ``solver="lbfgsb"`` (L-BFGS-B and the active-set polish,
    a sparse M's one label after another under the caller's BLAS threads) and a new Cholesky factorisation at every
    IRWLS iteration (``_CG_MIN_STEPS`` out of reach: the factor is never reused)."""
    import functools
    import sys
    from unittest import mock

    import mlgraph.methods.label_manifold as module

    with contextlib.ExitStack() as stack:
        stack.enter_context(
            mock.patch.object(
                module, "label_manifold", functools.partial(module.label_manifold, solver="lbfgsb")
            )
        )
        stack.enter_context(mock.patch.object(module, "_CG_MIN_STEPS", sys.maxsize))
        stack.enter_context(
            mock.patch.object(module, "threadpool_limits", lambda limits: contextlib.nullcontext())
        )
        stack.enter_context(mock.patch.object(module, "blas_threads", lambda: 1))  # labels one by one
        yield


def _ml2_half(name: str):
    """(data, X_train, Y_train, X_test) of one random half (the ``halves`` protocol's split)."""
    from mlgraph.evaluation.protocols import labelling_rate_trials

    data = load_dataset(name, f"{name}.arff.gz", f"{name}.xml")
    trial = labelling_rate_trials(data.n_samples, rates=[1.0], repeats=1, seed=0, test_size=0.5)[0]
    return data, data.X[trial.train], data.Y[trial.train], data.X[trial.test]


def bench_ml2(tmc_labels: int = 3, tmc_irwls_iterations: int = 8) -> list[tuple]:
    """ML² (paper 002) fit + predict on one random half of yeast and of bibtex (the ``halves``
    protocol's split) against the previous implementation (:func:`_previous_ml2`), interleaved
    in one process (yeast best of 3, bibtex one call each: minutes), one BLAS thread as in the
    runner: the total, each stage (LLE weights of Eq. 2, the QPs of Eq. 3, IRWLS of Eq. 8–12;
    prediction is the rest), the largest |Δ score| and |Δμ| and the largest relative KKT violation
    of the current μ, peak memory (tracemalloc) against the 8n² bytes of the kernel matrix.

    tmc2007-500 (14,298 training points; a whole fit takes many minutes on a shared 2-core
    machine, so only parts are measured, two BLAS threads as the runner gives the large sets):
    the QPs of the first ``tmc_labels`` labels, current against previous, interleaved; then
    IRWLS on the whole half's kernel with the current μ of all 22 labels, limited to
    ``tmc_irwls_iterations`` iterations, current against previous (the same iterates: the
    factor reuse grows with the iterations, so a full fit's ratio is at least this one's)."""
    from threadpoolctl import threadpool_limits

    import mlgraph.methods.label_manifold as module
    from mlgraph.graphs import squared_distances
    from mlgraph.methods import ML2
    from mlgraph.methods.base import dense, standardisation

    rows = []
    with threadpool_limits(1):
        for name, repeats in (("yeast", 3), ("bibtex", 1)):
            data, X_train, Y_train, X_test = _ml2_half(name)
            n = X_train.shape[0]
            out = {}

            def run(which: str):
                def fn():
                    model = ML2()
                    with _previous_ml2() if which == "previous" else contextlib.nullcontext():
                        out[which] = model, model.fit(X_train, Y_train).decision_function(X_test)

                return fn

            best = {}
            for _ in range(repeats):
                for which in ("current", "previous"):
                    t, peak, stages = _ml2_stage_times(run(which))
                    if which not in best or t < best[which][0]:
                        best[which] = (t, peak, stages)
            (t_cur, peak, s_cur), (t_prev, _, s_prev) = best["current"], best["previous"]
            rows.append(
                (
                    f"ML2 fit+predict {name} half n={n} q={data.n_labels}",
                    t_cur,
                    t_prev,
                    t_prev / t_cur,
                    "reference = previous implementation; target >= 5x",
                )
            )
            for stage, label in (
                ("lle_weights", "LLE weights"),
                ("label_manifold", "QPs (Eq. 3)"),
                ("sign_msvr", "IRWLS"),
            ):
                rows.append(
                    (
                        f"  {label} {name}",
                        s_cur[stage],
                        s_prev[stage],
                        s_prev[stage] / max(s_cur[stage], 1e-9),
                        "current vs previous",
                    )
                )
            (model, scores), (model_prev, scores_prev) = out["current"], out["previous"]
            y = np.where(Y_train > 0, 1.0, -1.0)
            kkt = module._kkt_violation(
                module._QP(model.weights_, model.lam).M, y, model.lam, model.mu_
            ).max()
            gap = float(np.abs(scores - scores_prev).max())
            rows.append(
                (
                    f"  {name}: max|dscore| {gap:.0e}, max|dmu| {np.abs(model.mu_ - model_prev.mu_).max():.0e}, "
                    f"KKT {kkt:.0e}",
                    kkt,
                    1e-8,
                    kkt / 1e-8,
                    "largest relative KKT violation of mu; target <= 1e-8",
                )
            )
            peak, kernel = peak / 2**20, 8 * n * n / 2**20
            rows.append(
                (
                    f"ML2 peak memory {name} (MiB)",
                    peak,
                    kernel,
                    peak / kernel,
                    "reference = n x n float64 kernel; target <= 10",
                )
            )

    data, X_train, Y_train, _ = _ml2_half("tmc2007-500")
    X = dense(X_train).astype(float)
    mean, scale = standardisation(X)
    X = (X - mean) / scale
    with threadpool_limits(2):
        sqdist = squared_distances(X)
        W = module.lle_weights(X, data.n_labels + 1, sqdist=sqdist)
        Y = Y_train[:, :tmc_labels]
        out = {}

        def qps(which: str):
            def fn():
                with _previous_ml2() if which == "previous" else contextlib.nullcontext():
                    out[which] = module.label_manifold(W, Y, return_info=True)

            return fn

        times = _interleaved({"current": qps("current"), "previous": qps("previous")}, 1)
        (t_cur, _), (t_prev, _) = times["current"], times["previous"]
        (mu, info), (mu_prev, _) = out["current"], out["previous"]
        n = X.shape[0]
        rows.append(
            (
                f"ML2 QPs tmc2007-500 half n={n}, {tmc_labels} labels",
                t_cur,
                t_prev,
                t_prev / t_cur,
                f"2 BLAS threads; max|dmu| {np.abs(mu - mu_prev).max():.0e}, "
                f"KKT {max(i['kkt'] for i in info):.0e}",
            )
        )

        start = time.perf_counter()
        mu = module.label_manifold(W, Y_train)
        t_all = time.perf_counter() - start
        rows.append(
            (
                f"  QPs tmc2007-500, all {data.n_labels} labels (current)",
                t_all,
                t_cur,
                t_all / t_cur,
                f"reference = current on {tmc_labels} labels",
            )
        )
        model = ML2()
        model.gamma_ = model._gamma(X, sqdist)
        model.X_fit_ = X
        K = model._kernel(X, sqdist)  # in place: sqdist is K now
        res = {}

        def irwls(which: str):
            def fn():
                with _previous_ml2() if which == "previous" else contextlib.nullcontext():
                    res[which] = module.sign_msvr(K, mu, Y_train, max_iter=tmc_irwls_iterations)

            return fn

        times = _interleaved({"current": irwls("current"), "previous": irwls("previous")}, 1)
        (t_cur, _), (t_prev, _) = times["current"], times["previous"]
        gap = np.abs(res["current"].coef - res["previous"].coef).max() / np.abs(res["previous"].coef).max()
        rows.append(
            (
                f"ML2 IRWLS tmc2007-500, first {res['current'].n_iter} iterations",
                t_cur,
                t_prev,
                t_prev / t_cur,
                f"2 BLAS threads; relative max|dbeta| {gap:.0e}",
            )
        )
    return rows


def bench_ml2_whole() -> list[tuple]:
    """Whole ML² fits as the runner does one large trial (``protocol=halves
    protocol.repeats=1``: two BLAS threads, a sparse M's labels in two worker processes): fit +
    predict of one half of bibtex, corel5k and tmc2007-500, with the time of each stage, against
    the goals (≤ 60 s, 3 min, 4 min; at commit cbb9823 209–348 s, 19 min, 20.5 min). The previous
    implementation takes 20 min on tmc2007-500, so it is compared by parts in ``ml2``."""
    from threadpoolctl import threadpool_limits

    from mlgraph.methods import ML2

    rows = []
    with threadpool_limits(2):
        for name, goal in (("bibtex", 60.0), ("corel5k", 180.0), ("tmc2007-500", 240.0)):
            data, X_train, Y_train, X_test = _ml2_half(name)

            def run():
                ML2().fit(X_train, Y_train).decision_function(X_test)

            total, peak, stages = _ml2_stage_times(run)
            parts = ", ".join(f"{stage} {t:.0f} s" for stage, t in stages.items())
            rows.append(
                (
                    f"ML2 fit+predict {name} half n={X_train.shape[0]} (2 threads)",
                    total,
                    goal,
                    total / goal,
                    f"≤ {goal:.0f} s; {parts}; peak {peak / 2**30:.1f} GiB (this process; its QP workers share its M and P)",
                )
            )
    return rows


_BEFORE_SPEEDUP = "cbb9823e6ead4cbda5b89e0fe3212c6482355ae4"  # the code before the speed work

_ML2_FIT = """
import sys, time
sys.path.insert(0, sys.argv[1])                   # this source tree's mlgraph, not the installed one
import numpy as np
from threadpoolctl import threadpool_limits
from mlgraph.methods import ML2
half = np.load(sys.argv[2])
with threadpool_limits(int(sys.argv[3])):
    start = time.perf_counter()
    scores = ML2().fit(half["X"], half["Y"]).decision_function(half["Xt"])
    print(time.perf_counter() - start)
np.save(sys.argv[4], scores)
"""


def bench_ml2_before_speedup(repeats: int = 2) -> list[tuple]:
    """ML² fit + predict of a bibtex half by this code and by the code from before the speed work
    (commit cbb9823, taken from the repository's git history), each call in a fresh process on
    the same arrays, interleaved, ``repeats`` each (best): at one BLAS thread for both (the
    5× target at equal threads; the runner then gave a trial one thread), and this code at two
    (as the runner now runs one large trial) against the old one at one. About 9 minutes."""
    import subprocess
    import sys

    import mlgraph
    from mlgraph.methods.base import dense

    target = "≥ 5×"
    root = ROOT
    archive = subprocess.run(["git", "-C", str(root), "archive", _BEFORE_SPEEDUP, "src"], capture_output=True)
    if archive.returncode:
        return [
            (
                "ML2 bibtex half against commit cbb9823 (no git history here)",
                float("nan"),
                float("nan"),
                float("nan"),
                target,
            )
        ]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        subprocess.run(["tar", "-x", "-C", str(tmp)], input=archive.stdout, check=True)
        _, X_train, Y_train, X_test = _ml2_half("bibtex")
        np.savez(tmp / "half.npz", X=dense(X_train), Y=Y_train, Xt=dense(X_test))
        (tmp / "fit.py").write_text(_ML2_FIT)
        sources = {"now": Path(mlgraph.__file__).resolve().parents[1], "before": tmp / "src"}

        def fit(which: str, threads: int) -> float:
            time.sleep(_SETTLE)
            done = subprocess.run(
                [
                    sys.executable,
                    str(tmp / "fit.py"),
                    str(sources[which]),
                    str(tmp / "half.npz"),
                    str(threads),
                    str(tmp / f"{which}.npy"),
                ],
                capture_output=True,
                text=True,
                check=True,
            )
            return float(done.stdout.split()[-1])

        times = {"now": [], "before": []}
        for _ in range(repeats):
            for which in times:
                times[which].append(fit(which, 1))
        two = min(fit("now", 2) for _ in range(repeats))
        gap = float(np.abs(np.load(tmp / "now.npy") - np.load(tmp / "before.npy")).max())
    now, before = min(times["now"]), min(times["before"])
    n = X_train.shape[0]
    return [
        (
            f"ML2 fit+predict bibtex half n={n}, 1 thread: now / commit cbb9823",
            now,
            before,
            before / now,
            f"{target}, equal threads; max |Δ score| {gap:.0e}",
        ),
        (
            f"ML2 fit+predict bibtex half n={n}, now at 2 threads / before at 1",
            two,
            before,
            before / two,
            f"{target}, as the runner runs one trial then and now",
        ),
    ]


_THREAD_CASES = (
    ("yeast", ("mlknn", "gfhf", "lgc", "fsksc", "sswl", "mlmr", "mlmrrw", "mlrbf", "ml2")),
    ("frequency_gender", ("dsml", "independent")),
)


def bench_threads() -> list[tuple]:
    """One trial of each method as the runner runs it (``_run_one``: fit, scores, metrics) with
    two BLAS threads against one, interleaved, best of 3: the runner gives a lone trial, or a
    sweep job with spare cores, every core, so two threads must never be slower (methods of
    many small products that alternate between numpy's and scipy's BLAS were, 1.5–2.6×, until
    they ran on one). Paper 000's methods on yeast at rate 50 %, paper 001's on
    frequency_gender (first fold)."""
    from hydra import compose, initialize_config_dir

    from mlgraph.engine.experiment import prepare
    from mlgraph.engine.runner import _run_one

    rows = []
    conf = ROOT / "conf"
    with initialize_config_dir(version_base="1.3", config_dir=str(conf)):
        for dataset, methods in _THREAD_CASES:
            for method in methods:
                cfg = compose(
                    "config", overrides=[f"method={method}", f"dataset={dataset}", "graph_cache=null"]
                )
                plan = prepare(cfg, False, None)
                trial = next((t for t in plan.trials if abs(t.rate - 0.5) < 1e-9), plan.trials[0])

                def one(threads: int) -> Callable[[], dict]:
                    return lambda: _run_one(
                        plan.estimator,
                        plan.data.X,
                        plan.data.Y,
                        trial,
                        plan.metrics,
                        threads,
                        plan.evaluation,
                    )

                res = _interleaved({"1": one(1), "2": one(2)}, 3)
                rows.append(
                    (
                        f"{method} on {dataset}: 2 BLAS threads ÷ 1",
                        res["2"][0],
                        res["1"][0],
                        res["2"][0] / res["1"][0],
                        "≤ 1: two threads never slower",
                    )
                )
    return rows


def bench_dsml() -> list[tuple]:
    """DSML (paper 001) training, T = 10, on a five-fold training split of frequency_gender,
    against Independent Decomposition (one RBF network per label set) on the same split. DSML
    fits three networks per round (h_raw, h^a, h^b; Algorithm 1), so about 1.5 T = 15 times the
    reference is the cost of its base learners alone. One BLAS thread."""
    from threadpoolctl import threadpool_limits

    from mlgraph.data.dual_set import frequency_gender
    from mlgraph.evaluation.protocols import cross_validation_trials
    from mlgraph.methods import DSML, IndependentDecomposition

    data = frequency_gender()
    trial = cross_validation_trials(data.n_samples, folds=5, seed=0)[0]
    X, Y = data.X[trial.train], data.Y[trial.train]
    with threadpool_limits(1):
        t_dsml = best_time(lambda: DSML(T=10, random_state=0).fit(X, Y), 3)
        t_ind = best_time(lambda: IndependentDecomposition().fit(X, Y), 3)
    return [
        (
            f"DSML fit T=10 frequency_gender n={len(X)}",
            t_dsml,
            t_ind,
            t_dsml / t_ind,
            "time; reference = Ind. Decomposition; ~15 = base learners only",
        )
    ]


# --- SSWL (paper 000) -----------------------------------------------------------------------


def _previous_sswl_problem():
    """PREVIOUS SSWL block solves (commit cbb9823), kept only here as the benchmark's reference:
    no whitening (Q = Ã), the dense float64 (mp)² systems of the module docstring formed every
    sweep from C_M, E_M (formed on first use) and solved by Cholesky (``_solve_spd``)."""

    from mlgraph.methods.weak_label import _solve_spd, _SSWLProblem

    class Previous(_SSWLProblem):
        @staticmethod
        def _basis(A):  # Q = Ã: Qᵀ target = Ãᵀ target
            return A, np.eye(A.shape[1]), A.shape[1]

        def _mask_parts32(self):  # the dense systems only
            return None

        def _solve(self, key, rhs, L):
            return _solve_spd(self._system(key, L), rhs.T.ravel()).reshape(self.m, self.p).T

    return Previous


def bench_sswl() -> list[tuple]:
    """SSWL fit + predict, current (whitened, float32-preconditioned CG) against the previous
    dense float64 Cholesky solves, on one scene and one yeast trial of paper 000's protocol
    (2/3 train, labelling rate 0.5; hyper-parameters of conf/hparams), 1 BLAS thread (how the
    runner runs trials in parallel), interleaved, best of 3. Also the max |Δ coef_| / max |coef_|,
    max relative Δ objective_, differing test predictions and n_iter_. Target: ≥ 4×."""
    from unittest import mock

    from threadpoolctl import threadpool_limits

    from mlgraph.evaluation.protocols import labelling_rate_trials
    from mlgraph.methods import SSWL, weak_label
    from mlgraph.methods.base import dense

    previous = _previous_sswl_problem()
    rows = []
    for name, params in (("scene", {"alpha": 6.4, "k": 10}), ("yeast", {"alpha": 6.4, "k": 5})):
        data = load_dataset(name, f"{name}.arff.gz", f"{name}.xml")
        trial = labelling_rate_trials(data.n_samples, rates=[0.5], repeats=1, seed=0)[0]
        X = dense(data.X)
        X_train, Y_train, X_test = X[trial.train], trial.targets(data.Y), X[trial.test]

        def current():
            est = SSWL(**params).fit(X_train, Y_train)
            return est, est.predict(X_test)

        def reference():
            with mock.patch.object(weak_label, "_SSWLProblem", previous):
                est = SSWL(**params).fit(X_train, Y_train)
            return est, est.predict(X_test)

        times, fitted = {current: [], reference: []}, {}
        with threadpool_limits(1):
            for _ in range(3):
                for fn in (current, reference):
                    start = time.perf_counter()
                    fitted[fn] = fn()
                    times[fn].append(time.perf_counter() - start)
        (new, pred_new), (old, pred_old) = fitted[current], fitted[reference]
        t_new, t_old = min(times[current]), min(times[reference])
        dcoef = np.abs(new.coef_ - old.coef_).max() / np.abs(old.coef_).max()
        dobj = np.abs(new.objective_ - old.objective_).max() / np.abs(old.objective_).max()
        m, p = Y_train.shape[1], new.coef_.shape[0]
        rows += [
            (
                f"SSWL fit+predict {name} n={len(X_train)} m={m} p={p}",
                t_new,
                t_old,
                t_old / t_new,
                "speed-up vs previous dense Cholesky; target >= 4x",
            ),
            (
                f"  max rel dcoef {dcoef:.0e}, dobjective {dobj:.0e}",
                int((pred_new != pred_old).sum()),
                new.n_iter_ - old.n_iter_,
                0.0,
                "test predictions differing, n_iter_ diff; target 0, 0, 1e-8",
            ),
        ]
    return rows


_TUNING_CASES = (("emotions", "mlmrrw"), ("yeast", "mlmrrw"), ("yeast", "lgc"))


def _best_wall_and_cpu(fns: dict[str, Callable[[], object]], repeats: int) -> dict[str, tuple[float, float]]:
    """Per function, the best wall time and the best process CPU time over ``repeats``
    interleaved rounds (one BLAS thread, so CPU time is the work done, whatever the load of other
    processes on the machine does to the wall time of a long call)."""
    wall = {name: [] for name in fns}
    cpu = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            time.sleep(_SETTLE)
            c0, t0 = time.process_time(), time.perf_counter()
            fn()
            wall[name].append(time.perf_counter() - t0)
            cpu[name].append(time.process_time() - c0)
    return {name: (min(wall[name]), min(cpu[name])) for name in fns}


def bench_tuning_inner(repeats: int = 2) -> list[tuple]:
    """One ``tuning=inner`` trial (nested selection over the method's ``search`` grid by 3 inner
    folds, then the refit and the test scores) against one plain trial, as the runner runs them
    in a comparison (``_run_one``, one BLAS thread: two trial processes share 2 cores), rate
    50 %, interleaved, best of ``repeats``; and the same selection without the shared work
    (distances, σ, graphs and kernels computed by every inner fit), to show what sharing saves.
    Ratios of CPU time (one thread: the work done) and, beside them, of wall time, which other
    processes on a shared machine inflate for long calls more than for short ones.
    ML-MRRW's 27-point grid × 3 folds would be 81 fits plus the refit without any sharing."""
    import dataclasses

    from hydra import compose, initialize_config_dir

    from mlgraph.engine.experiment import prepare
    from mlgraph.engine.runner import _run_one

    rows = []
    with initialize_config_dir(version_base="1.3", config_dir=str(ROOT / "conf")):
        for dataset, method in _TUNING_CASES:
            overrides = [f"method={method}", f"dataset={dataset}", "graph_cache=null", "tuning=inner"]
            plan = prepare(compose("config", overrides=overrides), False, None)
            trial = next(t for t in plan.trials if abs(t.rate - 0.5) < 1e-9)
            unshared = dataclasses.replace(plan.tuning, memory_key=None)
            fits = len(plan.tuning.points) * plan.tuning.folds

            def one(tuning) -> Callable[[], dict]:
                return lambda: _run_one(
                    plan.estimator, plan.data.X, plan.data.Y, trial, plan.metrics, 1, plan.evaluation, tuning
                )

            res = _best_wall_and_cpu(
                {"plain": one(None), "inner": one(plan.tuning), "unshared": one(unshared)}, repeats
            )
            label = f"{method} on {dataset}, {len(plan.tuning.points)} points × {plan.tuning.folds} folds"
            (inner_wall, inner_cpu), (plain_wall, plain_cpu) = res["inner"], res["plain"]
            rows.append(
                (
                    f"tuning=inner ÷ plain trial, CPU: {label}",
                    inner_cpu,
                    plain_cpu,
                    inner_cpu / plain_cpu,
                    f"well under {fits + 1} (inner fits + refit, nothing shared); wall: "
                    f"{inner_wall:.2f} s ÷ {plain_wall:.3f} s = {inner_wall / plain_wall:.1f}",
                )
            )
            rows.append(
                (
                    f"shared ÷ unshared selection, CPU: {label}",
                    inner_cpu,
                    res["unshared"][1],
                    inner_cpu / res["unshared"][1],
                    "< 1: distances, σ, graphs, kernels once per trial",
                )
            )
    return rows


BENCHES = {
    "mlmrrw_vs_lu": bench_mlmrrw_vs_lu,
    "mlmrrw_nystrom": bench_mlmrrw_nystrom,
    "mlmrrw_nystrom_100k": bench_mlmrrw_nystrom_100k,
    "nystrom_scaling": bench_nystrom_scaling,
    "arff_vs_liac": bench_arff_vs_liac,
    "mlflow_overhead": bench_mlflow_overhead,
    "command_overhead": bench_command_overhead,
    "main_job_vs_bare": bench_main_job_vs_bare,
    "mlknn_vs_skmultilearn": bench_mlknn_vs_skmultilearn,
    "sswl": bench_sswl,
    "comparison_yeast": bench_comparison_yeast,
    "paper000_protocol": bench_paper000_protocol,
    "paper000_full": bench_paper000_protocol_full,
    "gmba": bench_gmba_ranking,
    "ml2": bench_ml2,
    "ml2_whole": bench_ml2_whole,
    "ml2_before_speedup": bench_ml2_before_speedup,
    "dsml": bench_dsml,
    "threads": bench_threads,
    "tuning_inner": bench_tuning_inner,
}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="mlgraph benchmarks (ratios, one run)")
    parser.add_argument("--only", default="", help="run benchmarks whose name contains this")
    args = parser.parse_args(argv)
    print(f"machine: {_cpu_and_blas()}")
    print(f"{'benchmark':48s} {'measured s':>11s} {'reference s':>12s} {'ratio':>8s}  target")
    for name, bench in BENCHES.items():
        if args.only in name:
            for what, measured, reference, ratio, target in bench():
                print(f"{what:48s} {measured:11.3f} {reference:12.3f} {ratio:8.3f}  {target}", flush=True)


if __name__ == "__main__":
    main()
