"""Entity and relation linking: exact, alias, fuzzy (rapidfuzz), dense (FAISS) and hybrid.

A linker holds a list of canonical names (graph nodes or relations) and optional aliases
(alias -> canonical names). Every name and alias is a *surface form*; fuzzy and dense search run
over surface forms and report the canonical name they belong to.

``link(mention)`` returns, best first:

1. exact hits (the mention's :func:`~kgrag.linking.fuzzy.name_key` equals a name's key), score 1,
   source ``"exact"``;
2. alias hits (the key equals an alias's key), score 1, source ``"alias"``;
3. the ``top_m`` best names of the mode: ``"fuzzy"`` (score = :func:`coverage_wratio` / 100),
   ``"dense"`` (cosine of embeddings, clipped to [0, 1]) or ``"hybrid"`` -- the union of the
   fuzzy top-m and the dense top-m, as in ByoKG-RAG (paper section 3.2, m = 3), so at most 2m
   names. Fuzzy and cosine scores are on different scales, so hybrid interleaves the two lists
   by rank (fuzzy 1st, dense 1st, fuzzy 2nd, ...) instead of sorting by score.

A name found twice keeps its first (higher-priority) link.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from kgrag.context.types import ScoredEntity
from kgrag.embed.vector_index import DEFAULT_HNSW_THRESHOLD, VectorIndex
from kgrag.errors import EmbeddingError, GraphFormatError, GraphLoadError
from kgrag.graph.base import GraphStore, is_cypher_store
from kgrag.linking.fuzzy import FuzzyIndex, name_key
from kgrag.text.names import relation_words

MODES = ("fuzzy", "dense", "hybrid")

#: How :meth:`EntityLinker.from_graph` links against a database store; installed by
#: :mod:`kgrag.linking.database` (whose linker is an EntityLinker subclass, so this module cannot
#: import it without a cycle). ``kgrag.linking`` imports that module, so it is always set.
_store_linker: Callable[..., "EntityLinker"] | None = None


def register_store_linker(factory: Callable[..., "EntityLinker"]) -> None:
    """Make ``factory(store, **kwargs)`` the linker :meth:`EntityLinker.from_graph` builds for a
    database store (:class:`~kgrag.graph.base.CypherStore`)."""
    global _store_linker
    _store_linker = factory

FORMAT = "kgrag-linker"
FORMAT_VERSION = 1


@dataclass(frozen=True)
class Link(ScoredEntity):
    """A linked name: ``name``, ``score`` in [0, 1], ``source`` in exact/alias/fuzzy/dense.

    ``mention`` is the text that was linked and ``matched`` the surface form (name or alias)
    that matched it.
    """

    mention: str = field(default="", compare=False)
    matched: str = field(default="", compare=False)


def _check_mode(mode: str) -> str:
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    return mode


class EntityLinker:
    """Links free-text mentions to canonical names (see the module docstring for the rules).

    Parameters: ``names`` (any iterable, e.g. streamed from a database store), ``aliases``
    (alias -> canonical name or names), ``embedder`` (anything :func:`kgrag.embed.as_embedder`
    accepts; ``None`` = the packaged MiniLM, loaded only when dense search is first needed),
    ``mode``, ``top_m``, ``min_score`` (fuzzy/dense links scoring below it are dropped; the
    paper uses no threshold, so the default is 0); fuzzy: ``fuzzy_full_scan_limit`` /
    ``fuzzy_candidates`` (see :class:`~kgrag.linking.fuzzy.FuzzyIndex`); dense:
    ``hnsw_threshold``, ``hnsw_m``, ``ef_construction``, ``ef_search`` (see
    :class:`~kgrag.embed.vector_index.VectorIndex`);
    ``embeddings``: precomputed unit vectors of :attr:`surface_texts` (skips embedding).

    A linker made by :meth:`from_graph` takes its dense index from the graph's shared one
    (:func:`kgrag.embed.graph_index.graph_vector_index`): every method linking over the same graph
    and embedder searches one FAISS index built from one set of name vectors (also cached on
    disk, :mod:`kgrag.embed.store`).
    """

    #: which index serves this linker, when a database linker chose it
    #: (:func:`kgrag.linking.database.linker_for_store`)
    index_source: str

    kind = "entity"

    def __init__(
        self,
        names: Iterable[str],
        *,
        aliases: Mapping[str, str | Iterable[str]] | None = None,
        embedder: Any = None,
        mode: str = "hybrid",
        top_m: int = 3,
        min_score: float = 0.0,
        fuzzy_full_scan_limit: int = 5000,
        fuzzy_candidates: int = 256,
        hnsw_threshold: int = DEFAULT_HNSW_THRESHOLD,
        hnsw_m: int = 32,
        ef_construction: int = 100,
        ef_search: int = 128,
        embeddings: np.ndarray | None = None,
        graph: GraphStore | None = None,
    ) -> None:
        self.mode = _check_mode(mode)
        self._graph_ref = _weak(graph)
        if top_m < 1:
            raise ValueError("top_m must be at least 1")
        self.top_m = top_m
        if not 0.0 <= min_score <= 1.0:
            raise ValueError("min_score must be in [0, 1]")
        self.min_score = min_score
        seen: dict[str, None] = {}
        for name in names:
            name = str(name)
            if name.strip():
                seen.setdefault(name)
        self.names: list[str] = list(seen)
        self.name_index = {n: i for i, n in enumerate(self.names)}
        surfaces = list(self.names)
        owners = list(range(len(self.names)))
        self.aliases: dict[str, list[str]] = {}
        if aliases is not None and not isinstance(aliases, Mapping):
            raise GraphFormatError(f"aliases must be a mapping alias -> name(s), not a "
                                   f"{type(aliases).__name__}")
        for alias, targets in (aliases or {}).items():
            targets = [targets] if isinstance(targets, str) else list(targets)
            for target in targets:
                if target not in self.name_index:
                    raise ValueError(f"alias {alias!r} points to unknown name {target!r}")
                self.aliases.setdefault(str(alias), []).append(target)
                surfaces.append(str(alias))
                owners.append(self.name_index[target])
        self.surface_forms: list[str] = surfaces
        self.surface_owner = np.asarray(owners, dtype=np.int64)
        # Keys are computed once: they serve exact lookup and the fuzzy index.
        self._surface_keys = [name_key(s) for s in surfaces]
        self._name_keys: dict[str, list[int]] = {}
        for i, key in enumerate(self._surface_keys[:len(self.names)]):
            self._name_keys.setdefault(key, []).append(i)
        self._alias_keys: dict[str, list[int]] = {}
        for key, owner in zip(self._surface_keys[len(self.names):], owners[len(self.names):]):
            bucket = self._alias_keys.setdefault(key, [])
            if owner not in bucket:
                bucket.append(owner)
        self.fuzzy_params = {"full_scan_limit": fuzzy_full_scan_limit,
                             "candidates": fuzzy_candidates}
        self.dense_params: dict[str, Any] = {
            "hnsw_threshold": hnsw_threshold, "hnsw_m": hnsw_m,
            "ef_construction": ef_construction, "ef_search": ef_search}
        self._embedder_arg = embedder
        self._embedder: Any = None
        self._fuzzy: FuzzyIndex | None = None
        self._dense: VectorIndex | None = None
        if embeddings is not None:
            vectors = np.asarray(embeddings, dtype=np.float32)
            if vectors.ndim != 2 or vectors.shape[0] != len(self.surface_forms):
                raise ValueError(f"embeddings must have one row per surface form "
                                 f"({len(self.surface_forms)}), got shape {vectors.shape}")
            self._dense = VectorIndex.build(vectors, **self.dense_params)

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_graph(cls, graph: GraphStore, **kwargs: Any) -> EntityLinker:
        """A linker over a graph's node names and aliases (in-memory graph or any GraphStore).

        A database store (a :class:`~kgrag.graph.base.CypherStore`: Neo4j, FalkorDB) goes through
        :func:`kgrag.linking.database.linker_for_store`: its own full-text / named vector index
        when that serves ``mode``, otherwise a local index over the streamed names -- so every
        method that builds its default linker here uses the database's index when it can.
        """
        if cls is EntityLinker and is_cypher_store(graph):
            if _store_linker is None:  # pragma: no cover - kgrag.linking installs it on import
                raise RuntimeError("import kgrag.linking to link against a database store")
            return _store_linker(graph, **kwargs)
        names = graph.iter_node_names()
        if "aliases" not in kwargs:
            inverted: dict[str, list[str]] = {}
            for canonical, alias_list in graph.aliases.items():
                for alias in alias_list:
                    inverted.setdefault(alias, []).append(canonical)
            kwargs["aliases"] = inverted
        kwargs.setdefault("graph", graph)
        return cls(names, **kwargs)

    def surface_text(self, surface: str) -> str:
        """The text embedded for a surface form (entities: the name itself)."""
        return surface

    @property
    def surface_texts(self) -> list[str]:
        return [self.surface_text(s) for s in self.surface_forms]

    def __len__(self) -> int:
        return len(self.names)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}({len(self.names)} names, {len(self.aliases)} aliases, "
                f"mode={self.mode!r})")

    # ------------------------------------------------------------------ indexes
    @property
    def fuzzy_index(self) -> FuzzyIndex:
        if self._fuzzy is None:
            self._fuzzy = FuzzyIndex(self._surface_keys, **self.fuzzy_params)
        return self._fuzzy

    @property
    def embedder(self) -> Any:
        if self._embedder is None:
            from kgrag.embed import as_embedder

            self._embedder = as_embedder(self._embedder_arg)
        return self._embedder

    @property
    def dense_index(self) -> VectorIndex:
        """The vector index (cosine) of surface-form embeddings (built on first use)."""
        if self._dense is None:
            self._dense = self._graph_dense_index()
        return self._dense

    #: which of the graph's shared name lists this linker's names are (see kgrag.embed)
    graph_kind = "nodes"

    @classmethod
    def _graph_names(cls, graph: GraphStore) -> list[str]:
        return list(graph.iter_node_names())

    def _graph_dense_index(self) -> VectorIndex:
        """The graph's shared index when this linker covers exactly the graph's names;
        otherwise an own index (the graph's shared vectors plus the aliases' when it can)."""
        from kgrag.embed.store import embed_cached

        graph: GraphStore | None = self._graph_ref() if self._graph_ref is not None else None
        same_names = graph is not None and self.names == self._graph_names(graph)
        if graph is not None and same_names and len(self.surface_forms) == len(self.names):
            from kgrag.embed.graph_index import graph_vector_index

            return graph_vector_index(graph, self.embedder, self.graph_kind, **self.dense_params)
        texts = self.surface_texts
        if same_names and graph is not None:
            from kgrag.embed.graph_vectors import graph_name_vectors

            names = graph_name_vectors(graph, self.embedder, self.graph_kind)
            extra = embed_cached(self.embedder, texts[len(self.names):], kind="aliases")
            vectors = np.concatenate([names, np.asarray(extra, np.float32)], axis=0)
        else:
            vectors = embed_cached(self.embedder, texts, kind=self.kind)
        return VectorIndex.build(vectors, **self.dense_params)

    def build(self) -> EntityLinker:
        """Build the indexes the mode needs now instead of on the first query."""
        if self.mode in ("fuzzy", "hybrid"):
            fuzzy = self.fuzzy_index
            if len(fuzzy) > fuzzy.full_scan_limit:
                _ = fuzzy.trigrams
        if self.mode in ("dense", "hybrid"):
            _ = self.dense_index
        return self

    # ------------------------------------------------------------------ linking
    def exact(self, mention: str) -> list[Link]:
        """Exact and alias hits of ``mention`` (normalised key equality)."""
        key = name_key(mention)
        if not key:  # punctuation-only mentions match nothing, not punctuation-only names
            return []
        out = [Link(self.names[i], 1.0, "exact", mention=mention, matched=self.names[i])
               for i in self._name_keys.get(key, ())]
        found = {link.name for link in out}
        for i in self._alias_keys.get(key, ()):
            if self.names[i] not in found:
                out.append(Link(self.names[i], 1.0, "alias", mention=mention, matched=mention))
                found.add(self.names[i])
        return out

    def _collect(self, surface_ids: Sequence[int] | np.ndarray,
                 scores: Sequence[float] | np.ndarray, source: str,
                 mention: str, limit: int) -> list[Link]:
        out: list[Link] = []
        seen: set[int] = set()
        for sid, score in zip(surface_ids, scores):
            if sid < 0:
                continue
            owner = int(self.surface_owner[sid])
            if owner in seen or score < self.min_score:
                continue
            seen.add(owner)
            out.append(Link(self.names[owner], float(min(max(score, 0.0), 1.0)), source,
                            mention=mention, matched=self.surface_forms[sid]))
            if len(out) == limit:
                break
        return out

    def _search_limit(self, top_m: int) -> int:
        # Several surface forms may belong to one name; fetch extra so top_m names survive.
        return top_m if len(self.surface_forms) == len(self.names) else top_m * 4 + 4

    def fuzzy(self, mention: str, top_m: int | None = None) -> list[Link]:
        """The fuzzy top-m names of ``mention``."""
        top_m = top_m or self.top_m
        ids, scores = self.fuzzy_index.search(name_key(mention), self._search_limit(top_m))
        return self._collect(ids, scores, "fuzzy", mention, top_m)

    def dense_many(self, mentions: Sequence[str], top_m: int | None = None) -> list[list[Link]]:
        """The dense top-m names of every mention (all mentions embedded in one call)."""
        top_m = top_m or self.top_m
        if not mentions or not self.names:
            return [[] for _ in mentions]
        index = self.dense_index
        if self.embedder.dimension != index.dimension:
            raise EmbeddingError(f"embedder dimension {self.embedder.dimension} does not match "
                                 f"the index dimension {index.dimension}")
        queries = self.embedder.embed_documents([str(m) for m in mentions])
        scores, ids = index.search(queries, self._search_limit(top_m))
        return [self._collect(ids[q], scores[q], "dense", m, top_m)
                for q, m in enumerate(mentions)]

    def dense(self, mention: str, top_m: int | None = None) -> list[Link]:
        return self.dense_many([mention], top_m)[0]

    @staticmethod
    def _merge(*groups: list[Link]) -> list[Link]:
        out: list[Link] = []
        seen: set[str] = set()
        for group in groups:
            for link in group:
                if link.name not in seen:
                    seen.add(link.name)
                    out.append(link)
        return out

    def link_many(self, mentions: Sequence[str], top_m: int | None = None, *,
                  mode: str | None = None) -> list[list[Link]]:
        """``link`` for many mentions; dense queries are embedded in one batch."""
        mode = _check_mode(mode or self.mode)
        top_m = top_m or self.top_m
        mentions = [str(m) for m in mentions]
        dense = self.dense_many(mentions, top_m) if mode in ("dense", "hybrid") else None
        results = []
        for q, mention in enumerate(mentions):
            hits = self.exact(mention)
            fuzzy = self.fuzzy(mention, top_m) if mode in ("fuzzy", "hybrid") else []
            if mode == "fuzzy":
                results.append(self._merge(hits, fuzzy))
            elif mode == "dense":
                results.append(self._merge(hits, dense[q]))  # type: ignore[index]
            else:
                interleaved = [link for pair in _zip_longest(fuzzy, dense[q])  # type: ignore[index]
                               for link in pair]
                results.append(self._merge(hits, interleaved))
        return results

    def link(self, mention: str, top_m: int | None = None, *, mode: str | None = None
             ) -> list[Link]:
        """Scored links of one mention (exact, alias, then the mode's top-m; best first)."""
        return self.link_many([mention], top_m, mode=mode)[0]

    # ------------------------------------------------------------------ persistence
    def save(self, directory: str | Path) -> None:
        """Write names, aliases, the surface -> name map and (if built or needed) the FAISS index.

        Files: ``manifest.json`` (written last), ``names.json``, ``aliases.json``,
        ``surface_owner.npy`` and ``dense.faiss``. Nothing is pickled.
        """
        path = Path(directory)
        path.mkdir(parents=True, exist_ok=True)
        dense = self._dense
        if dense is None and self.mode in ("dense", "hybrid"):
            dense = self.dense_index
        (path / "names.json").write_text(json.dumps(self.names, ensure_ascii=False),
                                         encoding="utf-8")
        (path / "aliases.json").write_text(json.dumps(self.aliases, ensure_ascii=False),
                                           encoding="utf-8")
        np.save(path / "surface_owner.npy", self.surface_owner.astype(np.int64),
                allow_pickle=False)
        if dense is not None:
            dense.save(path / "dense.faiss")
        embedder_name = None
        if dense is not None:
            from kgrag.embed import embedder_name as _name

            embedder_name = _name(self.embedder)  # naming does not load a model
        manifest = {
            "format": FORMAT, "version": FORMAT_VERSION, "kind": self.kind, "mode": self.mode,
            "top_m": self.top_m, "min_score": self.min_score, "num_names": len(self.names),
            "num_surfaces": len(self.surface_forms),
            "dense_index": "dense.faiss" if dense is not None else None,
            "dense_kind": dense.kind if dense is not None else None,
            "dimension": dense.dimension if dense is not None else None,
            "embedder": embedder_name,
            "fuzzy": self.fuzzy_params, "dense": self.dense_params,
        }
        (path / "manifest.json").write_text(json.dumps(manifest, indent=2), encoding="utf-8")

    @classmethod
    def load(cls, directory: str | Path, *, embedder: Any = None) -> EntityLinker:
        """Load a linker written by :meth:`save`; a broken directory raises ``GraphLoadError``.

        ``embedder`` embeds queries for dense search; it must produce vectors of the saved
        dimension (``None`` = the packaged MiniLM).
        """
        from kgrag.graph.io import check_names, read_json_file
        from kgrag.graph.mapped import npy_layout

        path = Path(directory)
        if not path.is_dir():
            raise GraphLoadError(f"{path} is not a directory")
        manifest = read_json_file(path / "manifest.json")
        names = read_json_file(path / "names.json")
        aliases = read_json_file(path / "aliases.json")
        npy_layout(path / "surface_owner.npy")  # checked against the file size first
        try:
            owner = np.load(path / "surface_owner.npy", allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise GraphLoadError(f"{path} is not a readable kgrag linker directory: {exc}") from exc
        if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
            raise GraphLoadError(f"{path}/manifest.json is not a kgrag linker manifest")
        if manifest.get("version") != FORMAT_VERSION:
            raise GraphLoadError(f"{path}: unsupported linker format version "
                                 f"{manifest.get('version')!r}")
        if manifest.get("kind") != cls.kind:
            raise GraphLoadError(f"{path} holds a {manifest.get('kind')!r} linker, "
                                 f"not {cls.kind!r}; use the matching class")
        check_names(names, f"{path}/names.json")
        if not isinstance(aliases, dict) or not all(
                isinstance(v, list) and all(isinstance(a, str) for a in v)
                for v in aliases.values()):
            raise GraphLoadError(f"{path}/aliases.json is not an object of name -> [aliases]")
        if len(names) != manifest.get("num_names"):
            raise GraphLoadError(f"{path}: names.json / aliases.json do not match the manifest")
        try:
            linker = cls(names, aliases=aliases, embedder=embedder, mode=manifest["mode"],
                         top_m=manifest["top_m"], min_score=manifest.get("min_score", 0.0),
                         fuzzy_full_scan_limit=manifest["fuzzy"]["full_scan_limit"],
                         fuzzy_candidates=manifest["fuzzy"]["candidates"],
                         **manifest["dense"])
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise GraphLoadError(f"{path}: inconsistent linker files: {exc}") from exc
        if owner.shape != linker.surface_owner.shape or not np.array_equal(
                owner, linker.surface_owner):
            raise GraphLoadError(f"{path}: surface_owner.npy does not match names/aliases")
        if manifest.get("dense_index"):
            dense = VectorIndex.load(path / str(manifest["dense_index"]))
            if len(dense) != len(linker.surface_forms) or dense.dimension != manifest.get(
                    "dimension"):
                raise GraphLoadError(f"{path}: the FAISS index does not match the manifest")
            linker._dense = dense
            if embedder is not None and linker.embedder.dimension != dense.dimension:
                raise EmbeddingError(f"the embedder gives {linker.embedder.dimension}-d vectors "
                                     f"but the saved index is {dense.dimension}-d")
        return linker


def _weak(obj: Any) -> Any:
    """A weak reference to ``obj`` (``None`` stays ``None``; a non-weakrefable object is held)."""
    if obj is None:
        return None
    import weakref

    try:
        return weakref.ref(obj)
    except TypeError:
        return lambda: obj


def _zip_longest(a: list[Link], b: list[Link]) -> list[tuple[Link, ...]]:
    pairs = []
    for i in range(max(len(a), len(b))):
        pairs.append(tuple(x[i] for x in (a, b) if i < len(x)))
    return pairs


class RelationLinker(EntityLinker):
    """The same linker over relation names (``directed_by``, ``film.film.directed_by``, ...).

    Relation names are embedded as their words ("film film directed by", "place of birth":
    :func:`~kgrag.text.names.relation_words`), which embedding models understand better than
    identifiers; exact and fuzzy matching already ignore
    ``_`` and ``.`` through :func:`~kgrag.linking.fuzzy.name_key`. :meth:`from_graph` adds a
    relation's other texts (:func:`kgrag.text.relations.relation_texts`: labels and aliases,
    the last segment of a path-like id) as aliases, so "place of birth" links
    ``people.person.place_of_birth`` and "director" a ``P57`` labelled so.
    """

    kind = "relation"
    graph_kind = "relations"

    @classmethod
    def from_graph(cls, graph: GraphStore, **kwargs: Any) -> RelationLinker:
        from kgrag.text.relations import relation_texts

        names = graph.list_relations()
        if "aliases" not in kwargs:
            aliases: dict[str, list[str]] = {}
            for name in names:
                own = name_key(name)
                for text in relation_texts(graph, name):
                    if name_key(text) != own:
                        aliases.setdefault(text, []).append(name)
            kwargs["aliases"] = aliases
        kwargs.setdefault("graph", graph)
        return cls(names, **kwargs)

    @classmethod
    def _graph_names(cls, graph: GraphStore) -> list[str]:
        return list(graph.list_relations())

    def surface_text(self, surface: str) -> str:
        return relation_words(surface)
