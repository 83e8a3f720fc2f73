"""Node-name vectors kept in the graph database, so no method embeds the graph in the client.

``kgrag load-db --embed`` / ``kgrag index-db`` (:func:`embed_store`) write each entity node's
name embedding as a node property (``embedding``) and create the database's vector index on it
(FalkorDB ``CREATE VECTOR INDEX ... similarityFunction 'cosine'``, Neo4j ``CREATE VECTOR INDEX
... IF NOT EXISTS``). Which model wrote them is recorded in the database, on one metadata node
``(:KgragVectors {label, property, model, dimension})``, so:

* a resumed run (after an interruption) embeds only the nodes that still lack a vector;
* a run with another model, or a method asking with another embedder, is refused with a clear
  :class:`~kgrag.errors.KgragError` -- vectors of two models are never mixed or compared;
* vectors a framework already wrote (LlamaIndex ``PropertyGraphIndex(embed_kg_nodes=True)``
  writes ``embedding`` on entity nodes) are adopted when they are the embedder's vectors of the
  node names (checked on a sample: cosine >= :data:`ADOPT_MIN_COSINE`), else refused.

The methods then ask the database (:func:`node_vector_index`, :func:`fetch_node_vectors`):
SimGRAG's node candidates come from the vector index, GraphRAFT and ByoKG-RAG fetch the stored
vectors of just the nodes they score. A store without them keeps the old behaviour (names
embedded in the client) and :func:`warn_no_vectors` says once what that costs.

FalkorDB's Bolt endpoint splices float parameters into the query text (see
:mod:`kgrag.graph.cypher.neo4j`), so vectors can be neither written nor searched through it: use
:class:`~kgrag.graph.cypher.falkordb.FalkorDBGraphStore` (Redis protocol) for FalkorDB.
"""

from __future__ import annotations

import logging
import threading
import weakref
from dataclasses import dataclass
from typing import Any, Iterator, Sequence

import numpy as np

from kgrag.errors import KgragError

log = logging.getLogger(__name__)

#: label of the node recording which model filled a vector property
META_LABEL = "KgragVectors"
#: the node property holding the vectors (what the frameworks use too)
DEFAULT_PROPERTY = "embedding"
#: vectors fetched per query: FalkorDB's Bolt replies cannot carry a value over ~64 KB, and
#: small batches keep every reply small on any backend
FETCH_BATCH = 32
#: existing vectors are adopted when the embedder's vector of each sampled name is this close
ADOPT_MIN_COSINE = 0.98
ADOPT_SAMPLE = 8
#: FalkorDB HNSW candidate-list size at query time (its default, 10, gave recall@16 0.984 of
#: exact search on the bundled graph; see docs/graph-databases.md)
EF_RUNTIME = 100


@dataclass(frozen=True)
class VectorInfo:
    """What the metadata node records for one (label, property)."""

    label: str
    property: str
    model: str
    dimension: int


class VectorModelMismatch(KgragError):
    """The database's vectors were written by another model (or with another dimension)."""


def model_name(embedder: Any, model: str | None = None) -> str:
    """The model identity recorded with the vectors: ``model`` if given, else the embedder's
    :func:`~kgrag.embed.store.embedder_cache_key` (model name + hash of its files)."""
    if model:
        return str(model)
    from kgrag.embed.store import embedder_cache_key

    key = embedder_cache_key(embedder)
    if not key:
        raise KgragError(f"cannot tell which model {embedder!r} is (no cache_key); pass "
                         "model= (--model) so the database records which vectors it holds")
    return key


def _label(store: Any) -> str:
    if not store.node_label:
        raise KgragError("node vectors need a node_label (an index covers one label)")
    return str(store.node_label)


def read_info(store: Any, prop: str = DEFAULT_PROPERTY) -> VectorInfo | None:
    """The metadata of ``store``'s vectors in ``prop``, or ``None`` when none was recorded."""
    rows = store._read(f"MATCH (m:{META_LABEL}) WHERE m.label = $label AND m.property = $prop "
                       f"RETURN m.model, m.dimension LIMIT 1",
                       {"label": _label(store), "prop": prop})
    if not rows:
        return None
    return VectorInfo(_label(store), prop, str(rows[0][0]), int(rows[0][1]))


