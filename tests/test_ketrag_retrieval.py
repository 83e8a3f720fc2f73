"""KET-RAG retrieval: keyword channel, entity channel, budget split, merge, persistence, answers."""

from __future__ import annotations

import filecmp
import json

import pytest
from ketrag_fakes import HashingEmbedder, RecordChatModel, RecordResponder
from test_ketrag_index import CITY_DOCS, SMALL

from kgrag.errors import GraphLoadError, LLMNotConfiguredError
from kgrag.methods.ketrag import KETRAG, KETIndex, build_index
from kgrag.methods.ketrag.retrieval import (
    ENTITY_HEADER,
    KEYWORD_SOURCES_HEADER,
    entity_channel,
    keyword_channel,
)
from kgrag.text import count_tokens, default_tokenizer

TOK = default_tokenizer()


@pytest.fixture(scope="module")
def city_index():
    return build_index(CITY_DOCS, llm=RecordChatModel(responder=RecordResponder()),
                       embedder=HashingEmbedder(), budget=1.0, **SMALL)


@pytest.fixture(scope="module")
def twelve_entity_index():
    """A skeleton with 12+ entities: one short document per person, all linked to Lindenfeld."""
    people = ["Anna Berg", "Boris Crane", "Carla Dunn", "David Ekker", "Eva Frost", "Felix Gray",
              "Gina Hart", "Hugo Ives", "Iris Jung", "Jonas Kahl", "Kira Lund", "Lars Mohr"]
    docs = [f"{p} lives in Lindenfeld. {p} likes chess." for p in people]
    docs.append("Lindenfeld is the capital of Westmark.")
    return build_index(docs, llm=RecordChatModel(responder=RecordResponder()),
                       embedder=HashingEmbedder(), budget=1.0, **SMALL)


# ---------------------------------------------------------------- keyword channel
def test_keyword_channel_with_the_paris_keyword_vector_returns_only_paris_sub_chunks(city_index):
    idx = city_index
    kg = idx.keyword_graph
    k = kg.vocabulary.index("paris")
    paris_subs = kg.sub_chunks_of(k)
    paris_tokens = int(idx.sub_tokens[paris_subs].sum())
    budget = paris_tokens / 2 + 30  # the pool (2x budget) holds the Paris sub-chunks, no more
    section, stats = keyword_channel(idx, kg.vectors[k], budget, idx.config, TOK)
    got = [item.metadata["sub_chunk"] for item in section.items]
    assert got and set(got) <= set(paris_subs.tolist())
    assert all("paris" in idx.sub_texts[s].lower() for s in got)
    assert stats["pool_tokens"] <= 2 * budget
    assert count_tokens(section.render()) <= budget


def test_keyword_channel_respects_the_budget_has_no_duplicates_and_is_ordered(city_index):
    idx = city_index
    q = HashingEmbedder().embed_query("Which river flows through Lindenfeld?")
    for budget in (40, 80, 150, 10_000):
        section, stats = keyword_channel(idx, q, budget, idx.config, TOK)
        subs = [item.metadata["sub_chunk"] for item in section.items]
        assert len(subs) == len(set(subs))
        assert count_tokens(section.render()) <= budget
        assert stats["pool_tokens"] <= idx.config.candidate_factor * budget
        scores = [item.score for item in section.items]
        assert scores == sorted(scores, reverse=True)
        assert sum(item.metadata["tokens"] for item in section.items) + count_tokens(
            KEYWORD_SOURCES_HEADER) == section.tokens
    section, _ = keyword_channel(idx, q, 10_000, idx.config, TOK)
    assert "Senn" in section.items[0].text  # the best sub-chunk is about the river


# ---------------------------------------------------------------- entity channel
def test_entity_channel_local_search_order_and_budgets(twelve_entity_index):
    idx = twelve_entity_index
    assert idx.skeleton.graph.num_nodes >= 12
    q = HashingEmbedder().embed_query("Who lives in Lindenfeld and likes chess?")
    budget = 1500
    sections, stats = entity_channel(idx, q, budget, idx.config, TOK)
    assert len(stats["seed_entities"]) == 10
    by_header = {s.header: s for s in sections}
    ents = by_header[ENTITY_HEADER]
    assert [i.metadata["entity"] for i in ents.items] == stats["seed_entities"]
    rels = [s for s in sections if s.header.startswith("-----Relationships")][0]
    seeds = set(stats["seed_entities"])
    inside = [(i.metadata["head"] in seeds and i.metadata["tail"] in seeds) for i in rels.items]
    assert inside == sorted(inside, reverse=True)  # in-network relationships come first
    assert sum(s.tokens for s in sections[:2]) <= budget * idx.config.entity_table_share
    assert sum(s.tokens for s in sections) <= budget
    assert count_tokens("\n\n".join(s.render() for s in sections)) <= budget
    # text units: grouped by seed order (each unit's entity is a seed, in non-decreasing rank)
    sources = sections[-1]
    ranks = [stats["seed_entities"].index(i.metadata["entity"]) for i in sources.items]
    assert ranks == sorted(ranks)
    units = [i.metadata["sub_chunk"] for i in sources.items]
    assert len(units) == len(set(units))


