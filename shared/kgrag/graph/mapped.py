"""Opening a saved graph memory-mapped, so that many processes share one copy of its arrays.

``load_graph(path, mmap=True)`` maps the edge arrays (``heads``, ``rels``, ``tails``)
and, when the save holds them, the adjacency index (``out_indptr``, ``out_key``, ``in_indptr``,
``in_order``, ``in_key``, ``adj_ptr``, ``adj_rows``) read-only from the ``.npy`` files instead of
reading them into private memory. The pages belong to the operating system's page cache, so N
worker processes serving one saved graph hold one physical copy of the arrays, and a worker
starts without sorting anything. What stays per process: the name tables (Python lists and
dicts), descriptions, aliases and per-thread scratch arrays.

Hostile or damaged files give :class:`~kgrag.errors.GraphLoadError`, never a crash:

* each ``.npy`` header is read first and checked -- one dimension (two for ``adj_rows``), an
  integer dtype of the expected width in native byte order, the length the manifest promises,
  and header + data exactly the size of the file -- before anything is mapped, so a file that
  claims more data than it holds is refused instead of faulting (``SIGBUS``) on first access;
* the contents are then checked in bounded chunks (ids in range, edges strictly sorted, every
  index array consistent with the edges), so a mapped graph answers exactly as the graph the
  arrays were saved from, and the check allocates no full-size temporary.

A mapped file must not be rewritten in place while it is mapped: a truncated file faults
(``SIGBUS``, the process dies) and a same-size rewrite changes the answers under the process.
:meth:`KnowledgeGraph.save` never does that: it writes a new folder and renames it into place,
and a process that still maps the old files keeps reading them until it lets go. Against
someone else doing it (``cp new/* served/``), :class:`MappedFiles` keeps each mapped file open
and compares its size and modification time (``fstat``, at most every
:attr:`MappedFiles.interval` seconds) before the graph's queries use the arrays: a rewrite
found there is a :class:`~kgrag.errors.GraphLoadError` from then on, instead of wrong answers.
That narrows the window; it cannot close it (a truncation in the middle of a query still
faults), so swap a served graph by saving to a new folder and renaming it
(``docs/bring-your-own-graph.md``, "Swapping a served graph").
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
import tokenize
from pathlib import Path as FsPath
from typing import Any, NoReturn, Protocol

import numpy as np

from kgrag.errors import GraphLoadError

log = logging.getLogger(__name__)

EDGE_ARRAYS = ("heads", "rels", "tails")
#: The adjacency index :meth:`KnowledgeGraph.save` writes beside the edges (name -> dtype).
INDEX_ARRAYS = {"out_indptr": np.int64, "out_key": np.int64, "in_indptr": np.int64,
                "in_order": np.int32, "in_key": np.int64}
ADJ_ARRAYS = {"adj_ptr": np.int64, "adj_rows": np.int32}
_CHUNK = 1 << 20  # elements checked at a time


def npy_layout(path: FsPath, *, what: str | None = None) -> tuple[np.dtype, tuple[int, ...], int]:
    """``(dtype, shape, data_offset)`` from a ``.npy`` header, checked against the file size.

    Reads only the header (bounded size, parsed with ``ast.literal_eval`` by numpy). Refuses
    object dtypes, Fortran order, non-native byte order and a data size that differs from the
    file's, so nothing is allocated or mapped on the word of a header alone.
    """
    what = what or str(path)
    if os.path.exists(path) and not os.path.isfile(path):  # a FIFO would block, a device never end
        raise GraphLoadError(f"{what} is not a regular file")
    try:
        with open(path, "rb") as fh:
            version = np.lib.format.read_magic(fh)
            if version == (1, 0):
                shape, fortran, dtype = np.lib.format.read_array_header_1_0(fh)
            elif version == (2, 0):
                shape, fortran, dtype = np.lib.format.read_array_header_2_0(fh)
            else:
                raise GraphLoadError(f"{what}: unsupported .npy version {version}")
            offset = fh.tell()
            size = os.fstat(fh.fileno()).st_size
    except FileNotFoundError:
        raise GraphLoadError(f"{what} is missing") from None
    except (ValueError, OSError, EOFError, SyntaxError, TypeError, KeyError, MemoryError,
            RecursionError, tokenize.TokenError) as exc:
        # numpy parses the header with ast.literal_eval and, for a header that fails that,
        # once more through the tokenize module: a damaged length field gives TokenError
        raise GraphLoadError(f"{what} is corrupted: {type(exc).__name__}: {exc}") from None
    if dtype.hasobject or dtype.kind not in "iu":
        raise GraphLoadError(f"{what} holds {dtype}, not integers")
    if dtype.byteorder not in ("=", "|", {"little": "<", "big": ">"}[sys.byteorder]):
        raise GraphLoadError(f"{what} is in non-native byte order ({dtype.str})")
    if fortran and len(shape) > 1:
        raise GraphLoadError(f"{what} is in Fortran order")
    if not all(isinstance(d, int) and d >= 0 for d in shape):
        raise GraphLoadError(f"{what} has an invalid shape {shape!r}")
    nbytes = int(np.prod(shape, dtype=object)) * dtype.itemsize
    if offset + nbytes != size:
        raise GraphLoadError(f"{what} is {size} bytes but its header promises {offset + nbytes} "
                             f"({shape} of {dtype}); the file is truncated or corrupted")
    return dtype, tuple(shape), offset


class MappedFiles:
    """The files a mapped graph reads, kept open, with the size and times each had when it was
    mapped; :meth:`check` raises :class:`GraphLoadError` once one changed.

    The file objects stay open so ``fstat`` sees the very file that is mapped: a file replaced
    by a rename (the safe swap) is not a change, a write into it or a truncation is. The check
    costs one ``fstat`` per file, so it runs at most once per :attr:`interval` seconds (a
    rewrite is noticed within that time; ``0`` checks on every call).
    """

    #: seconds between two checks (the default for new instances)
    interval = 0.02

    def __init__(self, root: FsPath) -> None:
        self.root = root
        self._files: list[tuple[Any, str, tuple[int, ...]]] = []
        self._next = 0.0
        self._broken: str | None = None
        self._lock = threading.Lock()

    def open(self, path: FsPath) -> Any:
        """``path`` opened for reading, its current size and mtime recorded."""
        fh = open(path, "rb")
        self._files.append((fh, str(path), _signature(os.fstat(fh.fileno()))))
        return fh

    def check(self) -> None:
        """Raise :class:`GraphLoadError` when a mapped file was written or truncated since the
        load (the answers would differ from the saved graph, or the next read fault)."""
        if self._broken is None:
            now = time.monotonic()
            if now < self._next:
                return
            with self._lock:
                self._next = now + self.interval
                for fh, path, recorded in self._files:
                    try:
                        info = os.fstat(fh.fileno())
                    except (OSError, ValueError):
                        continue  # closed: the graph is being dropped
                    now_sig = _signature(info)
                    if now_sig[3] != recorded[3]:  # unlinked (a safe swap removed the old
                        now_sig, recorded = now_sig[:2], recorded[:2]  # folder): ctime moved
                    if now_sig != recorded:
                        self._broken = (
                            f"{path} was "
                            f"{'truncated' if info.st_size < recorded[0] else 'rewritten'}"
                            " in place while this process maps it: the graph no longer answers "
                            "as the saved one; load it again. Swap a served graph by saving to a "
                            "new folder and renaming it (docs/bring-your-own-graph.md)")
                        break
        if self._broken is not None:
            raise GraphLoadError(self._broken)

    def close(self) -> None:
        for fh, _, _ in self._files:
            fh.close()

    def __del__(self) -> None:  # the graph is gone: close the files (no ResourceWarning)
        self.close()


def _signature(info: os.stat_result) -> tuple[int, ...]:
    """``(size, mtime, ctime, link count)``: a write or truncation changes the size or mtime;
    ``cp -p`` restores the mtime but not the ctime (which an unlink moves too, hence the link
    count)."""
    return info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_nlink


def map_array(path: FsPath, shape: tuple[int, ...], dtype: Any, *, what: str,
              files: MappedFiles | None = None) -> np.ndarray:
    """The array in ``path`` mapped read-only, after :func:`npy_layout` checked it is exactly
    ``shape`` of ``dtype``; with ``files``, through a file object it records (see
    :class:`MappedFiles`)."""
    got_dtype, got_shape, offset = npy_layout(path, what=what)
    if got_shape != shape or got_dtype != np.dtype(dtype):
        raise GraphLoadError(f"{what} is {got_shape} of {got_dtype}; expected {shape} of "
                             f"{np.dtype(dtype)} from the manifest")
    if 0 in shape:
        return np.empty(shape, dtype=dtype)  # mmap cannot map zero bytes
    try:
        source: Any = path if files is None else files.open(path)
        # a plain ndarray view of the mapping (np.memmap's subclass hooks cost time on every
        # small slice in the traversal code); the view keeps the mapping alive
        return np.memmap(source, dtype=dtype, mode="r", offset=offset, shape=shape
                         ).view(np.ndarray)
    except (ValueError, OSError) as exc:
        raise GraphLoadError(f"{what} cannot be mapped: {exc}") from None


def _chunks(length: int, overlap: int = 0):
    for start in range(0, length, _CHUNK):
        yield max(start - overlap, 0), min(start + _CHUNK, length)


def _fail(root: FsPath, message: str) -> NoReturn:
    raise GraphLoadError(f"{root}: {message}")


def check_edges(root: FsPath, heads: np.ndarray, rels: np.ndarray, tails: np.ndarray,
                n: int, r: int) -> None:
    """Ids within the name tables and edges strictly increasing by ``(head, rel, tail)``."""
    for name, arr, bound in (("heads", heads, n), ("rels", rels, r), ("tails", tails, n)):
        for a, b in _chunks(len(arr)):
            part = arr[a:b]
            if part.min() < 0 or part.max() >= bound:
                _fail(root, f"{name}.npy references ids outside the name tables")
    for a, b in _chunks(len(heads), overlap=1):
        h, rl, t = (x[a:b].astype(np.int64) for x in (heads, rels, tails))
        dh, dr, dt = np.diff(h), np.diff(rl), np.diff(t)
        if not np.all((dh > 0) | ((dh == 0) & ((dr > 0) | ((dr == 0) & (dt > 0))))):
            _fail(root, "edges are not sorted and unique as KnowledgeGraph.save writes them")


class _Gather(Protocol):
    """What :func:`_check_indptr` reads ids from: an array, or a :class:`_DivView` of one."""

    def __getitem__(self, positions: np.ndarray) -> np.ndarray: ...


def _check_indptr(root: FsPath, name: str, indptr: np.ndarray, sorted_ids: _Gather,
                  total: int) -> None:
    """``indptr`` delimits the runs of each id in the sorted ``sorted_ids`` (length ``total``)."""
    if indptr[0] != 0 or indptr[-1] != total or np.any(np.diff(indptr) < 0):
        _fail(root, f"{name}.npy is not a valid offsets array")
    starts, ends = np.asarray(indptr[:-1]), np.asarray(indptr[1:])
    nonempty = np.flatnonzero(ends > starts)
    # sorted ids: when the first and last id of every non-empty run are its node, all are
    if len(nonempty) and (np.any(sorted_ids[starts[nonempty]] != nonempty)
                          or np.any(sorted_ids[ends[nonempty] - 1] != nonempty)):
        _fail(root, f"{name}.npy does not match the edges")


def check_index(root: FsPath, ix: dict[str, np.ndarray], heads: np.ndarray, rels: np.ndarray,
                tails: np.ndarray, n: int, r: int) -> None:
    """The CSR index is exactly what ``KnowledgeGraph._build_index`` builds from the edges."""
    e = len(heads)
    r = max(r, 1)
    for a, b in _chunks(e):
        key = heads[a:b].astype(np.int64) * r + rels[a:b]
        if not np.array_equal(ix["out_key"][a:b], key):
            _fail(root, "out_key.npy does not match the edges")
    _check_indptr(root, "out_indptr", ix["out_indptr"], heads, e)
    order, in_key = ix["in_order"], ix["in_key"]
    seen = np.zeros(e, dtype=bool)
    for a, b in _chunks(e, overlap=1):
        o = order[a:b].astype(np.int64)
        if len(o) and (o.min() < 0 or o.max() >= e):
            _fail(root, "in_order.npy references edges that do not exist")
        seen[o] = True
        k = np.asarray(in_key[a:b])
        if not np.array_equal(k, tails[o].astype(np.int64) * r + rels[o]):
            _fail(root, "in_key.npy does not match the edges")
        dk, do = np.diff(k), np.diff(o)
        if not np.all((dk > 0) | ((dk == 0) & (do > 0))):  # (tail, rel, edge id) order
            _fail(root, "in_order.npy is not in (tail, relation, edge) order")
    if not seen.all():
        _fail(root, "in_order.npy is not a permutation of the edges")
    del seen
    in_tails = _DivView(in_key, r)
    _check_indptr(root, "in_indptr", ix["in_indptr"], in_tails, e)


class _DivView:
    """``key // r`` computed only at the positions asked for (no full-size temporary)."""

    def __init__(self, key: np.ndarray, r: int) -> None:
        self.key, self.r = key, r

    def __getitem__(self, positions: np.ndarray) -> np.ndarray:
        return np.asarray(self.key[positions]) // self.r


