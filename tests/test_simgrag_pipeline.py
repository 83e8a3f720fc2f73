"""SimGRAG end to end: lookup-table embeddings that reproduce the notes' distances, the LLM
steps through LangChain / LlamaIndex fake models, the adapters, database-store path, MiniLM."""

from __future__ import annotations

import asyncio
import math

import numpy as np
import pytest
from langchain_core.documents import Document
from langchain_core.language_models import FakeListChatModel
from langchain_core.retrievers import BaseRetriever as LCBaseRetriever
from llama_index.core.base.base_retriever import BaseRetriever as LIBaseRetriever
from llm_fakes import ScriptedLlamaLLM

from kgrag import KnowledgeGraph
from kgrag.context.metadata import unflatten
from kgrag.embed import LookupEmbedder
from kgrag.errors import LLMNotConfiguredError, LLMOutputError
from kgrag.methods.simgrag import (
    PatternError,
    SimGRAG,
    humanize_relation,
    parse_answers,
    parse_pattern_reply,
)
from langchain_kgrag.simgrag import SimGRAGRetriever as LCSimGRAG
from llama_index_kgrag.simgrag import SimGRAGQueryEngine
from llama_index_kgrag.simgrag import SimGRAGRetriever as LISimGRAG

K1 = [
    ("Tokyo Godfathers", "directed_by", "Satoshi Kon"),
    ("Tokyo Godfathers", "written_by", "Keiko Nobumoto"),
    ("Tokyo Godfathers", "release_year", "2003"),
    ("Paprika", "directed_by", "Satoshi Kon"),
]
K1_TABLES = {"Tokyo Godfathers": {"Tokyo Godfathers": 0.0, "Paprika": 0.9},
             "director": {"directed_by": 0.2, "written_by": 0.6, "release_year": 1.0}}


def distance_embedder(kg: KnowledgeGraph, tables: dict[str, dict[str, float]]) -> LookupEmbedder:
    """Unit vectors whose L2 distances are exactly the tables' (pattern text -> {graph text: d}).

    Each pattern text gets its own axis; a graph item at distance d from it gets the component
    cos = 1 - d^2/2 on that axis and the rest of its unit length on an axis of its own, so items
    not in a table are at distance sqrt(2) from every pattern text.
    """
    pattern_texts = list(tables)
    graph_texts = list(dict.fromkeys(list(kg.node_names) + list(kg.relation_names)))
    dim = len(pattern_texts) + len(graph_texts)
    table = {}
    for i, p in enumerate(pattern_texts):
        table[p] = np.eye(dim)[i]
    for j, g in enumerate(graph_texts):
        v = np.zeros(dim)
        for i, p in enumerate(pattern_texts):
            if g in tables[p]:
                v[i] = 1 - tables[p][g] ** 2 / 2
        rest = 1 - float(v @ v)
        assert rest >= 0
        v[len(pattern_texts) + j] = math.sqrt(rest)
        table[g] = v
    return LookupEmbedder(table)


@pytest.fixture()
def k1_method():
    kg = KnowledgeGraph.from_triples(K1)
    emb = distance_embedder(kg, K1_TABLES)
    return SimGRAG(kg, embedder=emb, top_k=3, node_top_k=2, relation_top_k=3,
                   humanize_relations=False)


def test_retrieve_pattern_reproduces_example_2_without_llm(k1_method):
    result = k1_method.retrieve_pattern([("Tokyo Godfathers", "director", "UNKNOWN director 1")])
    assert [s.metadata["gsd"] for s in result.items] == pytest.approx([0.2, 0.6, 1.0], abs=1e-6)
    assert result.items[0].metadata["mapping"] == {"Tokyo Godfathers": "Tokyo Godfathers",
                                                   "UNKNOWN director 1": "Satoshi Kon"}
    assert result.usage.calls == 0
    assert result.metadata["complete"] is True
    assert result.metadata["candidates"]["Tokyo Godfathers"][1][0] == "Paprika"


