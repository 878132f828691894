"""The data-only cache of mlgraph.graphs.cache: hits and misses, what the key covers, exact round trips,
planted and damaged entries (never executed, always recomputed), concurrent writers, and graphs
and rankings on emotions bit-identical with and without the cache."""

from __future__ import annotations

import multiprocessing
import pickle
import zipfile
from pathlib import Path

import joblib
import numpy as np
import pytest
import scipy.sparse as sp

from mlgraph.data import load_dataset
from mlgraph.graphs import cache, squared_distances
from mlgraph.methods import base
from mlgraph.methods.base import cached_graph, standardisation
from mlgraph.methods.selection import GMBA, SPEC

GRAPHS = Path(cache.__file__).parent


class Counter:
    """A computation that counts its calls."""

    def __init__(self, fields):
        self.fields, self.calls = fields, 0

    def __call__(self):
        self.calls += 1
        return self.fields


def _fields():
    rng = np.random.default_rng(0)
    return {
        "dense": rng.normal(size=(5, 3)),
        "W": sp.random(6, 6, density=0.3, format="csr", random_state=1),
        "count": 7,
        "name": "knn",
        "flag": True,
        "none": None,
        "score": np.float32(0.25),
    }


def _call(folder, compute, X=None, **params):
    X = np.arange(12.0).reshape(4, 3) if X is None else X
    return cache.cached(folder, "test", compute, inputs={"X": X}, params=params, module="mlgraph.graphs")


def _key(X, **params):
    return cache.entry_key("test", {"X": X}, params, "mlgraph.graphs")


def _assert_same(a: dict, b: dict):
    assert a.keys() == b.keys()
    for name, x in a.items():
        y = b[name]
        assert type(x) is type(y), name
        if sp.issparse(x):
            for part in ("data", "indices", "indptr"):
                u, v = getattr(x, part), getattr(y, part)
                assert u.dtype == v.dtype and u.tobytes() == v.tobytes(), (name, part)
            assert x.shape == y.shape
        elif isinstance(x, (np.ndarray, np.generic)):
            assert x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes(), name
        else:
            assert x == y, name


# ------------------------------------------------------------------------- hit and miss


def test_second_call_is_a_hit(tmp_path):
    compute = Counter(_fields())
    first = _call(tmp_path, compute)
    second = _call(tmp_path, compute)
    assert compute.calls == 1
    _assert_same(first, compute.fields)
    _assert_same(second, compute.fields)
    assert len(list((tmp_path / "test").glob("*.npz"))) == 1
    _call(tmp_path, compute, k=3)  # other parameters: a miss
    assert compute.calls == 2


def test_cached_graph_builds_once(tmp_path, monkeypatch):
    calls = []

    def build(X, **params):
        calls.append(params)
        return real(X, **params)

    real = base.build_graph
    monkeypatch.setattr(base, "build_graph", build)
    X = np.random.default_rng(3).normal(size=(30, 4))
    a, info = cached_graph(tmp_path, X, kind="knn", k=5, sqdist=squared_distances(X))
    b, _ = cached_graph(str(tmp_path), X, kind="knn", k=5, sqdist=None)  # sqdist is not in the key
    assert len(calls) == 1 and (a != b).nnz == 0 and info == {}
    cached_graph(tmp_path, X, kind="knn", k=6)
    assert len(calls) == 2
    _, info = cached_graph(tmp_path, X, kind="knn", k=5, search="approximate")
    again = cached_graph(tmp_path, X, kind="knn", k=5, search="approximate")[1]
    assert len(calls) == 3 and info == again == {"knn_recall": 1.0}  # the recall is cached with W


def test_memory_none_and_joblib_memory(tmp_path):
    compute = Counter({"a": np.ones(2)})
    _call(None, compute)
    _call(joblib.Memory(None, verbose=0), compute)
    assert compute.calls == 2
    _call(joblib.Memory(tmp_path, verbose=0), compute)
    _call(tmp_path, compute)  # the Memory's location is the folder itself
    assert compute.calls == 3 and len(list(tmp_path.rglob("*.npz"))) == 1
    with pytest.raises(TypeError, match="memory must be None, a cache folder"):
        _call(3, compute)


