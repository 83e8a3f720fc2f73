"""KET-RAG indexing: KNN graph, PageRank selection, keyword graph, skeleton, cache, cost."""

from __future__ import annotations

import json

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from ketrag_fakes import HashingEmbedder, RecordChatModel, RecordLlamaLLM, RecordResponder

from kgrag.embed import LookupEmbedder
from kgrag.errors import LLMNotConfiguredError, LLMOutputError
from kgrag.methods.ketrag import KETRAG, build_index
from kgrag.methods.ketrag.extraction import CACHE_FILE
from kgrag.methods.ketrag.keyword_graph import (
    build_keyword_graph,
    build_sentence_table,
    keyword_sentences,
)
from kgrag.methods.ketrag.knn import (
    knn_graph,
    lexical_neighbors,
    pagerank,
    select_key_chunks,
    semantic_neighbors,
)
from kgrag.methods.ketrag.parsing import parse_records

# Ten one-chunk documents (chunk_size=30 tokens, splits=1 -> two sub-chunks each).
CITY_DOCS = [
    "Ada Lovelace was born in Lindenfeld. She wrote poems about engines and numbers.",
    "Lindenfeld is the capital of Westmark. The city has a large river port and old walls.",
    "Bruno Keller was born in Ostbruck. Ostbruck is famous for clocks and bells.",
    "Westmark exports timber and grain. Its king is Otto Brand, who lives in Lindenfeld.",
    "Clara Weiss painted the harbour of Lindenfeld. Her paintings hang in Ostbruck.",
    "Otto Brand married Greta Holm in Ostbruck. Greta Holm was a violinist.",
    "The river Senn flows through Lindenfeld and Ostbruck. Barges carry timber on the Senn.",
    "Karl Roth founded the Ostbruck clock guild. The guild trains apprentices every spring.",
    "Greta Holm taught music to Clara Weiss. They toured Westmark together.",
    "Paris is far from Westmark. Travellers from Paris reach Lindenfeld by train.",
]
SMALL = dict(chunk_size=30, splits=1, progress=False)


def build(docs=CITY_DOCS, responder=None, budget=0.5, **kw):
    responder = responder or RecordResponder()
    params = {**SMALL, **kw}
    index = build_index(docs, llm=RecordChatModel(responder=responder), embedder=HashingEmbedder(),
                        budget=budget, **params)
    return index, responder


# ---------------------------------------------------------------- KNN graph and PageRank
def test_lexical_similarity_is_the_number_of_distinct_shared_keywords():
    # chunk 0 shares 2 words with chunk 1, 1 word with chunk 2 and none with chunk 3
    x = sp.csr_matrix(np.array([[1, 1, 1, 0, 0],
                                [1, 1, 0, 0, 0],
                                [0, 0, 3, 1, 0],   # counts > 1 still mean "contains"
                                [0, 0, 0, 0, 1]]))
    src, dst = lexical_neighbors(x, k=1)
    edges = dict(zip(src.tolist(), dst.tolist()))
    assert edges[0] == 1  # 2 shared words beat 1
    assert edges[1] == 0 and edges[2] == 0  # ties and single shared words
    assert 3 not in edges  # shares nothing: no lexical neighbour
    src, dst = lexical_neighbors(x, k=2)
    assert sorted(d for s, d in zip(src, dst) if s == 0) == [1, 2]


def test_five_chunk_toy_knn_graph_k1_hand_checked():
    x = sp.csr_matrix(np.array([[1, 1, 0, 0], [1, 1, 1, 0], [0, 1, 1, 0],
                                [0, 0, 1, 1], [0, 0, 0, 1]]))
    vectors = np.array([[1, 0], [0.9, 0.1], [0, 1], [0.1, 0.9], [-1, 0]], dtype=np.float32)
    lex = lexical_neighbors(x, 1)
    sem = semantic_neighbors(vectors, 1)
    # chunk 3 shares one word with chunks 1, 2 and 4: the tie goes to the lowest id
    assert sorted(zip(*map(list, lex))) == [(0, 1), (1, 0), (2, 1), (3, 1), (4, 3)]
    assert sorted(zip(*map(list, sem))) == [(0, 1), (1, 0), (2, 3), (3, 2), (4, 2)]
    adj = knn_graph(5, lex, sem)
    got = {(int(u), int(v)) for u, v in zip(*sp.triu(adj, 1).nonzero())}
    assert got == {(0, 1), (1, 2), (1, 3), (3, 4), (2, 3), (2, 4)}  # the union, undirected
    assert (adj != adj.T).nnz == 0 and adj.diagonal().sum() == 0
    assert set(np.unique(adj.data)) == {1.0}


