"""``make bench``: speed and overhead as ratios against references measured in the same run.

    python -m mlgraph.bench                 # all benchmarks
    python -m mlgraph.bench --only arff     # those whose name contains "arff"

Each benchmark returns rows (what, measured, reference, ratio, target); timings are the best
of a few repeats, so the ratios are stable on a busy machine. Nothing here is a test: targets
are printed with the result, never asserted.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import io
import shutil
import tempfile
import time
from pathlib import Path
from typing import Callable

import numpy as np
import scipy.linalg

from mlgraph.data import find_file, load_dataset, read_arff


def best_time(fn: Callable[[], object], repeats: int = 3) -> float:
    """Best wall time of ``repeats`` calls."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def bench_mlmrrw_vs_lu() -> list[tuple]:
    """ML-MRRW fit+predict on yeast-sized training sets vs a bare LU solve of the same n×n
    system (target ≤ 2×): graph, kernel and prediction should cost less than the solve.

    Both run with one BLAS thread, as trials do inside the runner (one process per core)."""
    from threadpoolctl import threadpool_limits

    from mlgraph.methods import MLMRRW
    from mlgraph.protocols import labelling_rate_trials

    data = load_dataset("yeast", "yeast.arff.gz", "yeast.xml")
    rows = []
    for test_size in (1 / 3, 0.05):  # the paper's 2/3 training split, and nearly all of yeast
        trial = labelling_rate_trials(data.n_samples, rates=[0.5], repeats=1, seed=0, test_size=test_size)[0]
        X_train, X_test, Y_train = data.X[trial.train], data.X[trial.test], trial.targets(data.Y)
        n, q = Y_train.shape
        rng = np.random.default_rng(0)
        A, B = rng.normal(size=(n, n)) + n * np.eye(n), rng.normal(size=(n, q))
        model = MLMRRW(gamma_A=1e-3, gamma_I=10.0, sigma_scale=0.35)
        with threadpool_limits(1):
            t_model = best_time(lambda: model.fit(X_train, Y_train).predict(X_test), 5)
            t_lu = best_time(lambda: scipy.linalg.solve(A, B, check_finite=False), 5)
        rows.append((f"ML-MRRW fit+predict, yeast n={n} q={q}", t_model, t_lu, t_model / t_lu, "≤ 2× LU solve"))
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
            t_liac = best_time(lambda: liac.load(plain.open(), return_type=liac.COO if sparse else liac.DENSE), 2)
            rows.append((f"read_arff {name} ({'sparse' if sparse else 'dense'})", t_ours, t_liac,
                         t_liac / t_ours, "≥ 3× faster than liac-arff"))
    return rows


def bench_mlflow_overhead() -> list[tuple]:
    """MLflow logging time (params, tags, metrics, artifacts, figure) as a share of the trial
    time of the main job, ML-MRRW on yeast with the default protocol (target < 5 %)."""
    import mlflow
    from hydra import compose, initialize_config_dir

    from mlgraph.experiment import run_experiment

    conf = Path(__file__).resolve().parents[2] / "conf"
    with tempfile.TemporaryDirectory() as tmp:
        uri = f"sqlite:///{tmp}/mlflow.db"
        with initialize_config_dir(version_base="1.3", config_dir=str(conf)):
            cfg = compose("config", overrides=["method=mlmrrw", "dataset=yeast", "progress=false",
                                               f"tracking.uri={uri}", f"tracking.artifact_location={tmp}/art"])
        with contextlib.redirect_stdout(io.StringIO()):
            run_experiment(cfg, output_dir=tmp)
        client = mlflow.MlflowClient(uri)
        run = client.search_runs([client.get_experiment_by_name(cfg.tracking.experiment).experiment_id])[0]
        spent, trials = run.data.metrics["logging_seconds"], run.data.metrics["trials_seconds"]
    return [("MLflow logging / trial time, yeast main job", spent, trials, spent / trials, "< 5 %")]