# ---------------------------------------------------------------------------------- key


def test_key_covers_content_parameters_and_source(monkeypatch):
    X = np.arange(12.0).reshape(4, 3)
    key = _key(X, k=3)
    assert _key(X.copy(), k=3) == key
    assert _key(np.asfortranarray(X), k=3) == key  # the values, not the memory layout
    changed = X.copy()
    changed[2, 1] = np.nextafter(changed[2, 1], np.inf)
    others = [
        _key(changed, k=3),
        _key(X.astype(np.float32), k=3),
        _key(X.reshape(3, 4), k=3),
        _key(sp.csr_matrix(X), k=3),
        _key(X, k=4),
        _key(X, k=3.0),
        _key(X, k=3, sigma=None),
        cache.entry_key("other", {"X": X}, {"k": 3}, "mlgraph.graphs"),
    ]
    assert len({key, *others}) == len(others) + 1
    monkeypatch.setattr(cache, "source_hash", lambda root: "edited")
    assert _key(X, k=3) != key


def test_sparse_key_covers_structure():
    A = sp.csr_matrix(np.array([[0.0, 1.0], [2.0, 0.0]]))
    B = A.copy()
    B.indices = B.indices.astype(np.int64)
    C = A.copy()
    C.data[0] = 3.0
    assert len({_key(A), _key(B), _key(C), _key(A.tocsc())}) == 4


def test_parameters_must_be_json():
    X = np.ones((2, 2))
    assert _key(X, k=np.int64(3), on=np.bool_(True)) == _key(X, k=3, on=True)
    with pytest.raises(TypeError, match="RandomState.*cannot be part of a cache key"):
        _key(X, random_state=np.random.RandomState(0))
    with pytest.raises(TypeError, match="inputs must be numpy arrays"):
        _key([[1.0]])


def test_source_files_follow_imports():
    graphs = cache.source_files("mlgraph.graphs")
    # knn_graph's sparsify.py among them; the cache itself is no part of mlgraph.graphs' imports;
    # beyond the package, only the config layer (search.py's optional extras)
    files = set(graphs.values())
    assert {p for p in GRAPHS.glob("*.py") if p.name != "cache.py"} <= files
    assert {p.parent.name for p in files} == {"graphs", "config"}
    ranking = cache.source_files("mlgraph.methods.selection")
    assert {"mlgraph.methods.selection", "mlgraph.methods.base", "mlgraph.graphs.sparsify"} <= ranking.keys()
    assert cache.source_hash("mlgraph.graphs") != cache.source_hash("mlgraph.methods.selection")
    with pytest.raises(ValueError, match="not a module of the mlgraph package"):
        cache.source_files("mlgraph.nothing")


# --------------------------------------------------------------------------- round trips


def test_round_trip_is_exact(tmp_path):
    W = sp.csr_matrix(
        (
            np.array([0.0, 2.5, -1.0, 0.0]),
            np.array([2, 0, 1, 0], dtype=np.int64),
            np.array([0, 2, 3, 4], dtype=np.int64),
        ),
        shape=(3, 3),
    )
    W.indices = W.indices.astype(np.int64)  # the constructor narrows: keep int64, unsorted, 2 stored zeros
    W.indptr = W.indptr.astype(np.int64)
    fields = {
        "W": W,
        "C": sp.csc_array(np.eye(3, dtype=np.float32)),
        "v": np.array([1, -2], dtype=np.int8),
        "empty": np.zeros((0, 4)),
        "nan": np.array([np.nan, np.inf, -0.0]),
        "i": np.int64(5),
        "x": 0.1,
        "big": 2**62,
    }
    compute = Counter(fields)
    _call(tmp_path, compute)
    loaded = _call(tmp_path, compute)
    assert compute.calls == 1
    _assert_same(loaded, fields)
    assert loaded["W"].nnz == 4 and not loaded["W"].has_sorted_indices


def test_results_that_need_pickle_are_refused(tmp_path):
    with pytest.raises(TypeError, match="'bad' of type dict cannot be stored without pickle"):
        _call(tmp_path, lambda: {"bad": {"a": 1}})
    with pytest.raises(TypeError, match="'objects' of type ndarray"):
        _call(tmp_path, lambda: {"objects": np.array([None, 1], dtype=object)})
    assert not list(tmp_path.rglob("*.npz"))


