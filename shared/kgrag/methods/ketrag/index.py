"""The KET-RAG index (KET-Index output) and its on-disk format (JSON + ``.npy``; never pickle).

Layout of an index directory::

    manifest.json        format, version, config, tokenizer, embedder, counts, timings
    documents.json       [{doc_id, metadata}]
    chunks.json          chunk texts and their document positions
    sub_chunks.json      sub-chunk texts
    keywords.json        the keyword vocabulary
    cost.json            indexing cost report (see cost.py)
    *.npy                arrays (vectors, CSR pointers, PageRank, key chunks, ...)
    skeleton/            the skeleton KnowledgeGraph (KnowledgeGraph.save) + attributes

Saving writes a temporary sibling directory and renames it into place, so a crash never leaves
a half-written index.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from kgrag.errors import GraphLoadError
from kgrag.methods.ketrag.config import KETRAGConfig
from kgrag.methods.ketrag.cost import project
from kgrag.methods.ketrag.keyword_graph import KeywordGraph
from kgrag.methods.ketrag.skeleton import Skeleton

FORMAT_NAME = "kgrag.KETIndex"
FORMAT_VERSION = 1

_ARRAYS = ("chunk_doc", "chunk_tokens", "sub_tokens", "sub_indptr", "sub_vectors",
           "chunk_vectors", "knn_edges", "pagerank", "key_chunks", "prompt_tokens",
           "entity_vectors")
_KW_ARRAYS = ("vectors", "indptr", "indices", "sentence_counts")


@dataclass
class KETIndex:
    """Everything retrieval needs: sub-chunks and their vectors, G_K, G_S and provenance.

    Chunk ``c`` owns the sub-chunks ``sub_indptr[c]:sub_indptr[c+1]`` (contiguous ids).
    ``knn_edges`` are the undirected KNN-graph edges as ``(u, v)`` rows with ``u < v``.
    """

    config: KETRAGConfig
    documents: list[dict[str, Any]]
    chunk_texts: list[str]
    chunk_doc: np.ndarray
    chunk_tokens: np.ndarray
    sub_texts: list[str]
    sub_tokens: np.ndarray
    sub_indptr: np.ndarray
    sub_vectors: np.ndarray
    chunk_vectors: np.ndarray
    knn_edges: np.ndarray
    pagerank: np.ndarray
    key_chunks: np.ndarray
    prompt_tokens: np.ndarray
    keyword_graph: KeywordGraph
    skeleton: Skeleton
    entity_vectors: np.ndarray
    tokenizer_name: str
    embedder_name: str
    cost: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)

    # ------------------------------------------------------------------ views
    @property
    def num_chunks(self) -> int:
        return len(self.chunk_texts)

    @property
    def num_sub_chunks(self) -> int:
        return len(self.sub_texts)

    @property
    def sub_owner(self) -> np.ndarray:
        """Chunk id of every sub-chunk."""
        return np.repeat(np.arange(self.num_chunks), np.diff(self.sub_indptr))

    def sub_chunks_of(self, chunk_ids: Any) -> np.ndarray:
        """The sub-chunk ids of the given chunks (the paper's rewiring), in chunk order."""
        ids = np.asarray(list(chunk_ids), dtype=np.int64)
        if ids.size == 0:
            return np.empty(0, np.int64)
        return np.concatenate([np.arange(self.sub_indptr[c], self.sub_indptr[c + 1])
                               for c in ids])

    def sub_chunk_id(self, sub: int) -> str:
        return f"s{sub}"

    def summary(self) -> dict[str, Any]:
        return {
            "documents": len(self.documents),
            "chunks": self.num_chunks,
            "sub_chunks": self.num_sub_chunks,
            "keywords": self.keyword_graph.num_keywords,
            "knn_edges": len(self.knn_edges),
            "key_chunks": len(self.key_chunks),
            "entities": self.skeleton.graph.num_nodes,
            "relations": self.skeleton.graph.num_edges,
        }

    def projected_cost(self, beta: float) -> dict[str, Any]:
        """Extraction cost projected to budget rate ``beta`` on this corpus (see cost.py)."""
        return project(beta, pagerank=self.pagerank, chunk_tokens=self.chunk_tokens,
                       prompt_tokens=self.prompt_tokens, selection=self.config.selection,
                       seed=self.config.seed, max_gleanings=self.config.max_gleanings,
                       measured_key_chunks=self.key_chunks,
                       llm_stats=self.cost.get("llm", {}).get("by_kind", {}))

    # ------------------------------------------------------------------ persistence
    def save(self, directory: str | os.PathLike[str]) -> Path:
        target = Path(directory)
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.exists() and any(target.iterdir()) and not (target / "manifest.json").exists():
            raise GraphLoadError(f"{target} exists and is not a KET-RAG index; not overwriting it")
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
        try:
            for name in _ARRAYS:
                np.save(tmp / f"{name}.npy", np.ascontiguousarray(getattr(self, name)),
                        allow_pickle=False)
            for name in _KW_ARRAYS:
                np.save(tmp / f"kw_{name}.npy",
                        np.ascontiguousarray(getattr(self.keyword_graph, name)), allow_pickle=False)
            _write_json(tmp / "documents.json", self.documents)
            _write_json(tmp / "chunks.json", self.chunk_texts)
            _write_json(tmp / "sub_chunks.json", self.sub_texts)
            _write_json(tmp / "keywords.json", self.keyword_graph.vocabulary)
            _write_json(tmp / "cost.json", self.cost)
            self.skeleton.save(tmp / "skeleton")
            _write_json(tmp / "manifest.json", {
                "format": FORMAT_NAME,
                "version": FORMAT_VERSION,
                "config": self.config.as_dict(),
                "tokenizer": self.tokenizer_name,
                "embedder": self.embedder_name,
                "dimension": int(self.sub_vectors.shape[1]) if self.sub_vectors.ndim == 2 else 0,
                "counts": self.summary(),
                "timings": self.timings,
            })
            if target.exists():
                backup = target.with_name(target.name + ".old")
                shutil.rmtree(backup, ignore_errors=True)
                os.replace(target, backup)
                os.replace(tmp, target)
                shutil.rmtree(backup, ignore_errors=True)
            else:
                os.replace(tmp, target)
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
        return target

    @classmethod
    def load(cls, directory: str | os.PathLike[str]) -> KETIndex:
        root = Path(directory)
        if not root.is_dir():
            raise GraphLoadError(f"{root} is not a directory")
        manifest = _read_json(root / "manifest.json")
        if not isinstance(manifest, dict) or manifest.get("format") != FORMAT_NAME:
            raise GraphLoadError(f"{root} does not hold a KET-RAG index")
        if manifest.get("version") != FORMAT_VERSION:
            raise GraphLoadError(f"{root}: unsupported KET-RAG index version "
                                 f"{manifest.get('version')!r}")
        arrays = {name: _read_npy(root / f"{name}.npy") for name in _ARRAYS}
        kw = {name: _read_npy(root / f"kw_{name}.npy") for name in _KW_ARRAYS}
        try:
            config = KETRAGConfig.from_dict(manifest["config"])
            index = cls(
                config=config,
                documents=_read_json(root / "documents.json"),
                chunk_texts=_read_json(root / "chunks.json"),
                sub_texts=_read_json(root / "sub_chunks.json"),
                keyword_graph=KeywordGraph(_read_json(root / "keywords.json"), kw["vectors"],
                                           kw["indptr"], kw["indices"], kw["sentence_counts"]),
                skeleton=Skeleton.load(root / "skeleton"),
                tokenizer_name=str(manifest.get("tokenizer", "")),
                embedder_name=str(manifest.get("embedder", "")),
                cost=_read_json(root / "cost.json"),
                timings=dict(manifest.get("timings", {})),
                **arrays,
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise GraphLoadError(f"{root} is inconsistent: {exc}") from None
        index.validate(str(root))
        return index

    def validate(self, where: str = "index") -> None:
        """Check that the parts agree with each other; raises :class:`GraphLoadError`."""
        n, s = self.num_chunks, self.num_sub_chunks
        kg = self.keyword_graph
        problems = [
            (len(self.chunk_doc) == n and len(self.chunk_tokens) == n, "chunk arrays"),
            (len(self.sub_indptr) == n + 1 and (n == 0 or int(self.sub_indptr[-1]) == s),
             "sub-chunk pointers"),
            (len(self.sub_tokens) == s and len(self.sub_vectors) == s, "sub-chunk arrays"),
            (len(self.chunk_vectors) == n and len(self.pagerank) == n
             and len(self.prompt_tokens) == n, "chunk vectors / PageRank"),
            (len(kg.vectors) == kg.num_keywords and len(kg.indptr) == kg.num_keywords + 1,
             "keyword arrays"),
            (kg.indices.size == 0 or int(kg.indices.max()) < s, "keyword edges"),
            (len(self.entity_vectors) == self.skeleton.graph.num_nodes, "entity vectors"),
            (self.key_chunks.size == 0 or int(self.key_chunks.max()) < n, "key chunks"),
        ]
        for ok, what in problems:
            if not ok:
                raise GraphLoadError(f"{where}: {what} do not match")


def _write_json(path: Path, obj: Any) -> None:
    path.write_text(json.dumps(obj, ensure_ascii=False), encoding="utf-8")


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise GraphLoadError(f"{path.parent} is missing {path.name}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise GraphLoadError(f"{path} is corrupted: {exc}") from None


def _read_npy(path: Path) -> np.ndarray:
    try:
        return np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise GraphLoadError(f"{path.parent} is missing {path.name}") from None
    except (ValueError, OSError, EOFError) as exc:
        raise GraphLoadError(f"{path} is corrupted: {exc}") from None
