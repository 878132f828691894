"""On-disk cache of computed arrays (graphs, feature rankings) that stores data, never code.

An entry is one ``.npz`` file read with ``np.load(allow_pickle=False)``: dense arrays as they
are, CSR/CSC matrices as their ``data``/``indices``/``indptr`` arrays (what
``scipy.sparse.save_npz`` stores), and a member ``__meta__`` holding UTF-8 JSON (the entry's
key, the kind of every field, JSON scalars, provenance). Nothing in it is unpickled, so a
planted or foreign file can at worst be unreadable, and an unreadable, truncated or foreign
entry (another key inside, garbage, a pickle) counts as a miss: it is recomputed and
overwritten.

The key is a SHA-256 of the inputs' content (dtype, shape and bytes; for sparse matrices
format, data, indices and indptr), the parameters as canonical JSON, the versions of mlgraph,
numpy, scipy and scikit-learn, and a hash of the source of the computing module together with
every mlgraph module it imports, transitively (:func:`source_files`); so editing a helper such
as ``knn_graph`` invalidates the graphs built with the old one.

Writes go to a temporary file in the entry's folder, then ``os.replace``: a reader sees the old
entry or the new one, never half of one, also across processes and across nodes sharing the
folder (rename within a directory is atomic on POSIX and on NFS). Two jobs computing the same
entry at once both write it; the last rename wins and both hold the same numbers.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import tempfile
import warnings
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path

import joblib
import numpy as np
import scipy
import scipy.sparse as sp
import sklearn

__all__ = ["SharedWork", "cache_folder", "cached", "entry_key", "shared", "source_files", "source_hash"]

FORMAT = 1  # layout of an entry; part of the key
_PACKAGE = Path(__file__).resolve().parents[1]  # the mlgraph package
_SPARSE = ("csr_matrix", "csc_matrix", "csr_array", "csc_array")
_META = "__meta__"
# What reading a damaged or foreign file can raise: each means "recompute".
_UNREADABLE = (
    OSError,
    EOFError,
    ValueError,
    KeyError,
    TypeError,
    AttributeError,
    zipfile.BadZipFile,
    zlib.error,
)


class SharedWork:
    """An in-process store of computed entries, under the keys of the disk cache, for work that
    many fits on the same rows repeat (the grid points and inner folds of a nested selection,
    :mod:`mlgraph.engine.tuning`: distances, graphs, kernels). Given as an estimator's ``memory``, it
    answers :func:`cached` (graphs; on disk too when ``folder`` is set) and :func:`shared`
    (entries too large for disk, kept here only). Every fit given the same store receives the
    same arrays: a caller that works in place on one copies it first. The oldest entries go
    first once their arrays exceed ``max_bytes``; a larger single entry is not kept."""

    def __init__(self, folder=None, max_bytes: int = 1 << 30):
        self.folder, self.max_bytes = folder, max_bytes
        self.entries: dict[str, dict] = {}
        self.hits = self.misses = 0

    @staticmethod
    def _size(fields: dict) -> int:
        return sum(
            v.nbytes if isinstance(v, np.ndarray) else getattr(getattr(v, "data", None), "nbytes", 0)
            for v in fields.values()
        )

    def get(self, key: str, compute: Callable[[], dict]) -> dict:
        if key in self.entries:
            self.hits += 1
            self.entries[key] = self.entries.pop(key)  # most recently used last
            return self.entries[key]
        self.misses += 1
        fields = compute()
        size = self._size(fields)
        if size <= self.max_bytes:
            while self.entries and size + sum(map(self._size, self.entries.values())) > self.max_bytes:
                self.entries.pop(next(iter(self.entries)))
            self.entries[key] = fields
        return fields

    def __repr__(self) -> str:  # in get_params(): says what it is, not its contents
        return f"SharedWork(folder={self.folder!r}, entries={len(self.entries)})"


def cache_folder(memory) -> Path | None:
    """The folder named by an estimator's ``memory`` parameter: None (no cache), a folder
    (str or path-like), a ``joblib.Memory``, whose ``location`` is used as the folder
    (``Memory(None)`` means no cache; its own pickle store is never used), or a
    :class:`SharedWork`, whose ``folder`` is used."""
    if isinstance(memory, SharedWork):
        memory = memory.folder
    if isinstance(memory, joblib.Memory):
        memory = memory.location
    if memory is None:
        return None
    if isinstance(memory, (str, os.PathLike)) and str(memory):
        return Path(memory)
    raise TypeError(f"memory must be None, a cache folder (str or path) or a joblib.Memory, got {memory!r}")


# ------------------------------------------------------------------------------------ key


def _module_file(name: str) -> Path | None:
    """Source file of mlgraph module ``name`` (``mlgraph.x.y``), None when it is no module."""
    base = _PACKAGE.joinpath(*name.split(".")[1:])
    return next((p for p in (base.with_suffix(".py"), base / "__init__.py") if p.is_file()), None)


def _mlgraph_imports(name: str, path: Path) -> set[str]:
    """mlgraph modules (and names that may be modules) imported anywhere in ``path``."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_bytes(), filename=str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = importlib.util.resolve_name("." * node.level + (node.module or ""), package)
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)  # `from pkg import module`
    return {m for m in found if m.split(".")[0] == "mlgraph"}


