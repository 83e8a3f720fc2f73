"""KET-Index (Algorithm 3): documents -> chunks -> KNN graph -> PageRank -> skeleton + keyword
graph.

:func:`build_index` runs every step and returns a :class:`~kgrag.methods.ketrag.index.KETIndex`;
each stage is its own function (:func:`chunk_documents`, :func:`embed_texts`,
:func:`rank_chunks`, :func:`extract_skeleton`), so it can be run, timed or tested alone:

1. token chunking (``chunk_size`` l, no overlap by default) and sub-chunks (``splits`` m);
2. sentences and keywords of every sub-chunk; sub-chunk and sentence embeddings;
   a chunk's vector is the normalised mean of its sub-chunk vectors (MiniLM reads at most 256
   word pieces, so embedding a 1,200-token chunk directly would ignore most of it);
3. the chunk KNN graph (k lexical + k semantic neighbours) over the original chunks, as in the
   paper (the reference code runs it over sub-chunks), and PageRank;
4. the top ``floor(beta * n)`` chunks -> LLM extraction (cached, concurrent) -> skeleton;
   ``beta = 0`` needs no LLM;
5. the text-keyword bipartite graph over all sub-chunks (no LLM);
6. cost accounting with the projection to beta = 1.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from kgrag.errors import EmptyInputError, LLMNotConfiguredError
from kgrag.llm.base import NO_LLM_HELP, as_llm
from kgrag.llm.prompts import PromptSet
from kgrag.methods.ketrag.config import KETRAGConfig
from kgrag.methods.ketrag.cost import cost_report, first_prompt_tokens
from kgrag.methods.ketrag.documents import to_source_documents
from kgrag.methods.ketrag.extraction import (
    CACHE_FILE,
    CachedLLM,
    ReplyCache,
    extract_key_chunks,
    run_pool,
)
from kgrag.methods.ketrag.index import KETIndex
from kgrag.methods.ketrag.keyword_graph import build_keyword_graph, build_sentence_table
from kgrag.methods.ketrag.knn import build_chunk_knn_graph, pagerank, select_key_chunks
from kgrag.methods.ketrag.prompts import PROMPTS, summary_prompt
from kgrag.methods.ketrag.skeleton import Skeleton, build_skeleton, entity_embedding_texts
from kgrag.text.chunking import chunk_and_split
from kgrag.text.tokens import TextTokenizer, get_tokenizer

log = logging.getLogger(__name__)


def _embed(embedder: Any, texts: list[str]) -> np.ndarray:
    """``embedder``'s vectors of ``texts`` through the shared on-disk embedding cache
    (:mod:`kgrag.embed.store`: ``kgrag ketrag index --cache-dir`` / ``--no-cache``), so indexing
    the same texts with the same model again reads them back instead of embedding again."""
    from kgrag.embed.store import embed_cached

    if not texts:
        return np.zeros((0, int(embedder.dimension)), dtype=np.float32)
    vectors = embed_cached(embedder, texts, kind="ketrag")
    if vectors.shape[0] != len(texts):
        raise ValueError("the embedder returned the wrong number of vectors")
    return vectors


def _normalise_rows(m: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    return (m / np.where(norms == 0, 1, norms)).astype(np.float32)


@dataclass
class ChunkedText:
    """Stage 1: the documents cut into chunks and each chunk into sub-chunks."""

    texts: list[str] = field(default_factory=list)
    doc: list[int] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)
    sub_texts: list[str] = field(default_factory=list)
    sub_tokens: list[int] = field(default_factory=list)
    #: sub-chunks of chunk ``c`` are ``sub_texts[sub_indptr[c]:sub_indptr[c+1]]``
    sub_indptr: list[int] = field(default_factory=lambda: [0])

    @property
    def owner_matrix(self) -> sp.csr_matrix:
        """(chunks x sub-chunks) 0/1 matrix: which chunk each sub-chunk belongs to."""
        owner = np.repeat(np.arange(len(self.texts)), np.diff(self.sub_indptr))
        return sp.csr_matrix((np.ones(len(owner)), (owner, np.arange(len(owner)))),
                             shape=(len(self.texts), len(owner)))


@dataclass
class EmbeddedText:
    """Stage 2: sub-chunk and chunk vectors and the text-keyword graph."""

    sub_vectors: np.ndarray
    chunk_vectors: np.ndarray
    keyword_graph: Any


@dataclass
class RankedChunks:
    """Stage 3: the chunk KNN graph, PageRank and the key chunks (beta of them)."""

    scores: np.ndarray
    key_chunks: np.ndarray
    knn_edges: np.ndarray
    prompt_tokens: Any


@dataclass
class SkeletonResult:
    """Stage 4: the skeleton from the key chunks, its entity vectors and the LLM accounting."""

    skeleton: Skeleton
    entity_vectors: np.ndarray
    llm_stats: dict[str, dict[str, int]] = field(default_factory=dict)
    provider: dict[str, int] = field(default_factory=dict)
    failed: int = 0
    #: the first failed chunk's reason (on_unusable_reply="empty")
    error: str = ""


def chunk_documents(docs: list[Any], cfg: KETRAGConfig, tok: TextTokenizer) -> ChunkedText:
    """Token chunks (``chunk_size``, ``chunk_overlap``) of every document, each cut into
    ``splits`` sub-chunks. Raises ``ValueError`` when there is no text at all."""
    out = ChunkedText()
    for d, doc in enumerate(docs):
        for chunk, subs in chunk_and_split(doc.text, cfg.chunk_size, cfg.splits,
                                           cfg.chunk_overlap, tok):
            out.texts.append(chunk.text)
            out.doc.append(d)
            out.tokens.append(chunk.n_tokens)
            for sub in subs:
                out.sub_texts.append(sub.text)
                out.sub_tokens.append(sub.n_tokens)
            out.sub_indptr.append(len(out.sub_texts))
    if not out.texts:
        raise EmptyInputError("the documents contain no text to index")
    return out


def embed_texts(chunks: ChunkedText, emb: Any) -> EmbeddedText:
    """Sentences and keywords of every sub-chunk, sub-chunk vectors, and chunk vectors as the
    normalised sum of their sub-chunks' (MiniLM reads at most 256 word pieces)."""
    table = build_sentence_table(chunks.sub_texts)
    log.info("KET-RAG: %d chunks, %d sub-chunks, %d sentences, %d keywords", len(chunks.texts),
             len(chunks.sub_texts), len(table.texts), len(table.vocabulary))
    sub_vectors = _normalise_rows(_embed(emb, [s.strip() for s in chunks.sub_texts]))
    chunk_vectors = _normalise_rows(np.asarray(chunks.owner_matrix @ sub_vectors))
    keyword_graph = build_keyword_graph(table, len(chunks.sub_texts),
                                        lambda texts: _normalise_rows(_embed(emb, texts)))
    return EmbeddedText(sub_vectors, chunk_vectors, keyword_graph)