def test_pagerank_matches_networkx_and_the_hub_of_a_star_is_selected_first():
    g = nx.star_graph(6)  # node 0 is the hub
    g.add_edge(5, 6)
    g.add_node(7)  # isolated
    adj = nx.to_scipy_sparse_array(g, nodelist=range(8), format="csr")
    pi = pagerank(adj, 0.85)
    ref = nx.pagerank(g, alpha=0.85, tol=1e-12)
    assert pi.sum() == pytest.approx(1.0)
    assert np.allclose(pi, [ref[i] for i in range(8)], atol=1e-8)
    assert select_key_chunks(pi, 0.2)[0] == 0
    assert len(select_key_chunks(pi, 0.5)) == 4 == int(0.5 * 8)
    assert len(select_key_chunks(pi, 0.0)) == 0
    assert sorted(select_key_chunks(pi, 1.0).tolist()) == list(range(8))


def test_uniform_selection_is_reproducible_with_a_seed():
    scores = np.linspace(1, 0, 20)
    a = select_key_chunks(scores, 0.3, method="uniform", seed=7)
    assert np.array_equal(a, select_key_chunks(scores, 0.3, method="uniform", seed=7))
    assert len(a) == 6 and len(set(a.tolist())) == 6
    assert not np.array_equal(a, select_key_chunks(scores, 0.3, method="uniform", seed=8))


# ---------------------------------------------------------------- keyword graph
def test_keyword_vector_is_the_mean_of_its_sentence_vectors_and_edges_form_a_set():
    subs = ["Paris is big. Paris is old. Rome is old.", "Rome and Paris trade.", "Oslo is cold."]
    table = build_sentence_table(subs)
    vecs = {"Paris is big.": [1, 0, 0], "Paris is old.": [0, 1, 0], "Rome is old.": [0, 0, 1],
            "Rome and Paris trade.": [1, 1, 1], "Oslo is cold.": [0, 0, 1]}
    emb = LookupEmbedder(vecs, normalize=False)
    kg = build_keyword_graph(table, len(subs), emb.embed_documents)
    k = kg.vocabulary.index("paris")
    expected = (np.array([1, 0, 0]) + np.array([0, 1, 0]) + np.array([1, 1, 1])) / 3
    assert np.allclose(kg.vectors[k], expected / np.linalg.norm(expected), atol=1e-6)
    assert kg.sentence_counts[k] == 3
    assert kg.sub_chunks_of(k).tolist() == [0, 1]  # twice in sub-chunk 0, one edge
    assert kg.degree("old") == 1 and kg.degree("rome") == 2
    assert keyword_sentences(table, "paris") == ["Paris is big.", "Paris is old.",
                                                 "Rome and Paris trade."]
    assert "is" not in kg.vocabulary and "." not in kg.vocabulary


def test_a_keyword_in_three_sub_chunks_has_degree_three():
    index = build_index(CITY_DOCS, embedder=HashingEmbedder(), budget=0, **SMALL)
    kg = index.keyword_graph
    subs = kg.sub_chunks_of(kg.vocabulary.index("westmark"))
    assert len(subs) == sum("westmark" in t.lower() for t in index.sub_texts)
    assert all("westmark" in index.sub_texts[s].lower() for s in subs)


# ---------------------------------------------------------------- skeleton extraction
def test_beta_zero_needs_no_llm_and_beta_positive_without_llm_says_how_to_fix_it():
    index = build_index(CITY_DOCS, embedder=HashingEmbedder(), budget=0, **SMALL)
    assert index.skeleton.graph.num_nodes == 0 and len(index.key_chunks) == 0
    assert index.cost["llm"]["total"]["calls"] == 0
    with pytest.raises(LLMNotConfiguredError, match="budget=0"):
        build_index(CITY_DOCS, embedder=HashingEmbedder(), budget=0.8, **SMALL)


def test_llm_is_called_once_per_key_chunk_plus_one_gleaning_and_never_sees_other_chunks():
    index, responder = build(budget=0.5, summarize_descriptions=False)
    assert index.num_chunks == 10 and len(index.key_chunks) == 5
    kinds = responder.kinds()
    assert kinds == {"extract": 5, "glean": 5}
    key_texts = {index.chunk_texts[c] for c in index.key_chunks.tolist()}
    other_texts = {index.chunk_texts[c] for c in range(10)} - key_texts
    prompts = [p for kind, p in responder.calls if kind == "extract"]
    assert {t for t in key_texts if any(t in p for p in prompts)} == key_texts
    assert not any(t in p for t in other_texts for _, p in responder.calls)
    # the key chunks are the PageRank top 5
    assert sorted(index.key_chunks.tolist()) == sorted(np.argsort(-index.pagerank,
                                                                  kind="stable")[:5].tolist())