def test_evidence_is_verbalized_in_gsd_order_and_stored_direction(k1_method):
    result = k1_method.retrieve_pattern([("UNKNOWN director 1", "director", "Tokyo Godfathers")])
    assert k1_method.evidence(result) == (
        'graph [1]: [("Tokyo Godfathers", "directed_by", "Satoshi Kon")]\n'
        'graph [2]: [("Tokyo Godfathers", "written_by", "Keiko Nobumoto")]\n'
        'graph [3]: [("Tokyo Godfathers", "release_year", "2003")]')


def test_non_nearest_entity_end_to_end():
    kg = KnowledgeGraph.from_triples([
        ("Georgian (language)", "spoken_in", "Georgia (country)"),
        ("Alan B. Miller Hall", "architecturalStyle", "Georgian architecture"),
        ("Alan B. Miller Hall", "location", "Virginia"),
        ("Monticello", "architecturalStyle", "Neoclassical architecture"),
        ("Monticello", "location", "Virginia"),
    ])
    tables = {"Georgian": {"Georgian (language)": 0.30, "Georgia (country)": 0.45,
                           "Georgian architecture": 0.50},
              "Virginia": {"Virginia": 0.0},
              "architecture style": {"architecturalStyle": 0.1, "spoken_in": 1.2},
              "located in": {"location": 0.15, "spoken_in": 0.9}}
    method = SimGRAG(kg, embedder=distance_embedder(kg, tables), top_k=1, node_top_k=3,
                     relation_top_k=2,
                     humanize_relations=False)
    result = method.retrieve_pattern([("UNKNOWN building 1", "architecture style", "Georgian"),
                                      ("UNKNOWN building 1", "located in", "Virginia")])
    best = result.items[0]
    assert best.metadata["gsd"] == pytest.approx(0.75, abs=1e-6)
    assert best.metadata["mapping"]["UNKNOWN building 1"] == "Alan B. Miller Hall"
    assert best.metadata["mapping"]["Georgian"] == "Georgian architecture"


def test_parse_pattern_reply_variants():
    assert parse_pattern_reply(
        'Here: {"divided": ["a"], "triples": [("A", "r", "UNKNOWN x 1"),]}').triples == (
        ("A", "r", "UNKNOWN x 1"),)
    fenced = '```json\n{"divided": [], "graph": [["A", "r", "B"], ["B", "s", "C"]]}\n```'
    assert parse_pattern_reply(fenced).triples == (("A", "r", "B"), ("B", "s", "C"))
    assert parse_pattern_reply('{"triples": [("A", "r", "B"), ("A", "r", "B")]}').triples == (
        ("A", "r", "B"),)
    for bad in ["no braces at all", '{"divided": ["a"]}', '{"triples": "A r B"}',
                '{"triples": [("A", "r")]}', '{"triples": []}', '{"triples": [("A", "r", "A")]}',
                '{"triples": [("A", "", "B")]}', '{"triples": [(1, 2, [3])]}',
                '{"triples": [("A", "r", __import__("os"))]}']:
        with pytest.raises(LLMOutputError):
            parse_pattern_reply(bad)


def test_retrieve_pattern_rejects_bad_code_patterns(k1_method):
    with pytest.raises(PatternError):
        k1_method.retrieve_pattern([])
    with pytest.raises(PatternError):
        k1_method.retrieve_pattern("Tokyo Godfathers director UNKNOWN")
    with pytest.raises(PatternError):
        k1_method.retrieve_pattern([("UNKNOWN a 1", "UNKNOWN relation 1", "UNKNOWN b 1")])


def test_no_llm_error_says_how_to_pass_one(k1_method):
    with pytest.raises(LLMNotConfiguredError, match="llm="):
        k1_method.retrieve("Who directed Tokyo Godfathers?")


PATTERN_REPLY = ('{"divided": ["who directed Tokyo Godfathers"], '
                 '"triples": [("Tokyo Godfathers", "director", "UNKNOWN director 1")]}')