def bench_mlknn_vs_skmultilearn() -> list[tuple]:
    """MLkNN fit + predict + scores on yeast (2/3 train, 1/3 test, seed 0) vs scikit-multilearn's
    MLkNN(k=10, s=1.0) (``pip install scikit-multilearn-ng``) on the same arrays (target ≥ 10×
    faster), and the count of differing predictions (target 0). Features are z-scored with the
    training statistics beforehand; ours runs with standardize=False, self_neighbour=True, the
    reference's counting rule. One BLAS thread, as in the runner."""
    from threadpoolctl import threadpool_limits

    from mlgraph.methods.base import standardisation
    from mlgraph.methods.mlknn import MLkNN

    data = load_dataset("yeast", "yeast.arff.gz", "yeast.xml")
    order = np.random.default_rng(0).permutation(data.n_samples)
    n_train = (2 * data.n_samples) // 3
    train, test = order[:n_train], order[n_train:]
    mean, scale = standardisation(data.X[train])
    X_train, X_test = (data.X[train] - mean) / scale, (data.X[test] - mean) / scale
    Y_train = data.Y[train]
    what = f"MLkNN fit+predict+scores, yeast n={n_train} q={data.n_labels}"
    model = MLkNN(k=10, s=1.0, standardize=False, self_neighbour=True)

    def ours():
        model.fit(X_train, Y_train)
        return model.predict(X_test), model.decision_function(X_test)

    with threadpool_limits(1):
        t_ours = best_time(ours, 5)
        try:
            from skmultilearn.adapt import MLkNN as ReferenceMLkNN
        except ImportError:
            return [(f"{what} (scikit-multilearn not installed)", t_ours, float("nan"), float("nan"),
                     "≥ 10× faster than scikit-multilearn")]
        reference = ReferenceMLkNN(k=10, s=1.0)

        def theirs():
            reference.fit(X_train, Y_train)
            return reference.predict(X_test).toarray(), reference.predict_proba(X_test).toarray()

        t_ref = best_time(theirs, 2)
    (pred, score), (pred_ref, score_ref) = ours(), theirs()
    differ = int((pred != pred_ref).sum())
    gap = float(np.abs(score - score_ref).max())
    return [(what, t_ours, t_ref, t_ref / t_ours, "≥ 10× faster than scikit-multilearn"),
            (f"MLkNN predictions differing (max |Δscore| {gap:.1e})", differ, pred.size, differ / pred.size,
             "0 of the entries")]


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
            subprocess.run([sys.executable, "-m", "run", *args, "progress=false"], env=env, check=True,
                           capture_output=True, cwd=Path(__file__).resolve().parents[2])
            return time.perf_counter() - start

    t_all = wall(["experiment=ssl_comparison", "dataset=yeast"])
    t_main = wall(["method=mlmrrw", "dataset=yeast"])
    cores = os.cpu_count()
    return [(f"paper 000 comparison, yeast, 7 methods ({cores} cores)", t_all, t_main, t_all / t_main,
             "wall time; reference = ML-MRRW job alone")]