def check_adjacency(root: FsPath, ptr: np.ndarray, rows: np.ndarray, heads: np.ndarray,
                    rels: np.ndarray, tails: np.ndarray, out_indptr: np.ndarray,
                    in_indptr: np.ndarray) -> None:
    """``(adj_ptr, adj_rows)`` is exactly ``KnowledgeGraph._adjacency_rows()``: node ``v``'s block
    holds each edge touching ``v`` once, as ``(head, rel, tail, edge id)``, by edge id."""
    n, e = len(ptr) - 1, len(heads)
    loops = np.flatnonzero(heads == tails) if e <= _CHUNK else np.concatenate(
        [a + np.flatnonzero(heads[a:b] == tails[a:b]) for a, b in _chunks(e)])
    degree = (np.diff(out_indptr) + np.diff(in_indptr)
              - np.bincount(np.asarray(heads[loops]), minlength=n))
    if ptr[0] != 0 or not np.array_equal(np.diff(ptr), degree):
        _fail(root, "adj_ptr.npy does not match the edges")
    for a, b in _chunks(len(rows), overlap=1):
        block = np.asarray(rows[a:b])
        edge = block[:, 3].astype(np.int64)
        if len(edge) and (edge.min() < 0 or edge.max() >= e):
            _fail(root, "adj_rows.npy references edges that do not exist")
        if not (np.array_equal(block[:, 0], heads[edge]) and np.array_equal(block[:, 1], rels[edge])
                and np.array_equal(block[:, 2], tails[edge])):
            _fail(root, "adj_rows.npy does not match the edges")
        owner = np.searchsorted(ptr, np.arange(a, b), side="right") - 1
        if not np.all((block[:, 0] == owner) | (block[:, 2] == owner)):
            _fail(root, "adj_rows.npy lists an edge under a node it does not touch")
        same = owner[1:] == owner[:-1]
        if np.any(same & (np.diff(edge) <= 0)):
            _fail(root, "adj_rows.npy is not in edge order within a node")


