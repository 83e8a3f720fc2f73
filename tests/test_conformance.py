"""LangChain's standard retriever conformance suite (``langchain-tests``'
``RetrieversIntegrationTests``) for every kgrag retriever, on small graphs with LangChain's
fake chat models and a hashing embedder (no model download, a few seconds)."""

from __future__ import annotations

from typing import Any

from ketrag_fakes import HashingEmbedder
from langchain_core.language_models import FakeListChatModel
from langchain_tests.integration_tests import RetrieversIntegrationTests

from kgrag import KnowledgeGraph
from langchain_kgrag import (
    ByoKGRetriever,
    GraphRAFTRetriever,
    KETRAGRetriever,
    SimGRAGRetriever,
    UltRAGRetriever,
)

TRIPLES = [
    ("Tokyo Godfathers", "directed_by", "Satoshi Kon"), ("Paprika", "directed_by", "Satoshi Kon"),
    ("Perfect Blue", "directed_by", "Satoshi Kon"), ("Millennium Actress", "directed_by",
                                                      "Satoshi Kon"),
    ("Paprika", "release_year", "2006"), ("Perfect Blue", "release_year", "1997"),
    ("Satoshi Kon", "born_in", "Sapporo"), ("Akira", "directed_by", "Katsuhiro Otomo"),
]
KG = KnowledgeGraph.from_triples(TRIPLES)
QUESTION = "Which films did Satoshi Kon direct?"
PATTERN = ('{"divided": ["films directed by Satoshi Kon"], '
           '"triples": [("UNKNOWN film 1", "directed_by", "Satoshi Kon")]}')


class _Conformance(RetrieversIntegrationTests):
    """Shared: the example question. (The suite's async test runs under pytest-asyncio's
    auto mode, set in pyproject.toml: the suite forbids overriding its tests.)"""

    @property
    def retriever_query_example(self) -> str:
        return QUESTION


class TestUltRAGRetriever(_Conformance):
    @property
    def retriever_constructor(self) -> Any:
        return UltRAGRetriever.from_graph

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"graph": KG, "llm": FakeListChatModel(responses=[
            '<query>"Satoshi Kon" -> directed_by_inv</query>']), "linking": "exact",
                "executor": "symbolic"}


class TestSimGRAGRetriever(_Conformance):
    """``k`` is SimGRAG's own number of subgraphs, passed through the factory."""

    @property
    def retriever_constructor(self) -> Any:
        return SimGRAGRetriever.from_graph

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"graph": KG, "llm": FakeListChatModel(responses=[PATTERN]),
                "embedder": HashingEmbedder(), "humanize_relations": False}


class TestByoKGRetriever(_Conformance):
    """LLM-free mode (linked entities, scored triples, paths, answer candidates)."""

    @property
    def retriever_constructor(self) -> Any:
        return ByoKGRetriever.from_graph

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"graph": KG, "embedder": HashingEmbedder(), "linking_mode": "fuzzy"}


class TestGraphRAFTRetriever(_Conformance):
    @property
    def retriever_constructor(self) -> Any:
        return GraphRAFTRetriever.from_graph

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"graph": KG, "embedder": HashingEmbedder()}


class TestKETRAGRetriever(_Conformance):
    """The LLM-free keyword-only index (budget 0)."""

    @property
    def retriever_constructor(self) -> Any:
        return KETRAGRetriever.from_documents

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        docs = [f"{h} was directed by {t}. It is a film of {t}." for h, r, t in TRIPLES
                if r == "directed_by"] + ["Satoshi Kon was born in Sapporo."]
        return {"documents": docs, "embedder": HashingEmbedder(), "budget": 0,
                "progress": False, "chunk_size": 32}