def with_llm(kg_method, llm):
    kg_method.llm = None
    from kgrag.llm import as_llm

    kg_method.llm = as_llm(llm)
    return kg_method


def test_langchain_retriever_one_llm_call_per_question(k1_method):
    llm = FakeListChatModel(responses=[PATTERN_REPLY])
    retriever = LCSimGRAG(method=with_llm(k1_method, llm))
    assert isinstance(retriever, LCBaseRetriever)
    docs = retriever.invoke("Who directed Tokyo Godfathers?")
    assert all(isinstance(d, Document) for d in docs)
    assert docs[0].page_content == "(Tokyo Godfathers, directed_by, Satoshi Kon)"
    assert [d.metadata["gsd"] for d in docs] == pytest.approx([0.2, 0.6, 1.0], abs=1e-6)
    assert {d.metadata["usage_calls"] for d in docs} == {1}
    assert unflatten(docs[0].metadata)["retrieval"]["pattern"] == [
        ["Tokyo Godfathers", "director", "UNKNOWN director 1"]]


def test_langchain_tool_and_from_graph():
    kg = KnowledgeGraph.from_triples(K1)
    retriever = LCSimGRAG.from_graph(kg, llm=FakeListChatModel(responses=[PATTERN_REPLY]),
                                     embedder=distance_embedder(kg, K1_TABLES), top_k=1,
                                     node_top_k=2,
                                     humanize_relations=False)
    tool = retriever.as_search_tool()
    assert tool.name == "knowledge_graph_subgraph_search"
    assert "Satoshi Kon" in tool.invoke({"query": "Who directed Tokyo Godfathers?"})
    docs = retriever.retrieve_pattern([("Paprika", "director", "UNKNOWN person 1")])
    assert [d.page_content for d in docs] == ["(Paprika, directed_by, Satoshi Kon)"]
    assert docs[0].metadata["gsd"] == pytest.approx(0.2, abs=1e-6)


def test_knobs_are_a_config_passed_whole_or_as_keywords():
    from kgrag.methods.simgrag.config import SimGRAGConfig

    kg = KnowledgeGraph.from_triples(K1)
    emb = distance_embedder(kg, K1_TABLES)
    by_keywords = SimGRAG(kg, embedder=emb, top_k=1, node_top_k=2, humanize_relations=False)
    config = SimGRAGConfig(top_k=1, node_top_k=2, humanize_relations=False)
    by_config = SimGRAG(kg, embedder=emb, config=config)
    assert by_keywords.config == by_config.config == config
    assert (by_keywords.config.top_k, by_config.config.top_k) == (1, 1)
    pattern = [("Tokyo Godfathers", "director", "UNKNOWN director 1")]
    assert ([s.metadata["gsd"] for s in by_config.retrieve_pattern(pattern).items]
            == [s.metadata["gsd"] for s in by_keywords.retrieve_pattern(pattern).items])
    overridden = SimGRAG(kg, embedder=emb, config=config, top_k=2, injective=True)
    assert (overridden.config.top_k, overridden.config.injective,
            overridden.candidates.k_nodes) == (2, True, 2)
    assert config.top_k == 1  # the config itself is frozen and unchanged
    with pytest.raises(TypeError, match=r"unknown SimGRAG parameter\(s\): k_node \(see"):
        SimGRAG(kg, embedder=emb, k_node=2)
    for bad in ({"top_k": 0}, {"injective": "sometimes"}, {"task": "chat"}, {"index": "ivf"},
                {"relation_top_k": "many"}, {"retries": -1}, {"max_partials": -1},
                {"database_search_breadth": 0}):
        with pytest.raises(ValueError):
            SimGRAGConfig(**bad)
    # an example pack's task applies unless one is asked for
    assert SimGRAG(kg, embedder=emb, config=config, examples="factkg").config.task == "fact"
    assert SimGRAG(kg, embedder=emb, config=config, examples="metaqa").config.task == "qa"
    # the LangChain retriever: top_k is the method's subgraph count, k its own document cap
    retriever = LCSimGRAG.from_graph(kg, embedder=emb, top_k=2, k=1, node_top_k=2,
                                     humanize_relations=False)
    assert retriever.method.config.top_k == 2 and retriever.k == 1