def check_model(info: VectorInfo, model: str, dimension: int | None = None) -> None:
    """Raise :class:`VectorModelMismatch` unless ``info`` was written by ``model``."""
    if info.model != model or (dimension is not None and info.dimension != dimension):
        raise VectorModelMismatch(
            f"the database's {info.label}.{info.property} vectors were written by model "
            f"{info.model!r} ({info.dimension} dimensions), not {model!r}"
            f"{f' ({dimension} dimensions)' if dimension is not None else ''}; use that model, "
            f"or re-embed into another property (kgrag index-db --property ...), never mix them")


def _write_info(store: Any, info: VectorInfo) -> None:
    store._write(f"MERGE (m:{META_LABEL} {{label: $label, property: $prop}}) "
                 f"SET m.model = $model, m.dimension = $dim",
                 {"label": info.label, "prop": info.property, "model": info.model,
                  "dim": int(info.dimension)})


def _vector_literal(store: Any, key: str) -> str:
    """How a vector parameter is written: FalkorDB needs ``vecf32(...)``."""
    return f"vecf32({key})" if store.backend == "falkordb" else key


def _as_rows(vectors: Any) -> list[list[float]]:
    return [[float(x) for x in v] for v in np.asarray(vectors, np.float32)]


def _pages(store: Any, prop: str, batch: int) -> Iterator[list[tuple[int, str, bool]]]:
    """``(internal id, name, has a vector)`` of every entity node, ``batch`` per page, by id."""
    q = store._quote(prop)
    query = (f"MATCH {store._node('n')} WHERE id(n) > $after AND {store._has_name('n')} "
             f"RETURN id(n), n.{store._prop}, n.{q} IS NOT NULL ORDER BY id(n) LIMIT $batch")
    after = -1
    while True:
        rows = store._read(query, {"after": after, "batch": batch})
        if rows:
            yield [(int(i), str(n), bool(h)) for i, n, h in rows]
        if len(rows) < batch:
            return
        after = int(rows[-1][0])


def _adopt_existing(store: Any, embedder: Any, model: str, prop: str) -> VectorInfo | None:
    """Vectors already in ``prop`` without kgrag's metadata (a framework wrote them): adopted if
    they are ``embedder``'s vectors of the names, else :class:`VectorModelMismatch`."""
    q = store._quote(prop)
    rows = store._read(f"MATCH {store._node('n')} WHERE n.{q} IS NOT NULL AND "
                       f"{store._has_name('n')} RETURN n.{store._prop}, n.{q} LIMIT $k",
                       {"k": ADOPT_SAMPLE})
    if not rows:
        return None
    names = [str(r[0]) for r in rows]
    stored = np.asarray([np.asarray(r[1], np.float32) for r in rows])
    mine = np.asarray(embedder.embed_documents(names), np.float32)
    if stored.shape != mine.shape:
        raise VectorModelMismatch(
            f"{store.node_label}.{prop} already holds {stored.shape[1]}-dimensional vectors "
            f"written by another model; {model!r} gives {mine.shape[1]}: use that model, or "
            f"another property (--property), never mixed vectors")
    cos = np.sum(stored * mine, 1) / (np.linalg.norm(stored, axis=1) * np.linalg.norm(mine, axis=1)
                                      + 1e-12)
    if float(cos.min()) < ADOPT_MIN_COSINE:
        raise VectorModelMismatch(
            f"{store.node_label}.{prop} already holds vectors that are not {model!r}'s "
            f"embeddings of the node names (cosine {float(cos.min()):.3f} on a sample); use the "
            f"model that wrote them, or another property (--property)")
    log.info("adopting the %s.%s vectors already in the database (same model: %s)",
             store.node_label, prop, model)
    return VectorInfo(_label(store), prop, model, int(mine.shape[1]))


@dataclass(frozen=True)
class HnswOptions:
    """Build settings of the database's HNSW vector index (``None``: the database's default).

    ``m`` is the links per node (FalkorDB and Neo4j default 16), ``ef_construction`` the
    candidate list while inserting (FalkorDB default 200, Neo4j 100). Insertion is what bounds
    ``--embed`` on a large graph: on FalkorDB here, 40k random 64-d vectors took 37 s with
    ``ef_construction`` 200 and 16 s with 50, with the same recall@16 (1.000, 20 queries) when
    1,600 neighbours are asked for (SimGRAG asks with a beam of 2,048;
    ``benchmarks/db_hnsw_beam.py``). A lower value builds faster and can lower
    recall at a small beam; they only apply when the index is created.
    """

    m: int | None = None
    ef_construction: int | None = None

    def __post_init__(self) -> None:
        for name in ("m", "ef_construction"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                      or value < 2):
                raise ValueError(f"HNSW {name} must be an integer >= 2, got {value!r}")