def test_entity_channel_respects_a_tiny_budget(twelve_entity_index):
    idx = twelve_entity_index
    q = HashingEmbedder().embed_query("Lindenfeld")
    for budget in (10, 60, 200):
        sections, _ = entity_channel(idx, q, budget, idx.config, TOK)
        assert count_tokens("\n\n".join(s.render() for s in sections)) <= budget


# ---------------------------------------------------------------- merge and budget split
def test_lambda_zero_and_one_and_total_budget(city_index):
    q = "Which country is Lindenfeld the capital of?"
    emb = HashingEmbedder()
    only_kw = KETRAG(city_index, embedder=emb, graph_share=0.0, context_tokens=300)
    r = only_kw.retrieve(q)
    assert {i.metadata["channel"] for i in r.items} == {"keyword"}
    assert "-----Entities-----" not in r.metadata["context"]
    only_graph = KETRAG(city_index, embedder=emb, graph_share=1.0, context_tokens=300)
    r = only_graph.retrieve(q)
    assert {i.metadata["channel"] for i in r.items} == {"entity"}
    assert KEYWORD_SOURCES_HEADER not in r.metadata["context"]
    both = KETRAG(city_index, embedder=emb, graph_share=0.5, context_tokens=600)
    r = both.retrieve(q)
    ctx = r.metadata["context"]
    assert count_tokens(ctx) <= 600
    assert ctx.index("-----Entities-----") < ctx.index(KEYWORD_SOURCES_HEADER)  # fixed order
    channels = [i.metadata["channel"] for i in r.items]
    assert channels == sorted(channels)  # entity items first, then keyword items
    assert r.metadata["keyword_tokens"] <= 300
    # a sub-chunk is never repeated across the two channels
    subs = [i.metadata["sub_chunk"] for i in r.items if "sub_chunk" in i.metadata]
    assert len(subs) == len(set(subs))


def test_unused_keyword_budget_flows_to_the_entity_channel(city_index):
    r = KETRAG(city_index, embedder=HashingEmbedder(), graph_share=0.5,
               context_tokens=12_000).retrieve("Lindenfeld")
    # the whole corpus is far below 6,000 tokens, so the keyword channel leaves most unused
    assert r.metadata["keyword_tokens"] < 6000
    assert r.metadata["entity_budget"] == 12_000 - r.metadata["keyword_tokens"]


def test_beta_zero_index_retrieves_with_the_keyword_channel_only():
    m = KETRAG.from_documents(CITY_DOCS, embedder=HashingEmbedder(), budget=0, **SMALL)
    r = m.retrieve("Where was Bruno Keller born?")
    assert r.items and {i.metadata["channel"] for i in r.items} == {"keyword"}
    assert "Ostbruck" in r.items[0].text
    assert r.usage.calls == 0
    with pytest.raises(LLMNotConfiguredError):
        m.answer("Where was Bruno Keller born?")


# ---------------------------------------------------------------- two-hop toy with MiniLM
TWO_HOP = [
    "Ada Lovelace was born in Lindenfeld. She wrote poems about engines.",
    "Lindenfeld is the capital of Westmark. The city has a large river port.",
    "Bruno Keller was born in Ostbruck. He repaired clocks for the guild.",
    "Ostbruck is a town in Nordmark. It is famous for its bells.",
    "The harvest festival in Westmark lasts three days.",
    "Clara Weiss was born in Halden. She painted ships in the harbour.",
    "Halden is a fishing village in Sudmark. Its boats sail before dawn.",
    "Nordmark and Sudmark signed a trade treaty. Grain and timber crossed the border.",
    "Otto Brand studied law in Ostbruck. He later became a judge.",
    "The Westmark railway opened a new line to the coast. Trains run every hour.",
    "Greta Holm composed songs about the sea. Her songs are sung in Halden.",
    "Karl Roth built bridges in Sudmark. One bridge spans the river Senn.",
]