def test_malformed_pattern_is_re_asked_once_then_fails(k1_method):
    llm = FakeListChatModel(responses=["I think the director is Satoshi Kon.", PATTERN_REPLY])
    result = with_llm(k1_method, llm).retrieve("Who directed Tokyo Godfathers?")
    assert result.usage.calls == 2 and len(result.items) == 3
    llm = FakeListChatModel(responses=["nope", "still nope"])
    with pytest.raises(LLMOutputError):
        with_llm(k1_method, llm).retrieve("Who directed Tokyo Godfathers?")


def test_llamaindex_query_engine_two_calls_and_evidence_prompt():
    kg = KnowledgeGraph.from_triples(K1)
    llm = ScriptedLlamaLLM(replies=[PATTERN_REPLY,
                                    "Graph [1] names the director.\nAnswer: Satoshi Kon"],
                      prompts=[])
    engine = SimGRAGQueryEngine.from_graph(kg, llm=llm, embedder=distance_embedder(kg, K1_TABLES),
                                           node_top_k=2, humanize_relations=False)
    response = engine.query("Who directed Tokyo Godfathers?")
    assert response.metadata["answers"] == ["Satoshi Kon"]
    assert response.metadata["usage"]["calls"] == 2
    assert len(response.source_nodes) == 3
    assert 'graph [1]: [("Tokyo Godfathers", "directed_by", "Satoshi Kon")]' in llm.prompts[1]
    assert "Your task) query: Who directed Tokyo Godfathers?" in llm.prompts[0]


def test_llamaindex_retriever_async_and_pattern():
    kg = KnowledgeGraph.from_triples(K1)
    llm = ScriptedLlamaLLM(replies=[PATTERN_REPLY], prompts=[])
    retriever = LISimGRAG.from_graph(kg, llm=llm, embedder=distance_embedder(kg, K1_TABLES),
                                     node_top_k=2, humanize_relations=False)
    assert isinstance(retriever, LIBaseRetriever)
    nodes = asyncio.run(retriever.aretrieve("Who directed Tokyo Godfathers?"))
    assert nodes[0].node.metadata["gsd"] == pytest.approx(0.2, abs=1e-6)
    assert nodes[0].score == pytest.approx(1 / 1.2, abs=1e-6)
    assert nodes[0].node.metadata["usage_calls"] == 1
    nodes = retriever.retrieve_pattern([("Tokyo Godfathers", "director", "UNKNOWN person 1")])
    assert unflatten(nodes[0].node.metadata)["mapping"]["UNKNOWN person 1"] == "Satoshi Kon"


def test_fact_task_parses_true_false():
    assert parse_answers("It holds.\nAnswer: True", task="fact") == ["True"]
    assert parse_answers("Answer: false.", task="fact") == ["False"]
    assert parse_answers("Answer: true or false", task="fact") == []
    assert parse_answers("reason\nAnswer: Satoshi Kon | Kon Satoshi | Satoshi Kon") == [
        "Satoshi Kon", "Kon Satoshi"]
    assert parse_answers("no answer line") == []


def test_humanize_relation():
    assert humanize_relation("directed_by") == "directed by"
    assert humanize_relation("placeOfBirth") == "place of birth"
    assert humanize_relation("film.film.directed_by") == "film film directed by"


class NameLevelStore:
    """A GraphStore that only offers name-level operations (like a database store)."""

    supports_cypher = False

    def __init__(self, kg):
        self._kg = kg
        # the protocol's name metadata (a database store holds what it was given)
        self.relation_labels = kg.relation_labels
        self.relation_descriptions = kg.relation_descriptions
        self.aliases, self.annotations = kg.aliases, kg.annotations

    def iter_node_names(self, batch_size=10_000):
        return iter(self._kg.node_names)

    def list_relations(self):
        return list(self._kg.relation_names)

    def k_hop_subgraph(self, nodes, *, hops=2, direction="both", max_edges=None):
        return self._kg.k_hop_subgraph(nodes, hops=hops, direction=direction, max_edges=max_edges)


