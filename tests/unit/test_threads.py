"""BLAS threads: estimators made of small products that alternate between numpy's and scipy's
BLAS run them on one thread whatever the caller allows (two threads made them 1.5–2.6× slower;
``make bench ARGS="--only threads"`` measures it), and the limit is undone afterwards."""

import inspect

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

import mlgraph.methods.mlknn as mlknn
import mlgraph.methods.rbf_network as rbf_network
import mlgraph.methods.spectral as spectral
import mlgraph.methods.weak_label as weak_label
from mlgraph.graphs.kernels import blas_threads, on_one_blas_thread, one_blas_thread


@pytest.fixture
def two_threads():
    with threadpool_limits(2):
        if blas_threads() < 2:
            pytest.skip("the BLAS here runs on one thread at most")
        yield


def _recording(seen: list, fn):
    def wrapper(*args, **kwargs):
        seen.append(blas_threads())
        return fn(*args, **kwargs)

    return wrapper


def _problem(n=120, d=6, q=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    Y = (X[:, :q] + 0.5 * rng.normal(size=(n, q)) > 0).astype(np.int8)
    return X, Y


def test_one_blas_thread_limits_and_restores(two_threads):
    with one_blas_thread():
        assert blas_threads() == 1
    assert blas_threads() == 2


def test_the_decorator_keeps_the_signature_and_limits_each_call(two_threads):
    def fit(self, X, Y=None, *, sample_weight=None):
        return blas_threads()

    wrapped = on_one_blas_thread(fit)
    assert inspect.signature(wrapped) == inspect.signature(fit) and wrapped.__name__ == "fit"
    assert wrapped(None, None) == 1 and blas_threads() == 2


@pytest.mark.parametrize("multi_label", [True, False])
def test_rbf_networks_fit_and_score_on_one_thread(monkeypatch, two_threads, multi_label):
    """ML-RBF, and the RBF network that DSML and the decompositions boost."""
    seen = []
    monkeypatch.setattr(rbf_network, "rbf_design", _recording(seen, rbf_network.rbf_design))
    X, Y = _problem()
    model = rbf_network.MLRBF().fit(X, Y) if multi_label else rbf_network.RBFNetwork().fit(X, Y[:, 0])
    model.decision_function(X)
    assert seen == [1, 1] and blas_threads() == 2


def test_sswl_fits_and_scores_on_one_thread(monkeypatch, two_threads):
    seen = []
    problem = weak_label._SSWLProblem
    monkeypatch.setattr(problem, "update_W", _recording(seen, problem.update_W))
    monkeypatch.setattr(
        weak_label.SSWL, "_check_predict_data", _recording(seen, weak_label.SSWL._check_predict_data)
    )
    X, Y = _problem()
    Y[::2] = -1
    weak_label.SSWL(max_iter=2).fit(X, Y).decision_function(X)
    assert seen and set(seen) == {1} and blas_threads() == 2


def test_fsksc_fits_and_scores_on_one_thread(monkeypatch, two_threads):
    seen = []
    monkeypatch.setattr(spectral, "gaussian_kernel", _recording(seen, spectral.gaussian_kernel))
    X, Y = _problem()
    Y[::2] = -1
    spectral.MLFSKSC(n_prototypes=20, entropy_iterations=50).fit(X, Y).decision_function(X)
    assert seen and set(seen) == {1} and blas_threads() == 2


def test_mlknn_exact_rows_on_one_thread(monkeypatch, two_threads):
    """The few rows that the single-precision screening leaves to the exact rule (here every
    row: duplicated points tie) get their scipy product on one thread."""
    seen = []
    monkeypatch.setattr(mlknn, "squared_distances", _recording(seen, mlknn.squared_distances))
    X, Y = _problem()
    X = np.vstack([X, X])
    mlknn.MLkNN(k=3).fit(X, np.vstack([Y, Y])).decision_function(X)
    assert seen and set(seen) == {1} and blas_threads() == 2
