"""A replacement prompt must keep the variables that carry the question and the retrieved data,
and a graph file without triples warns through ``warnings`` too (issue 29, item 9)."""

from __future__ import annotations

import warnings

import pytest
from ketrag_fakes import HashingEmbedder
from llama_index.core.prompts import PromptTemplate

from kgrag import KnowledgeGraph
from kgrag.errors import EmptyGraphWarning
from kgrag.graph import read_triples
from kgrag.methods.graphraft import GraphRAFT
from llama_index_kgrag import GraphRAFTRetriever

KG = KnowledgeGraph.from_triples([("Bob", "reports_to", "Alice")])


def test_a_template_without_the_question_or_the_candidates_is_refused():
    with pytest.raises(ValueError, match=r"must use \{candidates\}"):
        GraphRAFT(KG, embedder=HashingEmbedder(), prompts={"select": "Pick for {question}."})
    with pytest.raises(ValueError, match=r"must use \{question\}, \{info\}"):
        GraphRAFT(KG, embedder=HashingEmbedder(), prompts={"answer": "Answer briefly."})


def test_update_prompts_refuses_it_too_and_keeps_the_old_template():
    retriever = GraphRAFTRetriever.from_graph(KG, llm=False, embedder=HashingEmbedder())
    before = retriever.get_prompts()["select"].get_template()
    with pytest.raises(ValueError, match=r"must use \{question\}"):
        retriever.update_prompts({"select": PromptTemplate("Choose among {candidates}")})
    assert retriever.get_prompts()["select"].get_template() == before
    # optional variables may go: {m} (how many to pick) is dropped here
    retriever.update_prompts({"select": "Q: {question}\n{candidates}\nPick the best."})
    assert retriever.method.prompts.template("select").startswith("Q: {question}")


def test_a_graph_file_without_triples_warns_through_warnings(tmp_path):
    path = tmp_path / "empty.tsv"
    path.write_text("head\trelation\ttail\n")
    with pytest.warns(EmptyGraphWarning, match="holds no triples"):
        kg = read_triples(path)
    assert kg.num_edges == 0
    full = tmp_path / "full.tsv"
    full.write_text("head\trelation\ttail\na\tr\tb\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error", EmptyGraphWarning)
        read_triples(full)