def load_mapped(cls: Any, root: FsPath, manifest: dict, nodes: list, relations: list,
                extras: dict) -> Any:
    """The graph saved in ``root`` with its arrays mapped (see the module docstring)."""
    n, r, e = len(nodes), len(relations), manifest.get("edges")
    if not isinstance(e, int) or e < 0:
        _fail(root, f"manifest has an invalid edge count {e!r}")
    edges = {}
    files = MappedFiles(root)
    for name in EDGE_ARRAYS:
        path = root / f"{name}.npy"
        dtype, _, _ = npy_layout(path, what=f"{root}/{name}.npy")
        edges[name] = map_array(path, (e,), dtype, what=f"{root}/{name}.npy", files=files)
    if any(a.dtype != np.int32 for a in edges.values()):
        log.warning("%s: edge arrays are not int32; copying them (not shared)", root)
        edges = {k: np.asarray(v, dtype=np.int32) for k, v in edges.items()}
    heads, rels, tails = edges["heads"], edges["rels"], edges["tails"]
    check_edges(root, heads, rels, tails, n, r)
    saved = set(manifest.get("index") or ())
    index = None
    if set(INDEX_ARRAYS) <= saved:
        lengths = {"out_indptr": n + 1, "in_indptr": n + 1}
        index = {name: map_array(root / f"{name}.npy", (lengths.get(name, e),), dtype,
                                 what=f"{root}/{name}.npy", files=files)
                 for name, dtype in INDEX_ARRAYS.items()}
        check_index(root, index, heads, rels, tails, n, r)
    else:
        log.warning("%s holds no adjacency index (saved by an older kgrag); building it in this "
                    "process (not shared). Save the graph again to share it.", root)
    kg = cls._from_checked_arrays(nodes, relations, heads, rels, tails, index, **{
        key: extras.get(key) for key in ("node_descriptions", "relation_descriptions", "aliases",
                                         "relation_labels", "annotations")})
    if index is not None and set(ADJ_ARRAYS) <= saved:
        total = 2 * e - kg.stats["self_loops"]
        ptr = map_array(root / "adj_ptr.npy", (n + 1,), np.int64, what=f"{root}/adj_ptr.npy",
                        files=files)
        rows = map_array(root / "adj_rows.npy", (total, 4), np.int32, what=f"{root}/adj_rows.npy",
                         files=files)
        check_adjacency(root, ptr, rows, heads, rels, tails, kg.out_indptr, kg.in_indptr)
        kg._adj_tables = (ptr, rows)
    kg._mapped_files = files
    return kg


def save_index(kg: Any, folder: FsPath) -> list[str]:
    """Write the adjacency index of ``kg`` beside its edges; returns the names written."""
    written = []
    for name, dtype in INDEX_ARRAYS.items():
        np.save(folder / f"{name}.npy", np.asarray(getattr(kg, name), dtype=dtype),
                allow_pickle=False)
        written.append(name)
    ptr, rows = kg._adj_tables or kg._adjacency_rows()
    np.save(folder / "adj_ptr.npy", np.asarray(ptr, dtype=np.int64), allow_pickle=False)
    np.save(folder / "adj_rows.npy", np.asarray(rows, dtype=np.int32), allow_pickle=False)
    return written + list(ADJ_ARRAYS)