def source_files(root: str) -> dict[str, Path]:
    """Module name -> source file for ``root`` and every mlgraph module it imports, transitively."""
    if _module_file(root) is None:
        raise ValueError(f"{root!r} is not a module of the mlgraph package in {_PACKAGE}")
    files, todo = {}, [root]
    while todo:
        name = todo.pop()
        path = None if name in files else _module_file(name)
        if path is not None:
            files[name] = path
            todo.extend(_mlgraph_imports(name, path))
    return files


@functools.cache
def source_hash(root: str) -> str:
    """SHA-256 of the sources of :func:`source_files` ``(root)``; computed once per process."""
    digest = hashlib.sha256()
    for name, path in sorted(source_files(root).items()):
        digest.update(f"{name}\0{path.stat().st_size}\0".encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


@functools.cache
def _versions() -> dict[str, str]:
    try:
        own = importlib.metadata.version("mlgraph")
    except importlib.metadata.PackageNotFoundError:  # run from a source tree: the source hash decides
        own = "unknown"
    return {
        "mlgraph": own,
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "sklearn": sklearn.__version__,
    }


def _array_digest(a: np.ndarray) -> str:
    if a.dtype.hasobject:
        raise TypeError(f"cache: an input of dtype {a.dtype} has no byte content to hash")
    digest = hashlib.sha256(f"{a.dtype.str}{a.shape}".encode())
    digest.update(memoryview(np.ascontiguousarray(a)).cast("B"))
    return digest.hexdigest()


def _content(value) -> dict:
    """What identifies an input: dtype, shape and bytes of its array(s)."""
    if isinstance(value, np.ndarray):
        return {"array": _array_digest(value)}
    if sp.issparse(value) and value.format in ("csr", "csc"):
        return {
            "format": value.format,
            "shape": list(value.shape),
            **{part: _array_digest(getattr(value, part)) for part in ("data", "indices", "indptr")},
        }
    raise TypeError(f"cache: inputs must be numpy arrays or CSR/CSC matrices, got {type(value).__name__}")


def _json_default(value):
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(
        f"cache: parameter value {value!r} ({type(value).__name__}) cannot be part of a "
        "cache key; use numbers, strings, booleans, None or lists of them"
    )


def _canonical(obj) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=_json_default)


def entry_key(namespace: str, inputs: dict, params: dict, module: str) -> str:
    """Key of the entry computed by ``module`` from ``inputs`` (arrays) and ``params`` (JSON)."""
    return hashlib.sha256(
        _canonical(
            {
                "format": FORMAT,
                "namespace": namespace,
                "versions": _versions(),
                "source": source_hash(module),
                "params": params,
                "inputs": {name: _content(v) for name, v in inputs.items()},
            }
        ).encode()
    ).hexdigest()


# ------------------------------------------------------------------------------ entries


def _encode(fields: dict) -> tuple[dict, dict]:
    """(arrays to save, JSON description) of a result dict."""
    arrays, kinds = {}, {}
    for name, value in fields.items():
        if isinstance(value, (bool, int, float, str)) or value is None:
            kinds[name] = {"kind": "json", "value": value}
        elif isinstance(value, (np.ndarray, np.generic)) and not np.asarray(value).dtype.hasobject:
            kinds[name] = {"kind": "scalar" if isinstance(value, np.generic) else "array"}
            arrays[name] = np.asarray(value)
        elif sp.issparse(value) and type(value).__name__ in _SPARSE:
            kinds[name] = {"kind": type(value).__name__, "shape": list(value.shape)}
            arrays.update({f"{name}.{p}": getattr(value, p) for p in ("data", "indices", "indptr")})
        else:
            raise TypeError(
                f"cache: result {name!r} of type {type(value).__name__} cannot be stored "
                "without pickle (arrays, CSR/CSC matrices and JSON scalars can)"
            )
    return arrays, kinds