def ensure_vector_index(store: Any, info: VectorInfo, hnsw: HnswOptions | None = None) -> str:
    """Create the database's cosine vector index on ``info``'s property; say what was done.

    ``hnsw`` sets the index's build options (see :class:`HnswOptions`); an index that already
    exists is kept as it is."""
    hnsw = hnsw or HnswOptions()
    label, q = store._quote(info.label), store._quote(info.property)
    if store.backend == "falkordb":
        extra = "".join(f", {key}: {int(value)}" for key, value in
                        (("M", hnsw.m), ("efConstruction", hnsw.ef_construction))
                        if value is not None)
        try:
            store._write(f"CREATE VECTOR INDEX FOR (n:{label}) ON (n.{q}) OPTIONS "
                         f"{{dimension: {int(info.dimension)}, similarityFunction: 'cosine', "
                         f"efRuntime: {EF_RUNTIME}{extra}}}")
        except Exception as exc:  # GraphDatabaseError: already there
            if "already indexed" not in str(exc):
                raise
            return "vector index (existing)"
        return "vector index (created)"
    name = store._quote(f"kgrag_{info.label}_{info.property}")
    extra = "".join(f", `{key}`: {int(value)}" for key, value in
                    (("vector.hnsw.m", hnsw.m), ("vector.hnsw.ef_construction",
                                                 hnsw.ef_construction))
                    if value is not None)
    store._write(f"CREATE VECTOR INDEX {name} IF NOT EXISTS FOR (n:{label}) ON n.{q} OPTIONS "
                 f"{{indexConfig: {{`vector.dimensions`: {int(info.dimension)}, "
                 f"`vector.similarity_function`: 'cosine'{extra}}}}}")
    return "vector index"


@dataclass
class EmbedSummary:
    nodes: int = 0
    embedded: int = 0
    skipped: int = 0
    index: str = ""
    model: str = ""

    def __str__(self) -> str:
        return (f"{self.embedded} node vectors written, {self.skipped} already present "
                f"({self.nodes} nodes; model {self.model}); {self.index}")


def embed_store(store: Any, embedder: Any, *, model: str | None = None,
                prop: str = DEFAULT_PROPERTY, batch_size: int = 256,
                progress: bool = True, hnsw: HnswOptions | None = None) -> EmbedSummary:
    """Write ``embedder``'s vector of every entity node's name into ``prop`` and index it.

    Batched (``batch_size`` names per embedding call and write), with a progress bar, and
    resumable: nodes that already hold a vector of the recorded model are skipped. The model
    (``model`` or the embedder's cache key) and dimension are recorded first; a different one
    raises :class:`VectorModelMismatch` before anything is written. ``hnsw``: the vector
    index's build options when it is created here (:class:`HnswOptions`).
    """
    from tqdm.auto import tqdm

    if batch_size < 1:
        raise ValueError("batch_size must be >= 1")
    name = model_name(embedder, model)
    info = read_info(store, prop)
    if info is None:
        info = _adopt_existing(store, embedder, name, prop)
    if info is None:
        dim = int(np.asarray(embedder.embed_query("dimension probe")).shape[-1])
        info = VectorInfo(_label(store), prop, name, dim)
    check_model(info, name)
    _write_info(store, info)
    summary = EmbedSummary(model=name, index=ensure_vector_index(store, info, hnsw))
    write = (f"UNWIND $rows AS r MATCH {store._node('n', 'r[0]')} "
             f"SET n.{store._quote(prop)} = {_vector_literal(store, 'r[1]')}")
    # the progress total: one label count (store.counts() also counts every relation's edges)
    total = int(store._read(f"MATCH {store._node('n')} RETURN count(n)")[0][0])
    bar = tqdm(total=total, unit="node", desc=f"embedding into {store.backend}",
               disable=not progress)
    try:
        for page in _pages(store, prop, batch_size):
            todo = [n for _, n, has in page if not has]
            summary.nodes += len(page)
            summary.skipped += len(page) - len(todo)
            if todo:
                vectors = np.asarray(embedder.embed_documents(todo), np.float32)
                if vectors.shape[1] != info.dimension:
                    check_model(info, name, int(vectors.shape[1]))
                for i in range(0, len(todo), FETCH_BATCH):
                    store._write(write, {"rows": [
                        [n, v] for n, v in zip(todo[i:i + FETCH_BATCH],
                                               _as_rows(vectors[i:i + FETCH_BATCH]))]})
                summary.embedded += len(todo)
            bar.update(len(page))
    finally:
        bar.close()
    return summary


