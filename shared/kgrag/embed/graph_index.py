"""The per-graph vector index of node (or relation) names, shared by every component of a graph.

Built from :func:`kgrag.embed.graph_vectors.graph_name_vectors` and kept beside those vectors,
so UltRAG, GraphRAFT and ByoKG-RAG's linkers over one graph search one
:class:`~kgrag.embed.vector_index.VectorIndex`. An exact index is rebuilt from the cached
vectors in milliseconds; an HNSW graph (above ``hnsw_threshold`` names) takes minutes to build,
so it is also written to the cache directory (``indexes/`` under
:func:`kgrag.embed.store.cache_root`) with FAISS's own ``write_index`` (temporary file +
rename), keyed by the vectors' key and the index parameters, and read back memory-mapped.
"""

from __future__ import annotations

import logging
import os
import tempfile
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kgrag.embed.graph_vectors import graph_extras, graph_name_vectors, graph_texts
from kgrag.embed.store import VectorStore, cache_enabled, cache_root, embedder_cache_key
from kgrag.embed.vector_index import DEFAULT_HNSW_THRESHOLD, VectorIndex, resolve_kind
from kgrag.errors import GraphLoadError

if TYPE_CHECKING:  # pragma: no cover
    from kgrag.graph.base import GraphStore

logger = logging.getLogger("kgrag.embed")
_lock = threading.Lock()  # guards the creation of the per-index build locks


def graph_vector_index(graph: GraphStore, embedder: Any, kind: str = "nodes",
                       **index_params: Any) -> VectorIndex:
    """The shared cosine :class:`VectorIndex` over ``graph``'s names of ``kind`` (row i = name
    id i); ``index_params`` go to :meth:`VectorIndex.build` and tell indexes apart."""
    extras = graph_extras(graph, embedder, kind)
    key = ("dense", tuple(sorted(index_params.items())))
    index = extras.get(key)
    if index is None:
        # one build per index: concurrent first callers (a server's first requests) wait
        with _lock:
            lock = extras.setdefault(("lock",) + key, threading.Lock())
        with lock:
            index = extras.get(key)
            if index is None:
                vectors = graph_name_vectors(graph, embedder, kind)
                index = _load_or_build(graph, embedder, kind, vectors, index_params)
                extras[key] = index
    return index


def _index_path(graph: GraphStore, embedder: Any, kind: str, index_params: dict[str, Any]
                ) -> Path | None:
    model_key = embedder_cache_key(embedder)
    if model_key is None or not cache_enabled():
        return None
    texts = graph_texts(graph, kind)
    params = "-".join(f"{k}{v}" for k, v in sorted(index_params.items()))
    return cache_root() / "indexes" / f"{VectorStore.key(model_key, texts)}-{params}.faiss"


def _load_or_build(graph: GraphStore, embedder: Any, kind: str, vectors: Any,
                   index_params: dict[str, Any]) -> VectorIndex:
    resolved = resolve_kind(len(vectors), index_params.get("index", "auto"),
                            metric=index_params.get("metric", "cosine"),
                            hnsw_threshold=index_params.get("hnsw_threshold",
                                                            DEFAULT_HNSW_THRESHOLD),
                            expected_k=index_params.get("expected_k"))
    # only an HNSW graph is worth a file: an exact index is rebuilt in milliseconds
    path = _index_path(graph, embedder, kind, index_params) if resolved == "hnsw" else None
    if path is not None and path.is_file():
        try:
            index = VectorIndex.load(path, mmap=True)  # shared by processes that load it
            if len(index) == len(vectors) and index.dimension == vectors.shape[1]:
                return index
        except (GraphLoadError, OSError) as exc:  # unreadable: rebuild and overwrite
            logger.warning("ignoring unreadable cached index %s: %s", path, exc)
    index = VectorIndex.build(vectors, **index_params)
    if path is not None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
            os.close(fd)
            try:
                index.save(tmp)
                os.replace(tmp, path)
            finally:
                Path(tmp).unlink(missing_ok=True)
        except OSError as exc:
            logger.warning("could not cache the vector index at %s: %s", path, exc)
    return index