def test_database_store_path_matches_in_memory_on_a_cycle():
    kg = KnowledgeGraph.from_triples([
        ("a1", "r1", "b1"), ("b1", "r2", "c1"), ("c1", "r3", "a1"),
        ("a2", "r1", "b2"), ("b2", "r2", "c2"), ("c2", "r3", "a2"), ("c2", "r1", "x"),
    ])
    emb = LookupEmbedder({n: np.eye(16)[i] for i, n in enumerate(
        list(kg.node_names) + list(kg.relation_names) + ["A", "B"])})
    pattern = [("A", "r1", "UNKNOWN b 1"), ("UNKNOWN b 1", "r2", "UNKNOWN c 1"),
               ("UNKNOWN c 1", "r3", "A")]
    memory = SimGRAG(kg, embedder=emb, top_k=3, node_top_k=2, humanize_relations=False)
    store = SimGRAG(NameLevelStore(kg), embedder=emb, top_k=3, node_top_k=2,
                    humanize_relations=False)
    expected = [(s.metadata["gsd"], s.triples) for s in memory.retrieve_pattern(pattern).items]
    got = [(s.metadata["gsd"], s.triples) for s in store.retrieve_pattern(pattern).items]
    assert got == expected and len(got) == 3


def test_type_candidates_for_entity_free_components():
    kg = KnowledgeGraph.from_triples([("Paprika", "directed_by", "Satoshi Kon"),
                                      ("Perfect Blue", "directed_by", "Satoshi Kon"),
                                      ("Satoshi Kon", "born_in", "Sapporo")])
    names = list(kg.node_names) + list(kg.relation_names) + ["film", "city", "person"]
    emb = LookupEmbedder({n: np.eye(len(names))[i] for i, n in enumerate(names)})
    method = SimGRAG(kg, embedder=emb, top_k=5, humanize_relations=False, type_top_k=1,
                     node_types={"film": ["Paprika", "Perfect Blue"], "city": ["Sapporo"],
                                 "person": ["Satoshi Kon"]})
    result = method.retrieve_pattern([("UNKNOWN film 1", "UNKNOWN relation 1", "UNKNOWN person 1")])
    assert result.metadata["typed_nodes"] == ["UNKNOWN film 1", "UNKNOWN person 1"]
    assert sorted(s.triples[0].as_tuple() for s in result.items) == [
        ("Paprika", "directed_by", "Satoshi Kon"), ("Perfect Blue", "directed_by", "Satoshi Kon")]
    # without types the same pattern has nothing to anchor on
    with pytest.raises(PatternError):
        SimGRAG(kg, embedder=emb, humanize_relations=False).retrieve_pattern(
            [("UNKNOWN film 1", "UNKNOWN relation 1", "UNKNOWN person 1")])


@pytest.mark.slow
def test_real_minilm_links_paraphrased_relation(minilm):
    kg = KnowledgeGraph.from_triples(K1 + [("Paprika", "has_genre", "Animation"),
                                           ("Perfect Blue", "directed_by", "Satoshi Kon")])
    method = SimGRAG(kg, embedder=minilm, top_k=3)
    result = method.retrieve_pattern([("Tokyo Godfathers", "director", "UNKNOWN person 1")])
    best = result.items[0]
    assert best.metadata["mapping"]["UNKNOWN person 1"] == "Satoshi Kon"
    assert best.triples[0].relation == "directed_by"
    result = method.retrieve_pattern([("UNKNOWN film 1", "directed by", "Satoshi Kon"),
                                      ("UNKNOWN film 1", "genre", "Animation")])
    assert result.items[0].metadata["mapping"]["UNKNOWN film 1"] == "Paprika"