# ------------------------------------------------------------------ planted and damaged


class Payload:
    """Unpickling it creates ``marker``: a stand-in for arbitrary code."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def _plant_pickle(path, marker, key):
    path.write_bytes(pickle.dumps(Payload(marker)))


def _plant_object_member(path, marker, key):
    """A well-formed entry with the right key whose field is a pickled object array."""
    meta = cache._canonical({"format": cache.FORMAT, "key": key, "fields": {"a": {"kind": "array"}}})
    with open(path, "wb") as handle:
        np.savez(
            handle,
            __meta__=np.frombuffer(meta.encode(), np.uint8),
            a=np.array([Payload(marker)], dtype=object),
        )


def _plant_garbage(path, marker, key):
    path.write_bytes(np.random.default_rng(0).bytes(5000))


def _plant_empty(path, marker, key):
    path.write_bytes(b"")


def _plant_truncated(path, marker, key):
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _plant_flipped(path, marker, key):
    data = bytearray(path.read_bytes())
    data[len(data) // 3] ^= 0xFF  # zip's CRC catches it
    path.write_bytes(bytes(data))


def _plant_foreign(path, marker, key):
    """A valid entry of another computation, copied under this name."""
    other = path.parent / "other"
    cache._write(other, "0" * 64, {"a": np.zeros(3)}, {})
    other.replace(path)


def _plant_no_meta(path, marker, key):
    with open(path, "wb") as handle:
        np.savez(handle, a=np.zeros(3))


def _plant_bad_meta(path, marker, key):
    with open(path, "wb") as handle:
        np.savez(handle, __meta__=np.frombuffer(b"[1, 2]", np.uint8))


def _plant_bad_indices(path, marker, key):
    """Right key, a sparse field whose indices point outside the matrix."""
    meta = cache._canonical(
        {"format": cache.FORMAT, "key": key, "fields": {"a": {"kind": "csr_matrix", "shape": [2, 2]}}}
    )
    with open(path, "wb") as handle:
        np.savez(
            handle,
            __meta__=np.frombuffer(meta.encode(), np.uint8),
            **{
                "a.data": np.ones(1),
                "a.indices": np.array([10**6], np.int32),
                "a.indptr": np.array([0, 1, 1], np.int32),
            },
        )


@pytest.mark.parametrize(
    "plant",
    [
        _plant_pickle,
        _plant_object_member,
        _plant_garbage,
        _plant_empty,
        _plant_truncated,
        _plant_flipped,
        _plant_foreign,
        _plant_no_meta,
        _plant_bad_meta,
        _plant_bad_indices,
    ],
)
def test_bad_entries_are_recomputed_never_executed(tmp_path, plant):
    folder, marker = tmp_path / "cache", tmp_path / "marker"
    X = np.random.default_rng(5).normal(size=(4, 3))
    compute = Counter(_fields())
    fresh = _call(folder, compute, X)
    (path,) = (folder / "test").glob("*.npz")
    plant(path, marker, path.stem)
    again = _call(folder, compute, X)
    assert compute.calls == 2 and not marker.exists()
    _assert_same(again, fresh)
    assert cache._read(path, path.stem) is not None  # overwritten with a good entry
    _call(folder, compute, X)
    assert compute.calls == 2


def test_stray_joblib_pickles_are_never_read(tmp_path):
    """An old joblib store (``output.pkl``) in the folder, made malicious, is left alone."""
    folder, marker = tmp_path / "graphs", tmp_path / "marker"
    X = np.random.default_rng(6).normal(size=(20, 3))
    plain, _ = cached_graph(None, X, k=4)
    stray = folder / "joblib" / "mlgraph" / "graphs" / "build_graph" / "0123abcd" / "output.pkl"
    stray.parent.mkdir(parents=True)
    stray.write_bytes(pickle.dumps(Payload(marker)))
    for _ in range(2):
        W, _ = cached_graph(folder, X, k=4)
        assert W.dtype == plain.dtype and (W != plain).nnz == 0
    assert not marker.exists()


def test_unwritable_folder_warns_and_returns(tmp_path):
    folder = tmp_path / "file"
    folder.write_text("not a folder")
    compute = Counter({"a": np.arange(3)})
    with pytest.warns(RuntimeWarning, match="could not write"):
        result = _call(folder, compute)
    np.testing.assert_array_equal(result["a"], np.arange(3))
    assert list(tmp_path.iterdir()) == [folder]  # no temporary file left behind


# ---------------------------------------------------------------------------- concurrency


BIG = np.random.default_rng(7).normal(size=(600, 600))  # 2.9 MB: a write takes a while


def _writer(folder, barrier, results, rewrites):
    """Both processes miss, compute together, write the same entry, then keep rewriting it."""

    def compute():
        barrier.wait(timeout=60)
        return {"W": BIG.copy(), "n": 600}

    result = cache.cached(folder, "test", compute, inputs={"X": BIG}, params={}, module="mlgraph.graphs")
    key = cache.entry_key("test", {"X": BIG}, {}, "mlgraph.graphs")
    for _ in range(rewrites):
        cache._write(Path(folder) / "test" / f"{key}.npz", key, {"W": BIG.copy(), "n": 600}, {})
    results.put(result["W"].tobytes() == BIG.tobytes() and result["n"] == 600)


def test_concurrent_writers_never_expose_half_an_entry(tmp_path):
    context = multiprocessing.get_context("fork")
    barrier, results = context.Barrier(2), context.Queue()
    key = cache.entry_key("test", {"X": BIG}, {}, "mlgraph.graphs")
    path = tmp_path / "test" / f"{key}.npz"
    workers = [context.Process(target=_writer, args=(tmp_path, barrier, results, 15)) for _ in range(2)]
    for worker in workers:
        worker.start()
    reads = failures = 0
    while any(w.is_alive() for w in workers):
        if path.exists():  # once there, every read must find a whole entry
            found = cache._read(path, key)
            reads += 1
            failures += found is None or found["W"].tobytes() != BIG.tobytes()
    for worker in workers:
        worker.join(timeout=60)
        assert worker.exitcode == 0
    assert [results.get(timeout=10) for _ in workers] == [True, True]
    assert failures == 0 and reads > 0
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temporary file left
    assert zipfile.is_zipfile(path)


# ------------------------------------------------------------------------- real data


@pytest.fixture(scope="module")
def emotions():
    ds = load_dataset("emotions", "emotions.arff.gz", "emotions.xml")
    mean, scale = standardisation(ds.X)
    return (ds.X - mean) / scale, ds.Y


@pytest.mark.parametrize("weights", ["distance", "heat"])
def test_graph_bit_identical_with_and_without_cache(tmp_path, emotions, weights):
    Xs, _ = emotions
    params = dict(kind="knn", weights=weights, k=10, random_state=0)
    plain = cached_graph(None, Xs, **params)[0]
    miss = cached_graph(tmp_path, Xs, **params, sqdist=squared_distances(Xs))[0]
    hit = cached_graph(tmp_path, Xs, **params)[0]
    for W in (miss, hit):
        _assert_same({"W": W}, {"W": plain})


@pytest.mark.parametrize(
    "make", [lambda m: GMBA(n_iter=60, random_state=0, memory=m), lambda m: SPEC(variant="phi2", memory=m)]
)
def test_ranking_bit_identical_with_and_without_cache(tmp_path, emotions, make, monkeypatch):
    Xs, Y = emotions
    plain = make(None).fit(Xs, Y)
    miss = make(tmp_path).fit(Xs, Y)
    calls = []
    monkeypatch.setattr(type(plain), "_score", lambda *a: calls.append(1))
    hit = make(tmp_path).set_params(fraction=0.6).fit(Xs, Y)  # fraction is not in the key
    assert not calls
    fitted = {k: v for k, v in vars(plain).items() if k.endswith("_")}
    assert fitted.keys() == {k for k in vars(hit) if k.endswith("_")}
    for model in (miss, hit):
        _assert_same({k: getattr(model, k) for k in fitted}, fitted)
