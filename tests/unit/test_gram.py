"""Blocked self-distances (graphs/kernels.py) and the OpenBLAS crash they avoid."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from mlgraph.graphs import kernels
from mlgraph.graphs.kernels import exp_scaled, matmul, row_blocks, squared_distances


@pytest.mark.parametrize("block", [7, 64, 2048])
def test_blocked_self_distances_are_exact_and_symmetric(monkeypatch, block):
    monkeypatch.setattr(kernels, "_GRAM_ROWS", block)
    monkeypatch.setattr(kernels, "_PARALLEL_ELEMENTS", 1)  # threaded passes even on small arrays
    X = np.random.default_rng(0).normal(size=(150, 6))
    X[3] = X[8]  # a duplicate point: distance exactly 0
    D = squared_distances(X)
    ref = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)
    np.testing.assert_allclose(D, ref, rtol=1e-12, atol=1e-12)
    assert (D == D.T).all() and (np.diag(D) == 0).all() and D.min() >= 0
    assert D[3, 8] <= 1e-12


def test_cross_distances_and_threaded_exp(monkeypatch):
    monkeypatch.setattr(kernels, "_PARALLEL_ELEMENTS", 1)
    rng = np.random.default_rng(1)
    A, B = rng.normal(size=(70, 4)), rng.normal(size=(33, 4))
    D = squared_distances(A, B)
    np.testing.assert_allclose(D, ((A[:, None] - B[None]) ** 2).sum(-1), rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(exp_scaled(D.copy(), -0.3), np.exp(D * -0.3))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("orders", ["CC", "CF", "FC", "FF", "SC", "CS"])
def test_matmul_by_scipys_blas_equals_numpys_product(dtype, orders):
    """C, Fortran and strided (S) operands, the result in C order."""
    rng = np.random.default_rng(2)
    made = {"C": np.ascontiguousarray, "F": np.asfortranarray, "S": lambda X: np.repeat(X, 2, axis=1)[:, ::2]}
    A = made[orders[0]](rng.normal(size=(37, 12)).astype(dtype))
    B = made[orders[1]](rng.normal(size=(12, 23)).astype(dtype))
    rtol = 1e-5 if dtype == np.float32 else 1e-13
    C = matmul(A, B)
    assert C.flags.c_contiguous and C.dtype == dtype
    np.testing.assert_allclose(C, A.astype(np.float64) @ B, rtol=rtol, atol=rtol)


@pytest.mark.parametrize("shapes", [((0, 5), (5, 3)), ((3, 0), (0, 4)), ((3, 5), (5, 0))])
def test_matmul_of_empty_operands(shapes):
    A, B = np.ones(shapes[0]), np.ones(shapes[1])
    np.testing.assert_array_equal(matmul(A, B), A @ B)


def test_row_blocks_cover_every_row_once(monkeypatch):
    monkeypatch.setattr(kernels, "_PARALLEL_ELEMENTS", 1)
    seen = np.zeros(1001, dtype=int)

    def visit(rows):
        seen[rows] += 1

    row_blocks(1001, visit, 10)
    assert (seen == 1).all()


def _available_bytes() -> int:
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError):
        return 0


@pytest.mark.slow
@pytest.mark.skipif(_available_bytes() < 8 * 2**30, reason="needs ~6 GiB for a 19,064² matrix")
def test_tall_self_gram_does_not_crash_openblas():
    """numpy's OpenBLAS 0.3.31 dies (SIGSEGV) in A @ A.T (syrk) for A of 19,064 × 500 under 2
    threads (tmc2007-500's training split); the blocked product must not. Run in a subprocess
    so that a crash fails this test instead of killing pytest."""
    code = textwrap.dedent("""
        import numpy as np
        from threadpoolctl import threadpool_limits
        from mlgraph.graphs import squared_distances
        A = np.random.default_rng(0).normal(size=(19064, 500))
        with threadpool_limits(2):
            D = squared_distances(A)
        i, j = 18999, 123
        assert D.shape == (19064, 19064) and D[i, j] == D[j, i]
        assert abs(D[i, j] - ((A[i] - A[j]) ** 2).sum()) < 1e-9 * D[i, j]
        print("ok")
    """)
    # OpenBLAS's own CPU detection (SkylakeX kernels here), not a core type forced from outside.
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, f"exit {done.returncode}: {done.stderr[-2000:]}"
    assert done.stdout.strip() == "ok"