def test_same_entity_from_two_chunks_merges_with_both_chunk_links_and_rewiring():
    index, responder = build(budget=1.0)
    sk = index.skeleton
    node = sk.graph.node_id("Lindenfeld")
    chunks = sk.entity_chunks[node]
    assert chunks == [c for c in range(10) if "Lindenfeld" in index.chunk_texts[c]]
    assert len(chunks) >= 4
    # descriptions from several chunks were merged by one summary call per merged item
    assert responder.kinds()["summarize"] >= 1
    assert "capital of Westmark" in sk.graph.node_descriptions["Lindenfeld"]
    # rewiring: the entity points at every sub-chunk of each of its source chunks
    subs = index.sub_chunks_of(chunks).tolist()
    assert subs == [s for c in chunks for s in range(index.sub_indptr[c], index.sub_indptr[c + 1])]
    assert len(subs) == 2 * len(chunks)
    rel = [(sk.graph.node_names[h], sk.graph.relation_names[r], sk.graph.node_names[t])
           for h, r, t in zip(sk.graph.heads, sk.graph.rels, sk.graph.tails)]
    assert ("Lindenfeld", "is the capital of", "Westmark") in rel
    e = rel.index(("Lindenfeld", "is the capital of", "Westmark"))
    assert sk.edge_chunks[e] == [1] and sk.edge_weights[e] == 8


def test_llamaindex_llm_builds_the_same_skeleton():
    a, _ = build(budget=0.5)
    responder = RecordResponder()
    b = build_index(CITY_DOCS, llm=RecordLlamaLLM(responder=responder), embedder=HashingEmbedder(),
                    budget=0.5, **SMALL)
    assert a.skeleton.graph.node_names == b.skeleton.graph.node_names
    assert responder.kinds()["extract"] == 5


def test_interrupted_build_resumes_from_the_cache_without_paying_again(tmp_path):
    full, full_responder = build(budget=1.0, max_workers=1, summarize_descriptions=False)
    total_calls = len(full_responder.calls)
    failing = RecordResponder(fail_after=7)
    with pytest.raises(RuntimeError, match="simulated"):
        build(budget=1.0, responder=failing, max_workers=1, summarize_descriptions=False,
              cache_dir=tmp_path)
    cached = (tmp_path / CACHE_FILE).read_text().splitlines()
    assert len(cached) == 7 and all(json.loads(line)["reply"] for line in cached)
    resumed_responder = RecordResponder()
    resumed, _ = build(budget=1.0, responder=resumed_responder, max_workers=1,
                       summarize_descriptions=False, cache_dir=tmp_path)
    assert len(resumed_responder.calls) == total_calls - 7
    assert resumed.cost["llm"]["total"]["cached_calls"] == 7
    assert resumed.skeleton.graph.node_names == full.skeleton.graph.node_names
    assert resumed.skeleton.edge_descriptions == full.skeleton.edge_descriptions
    # a third run pays nothing at all
    third = RecordResponder()
    build(budget=1.0, responder=third, max_workers=1, summarize_descriptions=False,
          cache_dir=tmp_path)
    assert third.calls == []


def test_torn_cache_line_is_skipped(tmp_path):
    (tmp_path / CACHE_FILE).write_text('{"key": "abc", "reply": "x"}\n{"key": "de')
    index, responder = build(budget=0.2, cache_dir=tmp_path)
    assert responder.kinds()["extract"] == 2


def test_cost_of_half_the_chunks_is_about_half_of_full_extraction():
    half, _ = build(budget=0.5, summarize_descriptions=False)
    full, _ = build(budget=1.0, summarize_descriptions=False)
    h = half.cost["llm"]["by_kind"]["extract"]["prompt_tokens"]
    f = full.cost["llm"]["by_kind"]["extract"]["prompt_tokens"]
    assert 0.4 <= h / f <= 0.6
    # the projection to beta = 1 from the half build is exact for the first pass
    proj = half.cost["projection"]["1"]
    assert proj["first_extraction_prompt_tokens"] == f
    assert proj["first_extraction_calls"] == 10
    assert proj["estimated_total"]["calls"] == full.cost["llm"]["total"]["calls"]
    # and an LLM-free index still projects the first-pass cost of any beta
    free = build_index(CITY_DOCS, embedder=HashingEmbedder(), budget=0, **SMALL)
    assert free.projected_cost(1.0)["first_extraction_prompt_tokens"] == f
    assert free.projected_cost(0.8)["key_chunks"] == 8