# ---------------------------------------------------------------------------- method side
@dataclass(frozen=True)
class NodeVectors:
    """A store's usable node vectors: the metadata and the database's index over them."""

    info: VectorInfo
    index: Any  # kgrag.graph.cypher.store.SearchIndex


_warned: set[tuple[str, str]] = set()
_warn_lock = threading.Lock()


def warn_no_vectors(store: Any, method: str, cost: str) -> None:
    """Log once per store and method that ``store`` has no usable node vectors, what the
    fallback costs and how to avoid it."""
    key = (repr(store), method)
    with _warn_lock:
        if key in _warned:
            return
        _warned.add(key)
    log.warning("%s on %r: the database holds no vector index of node names for this embedder, "
                "so %s. Avoid it with `kgrag index-db` (or `kgrag load-db --embed`), which "
                "writes the vectors and their index into the database once.", method, store, cost)


def node_vector_index(store: Any, embedder: Any, prop: str = DEFAULT_PROPERTY
                      ) -> NodeVectors | None:
    """``store``'s node vectors and vector index if they were written by ``embedder``'s model;
    ``None`` if there are none (or no index); :class:`VectorModelMismatch` for another model."""
    from kgrag.graph.base import is_cypher_store

    if not is_cypher_store(store) or not getattr(store, "node_label", None):
        return None
    try:
        info = read_info(store, prop)
    except KgragError as exc:
        log.info("no node-vector metadata readable on %r (%s)", store, exc)
        return None
    if info is None:
        return None
    try:
        model = model_name(embedder)
    except KgragError:
        model = None
    if model is None:
        log.warning("%r holds %s vectors; the embedder %r cannot be identified, so they are "
                    "not used", store, info.model, embedder)
        return None
    check_model(info, model)
    for index in store.search_indexes():
        if index.kind == "vector" and index.property == prop:
            return NodeVectors(info, index)
    log.info("%r: %s.%s vectors recorded but no vector index found", store, info.label, prop)
    return None


_found: weakref.WeakKeyDictionary[Any, dict[str, NodeVectors | None]] = (
    weakref.WeakKeyDictionary())


def stored_vectors_for(store: Any, embedder: Any, method: str, cost: str) -> NodeVectors | None:
    """:func:`node_vector_index` of a database store, looked up once per store and model;
    ``None`` for an in-memory graph, and on a database store without usable vectors (then
    :func:`warn_no_vectors` says once what ``method``'s fallback ``cost`` is)."""
    from kgrag.graph.base import is_cypher_store

    if not is_cypher_store(store):
        return None
    try:
        key = model_name(embedder)
    except KgragError:
        key = f"object:{id(embedder)}"
    with _warn_lock:
        try:
            per_store = _found.setdefault(store, {})
        except TypeError:  # not weakly referenceable: no memo
            per_store = {}
        if key in per_store:
            found = per_store[key]
        else:
            found = per_store[key] = node_vector_index(store, embedder)
    if found is None:
        warn_no_vectors(store, method, cost)
    return found


def fetch_node_vectors(store: Any, names: Sequence[str], prop: str = DEFAULT_PROPERTY
                       ) -> dict[str, np.ndarray]:
    """The stored vectors of ``names`` (those that have one), fetched :data:`FETCH_BATCH`
    names per query."""
    q = store._quote(prop)
    query = (f"UNWIND $names AS nm MATCH {store._node('n', 'nm')} WHERE n.{q} IS NOT NULL "
             f"RETURN nm, n.{q}")
    out: dict[str, np.ndarray] = {}
    unique = list(dict.fromkeys(str(n) for n in names))
    for i in range(0, len(unique), FETCH_BATCH):
        for name, vec in store._read(query, {"names": unique[i:i + FETCH_BATCH]}):
            out[str(name)] = np.asarray(vec, np.float32)
    return out
