"""``Settings.llm`` / ``Settings.embed_model`` fill in what is not given, and ``False`` opts
out (issue 29, item 6): an explicit no-LLM mode and kgrag's own embedder stay reachable once
``Settings`` holds a model."""

from __future__ import annotations

import logging

import pytest
from ketrag_fakes import HashingEmbedder
from llama_index.core import Settings
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.llms import MockLLM

from kgrag import KnowledgeGraph
from kgrag.embed.adapters import LlamaIndexEmbedder
from llama_index_kgrag import GraphRAFTQueryEngine, GraphRAFTRetriever
from llama_index_kgrag.settings import with_settings

KG = KnowledgeGraph.from_triples([("Bob Tanaka", "reports_to", "Alice Moreau"),
                                  ("Alice Moreau", "works_in", "Engineering")])


@pytest.fixture
def settings_models():
    saved = Settings._llm, Settings._embed_model
    Settings._llm, Settings._embed_model = MockLLM(), MockEmbedding(embed_dim=8)
    try:
        yield
    finally:
        Settings._llm, Settings._embed_model = saved


def test_settings_fill_in_what_is_not_given(settings_models, caplog):
    with caplog.at_level(logging.INFO, logger="llama_index_kgrag.settings"):
        filled = with_settings()
    assert isinstance(filled["llm"], MockLLM)
    assert isinstance(filled["embedder"], MockEmbedding)
    assert "llm=False" in caplog.text and "embedder=False" in caplog.text
    retriever = GraphRAFTRetriever.from_graph(KG)
    assert retriever.method.llm is not None


def test_llm_false_is_no_llm_whatever_settings_hold(settings_models):
    retriever = GraphRAFTRetriever.from_graph(KG, llm=False, embedder=HashingEmbedder())
    assert retriever.method.llm is None
    nodes = retriever.retrieve("Who does Bob Tanaka report to?")
    assert nodes and nodes[0].node.metadata["usage_calls"] == 0
    engine = GraphRAFTQueryEngine.from_graph(KG, llm=False, embedder=HashingEmbedder())
    assert engine.method.llm is None


def test_embedder_false_is_kgrags_own_embedder(settings_models):
    assert with_settings(embedder=False)["embedder"] is None  # None: the packaged MiniLM
    retriever = GraphRAFTRetriever.from_graph(KG, llm=False, embedder=False)
    assert not isinstance(retriever.method.embedder, LlamaIndexEmbedder)
    given = GraphRAFTRetriever.from_graph(KG, llm=False)
    assert isinstance(given.method.embedder, LlamaIndexEmbedder)
