"""Scores follow rank, in every method and both adapters (issue 29, items 7 and 14).

Rerankers, ``EnsembleRetriever`` weights and ``SimilarityPostprocessor`` all read scores, so a
list whose scores rise somewhere ranks differently for them than for the user. The rule every
method keeps: along the returned order the scores never rise, and an unscored item comes after
every scored one. Plus the LLM-free quality bugs of item 14: a question with nothing of the
graph in it is an empty result with a reason, a linked entity is not its own answer, ByoKG-RAG
breaks ties between walks, and no score is written into the text an LLM reads.
"""

from __future__ import annotations

import math

import pytest
from ketrag_fakes import HashingEmbedder
from langchain_core.language_models import FakeListChatModel
from test_conformance import KG, PATTERN, QUESTION, TRIPLES

import langchain_kgrag as lc
import llama_index_kgrag as li
from kgrag import KnowledgeGraph
from kgrag.methods.base import NOTHING_LINKED
from kgrag.methods.registry import get_method

DOCS = [f"{h} was directed by {t}. It is a film of {t}." for h, r, t in TRIPLES
        if r == "directed_by"] + ["Satoshi Kon was born in Sapporo."]
BYOKG_REPLY = ("<entities>Satoshi Kon</entities><paths>directed_by_inv</paths>"
               "<answers>Paprika</answers>")


def _builds(package):
    emb = HashingEmbedder()
    return {
        "byokg": lambda: package.retriever_for("byokg").from_graph(
            KG, embedder=emb, linking_mode="fuzzy"),
        "byokg-llm": lambda: package.retriever_for("byokg").from_graph(
            KG, embedder=emb, linking_mode="fuzzy",
            llm=FakeListChatModel(responses=[BYOKG_REPLY] * 20)),
        "simgrag": lambda: package.retriever_for("simgrag").from_graph(
            KG, llm=FakeListChatModel(responses=[PATTERN]), embedder=emb,
            humanize_relations=False),
        "graphraft": lambda: package.retriever_for("graphraft").from_graph(KG, embedder=emb),
        "ultrag": lambda: package.retriever_for("ultrag").from_graph(
            KG, llm=FakeListChatModel(responses=['<query>"Satoshi Kon" -> directed_by_inv'
                                                 '</query>']), linking="exact"),
        "ketrag": lambda: package.retriever_for("ketrag").from_documents(
            DOCS, embedder=emb, budget=0, progress=False, chunk_size=32),
    }


def assert_monotone(scores: list[float | None], where: str) -> None:
    seen_unscored = False
    previous = math.inf
    for rank, score in enumerate(scores):
        if score is None:
            seen_unscored = True
            continue
        assert not seen_unscored, f"{where}: a scored item at rank {rank} after an unscored one"
        assert score <= previous, f"{where}: score rises at rank {rank}: {scores}"
        previous = score


@pytest.mark.parametrize("name", list(_builds(lc)))
def test_langchain_scores_never_rise_along_the_documents(name):
    docs = _builds(lc)[name]().invoke(QUESTION)
    assert docs, name
    assert_monotone([d.metadata["score"] for d in docs], name)
    assert [d.metadata["rank"] for d in docs] == list(range(len(docs)))


@pytest.mark.parametrize("name", list(_builds(li)))
def test_llama_index_scores_never_rise_along_the_nodes(name):
    nodes = _builds(li)[name]().retrieve(QUESTION)
    assert nodes, name
    assert_monotone([n.score for n in nodes], name)


# ---------------------------------------------------------------------- item 14, LLM-free
COMPANY = KnowledgeGraph.from_triples([
    ("Bob Tanaka", "reports_to", "Alice Moreau"), ("Alice Moreau", "reports_to", "Hannah Berg"),
    ("Carol Diaz", "reports_to", "Alice Moreau"), ("Grace Liu", "reports_to", "Alice Moreau"),
    ("Dmitri Volkov", "reports_to", "Hannah Berg"), ("Bob Tanaka", "works_on", "Project Falcon"),
    ("Grace Liu", "works_on", "Project Falcon"), ("Carol Diaz", "works_on", "Project Heron"),
    ("Project Falcon", "uses", "Rust"), ("Project Heron", "uses", "Python"),
    ("Project Ledger", "uses", "Rust"), ("Bob Tanaka", "knows", "Rust"),
    ("Grace Liu", "knows", "Rust"), ("Dmitri Volkov", "works_in", "Finance"),
])


@pytest.mark.parametrize("name", ["graphraft", "byokg"])
def test_nothing_linked_is_an_empty_result_with_a_reason(name, minilm):
    result = get_method(name).build(COMPANY, embedder=minilm).retrieve(
        "What is the weather on Mars today?")
    assert result.items == []
    assert result.metadata["empty_reason"] == NOTHING_LINKED


def test_graphraft_does_not_rank_the_linked_entity_as_its_own_answer(minilm):
    result = get_method("graphraft").build(COMPANY, embedder=minilm).retrieve(
        "Which projects use Rust?")
    names = [item.name for item in result.items]
    assert "Rust" in result.metadata["entities"]
    assert names[0] != "Rust"
    assert set(names[:2]) == {"Project Falcon", "Project Ledger"}
    assert result.items[names.index("Rust")].metadata["linked"] is True
    # the cosine stays available next to the rank-capped score
    assert all(i.score <= i.metadata["similarity"] + 1e-9 for i in result.items)


def test_byokg_llm_free_breaks_ties_and_keeps_scores_out_of_the_text(minilm):
    retriever = lc.ByoKGRetriever.from_graph(COMPANY, embedder=minilm)
    docs = retriever.invoke("Who does Bob Tanaka report to?")
    entities = [d for d in docs if d.metadata["kgrag_type"] == "scoredentity"]
    assert [d.page_content for d in entities[:3]] == ["Alice Moreau", "Hannah Berg",
                                                       "Carol Diaz"]
    scores = [d.metadata["score"] for d in entities[:3]]
    assert scores[0] > scores[1] > scores[2]  # shorter, then straighter walks score higher
    assert all("(" not in d.page_content for d in entities)
