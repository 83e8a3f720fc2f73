"""Entity linking against a graph kept in a database: the database's own index, or a local one.

:func:`linker_for_store` picks, and says which in ``linker.index_source`` and in the log:

* **Database index** (:class:`DatabaseEntityLinker`) when the store reports a usable one
  (:meth:`~kgrag.graph.cypher.store.CypherGraphStore.search_indexes`: Neo4j ``SHOW INDEXES``,
  FalkorDB ``CALL db.indexes()``; no APOC):

  - a **full-text index** on the node label's name property serves ``exact`` and ``fuzzy``
    (``index_source`` ``"neo4j-fulltext:<index name>"`` / ``"falkordb-fulltext:<label>"``);
  - a **vector index** serves ``dense`` only when the caller names it (``vector_index=``: the
    Neo4j index name, or for FalkorDB the node property holding the vectors) *and* passes the
    ``embedder`` whose model filled it -- a question embedded by another model is compared
    with meaningless vectors, and the database cannot tell (``"...; neo4j-vector:<name>"``).

* **Local index** otherwise (``"local ..."``): every node name is streamed out once
  (:meth:`iter_node_names`, paged on the server, with a progress bar) and the usual
  :class:`kgrag.linking.EntityLinker` (exact, fuzzy, FAISS dense, hybrid) is built from them; it
  can be saved with ``linker.save(directory)`` and reloaded without touching the database.

``mode`` decides what is needed: ``"fuzzy"`` a full-text index, ``"dense"`` a named vector index,
``"hybrid"`` both; ``use_index=False`` forces the local index.

How the database linker scores (so scores sit on the local linker's [0, 1] scales and
thresholds such as :func:`~kgrag.linking.extract_mentions`' ``fuzzy_threshold`` keep their
meaning):

* the mention is cut into lower-case word tokens (:func:`~kgrag.linking.fuzzy.name_key`), so no
  query operator of the mention reaches the server; each token is still escaped for the engine's
  syntax (:func:`~kgrag.graph.cypher.neo4j.lucene_escape`,
  :func:`~kgrag.graph.cypher.falkordb.redisearch_escape`) and the query text is sent as a parameter
  of a read-only procedure call with the store's timeout. The query ORs each token and a fuzzy
  variant (Lucene ``tok~``, RediSearch ``%tok%``);
* the server returns up to ``candidates`` names by its own relevance score (Lucene BM25 or
  RediSearch TF-IDF: unbounded, not comparable across queries); these are *re-scored* with the
  local fuzzy score (:func:`~kgrag.linking.fuzzy.coverage_wratio` / 100, in [0, 1]) and the best
  ``top_m`` kept -- the server index is the candidate generator, as the trigram prefilter is
  locally;
* ``exact``: names equal to the mention (the name index) plus full-text candidates whose
  :func:`name_key` equals the mention's, score 1;
* ``dense``: the vector index's similarity mapped to a cosine clipped to [0, 1] (the local dense
  scale): Neo4j cosine ``2 s - 1``, Neo4j euclidean on unit vectors ``1 - (1/s - 1) / 2``,
  FalkorDB cosine distance ``1 - d``, FalkorDB euclidean ``1 - d^2 / 2``;
* a search no database index serves -- ``dense`` without a vector index (e.g. UltRAG asking a
  fuzzy linker for ``mode="dense"``), ``fuzzy`` without a full-text index (e.g.
  :func:`~kgrag.linking.extract_mentions` on a dense linker) -- runs on a local index built from
  the streamed names on first use, with a warning, and is added to ``index_source``.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from kgrag.graph.base import CypherStore, GraphStore, is_cypher_store
from kgrag.linking.fuzzy import coverage_wratio, name_key
from kgrag.linking.linker import EntityLinker, Link, register_store_linker

log = logging.getLogger(__name__)

#: Longest mention (in word tokens) sent to a full-text index; longer mentions are cut.
MAX_QUERY_TOKENS = 16
#: Full-text results remembered per linker (token tuple -> candidates).
CANDIDATE_CACHE_SIZE = 4096


class DatabaseEntityLinker(EntityLinker):
    """An :class:`~kgrag.linking.EntityLinker` whose exact / fuzzy / dense search runs on the
    database's full-text and vector indexes (see the module docstring for the scoring).

    It is an ``EntityLinker`` (same ``link``, ``link_many``, ``exact``, ``fuzzy``, ``dense``,
    ``dense_many`` and merge rules), so every method takes it unchanged; it holds no name list
    (``names`` is empty, ``len()`` is the store's node count) and cannot be saved.

    Parameters: ``store`` (a database GraphStore); ``fulltext`` / ``vector`` (a
    :class:`~kgrag.graph.cypher.store.SearchIndex` from ``store.search_indexes()``, or ``None``);
    ``embedder`` (must be the model that filled ``vector``); ``mode``, ``top_m``, ``min_score``
    as for ``EntityLinker``; ``candidates``: names fetched from the full-text index per query
    before re-scoring.
    """

    def __init__(self, store: CypherStore, *, fulltext: Any = None, vector: Any = None,
                 embedder: Any = None, mode: str = "fuzzy", top_m: int = 3,
                 min_score: float = 0.0, candidates: int = 50, progress: bool = True) -> None:
        super().__init__([], embedder=embedder, mode=mode, top_m=top_m, min_score=min_score)
        if fulltext is None and vector is None:
            raise ValueError("a DatabaseEntityLinker needs a full-text or a vector index")
        if candidates < 1:
            raise ValueError("candidates must be >= 1")
        self.store = store
        self.fulltext = fulltext
        self.vector = vector
        self.candidates = candidates
        self.progress = progress
        self._node_count: int | None = None
        self._cache: OrderedDict[tuple[str, ...], list[tuple[str, float]]] = OrderedDict()
        self._lock = threading.Lock()  # retrievers may link from several threads
        self._local: EntityLinker | None = None
        self._local_kinds: list[str] = []
        parts = [ix.describe() for ix in (fulltext, vector) if ix is not None]
        self.index_source = "; ".join(parts)

    def __len__(self) -> int:
        if self._node_count is None:
            self._node_count = int(self.store.counts()["nodes"])
        return self._node_count

    def __repr__(self) -> str:
        return f"DatabaseEntityLinker({self.store!r}, {self.index_source}, mode={self.mode!r})"

    def build(self) -> DatabaseEntityLinker:
        """Nothing to build: the indexes live in the database."""
        return self

    def save(self, directory: Any) -> None:
        raise TypeError("a DatabaseEntityLinker queries the database's indexes and holds no "
                        "names to save; use linker_for_store(..., use_index=False) for a local "
                        "index that can be saved")

    # ------------------------------------------------------------------ full-text
    def _fulltext_candidates(self, mention: str) -> list[tuple[str, float]]:
        """Distinct ``(name, server score)`` candidates for ``mention`` (cached per token list)."""
        if self.fulltext is None:
            return []
        tokens = tuple(name_key(mention).split()[:MAX_QUERY_TOKENS])
        if not tokens:
            return []
        with self._lock:
            if tokens in self._cache:
                self._cache.move_to_end(tokens)
                return self._cache[tokens]
        rows = self.store.fulltext_search(self.fulltext, list(tokens), self.candidates)
        best: dict[str, float] = {}
        for name, score in rows:  # a name found twice keeps its best score
            best[str(name)] = max(float(score), best.get(str(name), float("-inf")))
        found = list(best.items())
        found.sort(key=lambda ns: (-ns[1], ns[0]))
        with self._lock:
            self._cache[tokens] = found
            if len(self._cache) > CANDIDATE_CACHE_SIZE:
                self._cache.popitem(last=False)
        return found

    def exact(self, mention: str) -> list[Link]:
        """Names equal to ``mention`` (name index) or with its :func:`name_key` (full-text)."""
        key = name_key(mention)
        if not key:
            return []
        # A NUL character cannot travel in a FalkorDB query (its client sends parameters as
        # C strings); no stored name holds one, so such a mention is matched by key only.
        names = set(self.store.existing_nodes([mention]) if "\x00" not in mention else ())
        names.update(n for n, _ in self._fulltext_candidates(mention) if name_key(n) == key)
        return [Link(n, 1.0, "exact", mention=mention, matched=n) for n in sorted(names)]

    def fuzzy(self, mention: str, top_m: int | None = None) -> list[Link]:
        """Full-text candidates re-scored by the local fuzzy score; the best ``top_m``."""
        top_m = top_m or self.top_m
        if self.fulltext is None:
            return self._local_linker("fuzzy").fuzzy(mention, top_m)
        cands = [n for n, _ in self._fulltext_candidates(mention)]
        if not cands:
            return []
        scores = coverage_wratio(name_key(mention), [name_key(n) for n in cands]) / 100.0
        order = sorted(range(len(cands)), key=lambda i: (-float(scores[i]), cands[i]))
        out = []
        for i in order:
            if float(scores[i]) < self.min_score:
                continue
            out.append(Link(cands[i], float(min(max(scores[i], 0.0), 1.0)), "fuzzy",
                            mention=mention, matched=cands[i]))
            if len(out) == top_m:
                break
        return out

    # ------------------------------------------------------------------ dense
    def dense_many(self, mentions: Sequence[str], top_m: int | None = None) -> list[list[Link]]:
        """Vector-index top-m per mention (mentions embedded in one call); see module docs."""
        top_m = top_m or self.top_m
        mentions = [str(m) for m in mentions]
        if not mentions:
            return []
        if self.vector is None:
            return self._local_linker("dense").dense_many(mentions, top_m)
        vectors = self.embedder.embed_documents(mentions)
        out = []
        for mention, vec in zip(mentions, vectors):
            hits = self.store.vector_search(self.vector, [float(x) for x in vec], top_m)
            links = [Link(n, float(s), "dense", mention=mention, matched=n)
                     for n, s in hits if s >= self.min_score]
            out.append(self._merge(links)[:top_m])
        return out

    def _local_linker(self, kind: str) -> EntityLinker:
        """A local linker over streamed names, for the search no database index serves (built
        once, on first use; its fuzzy and dense indexes are built lazily as needed)."""
        with self._lock:
            return self._local_linker_locked(kind)

    def _local_linker_locked(self, kind: str) -> EntityLinker:
        if self._local is None:
            log.warning("%r: %s search without a database index for it; building a local index "
                        "from streamed node names", self, kind)
            self._local = linker_for_store(
                self.store, mode="hybrid", progress=self.progress, use_index=False,
                embedder=self._embedder_arg, top_m=self.top_m, min_score=self.min_score)
        if kind not in self._local_kinds:
            self._local_kinds.append(kind)
            self.index_source += f"; {kind}: local index over {len(self._local)} streamed names"
        return self._local


def _pick(indexes: list[Any], kind: str, name: str | None = None) -> Any:
    for ix in indexes:
        if ix.kind == kind and (name is None or ix.name == name):
            return ix
    return None


def _kgrag_vectors(store: Any, embedder: Any) -> Any:
    """The vector index ``kgrag index-db`` wrote with ``embedder``'s model (its metadata says
    which model; another model raises), found without being named; ``None`` if there is none."""
    if embedder is None:
        return None
    from kgrag.embed import as_embedder
    from kgrag.graph.cypher.vectors import node_vector_index

    stored = node_vector_index(store, as_embedder(embedder))
    return stored.index if stored is not None else None


def linker_for_store(store: GraphStore, *, mode: str = "hybrid", progress: bool = True,
                     batch_size: int = 10_000, use_index: bool = True,
                     vector_index: str | None = None, candidates: int = 50,
                     **linker_kwargs: Any) -> EntityLinker:
    """An entity linker over ``store``'s nodes: its database index if usable, else local.

    ``store`` is any GraphStore (an in-memory graph gets the local linker). ``mode`` and
    ``linker_kwargs`` (``embedder=``, ``top_m=``, ``min_score=``, ``aliases=`` ...) go to the
    linker. The database index is used when ``use_index`` and the mode's needs are met (module
    docstring): ``"fuzzy"`` a full-text index on the name property; ``"dense"`` the vector index
    named by ``vector_index`` plus an ``embedder`` -- or, unnamed, the one ``kgrag index-db`` wrote
    with that embedder's model (:mod:`kgrag.graph.cypher.vectors`); ``"hybrid"`` both. ``aliases``
    are only known to the local linker, so passing them selects it. The returned linker has an
    ``index_source`` attribute saying which index it uses. """
    reason = "use_index=False"
    if not is_cypher_store(store):
        reason = "not a database store"
    elif use_index and not linker_kwargs.get("aliases"):
        indexes = store.search_indexes()
        fulltext = _pick(indexes, "fulltext")
        vector = _pick(indexes, "vector", vector_index) if vector_index else None
        embedder = linker_kwargs.get("embedder")
        if vector is None and not vector_index and mode in ("dense", "hybrid"):
            vector = _kgrag_vectors(store, embedder)
        if vector_index and vector is None:
            log.warning("vector index %r not found on %r (found: %s)", vector_index, store,
                        [ix.describe() for ix in indexes] or "none")
        if vector is not None and embedder is None:
            log.warning("vector index %r ignored: pass the embedder that filled it", vector_index)
            vector = None
        needs_fulltext = mode in ("fuzzy", "hybrid")
        needs_vector = mode in ("dense", "hybrid")
        if (fulltext is not None or not needs_fulltext) and (
                vector is not None or not needs_vector):
            extra = {k: v for k, v in linker_kwargs.items() if k not in (
                "embedder", "top_m", "min_score", "aliases")}
            if extra:
                log.info("linker options %s apply to the local index only", sorted(extra))
            linker = DatabaseEntityLinker(
                store, fulltext=fulltext, vector=vector, embedder=embedder, mode=mode,
                top_m=linker_kwargs.get("top_m", 3), min_score=linker_kwargs.get("min_score", 0.0),
                candidates=candidates, progress=progress)
            log.info("entity linking: database index %s", linker.index_source)
            return linker
        missing = []
        if needs_fulltext and fulltext is None:
            missing.append(f"no full-text index on {store.node_label}.{store.name_property}")
        if needs_vector and vector is None:
            missing.append("no usable vector index (pass vector_index= and embedder=)")
        reason = ", ".join(missing)
    return _local_linker(store, mode, progress, batch_size, reason, linker_kwargs)


def _local_linker(store: GraphStore, mode: str, progress: bool, batch_size: int, reason: str,
                  linker_kwargs: dict[str, Any]) -> EntityLinker:
    """The local index over every node name, streamed from the store with a progress bar."""
    from tqdm.auto import tqdm

    total = store.counts()["nodes"]
    names = tqdm(store.iter_node_names(batch_size=batch_size), total=total, unit="name",
                 desc="streaming node names", disable=not progress)
    try:  # sorted: ties between equal scores then do not depend on the database's storage order
        linker = EntityLinker(sorted(names), mode=mode, **linker_kwargs)
    finally:
        names.close()
    linker.index_source = (f"local {mode} index over {len(linker)} node names streamed from "
                           f"{store!r} (no database full-text/vector index used: {reason})")
    log.info("entity linking: %s", linker.index_source)
    return linker


register_store_linker(linker_for_store)