def _sparse(kind: str, shape: list, data, indices, indptr):
    """The matrix of a stored entry, its index dtypes kept and its structure checked in full
    (out-of-range indices in a planted file would otherwise reach compiled code)."""
    if kind not in _SPARSE:
        raise ValueError(f"unknown sparse kind {kind!r}")
    matrix = getattr(sp, kind)((data, indices, indptr), shape=tuple(shape))
    matrix.check_format(full_check=True)  # may narrow the index dtypes: put the stored ones back
    matrix.indices = matrix.indices.astype(indices.dtype, copy=False)
    matrix.indptr = matrix.indptr.astype(indptr.dtype, copy=False)
    return matrix


def _read(path: Path, key: str) -> dict | None:
    """The fields of the entry at ``path`` if it holds ``key``; None when missing or unreadable."""
    try:
        with np.load(path, allow_pickle=False) as stored:
            meta = json.loads(stored[_META].tobytes().decode("utf-8"))
            if meta.get("format") != FORMAT or meta.get("key") != key:
                return None
            fields = {}
            for name, spec in meta["fields"].items():
                kind = spec["kind"]
                if kind == "json":
                    fields[name] = spec["value"]
                elif kind in ("array", "scalar"):
                    fields[name] = stored[name][()] if kind == "scalar" else stored[name]
                else:
                    fields[name] = _sparse(
                        kind, spec["shape"], *(stored[f"{name}.{p}"] for p in ("data", "indices", "indptr"))
                    )
            return fields
    except _UNREADABLE:  # missing (FileNotFoundError is an OSError), damaged or foreign
        return None


def _write(path: Path, key: str, fields: dict, provenance: dict) -> None:
    """Save atomically: a temporary file in the same folder, then ``os.replace``."""
    arrays, kinds = _encode(fields)
    meta = _canonical({"format": FORMAT, "key": key, "fields": kinds, "provenance": provenance})
    arrays[_META] = np.frombuffer(meta.encode("utf-8"), dtype=np.uint8)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            np.savez(handle, **arrays)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def cached(
    memory, namespace: str, compute: Callable[[], dict], *, inputs: dict, params: dict, module: str
) -> dict:
    """``compute()`` (a dict of arrays, CSR/CSC matrices and JSON scalars) through the cache in
    folder ``memory`` (see :func:`cache_folder`; None computes directly).

    ``inputs`` (arrays) and ``params`` (JSON) must determine the result, ``module`` names the
    mlgraph module that computes it (its source and imports enter the key). The entry lives at
    ``<memory>/<namespace>/<key>.npz``. A failed write only warns: the result is returned.
    """
    if isinstance(memory, SharedWork):
        key = entry_key(namespace, inputs, params, module)
        return memory.get(
            key,
            lambda: cached(memory.folder, namespace, compute, inputs=inputs, params=params, module=module),
        )
    folder = cache_folder(memory)
    if folder is None:
        return compute()
    key = entry_key(namespace, inputs, params, module)
    path = folder / namespace / f"{key}.npz"
    found = _read(path, key)
    if found is not None:
        return found
    fields = compute()
    try:
        _write(path, key, fields, {"params": params, "versions": _versions(), "source": source_hash(module)})
    except OSError as error:
        warnings.warn(f"cache: could not write {path}: {error}", RuntimeWarning, stacklevel=2)
    return fields


def shared(
    memory, namespace: str, compute: Callable[[], dict], *, inputs: dict, params: dict, module: str
) -> dict:
    """``compute()`` once per :class:`SharedWork` ``memory`` for the same inputs and parameters
    (same key as :func:`cached`), never on disk; with any other ``memory``, computed directly.
    For intermediate results too large to be worth a file (n × n distances and kernels)."""
    if not isinstance(memory, SharedWork):
        return compute()
    return memory.get(entry_key(namespace, inputs, params, module), compute)