@pytest.mark.slow
def test_two_hop_toy_context_covers_both_facts_and_the_fake_llm_answers(minilm, tmp_path):
    responder = RecordResponder()
    assert sum(count_tokens(d) for d in TWO_HOP) > 150  # the budget cannot hold the corpus
    m = KETRAG.from_documents(TWO_HOP, llm=RecordChatModel(responder=responder), embedder=minilm,
                              budget=0.8, chunk_size=30, splits=1, progress=False,
                              context_tokens=150)
    q = "Which country was Ada Lovelace born in?"
    r = m.retrieve(q)
    assert "Ada Lovelace was born in Lindenfeld" in r.metadata["context"]
    assert "Lindenfeld is the capital of Westmark" in r.metadata["context"]
    assert count_tokens(r.metadata["context"]) <= 150
    before = len(responder.calls)
    a = m.answer(q)
    assert a.answers == ["Westmark"] and len(responder.calls) == before + 1
    assert a.usage.calls == 1
    # save -> load -> same retrieval
    m.save(tmp_path / "idx")
    loaded = KETRAG.load(tmp_path / "idx", embedder=minilm, context_tokens=150)
    assert loaded.retrieve(q).metadata["context"] == r.metadata["context"]


# ---------------------------------------------------------------- determinism and persistence
def test_two_builds_save_byte_identical_files_and_load_back(tmp_path):
    def make():
        return build_index(CITY_DOCS, llm=RecordChatModel(responder=RecordResponder()),
                           embedder=HashingEmbedder(), budget=0.5, **SMALL)

    a, b = make(), make()
    a.save(tmp_path / "a")
    b.save(tmp_path / "b")
    files = sorted(p.relative_to(tmp_path / "a")
                   for p in (tmp_path / "a").rglob("*") if p.is_file())
    assert len(files) > 20
    for f in files:
        if str(f) == "manifest.json":
            ma = json.loads((tmp_path / "a" / f).read_text())
            mb = json.loads((tmp_path / "b" / f).read_text())
            ma.pop("timings"), mb.pop("timings")
            assert ma == mb
        else:
            assert filecmp.cmp(tmp_path / "a" / f, tmp_path / "b" / f, shallow=False), f
    loaded = KETIndex.load(tmp_path / "a")
    assert loaded.summary() == a.summary()
    assert loaded.cost == a.cost
    q = "Who painted the harbour?"
    r1 = KETRAG(a, embedder=HashingEmbedder()).retrieve(q)
    r2 = KETRAG(loaded, embedder=HashingEmbedder()).retrieve(q)
    assert r1.metadata["context"] == r2.metadata["context"]
    assert [i.chunk_id for i in r1.items] == [i.chunk_id for i in r2.items]


def test_loading_rejects_broken_directories(tmp_path, city_index):
    with pytest.raises(GraphLoadError):
        KETIndex.load(tmp_path / "missing")
    city_index.save(tmp_path / "idx")
    (tmp_path / "idx" / "sub_vectors.npy").write_bytes(b"garbage")
    with pytest.raises(GraphLoadError, match="sub_vectors"):
        KETIndex.load(tmp_path / "idx")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    with pytest.raises(GraphLoadError, match="not a KET-RAG index"):
        city_index.save(tmp_path / "other")


def test_query_embedder_dimension_mismatch_is_a_clear_error(city_index):
    from kgrag.errors import EmbeddingError

    m = KETRAG(city_index, embedder=HashingEmbedder(dimension=32))
    with pytest.raises(EmbeddingError, match="dimensions"):
        m.retrieve("Lindenfeld")
    with pytest.raises(TypeError, match="retrieval parameter"):
        KETRAG(city_index, embedder=HashingEmbedder(), budget=0.3)


# ---------------------------------------------------------------- in-framework baselines
def test_text_rag_is_the_top_seeds_and_knng_rag_adds_their_neighbours(city_index):
    from kgrag.methods.ketrag.baselines import knng_rag, text_rag

    idx = city_index
    q = HashingEmbedder().embed_query("clock guild apprentices")
    ctx, chunks = text_rag(idx, q, 10_000, TOK)
    scores = idx.chunk_vectors @ q
    assert chunks == sorted(range(idx.num_chunks), key=lambda c: (-scores[c], c))
    assert "guild" in idx.chunk_texts[chunks[0]]
    ctx, subs = text_rag(idx, q, 60, TOK, unit="sub_chunk")
    assert subs and count_tokens(ctx) <= 60
    ctx, order = knng_rag(idx, q, 10_000, TOK)
    seed = chunks[0]
    neighbours = sorted({int(v) for u, v in idx.knn_edges.tolist() if u == seed}
                        | {int(u) for u, v in idx.knn_edges.tolist() if v == seed})
    assert order[: 1 + len(neighbours)] == [seed, *neighbours]
    assert sorted(order) == list(range(idx.num_chunks))