def rank_chunks(chunks: ChunkedText, embedded: EmbeddedText, cfg: KETRAGConfig,
                tok: TextTokenizer) -> RankedChunks:
    """The chunk KNN graph (``neighbor_top_k`` lexical + semantic neighbours), its PageRank and the
    ``floor(budget * n)`` key chunks; the first extraction prompt's tokens per chunk (for the
    cost projection)."""
    sub_kw = embedded.keyword_graph.sub_chunk_keyword_matrix(len(chunks.sub_texts))
    chunk_kw = (chunks.owner_matrix @ sub_kw).tocsr()
    adj = build_chunk_knn_graph(chunk_kw, embedded.chunk_vectors, cfg.neighbor_top_k)
    scores = pagerank(adj, cfg.pagerank_alpha)
    key_chunks = select_key_chunks(scores, cfg.budget, method=cfg.selection, seed=cfg.seed)
    upper = sp.triu(adj, k=1).tocoo()
    knn_edges = np.stack([upper.row, upper.col], axis=1).astype(np.int64) if upper.nnz \
        else np.zeros((0, 2), np.int64)
    prompt_tokens = first_prompt_tokens(chunks.texts, cfg.entity_types, tok)
    return RankedChunks(scores, key_chunks, knn_edges, prompt_tokens)


def extract_skeleton(chunks: ChunkedText, key_chunks: np.ndarray, cfg: KETRAGConfig, *,
                     llm: Any, emb: Any, tok: TextTokenizer, dimension: int,
                     cache_dir: str | Path | None, progress: bool,
                     prompt_set: PromptSet, on_unusable_reply: str = "raise") -> SkeletonResult:
    """LLM extraction on the key chunks (cached in ``cache_dir``, concurrent), description
    merging, and the entity vectors; an empty skeleton (no LLM call) without key chunks."""
    result = SkeletonResult(Skeleton.empty(), np.zeros((0, dimension), np.float32))
    if not len(key_chunks):
        return result
    adapter = as_llm(llm, what="KET-RAG skeleton extraction")
    cache = ReplyCache(Path(cache_dir) / CACHE_FILE if cache_dir is not None else None)
    caller = CachedLLM(adapter, cache, tok)
    with adapter.track() as usage:
        extractions = extract_key_chunks(
            caller, [(int(c), chunks.texts[c]) for c in sorted(key_chunks.tolist())],
            cfg.entity_types, max_gleanings=cfg.max_gleanings, max_workers=cfg.max_workers,
            progress=progress, prompts=prompt_set, on_unusable_reply=on_unusable_reply)
        result.failed = sum(e.failed for e in extractions)
        result.error = next((e.error for e in extractions if e.failed), "")

        def summarize(kind: str, name: str, descriptions: list[str]) -> str:
            return caller.complete(
                summary_prompt(kind, name, descriptions,
                               template=prompt_set.template("summary")), kind="summarize")

        def map_tasks(tasks: list) -> list[str]:
            return run_pool(tasks, max_workers=cfg.max_workers,
                            desc="KET-RAG description merging", total=len(tasks),
                            progress=progress)

        result.skeleton = build_skeleton(extractions,
                                         summarize if cfg.summarize_descriptions else None,
                                         map_tasks)
    result.llm_stats = caller.stats_dict()
    result.provider = usage.as_dict()
    if result.skeleton.graph.num_nodes:
        result.entity_vectors = _normalise_rows(
            _embed(emb, entity_embedding_texts(result.skeleton)))
    return result


