"""kgrag methods as ``PropertyGraphIndex`` sub-retrievers (issue 29, item 13), on a real
``PropertyGraphIndex`` built offline from entity nodes and relations (no LLM extraction),
``MockEmbedding`` for the index, scripted LLMs where a method needs one."""

from __future__ import annotations

import pytest
from ketrag_fakes import HashingEmbedder
from llama_index.core import PropertyGraphIndex
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.graph_stores import SimplePropertyGraphStore
from llama_index.core.graph_stores.types import EntityNode, Relation
from llama_index.core.indices.property_graph import BasePGRetriever, LLMSynonymRetriever

from kgrag.errors import InvalidQuestionError
from llama_index_kgrag import KGPGRetriever
from llama_index_kgrag.testing import ScriptedLLM

FACTS = [("Bob", "REPORTS_TO", "Alice"), ("Alice", "REPORTS_TO", "Hannah"),
         ("Carol", "REPORTS_TO", "Alice"), ("Bob", "WORKS_ON", "Falcon"),
         ("Falcon", "USES", "Rust")]


@pytest.fixture
def index() -> PropertyGraphIndex:
    store = SimplePropertyGraphStore()
    store.upsert_nodes([EntityNode(name=n, label="ENTITY")
                        for n in sorted({n for h, _, t in FACTS for n in (h, t)})])
    store.upsert_relations([Relation(label=r, source_id=h, target_id=t) for h, r, t in FACTS])
    return PropertyGraphIndex.from_existing(property_graph_store=store,
                                            embed_model=MockEmbedding(embed_dim=8),
                                            llm=ScriptedLLM(replies=[]))


def _sub_retrievers(store, minilm):
    emb = HashingEmbedder()
    return {
        "byokg": KGPGRetriever(store, "byokg", llm=False, embedder=emb, linking_mode="fuzzy"),
        "graphraft": KGPGRetriever(store, "graphraft", llm=False, embedder=minilm),
        "simgrag": KGPGRetriever(store, "simgrag", embedder=emb, top_k=1, humanize_relations=False,
                                 llm=ScriptedLLM(replies=[
                                     '{"divided": ["x"], "triples": '
                                     '[("Bob", "REPORTS_TO", "UNKNOWN person 1")]}'])),
        "ultrag": KGPGRetriever(store, "ultrag", linking="exact", similarity_top_k=2,
                                llm=ScriptedLLM(replies=['<query>"Bob" -> REPORTS_TO</query>'])),
    }


def test_each_method_is_a_sub_retriever_of_the_index(index, minilm):
    subs = _sub_retrievers(index.property_graph_store, minilm)
    assert all(isinstance(s, BasePGRetriever) for s in subs.values())
    synonyms = LLMSynonymRetriever(index.property_graph_store, include_text=False,
                                   llm=ScriptedLLM(replies=["BOB"]))
    retriever = index.as_retriever(sub_retrievers=[synonyms, *subs.values()])
    nodes = retriever.retrieve("Who does Bob report to?")
    by_method: dict[str, list[str]] = {}
    for node in nodes:
        by_method.setdefault(node.node.metadata.get("method", "llama_index"), []).append(
            node.node.get_content())
    assert "Bob -> REPORTS_TO -> Alice" in by_method["llama_index"]
    assert by_method["simgrag"] == ["(Bob, REPORTS_TO, Alice)"]
    assert by_method["ultrag"][0] == "Alice (1.000)"
    assert any("Alice" in text for text in by_method["byokg"])
    # PGRetriever drops a node whose text an earlier sub-retriever gave (byokg's "Alice");
    # on its own GraphRAFT ranks the answer first
    assert subs["graphraft"].retrieve("Who does Bob report to?")[0].node.get_content() == "Alice"


def test_refresh_reads_what_the_index_gained(index):
    store = index.property_graph_store
    sub = KGPGRetriever(store, "ultrag", linking="exact",
                        llm=ScriptedLLM(replies=['<query>"Dana" -> REPORTS_TO</query>'] * 2))
    before = sub.method
    store.upsert_nodes([EntityNode(name="Dana", label="ENTITY")])
    store.upsert_relations([Relation(label="REPORTS_TO", source_id="Dana", target_id="Hannah")])
    sub.refresh()
    assert sub.method is not before
    assert [n.node.get_content() for n in sub.retrieve("Who does Dana report to?")][0] == \
        "Hannah (1.000)"


def test_methods_built_from_text_and_bad_questions_are_refused(index):
    store = index.property_graph_store
    with pytest.raises(TypeError, match="built from documents"):
        KGPGRetriever(store, "ketrag")
    sub = KGPGRetriever(store, "graphraft", llm=False, embedder=HashingEmbedder())
    with pytest.raises(InvalidQuestionError):
        sub.retrieve("  ")
