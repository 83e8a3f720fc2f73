"""KET-Index (Algorithm 3): documents -> chunks -> KNN graph -> PageRank -> skeleton + keyword graph.

:func:`build_index` runs every step and returns a :class:`~kgrag.methods.ketrag.index.KETIndex`:

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
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from kgrag.errors import LLMNotConfiguredError
from kgrag.llm.base import NO_LLM_HELP, as_llm
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
from kgrag.llm.prompts import PromptSet
from kgrag.methods.ketrag.prompts import PROMPTS, summary_prompt
from kgrag.methods.ketrag.skeleton import Skeleton, build_skeleton, entity_embedding_texts
from kgrag.text.chunking import chunk_and_split
from kgrag.text.tokens import TextTokenizer, get_tokenizer

log = logging.getLogger(__name__)


def _embed(embedder: Any, texts: list[str]) -> np.ndarray:
    if not texts:
        return np.zeros((0, int(embedder.dimension)), dtype=np.float32)
    vectors = np.asarray(embedder.embed_documents(texts), dtype=np.float32)
    if vectors.shape[0] != len(texts):
        raise ValueError("the embedder returned the wrong number of vectors")
    return vectors


def _normalise_rows(m: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    return (m / np.where(norms == 0, 1, norms)).astype(np.float32)


def build_index(documents: Iterable[Any], *, llm: Any = None, embedder: Any = None,
                config: KETRAGConfig | None = None, cache_dir: str | Path | None = None,
                tokenizer: TextTokenizer | str | None = None, progress: bool = True,
                prompts: Any = None, **params: Any) -> KETIndex:
    """Build a KET-RAG index over ``documents`` (strings, LangChain or LlamaIndex documents).

    ``llm`` is needed when ``budget`` (beta) > 0; ``budget=0`` builds the LLM-free,
    keyword-only index. ``cache_dir`` keeps every LLM reply (JSON lines) so an interrupted
    build resumes without paying twice. ``params`` override :class:`KETRAGConfig` fields.
    ``prompts`` replaces the ``extraction`` / ``gleaning`` / ``summary`` templates by name
    (a mapping, or a :class:`~kgrag.llm.prompts.PromptSet`).
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

    # 1. chunks and sub-chunks ------------------------------------------------------------
    docs = to_source_documents(documents)
    chunk_texts: list[str] = []
    chunk_doc: list[int] = []
    chunk_tokens: list[int] = []
    sub_texts: list[str] = []
    sub_tokens: list[int] = []
    sub_indptr = [0]
    for d, doc in enumerate(docs):
        for chunk, subs in chunk_and_split(doc.text, cfg.chunk_size, cfg.splits,
                                           cfg.chunk_overlap, tok):
            chunk_texts.append(chunk.text)
            chunk_doc.append(d)
            chunk_tokens.append(chunk.n_tokens)
            for sub in subs:
                sub_texts.append(sub.text)
                sub_tokens.append(sub.n_tokens)
            sub_indptr.append(len(sub_texts))
    if not chunk_texts:
        raise ValueError("the documents contain no text to index")
    n = len(chunk_texts)
    timings["chunking_s"] = time.perf_counter() - t0

    # 2. sentences, keywords, embeddings ------------------------------------------------------
    t = time.perf_counter()
    table = build_sentence_table(sub_texts)
    log.info("KET-RAG: %d chunks, %d sub-chunks, %d sentences, %d keywords", n, len(sub_texts),
             len(table.texts), len(table.vocabulary))
    sub_vectors = _normalise_rows(_embed(emb, [s.strip() for s in sub_texts]))
    owner = np.repeat(np.arange(n), np.diff(sub_indptr))
    chunk_vectors = _normalise_rows(
        np.asarray(sp.csr_matrix((np.ones(len(owner)), (owner, np.arange(len(owner)))),
                                 shape=(n, len(owner))) @ sub_vectors))
    keyword_graph = build_keyword_graph(table, len(sub_texts),
                                        lambda texts: _normalise_rows(_embed(emb, texts)))
    timings["embedding_and_keywords_s"] = time.perf_counter() - t

    # 3. KNN graph and PageRank ---------------------------------------------------------------
    t = time.perf_counter()
    sub_kw = keyword_graph.sub_chunk_keyword_matrix(len(sub_texts))
    owner_m = sp.csr_matrix((np.ones(len(owner)), (owner, np.arange(len(owner)))),
                            shape=(n, len(owner)))
    chunk_kw = (owner_m @ sub_kw).tocsr()
    adj = build_chunk_knn_graph(chunk_kw, chunk_vectors, cfg.knn_k)
    scores = pagerank(adj, cfg.pagerank_alpha)
    key_chunks = select_key_chunks(scores, cfg.budget, method=cfg.selection, seed=cfg.seed)
    upper = sp.triu(adj, k=1).tocoo()
    knn_edges = np.stack([upper.row, upper.col], axis=1).astype(np.int64) if upper.nnz \
        else np.zeros((0, 2), np.int64)
    prompt_tokens = first_prompt_tokens(chunk_texts, cfg.entity_types, tok)
    timings["knn_pagerank_s"] = time.perf_counter() - t

    # 4. skeleton ---------------------------------------------------------------------------
    t = time.perf_counter()
    llm_stats: dict[str, dict[str, int]] = {}
    provider: dict[str, int] = {}
    failed = 0
    skeleton = Skeleton.empty()
    entity_vectors = np.zeros((0, sub_vectors.shape[1]), np.float32)
    if len(key_chunks):
        adapter = as_llm(llm, what="KET-RAG skeleton extraction")
        cache = ReplyCache(Path(cache_dir) / CACHE_FILE if cache_dir is not None else None)
        caller = CachedLLM(adapter, cache, tok)
        with adapter.track() as usage:
            extractions = extract_key_chunks(
                caller, [(int(c), chunk_texts[c]) for c in sorted(key_chunks.tolist())],
                cfg.entity_types, max_gleanings=cfg.max_gleanings, max_workers=cfg.max_workers,
                progress=progress, prompts=prompt_set)
            failed = sum(e.failed for e in extractions)

            def summarize(kind: str, name: str, descriptions: list[str]) -> str:
                return caller.complete(
                    summary_prompt(kind, name, descriptions,
                                   template=prompt_set.template("summary")), kind="summarize")

            def map_tasks(tasks: list) -> list[str]:
                return run_pool(tasks, max_workers=cfg.max_workers,
                                desc="KET-RAG description merging", total=len(tasks),
                                progress=progress)

            skeleton = build_skeleton(extractions,
                                      summarize if cfg.summarize_descriptions else None,
                                      map_tasks)
        llm_stats = caller.stats_dict()
        provider = usage.as_dict()
        entity_vectors = _normalise_rows(_embed(emb, entity_embedding_texts(skeleton))) \
            if skeleton.graph.num_nodes else entity_vectors
    timings["skeleton_s"] = time.perf_counter() - t
    timings["total_s"] = time.perf_counter() - t0

    cost = cost_report(beta=cfg.budget, n_chunks=n, key_chunks=key_chunks, pagerank=scores,
                       chunk_tokens=np.asarray(chunk_tokens), prompt_tokens=prompt_tokens,
                       selection=cfg.selection, seed=cfg.seed, max_gleanings=cfg.max_gleanings,
                       llm_stats=llm_stats, provider_usage=provider, failed_chunks=failed)
    return KETIndex(
        config=cfg,
        documents=[{"doc_id": d.doc_id, "metadata": d.metadata} for d in docs],
        chunk_texts=chunk_texts,
        chunk_doc=np.asarray(chunk_doc, np.int64),
        chunk_tokens=np.asarray(chunk_tokens, np.int64),
        sub_texts=sub_texts,
        sub_tokens=np.asarray(sub_tokens, np.int64),
        sub_indptr=np.asarray(sub_indptr, np.int64),
        sub_vectors=sub_vectors,
        chunk_vectors=chunk_vectors,
        knn_edges=knn_edges,
        pagerank=scores,
        key_chunks=key_chunks,
        prompt_tokens=prompt_tokens,
        keyword_graph=keyword_graph,
        skeleton=skeleton,
        entity_vectors=entity_vectors,
        tokenizer_name=tok.name,
        embedder_name=embedder_name(emb),
        cost=cost,
        timings=timings,
    )