@pytest.mark.parametrize("k", [5, 1500])
def test_flat_search_equals_faiss(k):
    import faiss

    from kgrag.methods.simgrag.candidates import NameIndex

    rng = np.random.default_rng(3)
    vectors = rng.standard_normal((5000, 8)).astype(np.float32)
    index = NameIndex(vectors, index="flat")
    reference = faiss.IndexFlatL2(8)
    reference.add(vectors)
    queries = np.vstack([rng.standard_normal((2, 8)), vectors[17:18]]).astype(np.float32)
    found = index.search(queries, k)
    squared, ids = reference.search(queries, k)
    for row, cands in enumerate(found):
        assert len(cands) == k
        assert set(cands.ids.tolist()) == set(ids[row].tolist())
        assert np.allclose(cands.distances, np.sqrt(np.maximum(squared[row], 0)), atol=1e-4)
    assert found[2].ids[0] == 17 and found[2].distances[0] == 0.0  # exact zero, not rounding
    everything = index.search(queries[:1], 10_000)[0]
    assert len(everything) == 5000


@pytest.mark.parametrize("case", ["random", "ties", "sample_misleads", "tiny"])
def test_smallest_k_equals_a_full_sort(case):
    from kgrag.methods.simgrag.candidates import smallest_k

    rng = np.random.default_rng(7)
    n, k = (300_000, 5000) if case != "tiny" else (50, 20)
    values = rng.standard_normal(n).astype(np.float32)
    if case == "ties":
        values = rng.integers(0, 40, n).astype(np.float32)  # thousands of ties at the k-th value
    if case == "sample_misleads":
        step = n // 32768
        values[::step] -= 100.0  # the strided sample sees only tiny values: fewer than k pass
    expected = np.lexsort((np.arange(n), values))[:k]
    assert smallest_k(values, k).tolist() == expected.tolist()
    assert smallest_k(values, n + 5).tolist() == np.lexsort((np.arange(n), values)).tolist()


@pytest.mark.slow
def test_cli_pattern_command(minilm, capsys):
    from kgrag.cli import main

    graph = str(__import__("pathlib").Path(__file__).resolve().parents[1] / "examples" / "data"
                / "movies.tsv")
    code = main(["simgrag", graph, "--pattern",
                 '[("UNKNOWN film 1", "directed by", "Satoshi Kon"), '
                 '("UNKNOWN film 1", "genre", "Thriller")]'])
    out = capsys.readouterr().out
    assert code == 0
    assert "graph [1]" in out and "(Perfect Blue, directed_by, Satoshi Kon)" in out.split("\n")[1]
    assert main(["simgrag", graph, "--pattern", "not a pattern"]) == 2
    assert main(["simgrag", graph]) == 2


def test_auto_index_is_hnsw_for_many_names_but_exact_for_the_papers_large_k():
    from kgrag.embed import LookupEmbedder
    from kgrag.methods.simgrag.candidates import AUTO_HNSW_MAX_K, CandidateGenerator

    rng = np.random.default_rng(5)
    names = [f"n{i}" for i in range(3000)]
    vectors = rng.standard_normal((3000, 8)).astype(np.float32)
    embedder = LookupEmbedder({"r": [1.0] * 8})
    small_k = CandidateGenerator(names, ["r"], embedder, k_nodes=16, node_vectors=vectors,
                                 hnsw_threshold=1000)
    large_k = CandidateGenerator(names, ["r"], embedder, k_nodes=AUTO_HNSW_MAX_K + 1,
                                 node_vectors=vectors, hnsw_threshold=1000)
    forced = CandidateGenerator(names, ["r"], embedder, k_nodes=AUTO_HNSW_MAX_K + 1,
                                node_vectors=vectors, hnsw_threshold=1000, index="hnsw")
    from kgrag.embed.exact_l2 import int8_available

    exact = "int8" if int8_available() else "flat"  # the exact scan of an int8 copy needs numba
    assert (small_k.node_index.kind, large_k.node_index.kind, forced.node_index.kind) == (
        "hnsw", exact, "hnsw")