def build_index(documents: Iterable[Any], *, llm: Any = None, embedder: Any = None,
                config: KETRAGConfig | None = None, cache_dir: str | Path | None = None,
                tokenizer: TextTokenizer | str | None = None, progress: bool = True,
                prompts: Any = None, on_unusable_reply: str = "raise",
                **params: Any) -> KETIndex:
    """Build a KET-RAG index over ``documents`` (strings, LangChain or LlamaIndex documents).

    ``llm`` is needed when ``budget`` (beta) > 0; ``budget=0`` builds the LLM-free,
    keyword-only index. ``cache_dir`` keeps every LLM reply (JSON lines) so an interrupted
    build resumes without paying twice. ``params`` override :class:`KETRAGConfig` fields.
    ``prompts`` replaces the ``extraction`` / ``gleaning`` / ``summary`` templates by name
    (a mapping, or a :class:`~kgrag.llm.prompts.PromptSet`). ``on_unusable_reply``: a key
    chunk whose extraction replies stay unusable after the re-ask raises
    :class:`~kgrag.errors.LLMOutputError` (``"raise"``), or is indexed without skeleton
    records (``"empty"``: logged, counted in ``cost["failed_chunks"]`` with the first reason
    in ``cost["failed_chunk_error"]``).
    """
    from kgrag.embed import as_embedder, embedder_name

    cfg = (config or KETRAGConfig()).replace(**params) if params else (config or KETRAGConfig())
    prompt_set = prompts if isinstance(prompts, PromptSet) else PromptSet(
        PROMPTS, prompts, method="KET-RAG")
    if cfg.budget > 0 and llm is None:
        raise LLMNotConfiguredError(
            NO_LLM_HELP.format(what="KET-RAG skeleton extraction (budget beta > 0)")
            + " For the LLM-free keyword-only index pass budget=0.")
    tok = get_tokenizer(tokenizer)
    emb = as_embedder(embedder)
    timings: dict[str, float] = {}
    t0 = time.perf_counter()

    docs = to_source_documents(documents)
    chunks = chunk_documents(docs, cfg, tok)
    timings["chunking_s"] = time.perf_counter() - t0

    t = time.perf_counter()
    embedded = embed_texts(chunks, emb)
    timings["embedding_and_keywords_s"] = time.perf_counter() - t

    t = time.perf_counter()
    ranked = rank_chunks(chunks, embedded, cfg, tok)
    timings["knn_pagerank_s"] = time.perf_counter() - t

    t = time.perf_counter()
    skel = extract_skeleton(chunks, ranked.key_chunks, cfg, llm=llm, emb=emb, tok=tok,
                            dimension=embedded.sub_vectors.shape[1], cache_dir=cache_dir,
                            progress=progress, prompt_set=prompt_set,
                            on_unusable_reply=on_unusable_reply)
    timings["skeleton_s"] = time.perf_counter() - t
    timings["total_s"] = time.perf_counter() - t0

    cost = cost_report(beta=cfg.budget, n_chunks=len(chunks.texts), key_chunks=ranked.key_chunks,
                       pagerank=ranked.scores, chunk_tokens=np.asarray(chunks.tokens),
                       prompt_tokens=ranked.prompt_tokens, selection=cfg.selection,
                       seed=cfg.seed, max_gleanings=cfg.max_gleanings,
                       llm_stats=skel.llm_stats, provider_usage=skel.provider,
                       failed_chunks=skel.failed)
    if skel.failed:
        cost["failed_chunk_error"] = skel.error
    return KETIndex(
        config=cfg,
        documents=[{"doc_id": d.doc_id, "metadata": d.metadata} for d in docs],
        chunk_texts=chunks.texts,
        chunk_doc=np.asarray(chunks.doc, np.int64),
        chunk_tokens=np.asarray(chunks.tokens, np.int64),
        sub_texts=chunks.sub_texts,
        sub_tokens=np.asarray(chunks.sub_tokens, np.int64),
        sub_indptr=np.asarray(chunks.sub_indptr, np.int64),
        sub_vectors=embedded.sub_vectors,
        chunk_vectors=embedded.chunk_vectors,
        knn_edges=ranked.knn_edges,
        pagerank=ranked.scores,
        key_chunks=ranked.key_chunks,
        prompt_tokens=ranked.prompt_tokens,
        keyword_graph=embedded.keyword_graph,
        skeleton=skel.skeleton,
        entity_vectors=skel.entity_vectors,
        tokenizer_name=tok.name,
        embedder_name=embedder_name(emb),
        cost=cost,
        timings=timings,
    )