def bench_gmba_ranking() -> list[tuple]:
    """GMBA feature ranking (paper 004) on yeast and on bibtex (sparse, 7,395 × 1,836), against
    MLFS (a one-pass filter) on the same data, and its scaling with n on bibtex subsets: the
    ratio t(2n)/t(n) (2 = linear, 4 = quadratic). One BLAS thread."""
    from threadpoolctl import threadpool_limits

    from mlgraph.selection import GMBA, MLFS

    rows = []
    with threadpool_limits(1):
        for name in ("yeast", "bibtex"):
            data = load_dataset(name, f"{name}.arff.gz", f"{name}.xml")
            t_gmba = best_time(lambda: GMBA(random_state=0).fit(data.X, data.Y), 1)
            t_mlfs = best_time(lambda: MLFS().fit(data.X, data.Y), 3)
            rows.append((f"GMBA ranking {name} {data.n_samples}x{data.n_features}", t_gmba, t_mlfs,
                         t_gmba / t_mlfs, "time; reference = MLFS"))
        order = np.random.default_rng(0).permutation(data.n_samples)
        for n in (1000, 2000):
            half, full = order[: n // 2], order[:n]
            t_half = best_time(lambda: GMBA(random_state=0).fit(data.X[half], data.Y[half]), 2)
            t_full = best_time(lambda: GMBA(random_state=0).fit(data.X[full], data.Y[full]), 2)
            rows.append((f"GMBA scaling bibtex n={n // 2}->{n}", t_full, t_half, t_full / t_half,
                         "t(2n)/t(n): 2 linear, 4 quadratic"))
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


def bench_ml2() -> list[tuple]:
    """ML² (paper 002) fit + predict on one random half of yeast and of bibtex (the ``halves``
    protocol's split), against one Cholesky factorisation of an n × n SPD matrix of the kernel's
    size: every IRWLS iteration factors a support-vector block of K, so the ratio counts
    Cholesky-equivalents. Peak memory (tracemalloc) against the 8n² bytes of the kernel matrix.
    One BLAS thread, as in the runner."""
    from threadpoolctl import threadpool_limits

    from mlgraph.methods import ML2
    from mlgraph.protocols import labelling_rate_trials

    rows = []
    with threadpool_limits(1):
        for name in ("yeast", "bibtex"):
            data = load_dataset(name, f"{name}.arff.gz", f"{name}.xml")
            trial = labelling_rate_trials(data.n_samples, rates=[1.0], repeats=1, seed=0, test_size=0.5)[0]
            X_train, X_test, Y_train = data.X[trial.train], data.X[trial.test], data.Y[trial.train]
            n = X_train.shape[0]

            def run():
                ML2().fit(X_train, Y_train).decision_function(X_test)

            A = np.random.default_rng(0).normal(size=(n, n))
            A = A @ A.T + n * np.eye(n)
            t_ml2, peak = _time_and_peak(run)  # one call: bibtex takes minutes
            t_chol = best_time(lambda: scipy.linalg.cho_factor(A, check_finite=False), 3)
            rows.append((f"ML2 fit+predict {name} half n={n} q={data.n_labels}", t_ml2, t_chol, t_ml2 / t_chol,
                         "time; reference = one n x n Cholesky"))
            peak, kernel = peak / 2**20, 8 * n * n / 2**20
            rows.append((f"ML2 peak memory {name} (MiB)", peak, kernel, peak / kernel,
                         "reference = n x n float64 kernel; target <= 10"))
    return rows


def bench_dsml() -> list[tuple]:
    """DSML (paper 001) training, T = 10, on a five-fold training split of frequency_gender,
    against Independent Decomposition (one RBF network per label set) on the same split. DSML
    fits three networks per round (h_raw, h^a, h^b; Algorithm 1), so about 1.5 T = 15 times the
    reference is the cost of its base learners alone. One BLAS thread."""
    from threadpoolctl import threadpool_limits

    from mlgraph.data.dual_set import frequency_gender
    from mlgraph.methods import DSML, IndependentDecomposition
    from mlgraph.protocols import cross_validation_trials

    data = frequency_gender()
    trial = cross_validation_trials(data.n_samples, folds=5, seed=0)[0]
    X, Y = data.X[trial.train], data.Y[trial.train]
    with threadpool_limits(1):
        t_dsml = best_time(lambda: DSML(T=10, random_state=0).fit(X, Y), 3)
        t_ind = best_time(lambda: IndependentDecomposition().fit(X, Y), 3)
    return [(f"DSML fit T=10 frequency_gender n={len(X)}", t_dsml, t_ind, t_dsml / t_ind,
             "time; reference = Ind. Decomposition; ~15 = base learners only")]


BENCHES = {"mlmrrw_vs_lu": bench_mlmrrw_vs_lu, "arff_vs_liac": bench_arff_vs_liac,
           "mlflow_overhead": bench_mlflow_overhead, "mlknn_vs_skmultilearn": bench_mlknn_vs_skmultilearn, "comparison_yeast": bench_comparison_yeast,
           "gmba": bench_gmba_ranking, "ml2": bench_ml2, "dsml": bench_dsml}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="mlgraph benchmarks (ratios, one run)")
    parser.add_argument("--only", default="", help="run benchmarks whose name contains this")
    args = parser.parse_args(argv)
    print(f"{'benchmark':48s} {'measured s':>11s} {'reference s':>12s} {'ratio':>8s}  target")
    for name, bench in BENCHES.items():
        if args.only in name:
            for what, measured, reference, ratio, target in bench():
                print(f"{what:48s} {measured:11.3f} {reference:12.3f} {ratio:8.3f}  {target}", flush=True)


if __name__ == "__main__":
    main()