# ---------------------------------------------------------------- record parser
def test_parser_is_strict_per_line():
    reply = "\n".join([
        "```",
        '["entity", "Paris", "GEO", "Capital of France."]',
        '["relation", "Paris", "Capital Of", "France", "9", "Paris is the capital."]',
        '["relation", "Paris", "in", "France", "high", "bad strength"]',
        "(entity|Paris|geo)",
        '["entity", "", "geo", "empty name"]',
        '["relation", "Paris", "in", "France", 99, "clipped"]',
        '["done"]',
        "```",
    ])
    r = parse_records(reply)
    assert [(e.name, e.type) for e in r.entities] == [("Paris", "geo")]
    assert [(x.label, x.strength) for x in r.relations] == [("capital of", 9.0), ("in", 10.0)]
    assert r.rejected == 3 and r.done
    assert parse_records('["done"]').count == 0
    with pytest.raises(LLMOutputError):
        parse_records("I found Paris and France.")


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_parser_never_crashes_on_hostile_text(text):
    try:
        r = parse_records(text)
    except LLMOutputError:
        return
    assert r.count + r.rejected >= 0


def test_unparseable_extraction_is_reasked_once_then_skipped():
    calls = []

    def bad_llm(prompt):
        calls.append(prompt)
        return "Sorry, I cannot help."

    index = build_index(CITY_DOCS[:2], llm=bad_llm, embedder=HashingEmbedder(), budget=1.0,
                        on_unusable_reply="empty", **SMALL)
    assert len(calls) == 4  # 2 chunks x (first try + one re-ask); no gleaning after a failure
    assert index.cost["failed_chunks"] == 2 and index.skeleton.graph.num_nodes == 0
    assert "no usable records" in index.cost["failed_chunk_error"]
    calls.clear()
    with pytest.raises(LLMOutputError, match="no usable records for chunk"):  # the default
        build_index(CITY_DOCS[:1], llm=bad_llm, embedder=HashingEmbedder(), budget=1.0,
                    max_workers=1, **SMALL)
    assert len(calls) == 2  # the first try and its re-ask


def test_from_documents_accepts_langchain_and_llamaindex_documents():
    from langchain_core.documents import Document
    from llama_index.core import Document as LlamaDocument

    docs = [Document(page_content=CITY_DOCS[0], metadata={"src": "a"}),
            LlamaDocument(text=CITY_DOCS[1], metadata={"src": "b"}), CITY_DOCS[2]]
    m = KETRAG.from_documents(docs, embedder=HashingEmbedder(), budget=0, **SMALL)
    assert [d["metadata"].get("src") for d in m.index.documents] == ["a", "b", None]
    assert m.index.num_chunks == 3


def test_runaway_summaries_are_capped():
    from kgrag.methods.ketrag.skeleton import MAX_MERGED_CHARS

    responder = RecordResponder()

    def verbose(prompt):
        reply = responder(prompt)
        return reply if responder.calls[-1][0] != "summarize" else "blah " * 10_000

    index = build_index(CITY_DOCS, llm=verbose, embedder=HashingEmbedder(), budget=1.0, **SMALL)
    descriptions = index.skeleton.graph.node_descriptions.values()
    assert max(len(d) for d in descriptions) == MAX_MERGED_CHARS
    assert responder.kinds()["summarize"] >= 1


def test_build_index_stages_run_alone_and_compose_to_the_index():
    """The stages of build_index are functions: chunk, embed, rank, extract (no LLM at beta 0)."""
    from kgrag.methods.ketrag.builder import (
        chunk_documents,
        embed_texts,
        extract_skeleton,
        rank_chunks,
    )
    from kgrag.methods.ketrag.config import KETRAGConfig
    from kgrag.methods.ketrag.documents import to_source_documents
    from kgrag.text.tokens import get_tokenizer

    emb, tok = HashingEmbedder(), get_tokenizer(None)
    cfg = KETRAGConfig().replace(budget=0.0, chunk_size=40, splits=2)
    chunks = chunk_documents(to_source_documents(CITY_DOCS), cfg, tok)
    embedded = embed_texts(chunks, emb)
    ranked = rank_chunks(chunks, embedded, cfg, tok)
    skel = extract_skeleton(chunks, ranked.key_chunks, cfg, llm=None, emb=emb, tok=tok,
                            dimension=embedded.sub_vectors.shape[1], cache_dir=None,
                            progress=False, prompt_set=None)  # type: ignore[arg-type]
    assert len(ranked.key_chunks) == 0 and skel.skeleton.graph.num_nodes == 0
    index = build_index(CITY_DOCS, embedder=emb, budget=0.0, chunk_size=40, splits=2,
                        progress=False)
    assert index.chunk_texts == chunks.texts and index.sub_texts == chunks.sub_texts
    assert np.array_equal(index.knn_edges, ranked.knn_edges)
    assert np.allclose(index.pagerank, ranked.scores)
    assert np.allclose(index.chunk_vectors, embedded.chunk_vectors)
    with pytest.raises(ValueError, match="no text"):
        chunk_documents(to_source_documents(["   "]), cfg, tok)
